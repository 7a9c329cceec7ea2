#!/usr/bin/python3
"""A Baton worker in Python that speaks only the documented protocol (docs/protocol.md) through
the reference client tests/protocol/baton_protocol.py and Debian's python3-redis.

It runs `order/generate_invoice` tasks and, for each, enqueues a `send_notification` task that
the C++ worker runs: a task chain across languages.

    /usr/bin/python3 examples/python_worker.py redis://127.0.0.1:6379 [seconds]
"""
import json
import os
import pathlib
import socket
import sys
import time
import uuid

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "protocol"))
import redis  # noqa: E402

import baton_protocol as bp  # noqa: E402

NS, TYPE, GROUP = "order", "generate_invoice", "baton"


def uuid7():
    """A UUIDv7 (RFC 9562): 48-bit Unix ms, version 7, variant 10, random rest."""
    ms = int(time.time() * 1000)
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms << 80) | (0x7 << 76) | ((rand >> 68) & 0xFFF) << 64 | (0b10 << 62) | (rand & ((1 << 62) - 1))
    return str(uuid.UUID(int=value))


def main():
    url = sys.argv[1] if len(sys.argv) > 1 else "redis://127.0.0.1:6379"
    run_for = float(sys.argv[2]) if len(sys.argv) > 2 else 1e9
    r = redis.Redis.from_url(url)
    baton = bp.Baton(r, NS)
    if baton.version() != bp.LIBRARY_VERSION:
        sys.exit(f"python worker: functions library version {baton.version()} loaded, "
                 f"this worker needs {bp.LIBRARY_VERSION}: run 'baton init'")
    consumer = f"demo-python:{socket.gethostname()}:{os.getpid()}:{os.urandom(3).hex()}"
    r.sadd(bp.NAMESPACES_KEY, NS)
    r.sadd(baton.keys.types(), TYPE)
    deadline = time.time() + run_for
    while time.time() < deadline:
        entries, last_id = baton.dequeue(TYPE, GROUP, consumer, 10)
        if not entries:
            r.execute_command("XREAD", "BLOCK", 500, "STREAMS", baton.keys.stream(TYPE), last_id)
            continue
        done = []
        for e in entries:
            payload = json.loads(e.payload)
            print(f"[python worker] generate_invoice {e.id} attempt {e.attempt + 1}: "
                  f"invoice for order {payload.get('order_id')}", flush=True)
            follow_up = bp.TaskSpec(id=uuid7(), payload=json.dumps(
                {"order_id": payload.get("order_id"), "channel": "email",
                 "invoice_of": e.id}).encode())
            baton.enqueue("send_notification", [follow_up])
            done.append((e.id, e.sid))
        baton.ack(TYPE, GROUP, done, consumer)


if __name__ == "__main__":
    main()
