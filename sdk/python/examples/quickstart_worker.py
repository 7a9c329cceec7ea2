"""Quick start: a worker with a sync and an async handler (README.md shows the body;
tests/test_quickstart.py runs it). Run it with `python quickstart_worker.py` or
`baton-worker quickstart_worker:app`."""

# snippet-start
import os

import baton

url = os.environ.get("BATON_REDIS_URL", "redis://127.0.0.1:6379")
app = baton.Worker(url, service="mailer")


@app.task("shop", "send_email", concurrency=8)
def send_email(task: baton.Task) -> None:
    print(f"sending to {task.payload.get('to')} (attempt {task.attempt})", flush=True)
    if "to" not in task.payload:
        raise baton.NonRetryableError("no recipient")  # straight to the dead-letter queue


@app.task("shop", "resize_image")
async def resize_image(task: baton.Task) -> None:
    ...  # async handlers run as asyncio tasks; an execution_timeout cancels them


if __name__ == "__main__":
    app.run()  # SIGTERM / Ctrl-C: running tasks finish and are acked, then it returns
# snippet-end
