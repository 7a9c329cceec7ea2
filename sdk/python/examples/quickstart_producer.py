"""Quick start: enqueue one task (README.md shows the body; tests/test_quickstart.py runs it)."""

# snippet-start
import os

import baton

url = os.environ.get("BATON_REDIS_URL", "redis://127.0.0.1:6379")
with baton.Client(url) as client:
    result = client.enqueue("shop", "send_email", {"to": "ada@example.com"}, max_retry=5)
    print(result.status, result.task_id)  # queued 0190f3c1-7a2e-7cc1-...

    later = client.enqueue("shop", "send_email", {"to": "bob@example.com"}, delay=60)
    again = client.enqueue("shop", "send_email", {}, task_id="welcome-42")  # idempotent
    print(later.status, again.status)  # scheduled queued (then: duplicate)
# snippet-end
