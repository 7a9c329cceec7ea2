"""Protocol tests, part 2: fail and retry backoff, the dead-letter queue (replay, delete, caps,
late acks), leases owned by their holder (reclaim, extend), stale acks, malformed stream entries,
and byte-exact round trips through every state.

Run: cd /work/main && /usr/bin/python3 -m unittest discover -s tests/protocol -p 'test_*.py' -v
"""

import json
import re
import time
import unittest

import baton_generated as gen
import baton_protocol as bp
from protocol_testcase import CREATED, FAST, GROUP, NS, TYPE, ProtocolTestCase


class FailTest(ProtocolTestCase):
    def test_retry_due_follows_the_backoff_for_attempts_1_to_3(self):
        base, cap = 40, 10000
        for jitter in (0.0, 0.999):
            with self.subTest(jitter=jitter):
                self.r.flushall()
                self.enqueue("t1", max_retry=5)
                for attempt in (1, 2, 3):
                    e = self.dequeue_one()
                    self.assertEqual(e.attempt, attempt - 1)
                    before = self.now_ms()
                    outcome, due, n = self.fail_task(e, base_ms=base, max_ms=cap, jitter=jitter)
                    after = self.now_ms()
                    exp = min(base * 2 ** (attempt - 1), cap)
                    delay = exp + int(jitter * exp / 4)
                    self.assertEqual((outcome, n), ("retry", attempt))
                    self.assertTrue(before + exp <= due <= after + exp * 1.25, (due, before))
                    self.assertTrue(before <= due - delay <= after, (due, delay, before, after))
                    self.assertEqual(self.r.zscore(self.k.scheduled(TYPE), "t1"), due)
                    self.assertEqual(self.b.record("t1"), ("retry", TYPE, attempt, ""))
                    self.assertEqual(self.promote_when_due(due)[0], 1)

    def test_backoff_is_capped_by_max_ms(self):
        self.enqueue("t1", max_retry=5)
        for attempt, exp in ((1, 20), (2, 40), (3, 50), (4, 50)):
            e = self.dequeue_one()
            before = self.now_ms()
            _, due, n = self.fail_task(e, base_ms=20, max_ms=50)
            after = self.now_ms()
            self.assertEqual(n, attempt)
            self.assertTrue(before + exp <= due <= after + exp, (attempt, due - before))
            self.promote_when_due(due)

    def test_retry_records_the_body_error_and_event_and_ends_the_lease(self):
        self.enqueue("t1", extra=b'{"x":1}')
        e = self.dequeue_one("w1")
        self.assertIsNotNone(self.lease("t1"))
        outcome, _, _ = self.fail_task(e, error="smtp down", stack="at send()", consumer="w1")
        self.assertEqual(outcome, "retry")
        self.assertEqual(self.r.xlen(self.k.stream(TYPE)), 0)
        self.assertEqual(self.pending(), 0)
        self.assertIsNone(self.lease("t1"))
        self.assertEqual(self.b.body("t1")["extra"], '{"x":1}')
        (err,) = self.b.error_history("t1")
        self.assertEqual({k: v for k, v in err.items() if k != "at_ms"},
                         {"attempt": 1, "kind": "error", "error": "smtp down",
                          "stack": "at send()", "worker": "w1"})
        self.assert_event(self.last_event("t1"), "active", "retry", 1, "w1", "smtp down",
                          ids=["t1"])

    def test_dead_after_one_plus_max_retry_attempts_with_every_error(self):
        self.enqueue("t1", max_retry=2)
        for attempt in (1, 2, 3):
            e = self.dequeue_one(f"w{attempt}")
            outcome, at, n = self.fail_task(e, error=f"err {attempt}", stack=f"stack {attempt}",
                                       consumer=f"w{attempt}", **FAST)
            self.assertEqual(n, attempt)
            if attempt < 3:
                self.assertEqual(outcome, "retry")
                self.promote_when_due(at)
        self.assertEqual(outcome, "dead")
        self.assertEqual(self.r.zscore(self.k.dead(TYPE), "t1"), at)
        self.assertEqual(self.b.record("t1"), ("dead", TYPE, 3, ""))
        self.assertEqual(self.r.zcard(self.k.scheduled(TYPE)), 0)
        errors = self.b.error_history("t1")
        self.assertEqual([(x["attempt"], x["error"], x["stack"], x["worker"]) for x in errors],
                         [(i, f"err {i}", f"stack {i}", f"w{i}") for i in (1, 2, 3)])
        self.assertEqual(self.b.body("t1")["payload"], '{"to":"a@example.com"}')
        self.assert_event(self.last_event("t1"), "active", "dead", 3, "w3", "err 3")

    def test_ack_after_a_retry_counts_every_attempt_in_the_event(self):
        self.enqueue("t1", max_retry=3)
        e = self.dequeue_one("w1")
        _, due, _ = self.fail_task(e, consumer="w1", **FAST)
        self.promote_when_due(due)
        e = self.dequeue_one("w2")
        self.assertEqual(e.attempt, 1)
        self.assert_event(self.last_event("t1"), "queued", "active", 2, "w2")
        self.assertEqual(self.ack([e], "w2"), ["done"])
        self.assertEqual(self.b.final_state("t1")[0], "done")
        # A done task keeps no attempts or worker of its own: the event says them.
        self.assertIsNone(self.b.ended("t1"))
        self.assert_event(self.last_event("t1"), "active", "done", 2, "w2")
        self.assertEqual(self.b.error_history("t1"), [])  # ack clears the error history

    def test_a_retry_that_becomes_the_earliest_publishes_a_wakeup(self):
        self.enqueue("later", delay_seconds=3600)
        self.enqueue("t1")
        e = self.dequeue_one()
        pubsub = self.r.pubsub(ignore_subscribe_messages=True)
        pubsub.subscribe(bp.WAKEUP_CHANNEL)
        _, due, _ = self.fail_task(e, **FAST)
        message = None
        for _ in range(40):
            message = pubsub.get_message(timeout=0.05)
            if message is not None:
                break
        pubsub.close()
        self.assertIsNotNone(message)
        self.assertEqual(message["data"].decode(), f"{NS}|{TYPE}|{due}")

    def test_non_retryable_goes_dead_at_once(self):
        self.enqueue("t1", max_retry=5)
        e = self.dequeue_one()
        self.assertEqual(self.fail_task(e, kind="non_retryable")[0::2], ("dead", 1))
        self.assertEqual(self.b.error_history("t1")[0]["kind"], "non_retryable")

    def test_invalid_arguments_are_refused(self):
        self.enqueue("t1")
        e = self.dequeue_one()
        before = self.snapshot()
        self.assert_error("BATON_INVALID kind", self.fail_task, e, kind="oops")
        self.assert_error("BATON_INVALID jitter", self.fail_task, e, jitter=1.0)
        self.assert_error("BATON_INVALID consumer", self.fail_task, e, consumer="")
        self.assert_error("BATON_INVALID group", self.b.fail, TYPE, "", "c1", e.id, e.sid,
                          "error", "x")
        self.assertEqual(self.snapshot(), before)


class DeadLetterTest(ProtocolTestCase):
    def test_replay_with_the_same_payload(self):
        self.kill("t1")
        sid = self.b.dlq_replay(TYPE, "t1")
        self.assertEqual(self.b.record("t1"), ("queued", TYPE, 0, sid))
        self.assertEqual(self.r.zcard(self.k.dead(TYPE)), 0)
        self.assertIsNone(self.b.body("t1"))
        self.assertEqual(len(self.b.error_history("t1")), 1)  # the history stays
        self.assert_event(self.last_event("t1"), "dead", "queued", 0)
        e = self.dequeue_one()
        self.assertEqual((e.sid, e.attempt, e.payload, e.max_retry),
                         (sid, 0, b'{"to":"a@example.com"}', 0))
        # A fresh budget: the next failure is attempt 1 again, and appends to the history.
        self.assertEqual(self.fail_task(e)[0::2], ("dead", 1))
        self.assertEqual(len(self.b.error_history("t1")), 2)

    def test_replay_with_an_edited_payload(self):
        self.kill("t1")
        self.b.dlq_replay(TYPE, "t1", b'{"to":"fixed@example.com"}')
        self.assertEqual(self.dequeue_one().payload, b'{"to":"fixed@example.com"}')

    def test_replay_and_delete_need_a_dead_task(self):
        self.kill("t2")
        self.enqueue("t1")
        before = self.snapshot()
        self.assert_error("BATON_NOT_FOUND", self.b.dlq_replay, TYPE, "t1")
        self.assert_error("BATON_NOT_FOUND", self.b.dlq_delete, TYPE, "t1")
        self.assert_error("BATON_NOT_FOUND", self.b.dlq_replay, TYPE, "nope")
        self.assert_error("BATON_NOT_FOUND", self.b.dlq_replay, "other_type", "t2")
        self.assert_error("BATON_NOT_FOUND", self.b.dlq_delete, "other_type", "t2")
        self.assert_error("BATON_INVALID payload", self.b.dlq_replay, TYPE, "t2", b"[]")
        self.assertEqual(self.snapshot(), before)

    def test_delete_makes_the_task_final_deleted(self):
        self.kill("t1")
        self.assertEqual(self.b.dlq_delete(TYPE, "t1"), "deleted")
        for key in (self.k.tasks(), self.k.bodies()):
            self.assertFalse(self.r.hexists(key, "t1"), key)
        self.assertEqual(self.error_fields("t1"), [])
        self.assertEqual(self.r.zcard(self.k.dead(TYPE)), 0)
        self.assertEqual(self.b.final_state("t1")[0], "deleted")
        self.assertEqual(self.b.ended("t1"), ("deleted", TYPE, 1, ""))
        self.assert_event(self.last_event("t1"), "dead", "deleted", 1)
        before = self.snapshot()
        self.assertEqual(self.enqueue("t1"), ("duplicate", "deleted"))
        self.assertEqual(self.snapshot(), before)

    def test_cancel_of_a_dead_task_is_a_conflict(self):
        self.kill("t1")
        self.assert_error("BATON_CONFLICT", self.b.cancel, TYPE, "t1")

    def test_dlq_max_drops_the_oldest_dead_task(self):
        self.b.configure(dlq_max=2)
        for task_id in ("d1", "d2", "d3"):
            self.kill(task_id)
        self.assertEqual(self.r.zrange(self.k.dead(TYPE), 0, -1), [b"d2", b"d3"])
        for key in (self.k.tasks(), self.k.bodies()):
            self.assertFalse(self.r.hexists(key, "d1"), key)
        self.assertEqual(self.error_fields("d1"), [])
        self.assertEqual(self.b.final_state("d1")[0], "dropped")
        self.assertEqual(self.b.ended("d1"), ("dropped", TYPE, 1, ""))
        self.assert_event(self.last_event("d1"), "dead", "dropped", 1, ids=["d1"],
                          error="dead-letter queue over its cap of 2 tasks")
        self.assertEqual(self.b.record("d3"), ("dead", TYPE, 1, ""))
        before = self.snapshot()
        self.assertEqual(self.enqueue("d1"), ("duplicate", "dropped"))
        self.assertEqual(self.snapshot(), before)
        self.assert_error("BATON_NOT_FOUND", self.b.dlq_replay, TYPE, "d1")

    def test_dlq_retention_drops_old_dead_tasks(self):
        self.b.configure(dlq_retention_s=1)
        self.kill("old")
        time.sleep(1.1)
        self.kill("new")  # every death applies the caps
        self.assertEqual(self.r.zrange(self.k.dead(TYPE), 0, -1), [b"new"])
        self.assertEqual(self.b.final_state("old")[0], "dropped")
        self.assert_event(self.last_event("old"), "dead", "dropped", 1,
                          error="dead-letter retention of 1 s passed")

    def test_late_ack_after_the_task_died_takes_it_out_of_the_dlq(self):
        self.enqueue("t1", max_retry=0)
        e = self.dequeue_one("slow")
        self.expire_lease("t1")
        self.assertEqual(self.b.reclaim(TYPE, 10, **FAST)[:3], (1, 0, 1))
        self.assertEqual(self.b.record("t1")[0], "dead")
        self.assertEqual(self.ack([e], "slow"), ["stale_done"])
        self.assertEqual(self.r.zcard(self.k.dead(TYPE)), 0)
        for key in (self.k.tasks(), self.k.bodies()):
            self.assertFalse(self.r.hexists(key, "t1"), key)
        self.assertEqual(self.error_fields("t1"), [])
        self.assertEqual(self.b.final_state("t1")[0], "done")
        self.assert_event(self.last_event("t1"), "dead", "done", 1, "slow")
        # It succeeded: a replay must not run it again.
        before = self.snapshot()
        self.assert_error("BATON_NOT_FOUND", self.b.dlq_replay, TYPE, "t1")
        self.assertEqual(self.snapshot(), before)
        self.assertEqual(self.enqueue("t1"), ("duplicate", "done"))

    def test_replay_of_a_foreign_entry_is_refused(self):
        sid = self.r.xadd(self.k.stream(TYPE), {"foo": "bar", "n": "1"}).decode()
        self.assertEqual(self.dequeue(), [])
        dead_id = f"malformed-{sid}"
        self.assertEqual(self.b.record(dead_id), ("dead", TYPE, 1, ""))
        before = self.snapshot()
        message = self.assert_error("BATON_CONFLICT", self.b.dlq_replay, TYPE, dead_id)
        self.assertIn("cannot replay", message)
        # A new payload does not fix the fields a foreign entry lacks.
        self.assert_error("BATON_CONFLICT", self.b.dlq_replay, TYPE, dead_id, b'{"a":1}')
        self.assertEqual(self.snapshot(), before)
        self.assertEqual(self.b.dlq_delete(TYPE, dead_id), "deleted")  # the way out

    def test_replay_of_a_corrupt_body_is_refused(self):
        status, due = self.enqueue("t1", run_at_ms=self.soon_ms())
        self.r.hset(self.k.bodies(), "t1", "not json")
        self.assertEqual(self.promote_when_due(due)[0], 1)
        self.assertEqual(self.dequeue(), [])
        self.assertEqual(self.b.record("t1")[0], "dead")
        before = self.snapshot()
        message = self.assert_error("BATON_CONFLICT", self.b.dlq_replay, TYPE, "t1",
                                    b'{"a":1}')
        self.assertIn("max_retry is not an integer", message)
        self.assertEqual(self.snapshot(), before)

    def test_a_malformed_payload_can_be_replayed_with_a_new_one(self):
        fields = {"task": f"m1|2|0|{CREATED}||0|"}  # no payload
        self.r.xadd(self.k.stream(TYPE), fields)
        self.assertEqual(self.dequeue(), [])
        self.assertEqual(self.b.record("m1")[0], "dead")
        before = self.snapshot()
        message = self.assert_error("BATON_CONFLICT", self.b.dlq_replay, TYPE, "m1")
        self.assertIn("replay it with a new payload", message)
        self.assertEqual(self.snapshot(), before)
        sid = self.b.dlq_replay(TYPE, "m1", b'{"fixed":true}')
        e = self.dequeue_one()
        self.assertEqual((e.sid, e.id, e.payload, e.max_retry, e.attempt),
                         (sid, "m1", b'{"fixed":true}', 2, 0))
        self.assertEqual(self.ack([e]), ["done"])


class LeaseTest(ProtocolTestCase):
    def test_reclaim_never_takes_a_live_lease_whoever_calls(self):
        # The namespace's lease and another consumer's are short; the holder asked for 60 s.
        self.b.configure(lease_ms=1000)
        self.enqueue("q1")
        quick = self.b.dequeue(TYPE, GROUP, "quick", 1, lease_ms=1000).entries
        self.assertEqual(self.ack(quick, "quick"), ["done"])
        self.enqueue("t1", max_retry=1)
        delivery = self.b.dequeue(TYPE, GROUP, "holder", 1, lease_ms=60000)
        (e,) = delivery.entries
        self.assertEqual(self.leases(), {"quick": 1000, "holder": 60000})
        # Delivered 5 s ago: idle past every lease length but the holder's own.
        before = self.now_ms()
        self.set_idle(e.sid, 5000)
        after = self.now_ms()
        (p,) = self.r.xpending_range(self.k.stream(TYPE), GROUP, "-", "+", 10)
        self.assertGreaterEqual(p["time_since_delivered"], 5000)
        before_snapshot = self.snapshot()
        for count, base, cap, seed, reaper in ((1, 0, 0, 0, "r1"), (1000, 1, 1, 99, "r2"),
                                               (10, 2000, 600000, 7, "holder")):
            caller = bp.Baton(self.server.client(), NS)
            reply = caller.reclaim(TYPE, count, base, cap, seed, reaper)
            caller.r.close()
            self.assertEqual(reply[:3], (0, 0, 0))
            # The next deadline is the holder's: delivered 5 s ago, plus its 60 s.
            self.assert_lease_end(reply.next_deadline_ms, before - 5000 + 60000,
                                  after - 5000 + 60000)
            self.assertLess(reply.now_ms, reply.next_deadline_ms)
        self.assertEqual(self.snapshot(), before_snapshot)
        self.assertEqual(self.b.record("t1"), ("queued", TYPE, 0, e.sid))

    def test_extend_moves_the_deadline_and_reclaim_takes_the_task_after_it(self):
        self.enqueue("t1", max_retry=1)
        delivery = self.b.dequeue(TYPE, GROUP, "holder", 1, lease_ms=1000)
        (e,) = delivery.entries
        first = delivery.lease_deadline_ms
        time.sleep(0.5)
        before = self.now_ms()
        self.assertEqual(self.b.extend(TYPE, GROUP, "holder", [(e.id, e.sid)], 1000), [e.sid])
        after = self.now_ms()
        # Extend resets the delivery time (not the delivery count): the lease ends 1 s from the
        # extend, past the first deadline.
        held = self.b.lease(TYPE, GROUP, e.sid)
        self.assertEqual((held.consumer, held.lease_ms, held.deliveries), ("holder", 1000, 1))
        self.assert_lease_end(held.ends_ms, before + 1000, after + 1000)
        self.assertGreater(before + 1000, first)
        self.sleep_until(first + 20)
        # The first deadline passed, the moved one did not: nothing is taken.
        reply = self.b.reclaim(TYPE, 10, **FAST)
        self.assertEqual(reply[:3], (0, 0, 0))
        self.assert_lease_end(reply.next_deadline_ms, before + 1000, after + 1000)
        self.assertEqual(self.b.record("t1"), ("queued", TYPE, 0, e.sid))
        self.sleep_until(after + 1000)
        reply = self.b.reclaim(TYPE, 10, reaper="reaper-1", **FAST)
        self.assertEqual(reply[:4], (1, 1, 0, -1))
        self.assertGreater(reply.now_ms, after + 1000)
        self.assertEqual(self.b.record("t1")[:3], ("retry", TYPE, 1))
        self.assertIsNone(self.lease("t1"))
        self.assertEqual(self.pending(), 0)
        (err,) = self.b.error_history("t1")
        self.assertEqual((err["kind"], err["worker"]), ("lease_expired", "holder"))
        m = re.fullmatch(r"lease expired at (\d+) \((\d+) ms ago\) on consumer holder",
                         err["error"])
        self.assertIsNotNone(m, err["error"])
        self.assert_lease_end(int(m.group(1)), before + 1000, after + 1000)
        self.assertEqual(int(m.group(1)) + int(m.group(2)), reply.now_ms)
        self.assert_event(self.last_event("t1"), "active", "retry", 1, "reaper-1", err["error"])
        # The holder learns it lost the task: extend no longer lists it, fail is stale.
        self.assertEqual(self.b.extend(TYPE, GROUP, "holder", [(e.id, e.sid)]), [])
        self.assertEqual(self.fail_task(e, consumer="holder"), ("stale", "", 0))

    def test_reclaim_honours_each_consumers_own_lease_length(self):
        self.b.enqueue(TYPE, [self.spec("t1"), self.spec("t2")])
        before = self.now_ms()
        short = self.b.dequeue(TYPE, GROUP, "short", 1, lease_ms=1000)
        long = self.b.dequeue(TYPE, GROUP, "long", 1, lease_ms=60000)
        self.assertEqual(self.leases(), {"short": 1000, "long": 60000})
        reply = self.b.reclaim(TYPE, 10)
        self.assertEqual(reply[:3], (0, 0, 0))
        self.assert_lease_end(reply.next_deadline_ms, before + 1000, short.lease_deadline_ms)
        self.sleep_until(short.lease_deadline_ms)
        # Past the short lease: only its task is taken back; the long one runs 59 s more.
        reply = self.b.reclaim(TYPE, 10, reaper="reaper-1", **FAST)
        self.assertEqual(reply[:3], (1, 1, 0))
        self.assert_lease_end(reply.next_deadline_ms, before + 60000, long.lease_deadline_ms)
        self.assertEqual(self.b.record("t1")[:3], ("retry", TYPE, 1))
        (err,) = self.b.error_history("t1")
        self.assertEqual((err["kind"], err["worker"]), ("lease_expired", "short"))
        (kept,) = long.entries
        self.assertEqual(self.b.record("t2"), ("queued", TYPE, 0, kept.sid))
        self.assertEqual(self.b.lease(TYPE, GROUP, kept.sid)[:3], ("long", 60000, 1))

    def test_reclaim_deletes_consumers_that_hold_nothing_and_are_idle_ten_leases(self):
        # Namespace lease 1 s: a consumer idle over 10 s with nothing pending is a gone worker.
        self.b.configure(lease_ms=1000)
        self.b.enqueue(TYPE, [self.spec("t1"), self.spec("t2")])
        (done,) = self.b.dequeue(TYPE, GROUP, "gone", 1, lease_ms=5000).entries
        self.assertEqual(self.b.ack(TYPE, GROUP, "gone", [(done.id, done.sid)]), ["done"])
        (held,) = self.b.dequeue(TYPE, GROUP, "busy", 1, lease_ms=60000).entries
        self.assertEqual(self.leases(), {"gone": 5000, "busy": 60000})
        time.sleep(10.3)
        # A live worker that just ran a task holds nothing either, but was active a moment ago.
        self.b.enqueue(TYPE, [self.spec("t4")])
        (ran,) = self.b.dequeue(TYPE, GROUP, "fresh", 1).entries
        self.assertEqual(self.b.ack(TYPE, GROUP, "fresh", [(ran.id, ran.sid)]), ["done"])
        self.assertEqual(self.b.reclaim(TYPE, 10)[:3], (0, 0, 0))

        def consumers():
            rows = self.r.xinfo_consumers(self.k.stream(TYPE), GROUP)
            return sorted(c["name"].decode() for c in rows)

        # "busy" is as idle but holds a task under its 60 s lease: it stays, with its lease.
        self.assertEqual(consumers(), ["busy", "fresh"])
        self.assertEqual(self.leases(), {"busy": 60000, "fresh": 1000})
        self.assertEqual(self.b.record("t2"), ("queued", TYPE, 0, held.sid))
        # A worker that was only idle comes back as if new: its next delivery stores its lease.
        self.b.enqueue(TYPE, [self.spec("t3")])
        (again,) = self.b.dequeue(TYPE, GROUP, "gone", 1, lease_ms=5000).entries
        self.assertEqual(again.id, "t3")
        self.assertEqual(consumers(), ["busy", "fresh", "gone"])
        self.assertEqual(self.leases(), {"busy": 60000, "fresh": 1000, "gone": 5000})

    def test_a_consumers_lease_length_is_the_last_it_asked_for_every_task_it_holds(self):
        self.b.enqueue(TYPE, [self.spec("t1"), self.spec("t2")])
        (e1,) = self.b.dequeue(TYPE, GROUP, "c1", 1, lease_ms=60000).entries
        self.assertEqual(self.leases(), {"c1": 60000})
        self.set_idle(e1.sid, 5000)  # delivered 5 s ago: within its 60 s
        self.assertEqual(self.b.reclaim(TYPE, 10)[:3], (0, 0, 0))
        # c1 asks for 2 s in its next dequeue: from now on, for every task it holds.
        before = self.now_ms()
        d2 = self.b.dequeue(TYPE, GROUP, "c1", 1, lease_ms=2000)
        (e2,) = d2.entries
        self.assertEqual(self.leases(), {"c1": 2000})
        reply = self.b.reclaim(TYPE, 10, **FAST)
        self.assertEqual(reply[:3], (1, 1, 0))  # t1, idle 5 s; not t2, just delivered
        self.assertEqual(self.b.record("t1")[0], "retry")
        self.assert_lease_end(reply.next_deadline_ms, before + 2000, d2.lease_deadline_ms)
        # Extend sets it too; 0 stores the namespace's setting as a number.
        self.assertEqual(self.b.extend(TYPE, GROUP, "c1", [(e2.id, e2.sid)], 7000), [e2.sid])
        self.assertEqual(self.leases(), {"c1": 7000})
        self.b.configure(lease_ms=4000)
        self.assertEqual(self.b.extend(TYPE, GROUP, "c1", [(e2.id, e2.sid)]), [e2.sid])
        self.assertEqual(self.leases(), {"c1": 4000})
        # A length out of range (written by hand) counts as the namespace's lease_ms (4 s).
        self.r.hset(self.k.leases(TYPE), "c1", "5")
        self.set_idle(e2.sid, 3000)
        self.assertEqual(self.b.reclaim(TYPE, 10, **FAST)[:3], (0, 0, 0))
        self.set_idle(e2.sid, 4100)
        self.assertEqual(self.b.reclaim(TYPE, 10, **FAST)[:3], (1, 1, 0))
        self.assertEqual(self.b.record("t2")[0], "retry")

    def test_reclaim_follows_the_retry_policy(self):
        self.enqueue("t1", max_retry=1)
        self.dequeue_one("crashed")
        self.expire_lease("t1")
        self.assertEqual(self.b.reclaim(TYPE, 10, **FAST)[:3], (1, 1, 0))
        self.promote_when_due(self.r.zscore(self.k.scheduled(TYPE), "t1"))
        again = self.dequeue_one("crashed")
        self.assertEqual((again.id, again.attempt), ("t1", 1))
        self.expire_lease("t1")
        self.assertEqual(self.b.reclaim(TYPE, 10, **FAST)[:3], (1, 0, 1))
        self.assertEqual(self.b.record("t1")[:3], ("dead", TYPE, 2))
        self.assertEqual([e["kind"] for e in self.b.error_history("t1")], ["lease_expired"] * 2)

    def test_reclaim_count_bounds_the_batch_and_reports_the_next_deadline(self):
        self.assertEqual(self.b.reclaim(TYPE, 10)[:4], (0, 0, 0, -1))
        self.b.enqueue(TYPE, [self.spec(f"t{i}") for i in range(6)])
        self.dequeue(count=5)
        live = self.b.dequeue(TYPE, GROUP, "c2", 1, lease_ms=60000)
        for i in range(5):
            self.expire_lease(f"t{i}")
        reply = self.b.reclaim(TYPE, 2, seed=7, **FAST)
        self.assertEqual(reply[:3], (2, 2, 0))
        self.assertLessEqual(reply.next_deadline_ms, reply.now_ms)  # more expired: call again
        reply = self.b.reclaim(TYPE, 10, seed=8, **FAST)
        self.assertEqual(reply[:3], (3, 3, 0))
        self.assert_lease_end(reply.next_deadline_ms, live.lease_deadline_ms,
                              live.lease_deadline_ms)
        (p,) = self.r.xpending_range(self.k.stream(TYPE), GROUP, "-", "+", 10)
        self.assertEqual((p["message_id"].decode(), p["consumer"]),
                         (live.entries[0].sid, b"c2"))

    def test_a_batch_of_reclaims_gets_different_jitter(self):
        self.b.enqueue(TYPE, [self.spec(f"t{i}") for i in range(4)])
        self.dequeue(count=4)
        for i in range(4):
            self.expire_lease(f"t{i}")
        self.b.reclaim(TYPE, 10, base_ms=100000, max_ms=100000, seed=12345)
        dues = {int(s) for _, s in self.r.zrange(self.k.scheduled(TYPE), 0, -1,
                                                  withscores=True)}
        self.assertGreater(len(dues), 1)

    def test_extend_holds_only_the_callers_tasks(self):
        self.b.enqueue(TYPE, [self.spec("t1"), self.spec("t2"), self.spec("t3")])
        mine = self.b.dequeue(TYPE, GROUP, "me", 2, lease_ms=2000).entries
        before_other = self.now_ms()
        other_delivery = self.b.dequeue(TYPE, GROUP, "other", 1, lease_ms=2000)
        other = other_delivery.entries[0]
        self.b.configure(lease_ms=50000)
        time.sleep(0.05)  # a renewal of other's entry would move its lease end
        before = self.now_ms()
        tasks = [(e.id, e.sid) for e in mine] + [(other.id, other.sid), ("ghost", "1-1"),
                                                  (mine[0].id, other.sid)]
        held = self.b.extend(TYPE, GROUP, "me", tasks)  # lease 0: the namespace's setting
        after = self.now_ms()
        self.assertEqual(held, [mine[0].sid, mine[1].sid])
        for e in mine:
            self.assert_lease_end(self.lease(e.id), before + 50000, after + 50000)
        # The resolved setting became my lease length; other's stays its own.
        self.assertEqual(self.leases(), {"me": 50000, "other": 2000})
        # Never touched, never taken.
        self.assert_lease_end(self.lease("t3"), before_other + 2000,
                              other_delivery.lease_deadline_ms)
        owners = {p["message_id"].decode(): p["consumer"].decode()
                  for p in self.r.xpending_range(self.k.stream(TYPE), GROUP, "-", "+", 10)}
        self.assertEqual(owners[other.sid], "other")
        self.assertEqual(self.b.extend(TYPE, GROUP, "nobody", [(e.id, e.sid) for e in mine]),
                         [])
        self.assertEqual(self.b.extend(TYPE, "other-group", "me", [(mine[0].id, mine[0].sid)]),
                         [])
        self.assert_error("BATON_INVALID lease_ms", self.b.extend, TYPE, GROUP, "me",
                          [(mine[0].id, mine[0].sid)], 999)

    def test_a_worker_whose_deadline_passed_keeps_its_task_until_reclaimed(self):
        self.enqueue("t1")
        e = self.dequeue_one("slow")
        self.expire_lease("t1")
        before = self.now_ms()
        self.assertEqual(self.b.extend(TYPE, GROUP, "slow", [(e.id, e.sid)], 5000), [e.sid])
        after = self.now_ms()
        held = self.b.lease(TYPE, GROUP, e.sid)
        self.assertEqual((held.consumer, held.lease_ms, held.deliveries), ("slow", 5000, 1))
        self.assert_lease_end(held.ends_ms, before + 5000, after + 5000)
        reply = self.b.reclaim(TYPE, 10)
        self.assertEqual(reply[:3], (0, 0, 0))
        self.assert_lease_end(reply.next_deadline_ms, before + 5000, after + 5000)

    def test_a_leased_entry_deleted_from_the_stream_is_acked(self):
        self.enqueue("t1", max_retry=3)
        self.enqueue("t2")
        (e,) = self.dequeue("me", count=1, lease_ms=1000)
        self.r.xdel(self.k.stream(TYPE), e.sid)
        # Its lease runs out for real (an XCLAIM would drop a deleted entry from the PEL itself).
        self.sleep_until(self.b.lease(TYPE, GROUP, e.sid).ends_ms)
        events = self.b.events()
        # Its task id went with the entry: the PEL entry is acked, nothing is counted or buried.
        self.assertEqual(self.b.reclaim(TYPE, 10, **FAST)[:4], (0, 0, 0, -1))
        self.assertEqual(self.pending(), 0)
        self.assertEqual(self.b.events(), events)
        self.assertEqual(self.r.zcard(self.k.dead(TYPE)), 0)
        self.assertEqual(self.b.error_history("t1"), [])
        # The record is left as it was (queued at the deleted entry), the other task runs.
        self.assertEqual(self.b.record("t1"), ("queued", TYPE, 0, e.sid))
        self.assertEqual([x.id for x in self.dequeue("me")], ["t2"])

    def test_a_lease_length_without_a_delivered_task_takes_nothing(self):
        self.enqueue("t1")
        # The group and a consumer exist, lease lengths are stored, but nothing was delivered.
        self.r.xgroup_create(self.k.stream(TYPE), GROUP, id="0")
        self.r.execute_command("XGROUP", "CREATECONSUMER", self.k.stream(TYPE), GROUP, "c1")
        self.r.hset(self.k.leases(TYPE), mapping={"ghost": 1000, "c1": 1000})
        before = self.snapshot()
        self.assertEqual(self.b.reclaim(TYPE, 10)[:4], (0, 0, 0, -1))
        self.assertEqual(self.snapshot(), before)
        self.assertEqual(self.b.record("t1")[0], "queued")
        self.assertEqual([e.id for e in self.dequeue()], ["t1"])

    def test_a_stale_copy_pending_is_dropped_by_reclaim(self):
        _, sid = self.enqueue("t1")
        e = self.dequeue_one("c1")
        self.assertEqual(e.sid, sid)
        # A copy of t1 that a foreign tool added and delivered (bypassing dequeue's checks).
        copy = self.r.xadd(self.k.stream(TYPE), {"task": f"t1|3|0|{CREATED}||0|",
                                                 "payload": "{}"}).decode()
        self.r.xreadgroup(GROUP, "rogue", {self.k.stream(TYPE): ">"})
        self.set_idle(copy, gen.NAMESPACE_DEFAULTS["lease_ms"] + 1000)
        reply = self.b.reclaim(TYPE, 10, reaper="reaper-1")
        # Dropped, not counted as a reclaimed task; t1 stays with its holder.
        self.assertEqual(reply[:3], (0, 0, 0))
        self.assertEqual(self.r.xrange(self.k.stream(TYPE), copy, copy), [])
        self.assertEqual([p["message_id"].decode() for p in
                          self.r.xpending_range(self.k.stream(TYPE), GROUP, "-", "+", 10)],
                         [sid])
        self.assertEqual(self.b.record("t1"), ("queued", TYPE, 0, sid))
        self.assertEqual(self.b.error_history("t1"), [])
        self.assert_event(self.last_event("t1"), "queued", "deleted", 0, "reaper-1",
                          f"stale copy {copy}", ids=["t1"])

    def test_stale_ack_after_reclaim_removes_the_waiting_retry(self):
        self.enqueue("t1")
        e = self.dequeue_one("slow")
        self.expire_lease("t1")
        self.assertEqual(self.b.reclaim(TYPE, 10, base_ms=60000, max_ms=60000).retried, 1)
        self.assertEqual(self.ack([e], "slow"), ["stale_done"])
        self.assertEqual(self.r.zcard(self.k.scheduled(TYPE)), 0)
        self.assertIsNone(self.b.record("t1"))
        self.assertIsNone(self.b.body("t1"))
        self.assertEqual(self.b.error_history("t1"), [])
        self.assertEqual(self.b.final_state("t1")[0], "done")
        self.assert_event(self.last_event("t1"), "retry", "done", 1, "slow")

    def test_stale_ack_after_the_retry_was_promoted_removes_the_new_copy(self):
        self.enqueue("t1")
        e = self.dequeue_one("slow")
        self.expire_lease("t1")
        self.b.reclaim(TYPE, 10, **FAST)
        self.promote_when_due(self.r.zscore(self.k.scheduled(TYPE), "t1"))
        self.assertEqual(self.r.xlen(self.k.stream(TYPE)), 1)
        self.assertEqual(self.ack([e], "slow"), ["stale_done"])
        self.assertEqual(self.r.xlen(self.k.stream(TYPE)), 0)
        self.assertEqual(self.dequeue(), [])

    def test_fail_after_reclaim_is_stale_and_writes_nothing(self):
        self.enqueue("t1")
        e = self.dequeue_one("slow")
        self.expire_lease("t1")
        self.b.reclaim(TYPE, 10, **FAST)
        before = self.snapshot()
        self.assertEqual(self.fail_task(e, consumer="slow"), ("stale", "", 0))
        self.assertEqual(self.snapshot(), before)


class MalformedEntryTest(ProtocolTestCase):
    def raw(self, **fields):
        return self.r.xadd(self.k.stream(TYPE), fields).decode()

    TASK_PARTS = ("id", "max_retry", "delay_seconds", "created_at", "execution_timeout",
                  "attempt", "extra")

    def full(self, payload="{}", **parts):
        """The fields of an entry as baton_v2_enqueue writes them: task
        'ID|MAX_RETRY|DELAY_SECONDS|CREATED_AT|EXECUTION_TIMEOUT|ATTEMPT|EXTRA', then payload
        (left out when None), with the given parts of task replaced."""
        values = {"id": "x", "max_retry": "3", "delay_seconds": "0",
                  "created_at": str(CREATED), "execution_timeout": "", "attempt": "0",
                  "extra": ""}
        values.update(parts)
        fields = {"task": "|".join(values[p] for p in self.TASK_PARTS)}
        if payload is not None:
            fields["payload"] = payload
        return fields

    def test_malformed_entries_go_to_the_dead_letter_queue_with_a_reason(self):
        self.enqueue("good1")
        sid_missing = self.raw(**self.full(id="m1", payload=None))
        sid_int = self.raw(**self.full(id="m2", max_retry="three"))
        sid_norec = self.raw(**self.full(id="m3"))
        sid_split = self.raw(task="m4|3|0", payload="{}")
        sid_notask = self.raw(payload="{}")
        sid_badid = self.raw(**self.full(id="bad id"))
        self.enqueue("good2")
        delivery = self.b.dequeue(TYPE, GROUP, "c1", 100)
        self.assertEqual([e.id for e in delivery.entries], ["good1", "good2"])
        self.assertEqual(delivery.last_id, "")
        expected = {
            "m1": "missing field payload",
            "m2": "max_retry is not an integer",
            "m3": "no task record for id m3",
            "m4": "field task is not "
                  "ID|MAX_RETRY|DELAY_SECONDS|CREATED_AT|EXECUTION_TIMEOUT|ATTEMPT|EXTRA",
            f"malformed-{sid_notask}": "missing field task",
            f"malformed-{sid_badid}": "id is not a valid task id",
        }
        dead = {m.decode() for m in self.r.zrange(self.k.dead(TYPE), 0, -1)}
        self.assertEqual(dead, set(expected))
        sids = {"m1": sid_missing, "m2": sid_int, "m3": sid_norec, "m4": sid_split,
                f"malformed-{sid_notask}": sid_notask, f"malformed-{sid_badid}": sid_badid}
        for task_id, reason in expected.items():
            (err,) = self.b.error_history(task_id)
            self.assertEqual(err["kind"], "malformed")
            self.assertEqual(err["error"], f"malformed stream entry {sids[task_id]}: {reason}")
            self.assertEqual(self.b.record(task_id), ("dead", TYPE, 1, ""))
            self.assert_event(self.last_event(task_id), "queued", "dead", 1, "c1", err["error"],
                              ids=[task_id])
            self.assertIsNone(self.lease(task_id))
        self.assertEqual(self.b.body("m2")["max_retry"], "three")
        # Acked and deleted: only the two good tasks remain in the stream and the PEL.
        self.assertEqual((self.r.xlen(self.k.stream(TYPE)), self.pending()), (2, 2))
        self.assertEqual(self.leases(), {"c1": gen.NAMESPACE_DEFAULTS["lease_ms"]})

    def test_the_dead_letter_body_keeps_the_raw_fields(self):
        known = self.full(id="m2", max_retry="three", extra='{"a":"x|y"}',
                          payload='{"n":1.10}')
        self.raw(**known)
        foreign = {"foo": "bar", "n": "1", "payload": '{"p":1}'}
        sid_foreign = self.raw(**foreign)
        sid_split = self.raw(task="m4|3|0", payload="{}")
        self.assertEqual(self.dequeue(), [])
        # What splits is kept by name; every field the writer sent is kept under "raw".
        self.assertEqual(self.b.body("m2"), {
            "payload": '{"n":1.10}', "max_retry": "three", "delay_seconds": "0",
            "created_at": str(CREATED), "execution_timeout": "", "extra": '{"a":"x|y"}',
            "raw": known})
        empty = {"max_retry": "", "delay_seconds": "", "created_at": "",
                 "execution_timeout": "", "extra": ""}
        self.assertEqual(self.b.body(f"malformed-{sid_foreign}"),
                         dict(empty, payload='{"p":1}', raw=foreign))
        self.assertEqual(self.b.body("m4"),
                         dict(empty, payload="{}", raw={"task": "m4|3|0", "payload": "{}"}))
        self.assertEqual(self.b.record("m4"), ("dead", TYPE, 1, ""))  # the id before the first |
        self.assertIsNone(self.b.record(f"malformed-{sid_split}"))

    def test_created_at_is_checked_on_every_entry(self):
        self.enqueue("good1")
        bad = {task_id: self.raw(**self.full(id=task_id, created_at=created))
               for task_id, created in (("m1", "1722489600.5"), ("m2", " 1722489600"),
                                        ("m3", "0x66AB9000"))}
        self.enqueue("good2")
        self.assertEqual([e.id for e in self.dequeue()], ["good1", "good2"])
        for task_id, sid in bad.items():
            self.assertEqual(self.b.error_history(task_id)[0]["error"],
                             f"malformed stream entry {sid}: created_at is not an integer")

    def test_malformed_entry_never_overwrites_a_live_task_with_its_id(self):
        _, sid = self.enqueue("t1")
        bad = self.raw(**self.full(id="t1", payload=None))
        self.assertEqual([e.sid for e in self.dequeue()], [sid])
        self.assertEqual(self.b.record("t1"), ("queued", TYPE, 0, sid))
        self.assertEqual(self.b.record(f"malformed-{bad}"), ("dead", TYPE, 1, ""))
        self.assertEqual(self.b.error_history(f"malformed-{bad}")[0]["error"],
                         f"malformed stream entry {bad}: missing field payload")

    def test_a_batch_of_only_malformed_entries_gives_an_id_to_block_after(self):
        sid = self.raw(junk="1")
        self.assertEqual(self.b.dequeue(TYPE, GROUP, "c1", 1), ([], sid, 0))
        self.assertEqual(self.r.zcard(self.k.dead(TYPE)), 1)

    def test_stale_copy_is_dropped(self):
        _, sid = self.enqueue("t1")
        copy = self.raw(**self.full(id="t1"))
        entries = self.dequeue()
        self.assertEqual([e.sid for e in entries], [sid])
        self.assertEqual(self.r.xlen(self.k.stream(TYPE)), 1)
        event = self.b.events("t1")[-1]
        self.assertEqual((event["from"], event["to"], event["error"]),
                         ("queued", "deleted", f"stale copy {copy}"))

    def test_malformed_leased_entry_is_buried_by_reclaim(self):
        # A record, a lease and a delivery made by hand around an entry no enqueue wrote.
        sid = self.raw(**self.full(id="m1", attempt="x"))
        self.r.hset(self.k.tasks(), "m1", f"queued|{TYPE}|0|{sid}")
        self.r.xgroup_create(self.k.stream(TYPE), GROUP, id="0")
        self.r.xreadgroup(GROUP, "rogue", {self.k.stream(TYPE): ">"})  # bypasses the checks
        # rogue stored no lease length: the namespace's lease_ms is its lease; it ran out.
        self.set_idle(sid, gen.NAMESPACE_DEFAULTS["lease_ms"] + 10)
        self.assertEqual(self.b.reclaim(TYPE, 10, reaper="reaper-1")[:3], (1, 0, 1))
        (err,) = self.b.error_history("m1")
        self.assertEqual((err["kind"], err["error"], err["worker"]),
                         ("malformed", f"malformed stream entry {sid}: attempt is not an integer",
                          "rogue"))
        self.assertEqual((self.pending(), self.r.exists(self.k.leases(TYPE))), (0, 0))
        self.assertEqual(self.b.record("m1")[0], "dead")
        self.assertEqual(self.b.body("m1")["raw"], self.full(id="m1", attempt="x"))

    def test_corrupt_body_surfaces_as_malformed_on_the_next_dequeue(self):
        status, due = self.enqueue("t1", run_at_ms=self.soon_ms())
        self.assertEqual(status, "scheduled")
        self.r.hset(self.k.bodies(), "t1", "not json")
        self.assertEqual(self.promote_when_due(due)[0], 1)
        self.assertEqual(self.dequeue(), [])
        self.assertEqual(self.b.record("t1")[0], "dead")
        self.assertIn("max_retry is not an integer", self.b.error_history("t1")[0]["error"])


class RoundTripTest(ProtocolTestCase):
    def entry_fields(self, task_id):
        """The fields of a queued task's stream entry, in order."""
        sid = self.b.record(task_id)[3]
        ((_, fields),) = self.r.xrange(self.k.stream(TYPE), sid, sid)
        return list(fields.items())

    def test_every_writer_writes_the_two_field_entry(self):
        payload, extra = b'{"to":"a@example.com"}', b'{"k":"a|b","n":1.10}'

        def task(attempt):  # no execution timeout; extra (last) has a |
            return b"t1|2|0|%d||%d|" % (CREATED, attempt) + extra

        # baton_v2_enqueue
        self.enqueue("t1", max_retry=2, extra=extra)
        self.assertEqual(self.entry_fields("t1"), [(b"task", task(0)), (b"payload", payload)])
        # baton_v2_promote of a delayed task
        due = self.soon_ms()
        self.enqueue("t2", execution_timeout=9, run_at_ms=due)
        self.promote_when_due(due)
        self.assertEqual(self.entry_fields("t2"), [
            (b"task", b"t2|3|0|%d|9|0|" % CREATED), (b"payload", payload)])
        # baton_v2_promote of a retry: the attempt moves on
        (e,) = self.dequeue(count=1)
        self.assertEqual((e.id, e.extra, e.execution_timeout), ("t1", extra, None))
        _, due, _ = self.fail_task(e, **FAST)
        self.promote_when_due(due)
        self.assertEqual(self.entry_fields("t1"), [(b"task", task(1)), (b"payload", payload)])
        # baton_v2_dlq_replay: a fresh budget, a new payload
        self.assertEqual([x.id for x in self.dequeue(count=1)], ["t2"])
        e = self.dequeue_one()
        self.assertEqual(self.fail_task(e, kind="non_retryable")[0], "dead")
        self.b.dlq_replay(TYPE, "t1", b'{"b":2}')
        self.assertEqual(self.entry_fields("t1"), [(b"task", task(0)), (b"payload", b'{"b":2}')])
        e = self.dequeue_one()
        self.assertEqual((e.id, e.payload, e.extra, e.max_retry, e.attempt),
                         ("t1", b'{"b":2}', extra, 2, 0))

    PAYLOAD = '{"n":12345678901234567890,"f":1.10,"s":"é\\u0000x"}'.encode()
    EXTRA = b'{"trace":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},' \
            b'"future_field":[1.50,{"k":null}],"headers":{"from":"caf\xc3\xa9"}}'

    def test_payload_and_extra_bytes_survive_every_state(self):
        due = self.soon_ms()
        self.assertEqual(self.enqueue("t1", payload=self.PAYLOAD, extra=self.EXTRA,
                                      run_at_ms=due), ("scheduled", due))
        self.promote_when_due(due)
        e = self.dequeue_one()
        self.assertEqual((e.payload, e.extra), (self.PAYLOAD, self.EXTRA))
        self.fail_task(e, **FAST)
        self.promote_when_due(self.r.zscore(self.k.scheduled(TYPE), "t1"))
        e = self.dequeue_one()
        self.assertEqual((e.payload, e.extra, e.attempt), (self.PAYLOAD, self.EXTRA, 1))
        doc = bp.task_document(NS, TYPE, e)
        self.assertIn(b'"payload":' + self.PAYLOAD + b",", doc)
        self.assertTrue(doc.endswith(self.EXTRA[1:]), doc)
        parsed = json.loads(doc)
        self.assertEqual(parsed["payload"]["s"], "é\x00x")
        self.assertEqual(parsed["future_field"], [1.5, {"k": None}])
        self.assertEqual(parsed["task_id"], "t1")
        # Through a lost lease, the dead-letter queue and a replay.
        self.expire_lease("t1")
        self.b.reclaim(TYPE, 10, **FAST)
        self.promote_when_due(self.r.zscore(self.k.scheduled(TYPE), "t1"))
        e = self.dequeue_one()
        self.assertEqual((e.payload, e.extra, e.attempt), (self.PAYLOAD, self.EXTRA, 2))
        self.fail_task(e, kind="non_retryable")
        self.b.dlq_replay(TYPE, "t1")
        e = self.dequeue_one()
        self.assertEqual((e.payload, e.extra, e.attempt), (self.PAYLOAD, self.EXTRA, 0))


if __name__ == "__main__":
    unittest.main()
