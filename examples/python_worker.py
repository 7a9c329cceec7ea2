#!/usr/bin/python3
"""A Baton worker in Python that speaks only the documented protocol v2 (docs/protocol.md,
"Worker loop") through the reference client tests/protocol/baton_protocol.py and Debian's
python3-redis. It is a sample of the wire protocol for authors of new clients; applications use
the Python SDK (sdk/python/README.md).

It runs `order/generate_invoice` tasks and, for each, enqueues a `send_notification` task that
the C++ worker runs: a task chain across languages. Every (re)connect checks the functions
library version; the tasks a batch holds are heartbeated (baton_v2_extend) every lease/3 from a
second thread while they run; successes are acked in one call per batch; a handler error is a
failed attempt with its traceback (retried with backoff, then dead-lettered).

    /usr/bin/python3 examples/python_worker.py redis://127.0.0.1:6379 [seconds]
"""
import json
import os
import pathlib
import socket
import sys
import threading
import time
import traceback
import uuid

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "protocol"))
import baton_protocol as bp  # noqa: E402

NS, TYPE, GROUP = "order", "generate_invoice", "baton"
LEASE_MS = 30000
BATCH = 10


def uuid7():
    """A UUIDv7 (RFC 9562): 48-bit Unix ms, version 7, variant 10, random rest."""
    ms = int(time.time() * 1000)
    rand = int.from_bytes(os.urandom(10), "big")
    value = ((ms << 80) | (0x7 << 76) | (((rand >> 68) & 0xFFF) << 64) | (0b10 << 62)
             | (rand & ((1 << 62) - 1)))
    return str(uuid.UUID(int=value))


class Heartbeat(threading.Thread):
    """Extends the leases of the tasks in `held` every lease/3; a task whose SID is not returned
    was taken back (its lease expired): it is dropped from `held` and not acked as ours."""

    def __init__(self, baton, consumer):
        super().__init__(daemon=True)
        self.baton = baton
        self.consumer = consumer
        self.held = {}  # sid -> id
        self.lock = threading.Lock()
        self.stop = threading.Event()

    def run(self):
        while not self.stop.wait(LEASE_MS / 3000):
            with self.lock:
                tasks = [(task_id, sid) for sid, task_id in self.held.items()]
            if not tasks:
                continue
            still = set(self.baton.extend(TYPE, GROUP, self.consumer, tasks, LEASE_MS))
            with self.lock:
                for _, sid in tasks:
                    if sid not in still:
                        self.held.pop(sid, None)

    def hold(self, entries):
        with self.lock:
            self.held.update({e.sid: e.id for e in entries})

    def release(self, sid):
        with self.lock:
            self.held.pop(sid, None)


def generate_invoice(baton, entry):
    payload = json.loads(entry.payload)
    print(f"[python worker] generate_invoice {entry.id} attempt {entry.attempt + 1}: "
          f"invoice for order {payload.get('order_id')}", flush=True)
    follow_up = bp.TaskSpec(id=uuid7(), payload=json.dumps(
        {"order_id": payload.get("order_id"), "channel": "email",
         "invoice_of": entry.id}).encode())
    ((status, _),) = baton.enqueue("send_notification", [follow_up])
    if status not in ("queued", "scheduled"):
        raise RuntimeError(f"follow-up not enqueued: {status}")


def main():
    url = sys.argv[1] if len(sys.argv) > 1 else "redis://127.0.0.1:6379"
    run_for = float(sys.argv[2]) if len(sys.argv) > 2 else 1e9
    try:
        r = bp.connect(url)  # every (re)connect checks FCALL_RO baton_v2_version 0
        baton = bp.Baton(r, NS)
    except bp.VersionMismatch as e:
        sys.exit(f"python worker: {e}")
    baton.register_namespace()  # optional: lets `baton queues` list it before batond saw it
    consumer = f"demo-python:{socket.gethostname()}:{os.getpid()}:{os.urandom(3).hex()}"
    heartbeat = Heartbeat(bp.Baton(bp.connect(url), NS), consumer)
    heartbeat.start()
    deadline = time.time() + run_for
    while time.time() < deadline:
        delivery = baton.dequeue(TYPE, GROUP, consumer, BATCH, LEASE_MS)
        if not delivery.entries:
            r.execute_command("XREAD", "BLOCK", 500, "STREAMS", baton.keys.stream(TYPE),
                              delivery.last_id)
            continue
        heartbeat.hold(delivery.entries)
        done = []
        for e in delivery.entries:
            try:
                bp.task_document(NS, TYPE, e)  # the contract document a handler would get
                if not e.payload.strip().startswith(b"{"):
                    raise ValueError("payload is not a JSON object")
            except ValueError as err:
                heartbeat.release(e.sid)
                baton.fail(TYPE, GROUP, consumer, e.id, e.sid, "malformed", str(err))
                continue
            try:
                generate_invoice(baton, e)
                done.append((e.id, e.sid))
            except Exception as err:  # a handler error is a failed attempt
                heartbeat.release(e.sid)
                outcome, _, attempt = baton.fail(TYPE, GROUP, consumer, e.id, e.sid, "error",
                                                 str(err), traceback.format_exc())
                print(f"[python worker] {e.id} attempt {attempt} failed: {err} -> {outcome}",
                      flush=True)
        if done:
            baton.ack(TYPE, GROUP, consumer, done)
        for _, sid in done:
            heartbeat.release(sid)
    heartbeat.stop.set()


if __name__ == "__main__":
    main()
