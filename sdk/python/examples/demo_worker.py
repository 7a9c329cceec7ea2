"""The Python worker of scripts/demo.sh, on the SDK: it runs `order/generate_invoice` tasks and,
for each, enqueues a `send_notification` task that the C++ worker runs (a task chain across
languages). SIGTERM stops it gracefully.

    sdk/python/.venv/bin/python sdk/python/examples/demo_worker.py redis://127.0.0.1:6379
"""

import sys

import baton

url = sys.argv[1] if len(sys.argv) > 1 else "redis://127.0.0.1:6379"
app = baton.Worker(url, service="demo-python", concurrency=1)
producer = baton.Client(url)


@app.task("order", "generate_invoice")
def generate_invoice(task: baton.Task) -> None:
    order = task.payload.get("order_id")
    print(f"[python worker] generate_invoice {task.id} attempt {task.attempt}: "
          f"invoice for order {order}", flush=True)
    producer.enqueue("order", "send_notification",
                     {"order_id": order, "channel": "email", "invoice_of": task.id})


if __name__ == "__main__":
    app.run()
