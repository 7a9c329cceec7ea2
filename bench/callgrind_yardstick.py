"""Yardsticks for bench/run_callgrind.sh: the bare Redis Streams pattern, natively and wrapped in
a minimal Redis Functions library, driven like bench/callgrind_driver.py drives Baton (same task
count, 200-byte payload, a task field like Baton's, enqueue batches of 256, dequeue/ack batches of
64). The difference between the two is what the Lua bridge alone costs for the commands every
task needs (XADD, XREADGROUP, XACK, XDEL), before any of Baton's bookkeeping.

  callgrind_yardstick.py --port PORT --mode {native,functions} --phase {baseline,full} [--tasks N]
"""

import argparse
import sys

import redis

ENQUEUE_BATCH = 256
DEQUEUE_BATCH = 64
PAYLOAD = b'{"data":"' + b"x" * 189 + b'"}'
STREAM = "yardstick"

# XADD per task; XREADGROUP returning id, task field and payload per entry; XACK + XDEL.
LIBRARY = """#!lua name=yardstick
redis.register_function('ys_enqueue', function(keys, args)
  local out = {}
  for i = 1, #args, 2 do
    out[#out + 1] = redis.call('XADD', keys[1], '*', 'task', args[i], 'payload', args[i + 1])
  end
  return out
end)
redis.register_function('ys_dequeue', function(keys, args)
  local read = redis.call('XREADGROUP', 'GROUP', 'g', 'c1', 'COUNT', args[1], 'STREAMS', keys[1],
    '>')
  local out = {}
  if not read then
    return out
  end
  for _, e in ipairs(read[1][2]) do
    out[#out + 1] = e[1]
    out[#out + 1] = e[2][2]
    out[#out + 1] = e[2][4]
  end
  return out
end)
redis.register_function('ys_ack', function(keys, args)
  redis.call('XACK', keys[1], 'g', unpack(args))
  return redis.call('XDEL', keys[1], unpack(args))
end)
"""


def task_field(i):
    return f"0190f0a0-0000-7000-8000-{i:012d}|3|0|1722489600||0|"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--mode", choices=["native", "functions"], required=True)
    ap.add_argument("--phase", choices=["baseline", "full"], required=True)
    ap.add_argument("--tasks", type=int, default=5000)
    ap.add_argument("--batch", type=int, default=0,
                    help="tasks per call of every kind (default: enqueue 256, read and ack 64)")
    o = ap.parse_args()
    enqueue_batch = o.batch or ENQUEUE_BATCH
    dequeue_batch = o.batch or DEQUEUE_BATCH
    r = redis.Redis(host="127.0.0.1", port=o.port)
    if o.mode == "functions":
        r.function_load(LIBRARY, replace=True)
    else:
        r.ping()
    if o.phase == "baseline":
        return 0
    for start in range(0, o.tasks, enqueue_batch):
        ids = range(start, min(o.tasks, start + enqueue_batch))
        if o.mode == "functions":
            args = []
            for i in ids:
                args += [task_field(i), PAYLOAD]
            r.fcall("ys_enqueue", 1, STREAM, *args)
        else:
            p = r.pipeline(transaction=False)
            for i in ids:
                p.xadd(STREAM, {"task": task_field(i), "payload": PAYLOAD})
            p.execute()
    r.xgroup_create(STREAM, "g", "0")
    done = 0
    while done < o.tasks:
        if o.mode == "functions":
            sids = r.fcall("ys_dequeue", 1, STREAM, dequeue_batch)[0::3]
            if sids:
                r.fcall("ys_ack", 1, STREAM, *sids)
        else:
            read = r.xreadgroup("g", "c1", {STREAM: ">"}, count=dequeue_batch)
            sids = [e[0] for e in read[0][1]] if read else []
            if sids:
                p = r.pipeline(transaction=False)
                p.xack(STREAM, "g", *sids)
                p.xdel(STREAM, *sids)
                p.execute()
        if not sids:
            raise SystemExit(f"nothing delivered after {done} of {o.tasks}")
        done += len(sids)
    if r.xlen(STREAM) != 0:
        raise SystemExit("entries left in the stream")
    return 0


if __name__ == "__main__":
    sys.exit(main())
