"""The worker of the console's browser tests (tests/console/browser/console.test.mjs), on the
Python SDK. It runs the tasks of namespace `shop`:

- `ok` succeeds;
- `flaky` raises `RuntimeError` (so the failure carries a real Python traceback as its stack)
  unless the marker file exists. The message is the payload's `message` when it has one (the XSS
  test makes it markup), else a fixed text the tests look for. The producer gives these tasks
  max_retry 0, so one failure puts them in the dead-letter queue.

    python worker.py REDIS_URL MARKER_PATH

SIGTERM stops it gracefully. It prints `worker ready` once it runs.
"""

import os
import sys

import baton

FLAKY_MESSAGE = "flaky task failed on purpose (no marker file)"

url = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("BATON_REDIS_URL", "redis://127.0.0.1:6379")
marker = sys.argv[2] if len(sys.argv) > 2 else os.environ.get("BATON_TEST_MARKER", "")
if not marker:
    sys.exit("usage: worker.py REDIS_URL MARKER_PATH")

app = baton.Worker(url, service="console-test", concurrency=4, block_ms=200)


@app.task("shop", "ok")
def ok(task: baton.Task) -> None:
    print(f"ok {task.id} attempt {task.attempt}", flush=True)


def check_inventory(task: baton.Task) -> None:
    # A frame of its own, so the traceback has more than the handler's line.
    if not os.path.exists(marker):
        raise RuntimeError(str(task.payload.get("message", FLAKY_MESSAGE)))


@app.task("shop", "flaky")
def flaky(task: baton.Task) -> None:
    check_inventory(task)
    print(f"flaky {task.id} attempt {task.attempt} succeeded (marker present)", flush=True)


if __name__ == "__main__":
    print("worker ready", flush=True)
    app.run()  # SIGTERM: running tasks finish and are acked, then it returns
