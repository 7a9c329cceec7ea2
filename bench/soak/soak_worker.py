"""The Python SDK's worker for the soak run (bench/soak/run.sh), the twin of soak_worker.cpp:
runs tasks of one (namespace, type) doing only what the payload asks ("fail": the number of first
attempts that fail, "work_ms": sleep per attempt). Run with the SDK's venv python
(sdk/python/scripts/venv.sh):
  soak_worker.py <redis url> <ns> <type> <concurrency> <lease ms> <retry base ms>
"""

import sys
import time

import baton


def main():
    if len(sys.argv) != 7:
        sys.exit(__doc__)
    url, ns, task_type = sys.argv[1:4]
    concurrency, lease_ms, retry_base_ms = (int(v) for v in sys.argv[4:7])
    app = baton.Worker(url, service="soak-py", concurrency=concurrency, block_ms=1000,
                       shutdown_grace=5.0)

    @app.task(ns, task_type, executor="thread", lease_ms=lease_ms,
              retry=baton.RetryPolicy(base_ms=retry_base_ms, max_ms=10 * retry_base_ms))
    def run_soak_task(task: baton.Task) -> None:
        work_ms = task.payload.get("work_ms", 0)
        if work_ms:
            time.sleep(work_ms / 1000)
        if task.attempt <= task.payload.get("fail", 0):
            raise RuntimeError(f"soak: attempt {task.attempt} fails on purpose")

    print(f"soak_worker.py started on {ns}/{task_type}", file=sys.stderr, flush=True)
    stats = app.run()
    print(f"soak_worker.py stopped: {stats}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
