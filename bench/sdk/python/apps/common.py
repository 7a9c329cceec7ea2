"""What every system of the bench shares: the payload and the timing of a producer."""

from __future__ import annotations

import json

# The same 200-byte payload (serialized compactly) for every system.
PAYLOAD = {"order_id": 1234567, "customer": "c-42", "note": ""}
PAYLOAD["note"] = "x" * (200 - len(json.dumps(PAYLOAD, separators=(",", ":"))))
PAYLOAD_BYTES = json.dumps(PAYLOAD, separators=(",", ":")).encode()
assert len(PAYLOAD_BYTES) == 200


def report(**values: object) -> None:
    """The producer's result line, read by bench.py."""
    print("RESULT " + json.dumps(values), flush=True)
