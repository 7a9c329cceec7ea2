"""The chaos producer: enqueues tasks at a steady rate with baton_v2_enqueue (through the
reference client tests/protocol/baton_protocol.py) and records each id Redis acknowledged, with
the time of the acknowledgement.

An enqueue whose reply was lost (Redis killed, connection reset) is sent again with the same id
until Redis answers: `duplicate` then means the first one was written, so the id is acknowledged
either way. Ids are the producer's own (`<type>-<seq>`), so accounting needs no guessing."""
import json
import threading
import time

import redis

import baton_protocol as bp

# kind -> (weight, payload maker(rng), max_retry, delay maker(rng))
MIX = {
    "ok": 50,  # runs once, quickly
    "delayed": 10,  # first run 1..4 s after enqueue (promoted by batond)
    "fail": 12,  # fails 1..2 times, then succeeds
    "dead": 8,  # always fails: dead-lettered after max_retry retries
    "fatal": 5,  # NonRetryableError: dead at once
    "slow": 15,  # handler sleeps 1.5..6 s, longer than many faults and than the lease
}


def make_task(rng, task_id):
    kind = rng.choices(list(MIX), weights=list(MIX.values()))[0]
    payload = {"kind": kind, "sleep_ms": rng.randint(0, 30)}
    max_retry, delay = 3, 0
    if kind == "delayed":
        payload["kind"] = "ok"
        delay = rng.randint(1, 4)
    elif kind == "fail":
        payload["fail_times"] = rng.randint(1, 2)
    elif kind == "dead":
        max_retry = rng.randint(0, 2)
    elif kind == "slow":
        payload["sleep_ms"] = rng.randint(1500, 6000)
    spec = bp.TaskSpec(id=task_id, payload=json.dumps(payload).encode(), max_retry=max_retry,
                       delay_seconds=delay)
    return kind, spec


class Producer(threading.Thread):
    def __init__(self, url, ns, types, count, rate, rng):
        super().__init__(daemon=True, name="producer")
        self.url = url
        self.ns = ns
        self.types = types
        self.count = count
        self.rate = rate
        self.rng = rng
        self.tasks = {}  # id -> {"type", "kind", "max_retry", "acked_ms", "status"}
        self.retries = 0  # enqueue calls sent again after an error
        self.acked = 0
        self.stopping = threading.Event()
        self.done = threading.Event()

    def run(self):
        r = redis.Redis.from_url(self.url, socket_timeout=3, socket_connect_timeout=2)
        baton = None
        start = time.monotonic()
        for seq in range(self.count):
            if self.stopping.is_set():
                break
            # Steady rate: task seq is due at start + seq / rate (late ones go at once).
            delay = start + seq / self.rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            task_type = self.types[seq % len(self.types)]
            kind, spec = make_task(self.rng, f"{task_type}-{seq:06d}")
            self.tasks[spec.id] = {"type": task_type, "kind": kind, "max_retry": spec.max_retry,
                                   "acked_ms": None, "status": None}
            while not self.stopping.is_set():
                try:
                    if baton is None:
                        baton = bp.Baton(r, self.ns)
                    (status, _), = baton.enqueue(task_type, [spec])
                    if status not in ("queued", "scheduled", "duplicate"):
                        raise RuntimeError(f"enqueue {spec.id}: unexpected status {status}")
                    self.tasks[spec.id].update(acked_ms=int(time.time() * 1000), status=status)
                    self.acked += 1
                    break
                except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError,
                        redis.exceptions.BusyLoadingError, bp.VersionMismatch):
                    self.retries += 1
                    time.sleep(0.1)
                except redis.exceptions.ResponseError as e:
                    # LOADING etc. while Redis restarts; anything else is a finding, kept.
                    self.retries += 1
                    if "LOADING" not in str(e) and "NOSCRIPT" not in str(e) \
                            and "Function not found" not in str(e):
                        self.tasks[spec.id]["error"] = str(e)
                    time.sleep(0.1)
        self.done.set()
