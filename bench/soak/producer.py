"""The soak run's producer: a thread that holds a steady enqueue rate. Every tick (10 ms) it
enqueues the tasks that are due by then (target = rate x elapsed time), one baton_v2_enqueue
call per task as an application would, sent in one pipeline per tick. Each task is, by a seeded
draw: immediate, delayed (delay_seconds 1..max_delay_s) or retried (its payload makes the first
attempt fail), and goes to the C++ or the Python worker's type. Task ids are "s<seq>", so the
tracker maps every event back to its task without a lookup."""

import json
import random
import threading
import time

import baton_protocol as bp

IMMEDIATE, DELAYED, RETRIED = "immediate", "delayed", "retried"


class Mix:
    """Shares of the task classes and types."""

    def __init__(self, delayed, retried, py_share, max_delay_s, work_ms):
        self.delayed = delayed
        self.retried = retried
        self.py_share = py_share
        self.max_delay_s = max_delay_s
        self.work_ms = work_ms


class Producer(threading.Thread):
    def __init__(self, r, ns, rate, seconds, mix, types, tracker, seed=1):
        super().__init__(name="producer", daemon=True)
        self.r = r
        self.keys = bp.Keys(ns)
        self.rate = rate
        self.seconds = seconds
        self.mix = mix
        self.types = types  # {"cpp": type name, "py": type name or None}
        self.tracker = tracker
        self.rng = random.Random(seed)
        self.produced = 0
        self.duration = 0.0  # seconds it produced for, once done
        self.rejected = []  # (id, status, detail) of enqueues that did not queue or schedule
        self.error = None
        self.stop_event = threading.Event()

    def _spec(self, seq):
        draw = self.rng.random()
        payload = {"work_ms": self.mix.work_ms} if self.mix.work_ms else {}
        delay = 0
        if draw < self.mix.delayed:
            cls, delay = DELAYED, self.rng.randint(1, self.mix.max_delay_s)
        elif draw < self.mix.delayed + self.mix.retried:
            cls, payload["fail"] = RETRIED, 1
        else:
            cls = IMMEDIATE
        use_py = self.types.get("py") and self.rng.random() < self.mix.py_share
        task_type = self.types["py"] if use_py else self.types["cpp"]
        spec = bp.TaskSpec(id=f"s{seq}", payload=json.dumps(payload).encode(), max_retry=3,
                           delay_seconds=delay)
        return task_type, cls, delay, spec

    def run(self):
        try:
            self._run()
        except Exception as e:  # reported by the driver as a failed run
            self.error = repr(e)

    def _run(self):
        start = time.monotonic()
        while not self.stop_event.is_set():
            elapsed = time.monotonic() - start
            if elapsed >= self.seconds:
                break
            # At most 100 ms of traffic per pipeline: a producer that fell behind catches up
            # over several ticks rather than in one long call.
            due = min(int(self.rate * elapsed) - self.produced, max(1, int(self.rate / 10)))
            if due > 0:
                self._send(due)
            time.sleep(0.01)
        self.duration = time.monotonic() - start

    def _send(self, n):
        pipe = self.r.pipeline(transaction=False)
        ids = []
        for _ in range(n):
            seq = self.produced
            task_type, cls, delay, spec = self._spec(seq)
            self.tracker.expect(seq, cls, delay, expected_runs=2 if cls == RETRIED else 1)
            keys, args = bp.call_args(self.keys, "baton_v2_enqueue", task_type, {"n": 1},
                                      [spec.values()])
            pipe.execute_command("FCALL", "baton_v2_enqueue", len(keys), *keys, *args)
            ids.append(spec.id)
            self.produced += 1
        for task_id, reply in zip(ids, pipe.execute()):
            status = bp._s(reply[0])
            if status not in ("queued", "scheduled"):
                self.rejected.append((task_id, status, bp._s(reply[1])))
