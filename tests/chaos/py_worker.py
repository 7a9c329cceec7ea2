"""The Python SDK worker of the chaos run (tests/chaos/README.md), run with the SDK's venv python.
Its handler does what the payload asks ({"kind": ok|slow|fail|dead|fatal, "sleep_ms": N,
"fail_times": K}) and records every execution in the ledger Redis that the chaos never kills, as
the C++ chaos_worker does: `S <id> <attempt> <pid> <label> - <ms>` before the work and
`E <id> <attempt> <pid> <label> <outcome> <ms>` after it, <ms> from the ledger Redis' clock.

    python py_worker.py <queue url> <ledger url> <ns> <type> <concurrency> <lease ms> <label>
"""
import os
import sys
import threading
import time

import baton
import redis

# RPUSH chaos:ledger "<line> <ledger server ms>" (the same script as chaos_worker.cpp's).
LEDGER_SCRIPT = ("local t = redis.call('TIME') "
                 "return redis.call('RPUSH', KEYS[1], ARGV[1] .. ' ' .. "
                 "string.format('%d', t[1] * 1000 + math.floor(t[2] / 1000)))")


def main():
    url, ledger_url, ns, task_type, concurrency, lease_ms, label = sys.argv[1:8]
    pid = os.getpid()
    local = threading.local()  # one ledger connection per handler thread

    def record(line):
        if getattr(local, "ledger", None) is None:
            local.ledger = redis.Redis.from_url(ledger_url, socket_timeout=5)
        local.ledger.eval(LEDGER_SCRIPT, 1, "chaos:ledger", line)

    def handle(task: baton.Task) -> None:
        head = f"{task.id} {task.attempt} {pid} {label}"
        record(f"S {head} -")
        payload = task.payload
        kind = payload.get("kind", "ok")
        if payload.get("sleep_ms", 0) > 0:
            time.sleep(payload["sleep_ms"] / 1000)
        outcome = "ok"
        if kind == "dead" or (kind == "fail" and task.attempt <= payload.get("fail_times", 0)):
            outcome = "error"
        if kind == "fatal":
            outcome = "fatal"
        record(f"E {head} {outcome}")
        if outcome == "fatal":
            raise baton.NonRetryableError("chaos: fatal task")
        if outcome == "error":
            raise RuntimeError("chaos: planned failure")

    worker = baton.Worker(url, service=f"chaos-{label}", block_ms=500, shutdown_grace=2.0,
                          maintenance=False, redis_options={"socket_timeout": 2.0,
                                                            "socket_connect_timeout": 2.0})
    worker.register(ns, task_type, handle, concurrency=int(concurrency),
                    retry=baton.RetryPolicy(base_ms=100, max_ms=1000), lease_ms=int(lease_ms))
    print(f"py_worker {worker.consumer_name} started", file=sys.stderr, flush=True)
    worker.run()


if __name__ == "__main__":
    main()
