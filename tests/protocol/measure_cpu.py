"""Measures what the hot path of protocol v2 costs Redis: CPU per task and memory per task.

Enqueues TASKS tasks (200-byte payload) in batches of 100 (baton_v2_enqueue), dequeues them 100
at a time with the namespace's default lease (baton_v2_dequeue) and acks them 100 at a time
(baton_v2_ack), on a fresh redis-server. Prints the Redis CPU (delta of INFO cpu used_cpu_user +
used_cpu_sys) per task for each phase and in total, used_memory per queued task after the
enqueue phase, and used_memory per finished task after the ack phase (what the done set keeps
during done_retention_s). Runs twice: with events off (namespace setting events_maxlen 0: the
memory figures exclude the events stream) and with events on (events_maxlen 100000, one events
entry per call). Last, a calibration run of plain stream commands shows what the bare XADD /
XREADGROUP / XACK + XDEL cost on the same machine.

Usage: /usr/bin/python3 tests/protocol/measure_cpu.py [tasks]
Not a test: figures depend on the machine. Client time is not counted, only the server's CPU.
"""

import json
import sys
import uuid

import baton_protocol as bp
import redis_harness

BATCH = 100
TASK_TYPE = "send_email"
GROUP = "workers"
CONSUMER = "worker:host:1234:abcd"


def payload_200():
    body = {"to": "someone@example.com", "template": "welcome", "n": 12345678901234567890}
    text = json.dumps(body, separators=(",", ":"))
    pad = 200 - len(text) - len(',"pad":""')
    body["pad"] = "x" * pad
    text = json.dumps(body, separators=(",", ":")).encode()
    assert len(text) == 200, len(text)
    return text


def cpu_seconds(r):
    info = r.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def run(tasks, events_maxlen):
    with redis_harness.RedisServer() as server:
        r = server.client()
        bp.load_library(r)
        b = bp.Baton(r, "bench")
        assert b.configure(events_maxlen=events_maxlen)["events_maxlen"] == events_maxlen
        payload = payload_200()
        created = 1722489600
        ids = [str(uuid.uuid4()) for _ in range(tasks)]
        r.execute_command("MEMORY", "PURGE")
        mem0 = r.info("memory")["used_memory"]
        figures = {}

        c0 = cpu_seconds(r)
        for i in range(0, tasks, BATCH):
            specs = [bp.TaskSpec(id=t, payload=payload, max_retry=3, created_at=created)
                     for t in ids[i:i + BATCH]]
            replies = b.enqueue(TASK_TYPE, specs)
            assert all(s == "queued" for s, _ in replies), replies[:3]
        c1 = cpu_seconds(r)
        mem1 = r.info("memory")["used_memory"]
        events_len = r.xlen(b.keys.events())
        figures["enqueue"] = c1 - c0

        delivered = []
        c0 = cpu_seconds(r)
        while True:
            entries = b.dequeue(TASK_TYPE, GROUP, CONSUMER, BATCH).entries
            if not entries:
                break
            delivered.extend((e.id, e.sid) for e in entries)
        c1 = cpu_seconds(r)
        figures["dequeue"] = c1 - c0
        assert len(delivered) == tasks, len(delivered)

        c0 = cpu_seconds(r)
        for i in range(0, tasks, BATCH):
            statuses = b.ack(TASK_TYPE, GROUP, CONSUMER, delivered[i:i + BATCH])
            assert all(s == "done" for s in statuses), statuses[:3]
        c1 = cpu_seconds(r)
        figures["ack"] = c1 - c0
        assert r.xlen(b.keys.stream(TASK_TYPE)) == 0
        assert r.xpending(b.keys.stream(TASK_TYPE), GROUP)["pending"] == 0
        assert r.zcard(b.keys.done()) == tasks
        mem2 = r.info("memory")["used_memory"]

        total = sum(figures.values())
        if events_maxlen == 0:
            label = "events off (events_maxlen 0)"
        else:
            label = f"events on (events_maxlen {events_maxlen})"
        print(f"{label}: {tasks} tasks, batches of {BATCH}")
        for phase in ("enqueue", "dequeue", "ack"):
            print(f"  {phase:8s} {figures[phase] / tasks * 1e6:6.2f} us CPU per task")
        print(f"  total    {total / tasks * 1e6:6.2f} us CPU per task")
        print(f"  memory   {(mem1 - mem0) / tasks:6.0f} bytes per queued task "
              f"(used_memory delta after enqueue; events stream entries: {events_len})")
        print(f"  memory   {(mem2 - mem0) / tasks:6.0f} bytes per finished task "
              f"(used_memory delta after ack: the done set within its retention)")


def run_bare_streams(tasks):
    """Calibration: the same workload with plain stream commands only (XADD pipelined 100 per
    round trip, XREADGROUP COUNT 100, XACK + XDEL of 100 SIDs): no task index, no duplicate
    check, no done markers, no events. What any Redis Streams queue pays on this machine."""
    with redis_harness.RedisServer() as server:
        r = server.client()
        stream = "bare"
        payload = payload_200()
        r.xgroup_create(stream, GROUP, id="0", mkstream=True)
        c0 = cpu_seconds(r)
        for i in range(0, tasks, BATCH):
            pipe = r.pipeline(transaction=False)
            for _ in range(BATCH):
                # The fields of a Baton entry (docs/keyspace.md): task, payload.
                pipe.execute_command("XADD", stream, "*",
                                     "task", f"{uuid.uuid4()}|3|0|1722489600||0|", "payload",
                                     payload)
            pipe.execute()
        c1 = cpu_seconds(r)
        sids = []
        while True:
            reply = r.xreadgroup(GROUP, CONSUMER, {stream: ">"}, count=BATCH)
            if not reply or not reply[0][1]:
                break
            sids.extend(sid for sid, _ in reply[0][1])
        c2 = cpu_seconds(r)
        for i in range(0, tasks, BATCH):
            r.xack(stream, GROUP, *sids[i:i + BATCH])
            r.xdel(stream, *sids[i:i + BATCH])
        c3 = cpu_seconds(r)
        print(f"calibration, plain stream commands without Baton: {tasks} tasks")
        for phase, seconds in (("xadd", c1 - c0), ("xreadgrp", c2 - c1), ("xack+xdel", c3 - c2)):
            print(f"  {phase:9s} {seconds / tasks * 1e6:6.2f} us CPU per task")
        print(f"  total     {(c3 - c0) / tasks * 1e6:6.2f} us CPU per task")


def main():
    tasks = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
    run(tasks, 0)
    run(tasks, 100000)
    run_bare_streams(tasks)


if __name__ == "__main__":
    main()
