"""Drives a redis-server that runs under callgrind (bench/run_callgrind.sh) through the Lua path of
protocol v2, with the reference client tests/protocol/baton_protocol.py (the fn wire format of
contract/protocol.json).

  callgrind_driver.py --port PORT --phase {baseline,enqueue,dequeue,full} [--tasks 5000]
                      [--read native|lua]

Every phase does the same connection work: one connection, FUNCTION LOAD of the library, the
version check, one configure read. Then
  baseline: nothing more;
  enqueue:  N tasks (200-byte payload, UUID-like ids) with baton_v2_enqueue in batches of 256;
  dequeue:  the same enqueues, then reads in batches of 64 until all N are delivered (no ack);
  full:     the same enqueues, then reads in batches of 64 and baton_v2_ack of each batch, until
            all N are done (checked: every ack says 'done', nothing left).
A read is the fast read path (XREADGROUP, then baton_v2_start: the C++ worker's) or, with
--read lua, baton_v2_dequeue.
Namespace settings stay at their defaults (events on, lease 30 s).
"""

import argparse
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "protocol"))

import redis  # noqa: E402

import baton_protocol as bp  # noqa: E402

NS = "bench"
TYPE = "noop"
ENQUEUE_BATCH = 256
DEQUEUE_BATCH = 64
PAYLOAD = b'{"data":"' + b"x" * 189 + b'"}'  # 200 bytes, as bench_throughput's


def task_id(i):
    return f"0190f0a0-0000-7000-8000-{i:012d}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--phase", choices=["baseline", "enqueue", "dequeue", "full"], required=True)
    ap.add_argument("--tasks", type=int, default=5000)
    ap.add_argument("--batch", type=int, default=0,
                    help="tasks per call of every kind (default: enqueue 256, read and ack 64)")
    ap.add_argument("--read", choices=["lua", "native"], default="native",
                    help="dequeue with baton_v2_dequeue (lua) or XREADGROUP + baton_v2_start")
    o = ap.parse_args()
    enqueue_batch = o.batch or ENQUEUE_BATCH
    dequeue_batch = o.batch or DEQUEUE_BATCH
    assert len(PAYLOAD) == 200

    r = redis.Redis(host="127.0.0.1", port=o.port)
    bp.load_library(r)
    b = bp.Baton(r, NS)
    b.configure()
    if o.phase == "baseline":
        return 0

    created = 1722489600
    for start in range(0, o.tasks, enqueue_batch):
        specs = [bp.TaskSpec(id=task_id(i), payload=PAYLOAD, created_at=created)
                 for i in range(start, min(o.tasks, start + enqueue_batch))]
        reply = b.enqueue(TYPE, specs)
        if any(status != "queued" for status, _ in reply):
            raise SystemExit(f"enqueue: unexpected reply {reply[:3]}")
    if o.phase == "enqueue":
        return 0

    done = 0
    while done < o.tasks:
        if o.read == "native":
            entries = b.fast_dequeue(TYPE, "g", "c1", dequeue_batch)
        else:
            entries = b.dequeue(TYPE, "g", "c1", dequeue_batch).entries
        if not entries:
            raise SystemExit(f"dequeue: nothing delivered after {done} of {o.tasks}")
        if o.phase == "dequeue":
            done += len(entries)
            continue
        statuses = b.ack(TYPE, "g", "c1", [(e.id, e.sid) for e in entries])
        if any(s != "done" for s in statuses):
            raise SystemExit(f"ack: unexpected reply {statuses[:3]}")
        done += len(statuses)
    if o.phase == "dequeue":
        return 0 if done == o.tasks else f"dequeue: {done} delivered of {o.tasks}"
    left = r.hlen(b.keys.tasks())
    if done != o.tasks or left != 0:
        raise SystemExit(f"full: {done} acked, {left} records left")
    return 0


if __name__ == "__main__":
    sys.exit(main())
