"""Protocol tests of the fast read path: a worker reads its stream itself (XREADGROUP, the
reference client's Baton.read) and reports what it read with baton_v2_start (Baton.start;
Baton.fast_dequeue does both). The same entries, leases, events and checks as baton_v2_dequeue
(malformed entries dead-lettered, stale copies dropped, entries gone since the read refused),
acks after a start, and the argument checks of baton_v2_start.

Run: cd /work/main && /usr/bin/python3 -m unittest discover -s tests/protocol -p 'test_*.py' -v
or:  cd /work/main/tests/protocol &&
     ../../sdk/python/.venv/bin/python -m pytest test_protocol_fast_read.py -q
"""

import dataclasses
import json
import re
import threading
import time
import unittest

import redis

import baton_generated as gen
import baton_protocol as bp
import test_protocol_recovery as recovery
from protocol_testcase import CREATED, FAST, GROUP, NS, TYPE, ProtocolTestCase

OTHER = "send_sms"  # a second task type of the namespace
DEFAULT_LEASE_MS = gen.NAMESPACE_DEFAULTS["lease_ms"]
START_ARGV = ("group", "consumer", "lease_ms", "n")


class FastReadCase(ProtocolTestCase):
    # The entry helpers of the dequeue path's malformed-entry tests: raw(**fields) XADDs an entry,
    # full(payload=..., **parts) builds the fields baton_v2_enqueue writes with parts replaced.
    TASK_PARTS = recovery.MalformedEntryTest.TASK_PARTS
    raw = recovery.MalformedEntryTest.raw
    full = recovery.MalformedEntryTest.full

    def read(self, consumer="c1", count=100, task_type=TYPE, block_ms=None):
        return self.b.read(task_type, GROUP, consumer, count, block_ms)

    def start(self, reads, consumer="c1", lease_ms=0, task_type=TYPE):
        return self.b.start(task_type, GROUP, consumer, reads, lease_ms)

    def fast(self, consumer="c1", count=100, lease_ms=0, task_type=TYPE):
        return self.b.fast_dequeue(task_type, GROUP, consumer, count, lease_ms)

    def fast_one(self, consumer="c1", lease_ms=0):
        entries = self.fast(consumer, lease_ms=lease_ms)
        self.assertEqual(len(entries), 1, entries)
        return entries[0]

    def pel(self, task_type=TYPE):
        """The pending entries of GROUP: [(SID, consumer, times delivered)]."""
        return [(p["message_id"].decode(), p["consumer"].decode(), p["times_delivered"])
                for p in self.r.xpending_range(self.k.stream(task_type), GROUP, "-", "+", 10000)]

    def stream_sids(self, task_type=TYPE):
        return [sid.decode() for sid, _ in self.r.xrange(self.k.stream(task_type))]

    def fcall_start(self, keys, args):
        """A raw FCALL baton_v2_start (for the calls Baton.start cannot make: N other than the
        item count, foreign keys, ...); an error reply of the library raises BatonError."""
        try:
            return self.r.execute_command("FCALL", "baton_v2_start", len(keys), *keys, *args)
        except redis.exceptions.ResponseError as e:
            raise bp._translate(e) from None


class FastDequeueTest(FastReadCase):
    SPECS = [
        dict(max_retry=4, execution_timeout=9,
             extra=b'{"trace":{"traceparent":"00-ab-cd-01"},"k":"a|b"}'),
        dict(max_retry=0, payload=b'{"n":12345678901234567890,"f":1.10,"s":"caf\xc3\xa9"}'),
        dict(max_retry=25, extra=b'{"headers":{"from":"x"}}'),
        dict(),
    ]

    def test_fast_dequeue_delivers_what_dequeue_delivers(self):
        fast_ids = [f"f{i}" for i in range(len(self.SPECS))]
        slow_ids = [f"d{i}" for i in range(len(self.SPECS))]
        self.b.enqueue(TYPE, [self.spec(i, **s) for i, s in zip(fast_ids, self.SPECS)])
        self.b.enqueue(OTHER, [self.spec(i, **s) for i, s in zip(slow_ids, self.SPECS)])
        reads = self.read("c1")
        fast = self.fast_from(reads)
        slow = self.b.dequeue(OTHER, GROUP, "c1", 100).entries
        self.assertEqual([e.id for e in fast], fast_ids)
        self.assertEqual([e.id for e in slow], slow_ids)
        for f, d in zip(fast, slow):
            with self.subTest(task=f.id):
                # Every value but the id and the SID is the same, bytes for bytes.
                self.assertEqual(dataclasses.replace(d, id=f.id, sid=f.sid), f)
                self.assertIsInstance(f.payload, bytes)
                self.assertIsInstance(f.extra, bytes)
                self.assertEqual(bp.task_document(NS, TYPE, f),
                                 bp.task_document(NS, TYPE, dataclasses.replace(d, id=f.id)))
                # Started: leased to c1, the record unchanged (queued at the entry read).
                self.assertEqual(self.b.record(f.id), ("queued", TYPE, 0, f.sid))
        # What read() hands to start: SID, the task field's id and ATTEMPT, the Entry.
        self.assertEqual([r[:3] for r in reads], [(e.sid, e.id, "0") for e in fast])
        self.assertEqual(self.pel(), [(e.sid, "c1", 1) for e in fast])
        self.assertEqual(self.pel(OTHER), [(e.sid, "c1", 1) for e in slow])
        self.assertEqual(fast[0].execution_timeout, 9)
        self.assertIsNone(fast[3].execution_timeout)
        self.assertEqual(fast[0].extra, self.SPECS[0]["extra"])

    def fast_from(self, reads):
        refused = self.start(reads)
        self.assertEqual(refused, [])
        return [r[3] for r in reads]

    def test_read_creates_the_group_at_zero_so_the_backlog_is_delivered(self):
        self.b.enqueue(TYPE, [self.spec(f"t{i}") for i in range(5)])
        self.assertEqual(self.r.xinfo_groups(self.k.stream(TYPE)), [])
        self.assertEqual([e.id for e in self.fast(count=3)], ["t0", "t1", "t2"])
        (group,) = self.r.xinfo_groups(self.k.stream(TYPE))
        self.assertEqual(group["name"], GROUP.encode())
        self.assertEqual([e.id for e in self.fast(count=10)], ["t3", "t4"])
        self.assertEqual(self.pending(), 5)
        self.assertEqual(self.fast(), [])

    def test_read_of_a_missing_stream_creates_it_and_starts_nothing(self):
        self.assertEqual(self.read(), [])
        self.assertEqual(self.r.xlen(self.k.stream(TYPE)), 0)
        self.assertEqual(len(self.r.xinfo_groups(self.k.stream(TYPE))), 1)
        # fast_dequeue calls baton_v2_start only when it read something.
        self.assertEqual(self.fast(), [])
        self.assertEqual(self.r.exists(self.k.leases(TYPE)), 0)
        self.assertEqual(self.b.events(), [])
        # A group that exists already (made by dequeue or another worker) is simply read.
        self.enqueue("t1")
        self.assertEqual([e.id for e in self.fast("c2")], ["t1"])

    def test_a_blocking_read_returns_what_arrives_meanwhile(self):
        self.assertEqual(self.read(block_ms=30), [])
        other = bp.Baton(self.server.client(), NS)
        timer = threading.Timer(0.1, lambda: other.enqueue(TYPE, [self.spec("t1")]))
        timer.start()
        try:
            began = time.monotonic()
            reads = self.read(block_ms=5000)
            waited = time.monotonic() - began
        finally:
            timer.join()
            other.r.close()
        self.assertEqual([r[1] for r in reads], ["t1"])
        self.assertLess(waited, 4)
        self.assertEqual(self.start(reads), [])
        self.assertEqual(self.last_event("t1")["to"], "active")

    def test_fast_readers_and_dequeuers_share_one_group(self):
        self.b.enqueue(TYPE, [self.spec(f"t{i}") for i in range(6)])
        got = [e.id for e in self.fast("fast", count=2)]
        got += [e.id for e in self.dequeue("slow", count=2)]
        got += [e.id for e in self.fast("fast", count=10)]
        self.assertEqual(got, [f"t{i}" for i in range(6)])
        self.assertEqual(sorted(c for _, c, _ in self.pel()), ["fast"] * 4 + ["slow"] * 2)

    def test_large_batches_cross_the_command_chunk_size(self):
        n = 1200
        self.b.enqueue(TYPE, [self.spec(f"t{i}") for i in range(n)])
        first = self.fast(count=1000)
        self.assertEqual(len(first), 1000)
        self.assertEqual(len(self.b.events()[-1]["ids"]), 1000)
        entries = first + self.fast(count=1000)
        self.assertEqual([e.id for e in entries], [f"t{i}" for i in range(n)])
        self.assertEqual(self.pending(), n)
        self.assertEqual(self.ack(entries), ["done"] * n)
        self.assertEqual((self.r.hlen(self.k.tasks()), self.r.xlen(self.k.stream(TYPE)),
                          self.pending()), (0, 0, 0))

    def test_non_utf8_bytes_in_extra_survive_the_fast_read(self):
        # baton_v2_enqueue checks only the first and last byte of extra, and never decodes it.
        extra = b'{"a":"\xff\xfe"}'
        self.enqueue("f1", extra=extra)
        self.enqueue("d1", task_type=OTHER, extra=extra)
        (f,) = self.fast()
        (d,) = self.b.dequeue(OTHER, GROUP, "c1", 10).entries
        self.assertEqual(f.extra, extra)
        self.assertEqual(dataclasses.replace(d, id=f.id, sid=f.sid), f)


class FastReadLeaseTest(FastReadCase):
    def test_the_lease_length_given_lands_in_the_leases_hash(self):
        self.enqueue("t1")
        before = self.now_ms()
        (e,) = self.fast("worker-a", lease_ms=5000)
        after = self.now_ms()
        self.assertEqual(self.leases(), {"worker-a": 5000})
        held = self.b.lease(TYPE, GROUP, e.sid)
        self.assertEqual((held.consumer, held.lease_ms, held.deliveries), ("worker-a", 5000, 1))
        # The lease starts at the read (the PEL's delivery time), not at the start call.
        self.assert_lease_end(self.lease("t1"), before + 5000, after + 5000)

    def test_lease_zero_takes_the_namespace_setting(self):
        self.b.enqueue(TYPE, [self.spec("t1"), self.spec("t2")])
        self.fast("c1", count=1)
        self.assertEqual(self.leases(), {"c1": DEFAULT_LEASE_MS})
        self.b.configure(lease_ms=7000)
        self.fast("c2", count=1)
        self.assertEqual(self.leases(), {"c1": DEFAULT_LEASE_MS, "c2": 7000})
        self.assertEqual(self.b.lease(TYPE, GROUP, self.b.record("t2")[3]).lease_ms, 7000)
        # The resolved length is stored: a later change of the setting does not move it.
        self.b.configure(lease_ms=9000)
        self.assertEqual(self.leases()["c2"], 7000)
        # The last length asked for is the consumer's, for every task it holds.
        self.enqueue("t3")
        self.fast("c1", lease_ms=2000)
        self.assertEqual(self.leases(), {"c1": 2000, "c2": 7000})
        self.assertEqual(self.b.lease(TYPE, GROUP, self.b.record("t1")[3]).lease_ms, 2000)

    def test_a_consumer_whose_leases_entry_was_deleted_gets_it_back_at_its_next_start(self):
        self.enqueue("t1")
        self.fast("c1", lease_ms=5000)
        # What baton_v2_reclaim does to a consumer it prunes (idle, holding nothing).
        self.r.hdel(self.k.leases(TYPE), "c1")
        self.assertEqual(self.r.exists(self.k.leases(TYPE)), 0)
        self.enqueue("t2")
        self.assertEqual([e.id for e in self.fast("c1", lease_ms=5000)], ["t2"])
        self.assertEqual(self.leases(), {"c1": 5000})
        # Also from a start that reports nothing read.
        self.r.hdel(self.k.leases(TYPE), "c1")
        self.assertEqual(self.start([], "c1", lease_ms=6000), [])
        self.assertEqual(self.leases(), {"c1": 6000})

    def test_start_with_no_entries_only_records_the_lease(self):
        self.enqueue("t1")
        self.r.hset(self.k.leases(TYPE), "other", 3000)
        before = self.snapshot()
        self.assertEqual(self.start([], "c9", lease_ms=4000), [])
        self.assertEqual(self.leases(), {"other": 3000, "c9": 4000})
        self.r.hdel(self.k.leases(TYPE), "c9")
        self.assertEqual(self.snapshot(), before)  # nothing else: no group, no events
        self.assertEqual(self.start([], "c9"), [])  # 0: the namespace's lease_ms
        self.assertEqual(self.leases()["c9"], DEFAULT_LEASE_MS)
        # The same length again writes nothing at all.
        before = self.snapshot()
        self.assertEqual(self.start([], "c9", lease_ms=DEFAULT_LEASE_MS), [])
        self.assertEqual(self.snapshot(), before)

    def test_reclaim_takes_back_a_fast_read_task_after_its_lease(self):
        self.enqueue("t1", max_retry=3)
        (e,) = self.fast("w1", lease_ms=5000)
        self.assertEqual(self.b.reclaim(TYPE, 10, **FAST)[:3], (0, 0, 0))
        self.set_idle(e.sid, 5000 + 50)  # w1's own lease length (5 s) ran out
        self.assertEqual(self.b.reclaim(TYPE, 10, **FAST)[:3], (1, 1, 0))
        (err,) = self.b.error_history("t1")
        self.assertEqual((err["kind"], err["worker"]), ("lease_expired", "w1"))
        # A late ack of the run that lost its lease still counts (stale_done).
        self.assertEqual(self.ack([e], "w1"), ["stale_done"])

    def test_extend_renews_a_fast_read_task(self):
        self.enqueue("t1")
        (e,) = self.fast("w1", lease_ms=2000)
        self.expire_lease("t1")
        before = self.now_ms()
        self.assertEqual(self.b.extend(TYPE, GROUP, "w1", [(e.id, e.sid)], 5000), [e.sid])
        held = self.b.lease(TYPE, GROUP, e.sid)
        self.assertEqual((held.consumer, held.lease_ms), ("w1", 5000))
        self.assert_lease_end(held.ends_ms, before + 5000, self.now_ms() + 5000)


class FastReadEventsTest(FastReadCase):
    def test_one_queued_to_active_events_entry_per_start_call(self):
        ids = [f"t{i}" for i in range(5)]
        self.b.enqueue(TYPE, [self.spec(i) for i in ids])
        self.assertEqual(len(self.fast("w1", count=3)), 3)
        self.assertEqual(len(self.fast("w2", count=10)), 2)
        events = self.b.events()
        self.assertEqual(len(events), 3, events)
        self.assert_event(events[0], "new", "queued", [0] * 5, ids=ids)
        self.assert_event(events[1], "queued", "active", [1] * 3, "w1", ids=ids[:3])
        self.assert_event(events[2], "queued", "active", [1] * 2, "w2", ids=ids[3:])
        self.assertEqual(events[1]["error"], "")
        # The same fields and values as the entry of baton_v2_dequeue.
        self.enqueue("d1", task_type=OTHER)
        self.b.dequeue(OTHER, GROUP, "w1", 10)
        dequeued = self.b.events()[-1]
        self.assertEqual(set(dequeued), set(events[1]))
        self.assertEqual({f: dequeued[f] for f in ("from", "to", "worker", "attempts", "error")},
                         {f: events[1][f] for f in ("from", "to", "worker", "attempts",
                                                    "error")} | {"attempts": ["1"]})

    def test_no_events_when_events_maxlen_is_zero(self):
        self.assertEqual(self.b.configure(events_maxlen=0)["events_maxlen"], 0)
        self.b.enqueue(TYPE, [self.spec("t1"), self.spec("t2")])
        copy = self.raw(**self.full(id="t2"))  # a stale copy
        bad = self.raw(**self.full(id="m1", max_retry="x"))  # malformed
        reads = self.read()
        self.assertEqual(self.start(reads), [copy, bad])
        self.assertEqual(self.r.exists(self.k.events()), 0)
        # The rest of the work is done all the same.
        self.assertEqual(self.b.record("m1"), ("dead", TYPE, 1, ""))
        self.assertEqual(self.stream_sids(), [r[0] for r in reads[:2]])
        self.assertEqual(self.ack([r[3] for r in reads[:2]]), ["done", "done"])
        self.assertEqual(self.r.exists(self.k.events()), 0)

    def test_a_retried_task_starts_with_attempt_2(self):
        self.enqueue("t1", max_retry=3)
        e = self.fast_one("w1")
        self.assertEqual(e.attempt, 0)
        self.assert_event(self.last_event("t1"), "queued", "active", 1, "w1", ids=["t1"])
        outcome, due, n = self.fail_task(e, consumer="w1", **FAST)
        self.assertEqual((outcome, n), ("retry", 1))
        self.assertEqual(self.promote_when_due(due)[0], 1)
        (read,) = self.read("w2")
        self.assertEqual(read[1:3], ("t1", "1"))
        self.assertEqual(self.start([read], "w2"), [])
        e = read[3]
        self.assertEqual((e.id, e.attempt), ("t1", 1))
        self.assertEqual(self.b.record("t1"), ("queued", TYPE, 1, e.sid))
        self.assert_event(self.last_event("t1"), "queued", "active", 2, "w2", ids=["t1"])
        self.assertEqual(self.ack([e], "w2"), ["done"])
        self.assert_event(self.last_event("t1"), "active", "done", 2, "w2")

    def test_start_judges_an_entry_by_itself_not_by_the_values_passed(self):
        # A worker that could not split the entries (id and attempt ''), or passed a wrong
        # attempt: the entries are read again and, being valid, start with their own values.
        self.b.enqueue(TYPE, [self.spec("t1"), self.spec("t2"), self.spec("t3")])
        reads = self.read()
        blind = [(reads[0][0], "", "", None), (reads[1][0], "t2", "7", None), reads[2]]
        self.assertEqual(self.start(blind), [])
        self.assert_event(self.b.events()[-1], "queued", "active", [1, 1, 1], "c1",
                          ids=["t1", "t2", "t3"])

    def test_an_attempt_past_the_small_integers_table_starts_with_the_next_attempt(self):
        sid = self.raw(**self.full(id="h1", attempt="99"))
        self.r.hset(self.k.tasks(), "h1", f"queued|{TYPE}|99|{sid}")
        (read,) = self.read()
        self.assertEqual(read[1:3], ("h1", "99"))
        self.assertEqual(self.start([read]), [])
        self.assert_event(self.last_event("h1"), "queued", "active", 100, "c1", ids=["h1"])


class FastReadMalformedTest(FastReadCase):
    def test_malformed_entries_are_dead_lettered_and_the_rest_of_the_batch_starts(self):
        self.enqueue("good1")
        sid_missing = self.raw(**self.full(id="m1", payload=None))
        sid_int = self.raw(**self.full(id="m2", max_retry="three"))
        sid_norec = self.raw(**self.full(id="m3"))
        sid_split = self.raw(task="m4|3|0", payload="{}")
        sid_notask = self.raw(payload="{}")
        sid_badid = self.raw(**self.full(id="bad id"))
        sid_neg = self.raw(**self.full(id="m5", delay_seconds="-1"))
        self.enqueue("good2")
        reads = self.read()
        by_sid = {r[0]: r for r in reads}
        # What the reference client hands to start: the task field's id and ATTEMPT whenever it
        # splits (docs/protocol.md), '' when it does not; an Entry only when it is well formed.
        self.assertEqual([by_sid[s][1:3] for s in (sid_missing, sid_int, sid_norec, sid_split,
                                                   sid_notask, sid_badid, sid_neg)],
                         [("m1", "0"), ("m2", "0"), ("m3", "0"), ("", ""), ("", ""),
                          ("bad id", "0"), ("m5", "0")])
        self.assertIsNone(by_sid[sid_int][3])
        self.assertIsNotNone(by_sid[sid_norec][3])  # looks valid: only the record is missing
        refused = self.start(reads)
        bad_sids = [sid_missing, sid_int, sid_norec, sid_split, sid_notask, sid_badid, sid_neg]
        self.assertEqual(refused, bad_sids)  # in read order
        expected = {
            "m1": (sid_missing, "missing field payload"),
            "m2": (sid_int, "max_retry is not an integer"),
            "m3": (sid_norec, "no task record for id m3"),
            "m4": (sid_split, "field task is not "
                              "ID|MAX_RETRY|DELAY_SECONDS|CREATED_AT|EXECUTION_TIMEOUT|ATTEMPT|"
                              "EXTRA"),
            f"malformed-{sid_notask}": (sid_notask, "missing field task"),
            f"malformed-{sid_badid}": (sid_badid, "id is not a valid task id"),
            "m5": (sid_neg, "delay_seconds is not an integer"),
        }
        dead = {m.decode() for m in self.r.zrange(self.k.dead(TYPE), 0, -1)}
        self.assertEqual(dead, set(expected))
        for task_id, (sid, reason) in expected.items():
            with self.subTest(task=task_id):
                (err,) = self.b.error_history(task_id)
                self.assertEqual((err["kind"], err["error"], err["worker"], err["attempt"]),
                                 ("malformed", f"malformed stream entry {sid}: {reason}", "c1",
                                  1))
                self.assertEqual(self.b.record(task_id), ("dead", TYPE, 1, ""))
                self.assert_event(self.last_event(task_id), "queued", "dead", 1, "c1",
                                  err["error"], ids=[task_id])
        self.assertEqual(self.b.body("m2")["max_retry"], "three")
        self.assertEqual(self.b.body("m2")["raw"], self.full(id="m2", max_retry="three"))
        # Acked and deleted: only the two good tasks are left in the stream and the PEL; they
        # started (one events entry), leased to c1.
        good = [r[0] for r in reads if r[0] not in bad_sids]
        self.assertEqual(self.stream_sids(), good)
        self.assertEqual(self.pel(), [(s, "c1", 1) for s in good])
        (active,) = [e for e in self.b.events() if e["to"] == "active"]
        self.assert_event(active, "queued", "active", [1, 1], "c1", ids=["good1", "good2"])
        self.assertEqual(self.leases(), {"c1": DEFAULT_LEASE_MS})
        self.assertEqual(self.ack([by_sid[s][3] for s in good]), ["done", "done"])

    def test_fast_dequeue_returns_only_the_entries_that_may_run(self):
        self.enqueue("good1")
        self.raw(**self.full(id="m3"))  # splits and parses, but no enqueue wrote it
        self.raw(junk="1")
        self.enqueue("good2")
        self.assertEqual([e.id for e in self.fast()], ["good1", "good2"])
        self.assertEqual(self.r.zcard(self.k.dead(TYPE)), 2)
        self.assertEqual(self.pending(), 2)

    def test_a_batch_of_only_malformed_entries(self):
        sids = [self.raw(junk="1"), self.raw(task="x", payload="{}")]
        self.assertEqual(self.start(self.read(), lease_ms=3000), sids)
        self.assertEqual((self.pending(), self.r.xlen(self.k.stream(TYPE))), (0, 0))
        self.assertEqual(self.r.zcard(self.k.dead(TYPE)), 2)
        self.assertEqual([e["to"] for e in self.b.events()], ["dead", "dead"])
        self.assertEqual(self.leases(), {"c1": 3000})

    def test_a_malformed_entry_never_overwrites_a_live_task_with_its_id(self):
        # Entries carrying the id of a live task, t1 (read in the same batch) or t0 (started
        # before): they are buried as malformed-SID, the live tasks keep their records. Once with
        # what the reference client passes, once with a worker that passes '' for every entry it
        # could not decode: start must judge by the entry's own id, not by the one passed.
        for blank in (False, True):
            with self.subTest(blank_ids=blank):
                self.r.flushall()
                self.enqueue("t0")
                (t0,) = self.fast("c0")
                _, sid1 = self.enqueue("t1")
                bad = [self.raw(task="t1|3|0", payload="{}"),
                       self.raw(**self.full(id="t1", max_retry="x")),
                       self.raw(**self.full(id="t1", payload=None)),
                       self.raw(**self.full(id="t0", created_at="soon"))]
                reads = self.read()
                self.assertEqual([r[0] for r in reads], [sid1] + bad)
                if blank:
                    reads = [reads[0]] + [(r[0], "", "", None) for r in reads[1:]]
                self.assertEqual(self.start(reads), bad)
                self.assertEqual(self.b.record("t1"), ("queued", TYPE, 0, sid1))
                self.assertEqual(self.b.record("t0"), ("queued", TYPE, 0, t0.sid))
                self.assertEqual(self.r.zcard(self.k.dead(TYPE)), len(bad))
                for sid in bad:
                    self.assertEqual(self.b.record(f"malformed-{sid}"), ("dead", TYPE, 1, ""))
                self.assertEqual(self.b.error_history("t1"), [])
                self.assertEqual(self.stream_sids(), [t0.sid, sid1])
                self.assertEqual(self.ack([t0, reads[0][3]]), ["done", "done"])

    def test_a_foreign_entry_with_undecodable_bytes_is_dead_lettered(self):
        sid = self.r.xadd(self.k.stream(TYPE),
                          {"task": b"\xff\xfe|3|0|%d||0|" % CREATED, "payload": b"{}"}).decode()
        (read,) = self.read()
        self.assertIsNotNone(read[3])  # the client cannot tell: the id is not checked
        self.assertEqual(self.start([read]), [sid])
        (err,) = self.b.error_history(f"malformed-{sid}")
        self.assertEqual(err["error"], f"malformed stream entry {sid}: id is not a valid task id")
        self.assertEqual((self.pending(), self.r.xlen(self.k.stream(TYPE))), (0, 0))

    def test_stale_copy_is_acked_deleted_and_refused(self):
        _, sid = self.enqueue("t1")
        copy = self.raw(**self.full(id="t1"))
        reads = self.read()
        self.assertEqual([r[:3] for r in reads], [(sid, "t1", "0"), (copy, "t1", "0")])
        self.assertEqual(self.start(reads), [copy])
        # The copy left the stream and the PEL; t1 started at its own entry.
        self.assertEqual(self.stream_sids(), [sid])
        self.assertEqual(self.pel(), [(sid, "c1", 1)])
        self.assertEqual(self.b.record("t1"), ("queued", TYPE, 0, sid))
        events = self.b.events("t1")
        self.assert_event(events[-2], "queued", "active", 1, "c1", ids=["t1"])
        self.assert_event(events[-1], "queued", "deleted", 0, "c1", f"stale copy {copy}",
                          ids=["t1"])
        self.assertEqual(self.b.error_history("t1"), [])
        self.assertEqual(self.r.zcard(self.k.dead(TYPE)), 0)
        self.assertEqual(self.ack([reads[0][3]]), ["done"])

    def test_stale_copy_of_a_task_in_another_state_is_dropped(self):
        self.kill("t1")  # dead: a copy of it must not run, nor leave the dead-letter queue
        self.enqueue("t2", delay_seconds=60)  # scheduled
        copies = [self.raw(**self.full(id="t1")), self.raw(**self.full(id="t2"))]
        self.assertEqual(self.start(self.read("c2"), "c2"), copies)
        self.assertEqual(self.b.record("t1"), ("dead", TYPE, 1, ""))
        self.assertEqual(self.b.record("t2"), ("scheduled", TYPE, 0, ""))
        self.assertEqual(self.r.zrange(self.k.dead(TYPE), 0, -1), [b"t1"])
        self.assertEqual((self.pending(), self.r.xlen(self.k.stream(TYPE))), (0, 0))
        self.assertEqual([e["to"] for e in self.b.events()[-2:]], ["deleted", "deleted"])

    def test_start_judges_every_entry_as_dequeue_does(self):
        # The same stream, once through baton_v2_dequeue and once through the fast read path:
        # the same dataset afterwards (SIDs and clock values aside), and start refuses exactly
        # the entries dequeue did not deliver.
        def scenario():
            self.r.flushall()
            sids = [self.enqueue("good1")[1], self.enqueue("t1")[1]]
            for fields in (self.full(id="m1", payload=None), self.full(id="m2", attempt="x"),
                           self.full(id="m3"), {"task": "m4|3|0", "payload": "{}"},
                           {"payload": "{}"}, self.full(id="bad id"),
                           self.full(id="t1"),  # stale copy
                           # malformed, with the id of a live task
                           self.full(id="t1", max_retry="x"), {"task": "t1|3|0", "payload": "{}"},
                           {"task": "t1", "payload": "{}", "extra": "1"}):
                sids.append(self.raw(**fields))
            sids.append(self.enqueue("good2")[1])
            return sids

        sids = scenario()
        delivered = [e.sid for e in self.b.dequeue(TYPE, GROUP, "c1", 100).entries]
        via_dequeue = self.normalized_dataset(sids)
        sids = scenario()
        reads = self.read()
        refused = self.start(reads)
        via_start = self.normalized_dataset(sids)
        self.assertEqual([s for s in sids if s not in refused], [sids[i] for i in (0, 1, 12)])
        self.assertEqual(len(delivered), 3)
        self.assertEqual(via_start, via_dequeue)
        self.assertEqual(len(via_start["dead"]), 9)
        self.assertEqual(via_start["tasks"]["t1"], f"queued|{TYPE}|0|SID1")

    def normalized_dataset(self, sids):
        """Every key of the namespace, with SIDs named by creation order and clock values
        left out, so that two runs of one scenario compare equal."""
        names = {sid: f"SID{i}" for i, sid in enumerate(sids)}

        def norm(text):
            if isinstance(text, bytes):
                text = text.decode()
            return re.sub(r"[0-9]+-[0-9]+", lambda m: names.get(m.group(), m.group()), text)

        errors = {}
        for f, v in self.r.hgetall(self.k.errors()).items():
            v = json.loads(v) if b"|" in f else v.decode()
            if isinstance(v, dict):
                v.pop("at_ms")
                v["error"] = norm(v["error"])
            errors[norm(f)] = v
        return {
            "keys": sorted(norm(k) for k in self.all_keys()),
            "tasks": {norm(f): norm(v) for f, v in self.r.hgetall(self.k.tasks()).items()},
            "bodies": {norm(f): json.loads(v) for f, v in
                       self.r.hgetall(self.k.bodies()).items()},
            "errors": errors,
            "dead": sorted(norm(m) for m in self.r.zrange(self.k.dead(TYPE), 0, -1)),
            "stream": [(norm(s), f) for s, f in self.r.xrange(self.k.stream(TYPE))],
            "pel": [(norm(s), c, n) for s, c, n in self.pel()],
            "leases": self.leases(),
            "events": [{f: (norm(v) if isinstance(v, str) else [norm(x) for x in v])
                        for f, v in e.items() if f != "event_id"} for e in self.b.events()],
        }


class FastReadGoneTest(FastReadCase):
    def test_cancel_between_read_and_start_is_refused_the_read_made_it_active(self):
        _, sid = self.enqueue("t1")
        reads = self.read()
        before = self.snapshot()
        message = self.assert_error("BATON_CONFLICT", self.b.cancel, TYPE, "t1")
        self.assertIn("active on consumer c1", message)
        self.assertEqual(self.snapshot(), before)
        self.assertEqual(self.start(reads), [])
        self.assertEqual(self.b.record("t1"), ("queued", TYPE, 0, sid))

    def test_an_entry_gone_since_the_read_is_refused_and_nothing_else_happens(self):
        # What a cancel would do if the read had not made the task active: the entry and the
        # record go. (The read does make it active, see above; a stale ack is the real case,
        # below.)
        self.b.enqueue(TYPE, [self.spec("t1"), self.spec("t2")])
        reads = self.read()
        self.r.xdel(self.k.stream(TYPE), reads[0][0])
        self.r.hdel(self.k.tasks(), "t1")
        self.start([], "c1")  # the lease length is stored already: start itself writes nothing
        before = self.snapshot()
        self.assertEqual(self.start(reads[:1]), [reads[0][0]])
        self.assertEqual(self.snapshot(), before)
        # In a batch: the rest starts.
        self.assertEqual(self.start(reads), [reads[0][0]])
        self.assert_event(self.b.events()[-1], "queued", "active", [1], "c1", ids=["t2"])
        self.assertEqual(self.r.zcard(self.k.dead(TYPE)), 0)

    def test_an_entry_deleted_by_hand_whose_record_still_points_at_it_starts(self):
        # start trusts a record queued at the SID read (it reads no entry again then): the
        # task is live by its record, so it runs, and its ack finishes it.
        _, sid = self.enqueue("t1")
        reads = self.read()
        self.r.xdel(self.k.stream(TYPE), sid)
        self.assertEqual(self.start(reads), [])
        self.assert_event(self.last_event("t1"), "queued", "active", 1, "c1")
        self.assertEqual(self.ack([reads[0][3]]), ["done"])
        self.assertEqual(self.pending(), 0)

    def test_a_newer_copy_removed_by_a_stale_ack_since_the_read_is_refused(self):
        # t1 ran on 'slow', lost its lease and came back as a retry; w2 reads the new copy, then
        # slow's late ack (stale_done) deletes it and finishes t1 before w2's start.
        self.enqueue("t1")
        old = self.dequeue_one("slow")
        self.expire_lease("t1")
        self.b.reclaim(TYPE, 10, **FAST)
        self.promote_when_due(self.r.zscore(self.k.scheduled(TYPE), "t1"))
        reads = self.read("w2")
        self.assertEqual([r[1:3] for r in reads], [("t1", "1")])
        self.assertEqual(self.ack([old], "slow"), ["stale_done"])
        events = self.b.events()
        self.assertEqual(self.start(reads, "w2"), [reads[0][0]])
        self.assertEqual(self.b.events(), events)
        self.assertIsNone(self.b.record("t1"))
        self.assertEqual(self.b.final_state("t1")[0], "done")
        self.assertEqual(self.r.zcard(self.k.dead(TYPE)), 0)


class FastReadAckTest(FastReadCase):
    def test_ack_after_start(self):
        self.b.enqueue(TYPE, [self.spec("t1"), self.spec("t2")])
        entries = self.fast("w1")
        before = self.now_ms()
        self.assertEqual(self.ack(entries, "w1"), ["done", "done"])
        state, finished = self.b.final_state("t1")
        self.assertEqual(state, "done")
        self.assertTrue(before <= finished <= self.now_ms())
        self.assertIsNone(self.b.record("t1"))
        self.assertEqual((self.r.xlen(self.k.stream(TYPE)), self.pending()), (0, 0))
        self.assert_event(self.last_event("t1"), "active", "done", [1, 1], "w1",
                          ids=["t1", "t2"])
        self.assertEqual(self.ack(entries[:1], "w1"), ["gone"])

    def test_fail_after_start(self):
        self.enqueue("t1", max_retry=0)
        e = self.fast_one("w1")
        self.assertEqual(self.fail_task(e, consumer="w1")[0::2], ("dead", 1))
        self.assertEqual(self.b.record("t1"), ("dead", TYPE, 1, ""))
        self.assertEqual(self.pending(), 0)

    def test_ack_of_a_refused_sid(self):
        # A worker must not run a refused entry; if it does anyway and acks it, ack answers as
        # docs/protocol.md says for an id whose record is not queued at that SID.
        _, sid = self.enqueue("t1")
        copy = self.raw(**self.full(id="t1"))  # stale copy
        norec = self.raw(**self.full(id="m3"))  # valid-looking, no record: dead as m3
        nosplit = self.raw(task="m4", payload="{}")  # dead as malformed-SID
        reads = self.read()
        self.assertEqual(self.start(reads), [copy, norec, nosplit])
        # A stale copy: t1 is still live (queued at sid), so the ack is 'stale_done': success is
        # recorded, and t1's own entry, "a newer stream copy", is deleted.
        self.assertEqual(self.b.ack(TYPE, GROUP, "c1", [("t1", copy)]), ["stale_done"])
        self.assertEqual(self.b.final_state("t1")[0], "done")
        self.assertIsNone(self.b.record("t1"))
        self.assertEqual(self.stream_sids(), [])
        self.assert_event(self.last_event("t1"), "queued", "done", 0, "c1")
        # ... so the ack of the entry that did start finds nothing ('gone'), and its XACK ends
        # its lease.
        self.assertEqual(self.b.ack(TYPE, GROUP, "c1", [("t1", sid)]), ["gone"])
        self.assertEqual(self.pending(), 0)
        # A dead-lettered entry under its own id: the task is dead, so the ack is 'stale_done'
        # and it leaves the dead-letter queue (a replay must not rerun a task that succeeded).
        self.assertEqual(self.b.ack(TYPE, GROUP, "c1", [("m3", norec)]), ["stale_done"])
        self.assertEqual(self.b.final_state("m3")[0], "done")
        self.assertEqual(self.b.error_history("m3"), [])
        # One dead-lettered as malformed-SID: its id has no record, 'gone'; the DLQ keeps it.
        self.assertEqual(self.b.ack(TYPE, GROUP, "c1", [("m4", nosplit)]), ["gone"])
        self.assertEqual(self.r.zrange(self.k.dead(TYPE), 0, -1),
                         [f"malformed-{nosplit}".encode()])


class StartArgumentsTest(FastReadCase):
    def setUp(self):
        super().setUp()
        self.b.enqueue(TYPE, [self.spec("t1"), self.spec("t2")])
        self.bad = self.raw(junk="1")  # would be dead-lettered by an accepted call
        self.reads = self.read()
        self.start([], "c1", lease_ms=5000)
        self.items = [{"sid": r[0], "id": r[1], "attempt": r[2]} for r in self.reads]
        self.fixed = {"group": GROUP, "consumer": "c1", "lease_ms": 2000, "n": 3}

    def refused(self, field, fn, *args, **kwargs):
        with self.assertRaises(bp.BatonError) as cm:
            fn(*args, **kwargs)
        message = str(cm.exception)
        self.assertTrue(message.startswith(f"BATON_INVALID {field}: "), message)
        self.assertEqual(cm.exception.code, "invalid_argument")
        return message

    def call(self, items=None, more=(), **changes):
        """baton_v2_start with self.fixed and self.items, the given ones changed, and the values
        `more` appended to ARGV."""
        fixed = dict(self.fixed, **changes)
        keys, args = bp.call_args(self.k, "baton_v2_start", TYPE, fixed,
                                  self.items if items is None else items)
        return self.fcall_start(keys, args + list(more))

    def test_the_contract_of_baton_v2_start(self):
        self.assertEqual(gen.FUNCTIONS["baton_v2_start"],
                         (gen.FUNCTIONS["baton_v2_dequeue"][0], list(START_ARGV),
                          ["sid", "id", "attempt"]))

    def test_invalid_arguments_are_refused_and_nothing_is_written(self):
        before = self.snapshot()
        leases = self.leases()
        cases = [
            ("ARGV", dict(n=2)),
            ("ARGV", dict(n=4)),
            ("ARGV", dict(n=0)),
            ("ARGV", dict(more=["0"])),
            ("ARGV", dict(items=self.items[:2], more=[self.items[2]["sid"], ""])),
            ("N", dict(n=1001, items=(self.items * 334)[:1001])),
            ("N", dict(n=-1)),
            ("N", dict(n="three")),
            ("N", dict(n="")),
            ("group", dict(group="")),
            ("consumer", dict(consumer="")),
            ("lease_ms", dict(lease_ms=999)),
            ("lease_ms", dict(lease_ms=86400001)),
            ("lease_ms", dict(lease_ms=-1)),
            ("lease_ms", dict(lease_ms="")),
            ("lease_ms", dict(lease_ms="5s")),
            ("lease_ms", dict(lease_ms="1e4")),
            # A bad SID is refused before anything is written, even after an entry that would
            # have been dead-lettered.
            ("SID", dict(items=self.items + [{"sid": "bad", "id": "x", "attempt": "0"}], n=4)),
            ("SID", dict(items=self.items + [{"sid": "", "id": "", "attempt": ""}], n=4)),
            ("SID", dict(items=self.items + [{"sid": "1-x", "id": "t9", "attempt": "0"}], n=4)),
        ]
        for field, changes in cases:
            with self.subTest(field=field, changes={k: v for k, v in changes.items()
                                                    if k not in ("items", "more")}):
                message = self.refused(field, self.call, **changes)
                if field == "ARGV":
                    self.assertIn("4 + 3N", message)
                self.assertEqual(self.snapshot(), before)
        self.assertEqual(self.leases(), leases)
        # Through the client too.
        self.refused("group", self.b.start, TYPE, "", "c1", self.reads)
        self.refused("consumer", self.b.start, TYPE, GROUP, "", self.reads)
        self.refused("lease_ms", self.b.start, TYPE, GROUP, "c1", self.reads, 100)
        self.assertEqual(self.snapshot(), before)
        # The valid call goes through.
        self.assertEqual(self.call(), [self.bad.encode()])
        self.assertEqual(self.leases(), {"c1": 2000})

    def test_a_key_of_another_namespace_type_or_kind_is_refused(self):
        before = self.snapshot()
        keys, args = bp.call_args(self.k, "baton_v2_start", TYPE, self.fixed, self.items)
        kinds = gen.FUNCTIONS["baton_v2_start"][0]
        other_ns = bp.Keys("other")
        for i, kind in enumerate(kinds):
            wrongs = [("namespace", other_ns.of(kind, TYPE)),
                      ("kind", self.k.of("scheduled", TYPE)),
                      ("v1", keys[i].replace("baton:v2:", "baton:"))]
            if gen.KEY_KINDS[kind]["typed"]:
                wrongs.append(("type", self.k.of(kind, OTHER)))
            for what, wrong in wrongs:
                with self.subTest(key=i + 1, wrong=what):
                    bad = list(keys)
                    bad[i] = wrong
                    # KEYS[1] names the call's namespace and type: then KEYS[2] disagrees.
                    field = f"KEYS[{i + 1}]" if i > 0 or what in ("kind", "v1") else "KEYS[2]"
                    if self.spans_slots(bad):  # a cluster refuses it before the function
                        self.assert_cross_slot("FCALL", "baton_v2_start", bad, args)
                    else:
                        self.refused(field, self.fcall_start, bad, args)
                    self.assertEqual(self.snapshot(), before)
        with self.subTest(missing_key=True):
            self.refused("KEYS", self.fcall_start, keys[:-1], args)
            self.refused("KEYS", self.fcall_start, keys + [self.k.of("scheduled", TYPE)], args)
            self.assertEqual(self.snapshot(), before)
        # A whole call for another namespace acts there only.
        other = bp.Baton(self.r, "other", check_version=False)
        self.assertEqual(other.start(TYPE, GROUP, "c1", [], lease_ms=4000), [])
        self.assertEqual(self.r.hgetall(other.keys.leases(TYPE)), {b"c1": b"4000"})
        self.assertEqual(self.leases(), {"c1": 5000})


if __name__ == "__main__":
    unittest.main()
