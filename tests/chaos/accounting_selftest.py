#!/usr/bin/python3
"""Shows that the chaos run's accounting can fail: against a real redis-server, hand-made states
(a lost task, an unknown task, a dead one, a re-run nothing explains) must be reported as such.
Runs in a few seconds: /usr/bin/python3 tests/chaos/accounting_selftest.py"""
import pathlib
import shutil
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tests" / "protocol"))
sys.path.insert(0, str(HERE))

import accounting  # noqa: E402
import baton_protocol as bp  # noqa: E402
from cluster import RedisServer  # noqa: E402

NS, TYPE = "chaos", "cpp"


def main():
    work = tempfile.mkdtemp(prefix="baton-chaos-selftest-")
    server = RedisServer("redis", work, work, aof=False)
    server.start()
    try:
        r = server.client()
        bp.load_library(r)
        baton = bp.Baton(r, NS)
        baton.enqueue(TYPE, [bp.TaskSpec(id="done-1"), bp.TaskSpec(id="dead-1", max_retry=0),
                             bp.TaskSpec(id="queued-1"), bp.TaskSpec(id="stranger")])
        entries = {e.id: e for e in baton.dequeue(TYPE, "baton", "w:h:1:aa:cpp", 2).entries}
        baton.ack(TYPE, "baton", "w:h:1:aa:cpp", [("done-1", entries["done-1"].sid)])
        baton.fail(TYPE, "baton", "w:h:1:aa:cpp", "dead-1", entries["dead-1"].sid, "error",
                   "planned")
        produced = {i: {"type": TYPE} for i in ("done-1", "dead-1", "queued-1", "lost-1")}
        states = accounting.final_states(r, NS, produced)
        got = {i: s for i, (s, _) in states.items()}
        want = {"done-1": "done", "dead-1": "dead", "queued-1": "queued", "lost-1": "missing"}
        assert got == want, got
        assert states["dead-1"][1]["error"] == "planned", states["dead-1"]
        assert accounting.unknown_ids(r, NS, produced) == ["stranger"]

        run = {"attempt": 1, "pid": 42, "label": "cpp-a", "start": 1000, "end": 1100,
               "outcome": "ok"}
        again = dict(run, attempt=2, start=5000, end=5100)
        none = {"worker_kills": [], "cuts": [], "redis_outages": []}
        causes, problems = accounting.explain_reruns("t", [run, again], {}, none)
        assert not causes and len(problems) == 1, (causes, problems)  # ran twice, worker alive
        killed = dict(none, worker_kills=[{"pid": 42, "ms": 1050}])
        causes, problems = accounting.explain_reruns("t", [dict(run, end=None), again], {},
                                                     killed)
        assert causes == ["worker killed mid-task"] and not problems, (causes, problems)
        reclaim = {"t": [{"ms": 4000, "pid": 42, "late_ms": 5, "deadline": 3995}]}
        causes, problems = accounting.explain_reruns("t", [run, again], reclaim, none)
        assert not causes and "no fault" in problems[0], problems  # lease lost, no fault
        cut = dict(none, cuts=[{"label": "cpp-a", "mode": "reset", "start": 1500, "end": 4500}])
        causes, problems = accounting.explain_reruns("t", [run, again], reclaim, cut)
        assert causes == ["lease expired during network cut (reset)"], (causes, problems)
        print("accounting self-test: 7 passed, 0 failed")
    finally:
        server.process.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
