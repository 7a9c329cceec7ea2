"""The Python SDK's conformance driver (tests/conformance/DRIVERS.md), on `import baton` alone.

produce: baton.Client.enqueue per case, with the payload file's exact bytes (the SDK takes raw
  JSON text and stores it byte for byte), the case's settings and id, and `extra` as unknown
  top-level fields.
consume: one baton.Worker with a handler per conformance task type, for --seconds or until
  SIGTERM (then it stops gracefully). conf_fail raises. conf_sleep is a sync handler (thread
  executor) that blocks in time.sleep and never looks at the timeout: the worker abandons the
  thread at the execution_timeout and fails the attempt as a timeout, the sync path the other
  languages cannot see otherwise. Async handlers stay in the matrix (conf_delay and conf_once
  are coroutines); asyncio cancellation at the timeout is covered by the SDK's own tests
  (sdk/python/tests/test_worker.py, test_async_timeout_cancels_the_handler).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import sys
import threading
import time
from typing import Any

import baton

RETRY = baton.RetryPolicy(base_ms=100, max_ms=1000)
PAYLOAD_CASE_PREFIX = "payload/"


def produce(args: argparse.Namespace) -> int:
    failed = False
    with baton.Client(args.redis) as client, open(args.cases, encoding="utf-8") as cases:
        for text in cases:
            if not text.strip():
                continue
            line = json.loads(text)
            try:
                with open(line["payload_file"], "rb") as f:
                    payload = f.read()
                result = client.enqueue(
                    args.ns, line["task_type"], payload, delay=line.get("delay_seconds", 0),
                    max_retry=line.get("max_retry", 3),
                    execution_timeout=line.get("execution_timeout"),
                    task_id=line.get("task_id"), extra=line.get("extra") or None)
            except (baton.BatonError, OSError) as e:
                print(f"produce {line.get('case')}: {e}", file=sys.stderr)
                failed = True
                continue
            print(json.dumps({"case": line.get("case"), "task_id": result.task_id,
                              "status": str(result.status)}), flush=True)
    return 1 if failed else 0


class Report:
    """Appends JSON lines to the report file: one write per line (O_APPEND)."""

    def __init__(self, path: str):
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._lock = threading.Lock()

    def append(self, line: dict[str, Any]) -> None:
        data = (json.dumps(line) + "\n").encode()
        with self._lock:
            os.write(self._fd, data)


def value_equal(corpus: str, case: str, payload: Any) -> bool | None:
    """The handler's parsed payload against the corpus file parsed by the same parser (Python's
    json: integers exact at any size, so no lossless option is needed)."""
    if not case.startswith(PAYLOAD_CASE_PREFIX):
        return None
    path = os.path.join(corpus, case[len(PAYLOAD_CASE_PREFIX):] + ".json")
    try:
        with open(path, "rb") as f:
            expected = json.loads(f.read())
    except (OSError, ValueError):
        return None
    return bool(payload == expected)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def build_worker(args: argparse.Namespace, report: Report) -> baton.Worker:
    app = baton.Worker(args.redis, service="conformance-python", block_ms=1000,
                       shutdown_grace=5.0)
    ns = args.ns

    @app.task(ns, "conf_echo", retry=RETRY)
    def conf_echo(task: baton.Task) -> None:
        case = str(task.extra.get("x_conformance_case") or "")
        report.append({
            "type": "conf_echo", "case": case, "task_id": task.id,
            "namespace": task.namespace, "task_type": task.task_type,
            "max_retry": task.max_retry, "delay_seconds": task.delay_seconds,
            "created_at": task.created_at, "execution_timeout": task.execution_timeout,
            "extra": task.extra, "payload_sha256": hashlib.sha256(task.payload_bytes).hexdigest(),
            "payload_value_equal": value_equal(args.corpus, case, task.payload)})

    @app.task(ns, "conf_fail", retry=RETRY)
    def conf_fail(task: baton.Task) -> None:
        report.append({"type": "conf_fail", "task_id": task.id, "attempt": task.attempt})
        raise RuntimeError(f"conf_fail: deliberate failure on attempt {task.attempt}")

    @app.task(ns, "conf_sleep", retry=RETRY)
    def conf_sleep(task: baton.Task) -> None:  # sync: abandoned, not cancelled, at the timeout
        report.append({"type": "conf_sleep", "task_id": task.id, "attempt": task.attempt,
                       "started_ms": now_ms()})
        time.sleep(float(task.payload.get("sleep_ms", 0)) / 1000.0)

    @app.task(ns, "conf_delay", retry=RETRY)
    async def conf_delay(task: baton.Task) -> None:
        report.append({"type": "conf_delay", "task_id": task.id, "started_ms": now_ms()})

    @app.task(ns, "conf_once", retry=RETRY)
    async def conf_once(task: baton.Task) -> None:
        report.append({"type": "conf_once", "task_id": task.id})

    return app


def consume(args: argparse.Namespace) -> int:
    app = build_worker(args, Report(args.report))

    async def main() -> None:
        asyncio.get_running_loop().call_later(args.seconds, app.stop)
        await app.serve(handle_signals=True)

    try:
        asyncio.run(main())
    except baton.BatonError as e:
        print(f"consume: {e}", file=sys.stderr)
        return 1
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    modes = parser.add_subparsers(dest="mode", required=True)
    p = modes.add_parser("produce")
    p.add_argument("--redis", required=True)
    p.add_argument("--ns", required=True)
    p.add_argument("--cases", required=True)
    c = modes.add_parser("consume")
    c.add_argument("--redis", required=True)
    c.add_argument("--ns", required=True)
    c.add_argument("--report", required=True)
    c.add_argument("--corpus", required=True)
    c.add_argument("--seconds", type=int, required=True)
    args = parser.parse_args()
    return produce(args) if args.mode == "produce" else consume(args)


if __name__ == "__main__":
    sys.exit(main())
