"""Protocol tests, part 2: fail and retry backoff, the dead-letter queue, lease reclaim, extend,
stale acks, malformed stream entries, and byte-exact round trips through every state.

Run: cd /work/main && /usr/bin/python3 -m unittest discover -s tests/protocol -p 'test_*.py' -v
"""

import json
import time
import unittest

import baton_protocol as bp
from protocol_testcase import CREATED, GROUP, NS, TYPE, ProtocolTestCase

FAST = dict(base_ms=10, max_ms=40)  # retries come due within milliseconds


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
                    outcome, due, n = self.fail(e, base_ms=base, max_ms=cap, jitter=jitter)
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
            _, due, n = self.fail(e, base_ms=20, max_ms=50)
            after = self.now_ms()
            self.assertEqual(n, attempt)
            self.assertTrue(before + exp <= due <= after + exp, (attempt, due - before))
            self.promote_when_due(due)

    def test_retry_records_the_body_error_and_events(self):
        self.enqueue("t1", extra=b'{"x":1}')
        e = self.dequeue_one("w1")
        outcome, _, _ = self.fail(e, error="smtp down", stack="at send()", consumer="w1")
        self.assertEqual(outcome, "retry")
        self.assertEqual(self.r.xlen(self.k.stream(TYPE)), 0)
        self.assertEqual(self.pending(), 0)
        self.assertEqual(self.b.body("t1")["extra"], '{"x":1}')
        (err,) = self.b.errors("t1")
        self.assertEqual({k: v for k, v in err.items() if k != "at_ms"},
                         {"attempt": 1, "kind": "error", "error": "smtp down",
                          "stack": "at send()", "worker": "w1"})
        self.assert_event(self.last_event("t1"), "active", "retry", 1, "w1", "smtp down")

    def test_dead_after_one_plus_max_retry_attempts_with_every_error(self):
        self.enqueue("t1", max_retry=2)
        for attempt in (1, 2, 3):
            e = self.dequeue_one(f"w{attempt}")
            outcome, at, n = self.fail(e, error=f"err {attempt}", stack=f"stack {attempt}",
                                       consumer=f"w{attempt}", **FAST)
            self.assertEqual(n, attempt)
            if attempt < 3:
                self.assertEqual(outcome, "retry")
                self.promote_when_due(at)
        self.assertEqual(outcome, "dead")
        self.assertEqual(self.r.zscore(self.k.dead(TYPE), "t1"), at)
        self.assertEqual(self.b.record("t1"), ("dead", TYPE, 3, ""))
        self.assertEqual(self.r.zcard(self.k.scheduled(TYPE)), 0)
        errors = self.b.errors("t1")
        self.assertEqual([(x["attempt"], x["error"], x["stack"], x["worker"]) for x in errors],
                         [(i, f"err {i}", f"stack {i}", f"w{i}") for i in (1, 2, 3)])
        self.assertEqual(self.b.body("t1")["payload"], '{"to":"a@example.com"}')
        self.assert_event(self.last_event("t1"), "active", "dead", 3, "w3", "err 3")

    def test_ack_after_a_retry_counts_every_attempt(self):
        self.enqueue("t1", max_retry=3)
        e = self.dequeue_one("w1")
        _, due, _ = self.fail(e, consumer="w1", **FAST)
        self.promote_when_due(due)
        e = self.dequeue_one("w2")
        self.assertEqual(e.attempt, 1)
        self.assert_event(self.last_event("t1"), "queued", "active", 2, "w2")
        self.assertEqual(self.b.ack(TYPE, GROUP, [(e.id, e.sid)], "w2"), ["done"])
        marker = self.b.final_record("t1")
        self.assertEqual((marker["state"], marker["attempts"], marker["worker"]),
                         ("done", 2, "w2"))
        self.assert_event(self.last_event("t1"), "active", "done", 2, "w2")
        self.assertIsNone(self.b.errors("t1"))  # ack clears the error history

    def test_a_retry_that_becomes_the_earliest_publishes_a_wakeup(self):
        self.enqueue("later", delay_seconds=3600)
        self.enqueue("t1")
        e = self.dequeue_one()
        pubsub = self.r.pubsub(ignore_subscribe_messages=True)
        pubsub.subscribe(bp.WAKEUP_CHANNEL)
        _, due, _ = self.fail(e, **FAST)
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
        self.assertEqual(self.fail(e, kind="non_retryable")[0::2], ("dead", 1))
        self.assertEqual(self.b.errors("t1")[0]["kind"], "non_retryable")

    def test_invalid_kind_is_refused(self):
        self.enqueue("t1")
        e = self.dequeue_one()
        self.assert_error("BATON_INVALID kind", self.fail, e, kind="oops")
        self.assert_error("BATON_INVALID jitter", self.fail, e, jitter=1.0)


class DeadLetterTest(ProtocolTestCase):
    def make_dead(self, task_id, **kwargs):
        self.enqueue(task_id, max_retry=0, **kwargs)
        e = self.dequeue_one()
        self.assertEqual(self.fail(e, error="bad data")[0], "dead")

    def test_replay_with_the_same_payload(self):
        self.make_dead("t1")
        sid = self.b.dlq_replay(TYPE, "t1")
        self.assertEqual(self.b.record("t1"), ("queued", TYPE, 0, sid))
        self.assertEqual(self.r.zcard(self.k.dead(TYPE)), 0)
        self.assertIsNone(self.b.body("t1"))
        self.assertEqual(len(self.b.errors("t1")), 1)  # the history stays
        e = self.dequeue_one()
        self.assertEqual((e.sid, e.attempt, e.payload, e.max_retry),
                         (sid, 0, b'{"to":"a@example.com"}', 0))
        self.assert_event(self.b.events("t1")[-2], "dead", "queued", 0)
        # A fresh budget: the next failure is attempt 1 again, and appends to the history.
        self.assertEqual(self.fail(e)[0::2], ("dead", 1))
        self.assertEqual(len(self.b.errors("t1")), 2)

    def test_replay_with_an_edited_payload(self):
        self.make_dead("t1")
        self.b.dlq_replay(TYPE, "t1", b'{"to":"fixed@example.com"}')
        self.assertEqual(self.dequeue_one().payload, b'{"to":"fixed@example.com"}')

    def test_replay_and_delete_need_a_dead_task(self):
        self.make_dead("t2")
        self.enqueue("t1")
        before = self.digest()
        self.assert_error("BATON_NOT_FOUND", self.b.dlq_replay, TYPE, "t1")
        self.assert_error("BATON_NOT_FOUND", self.b.dlq_delete, TYPE, "t1")
        self.assert_error("BATON_NOT_FOUND", self.b.dlq_replay, TYPE, "nope")
        self.assert_error("BATON_NOT_FOUND", self.b.dlq_replay, "other_type", "t2")
        self.assert_error("BATON_NOT_FOUND", self.b.dlq_delete, "other_type", "t2")
        self.assert_error("BATON_INVALID payload", self.b.dlq_replay, TYPE, "t2", b"[]")
        self.assertEqual(self.digest(), before)

    def test_delete_keeps_a_deleted_marker(self):
        self.make_dead("t1")
        self.assertEqual(self.b.dlq_delete(TYPE, "t1", retention_s=120), "deleted")
        for key in (self.k.tasks(), self.k.bodies(), self.k.errors()):
            self.assertFalse(self.r.hexists(key, "t1"), key)
        self.assertEqual(self.r.zcard(self.k.dead(TYPE)), 0)
        self.assertEqual(self.b.final_record("t1")["state"], "deleted")
        self.assertTrue(110 <= self.r.ttl(self.k.done("t1")) <= 120)
        self.assert_event(self.last_event("t1"), "dead", "deleted", 1)
        self.assertEqual(self.enqueue("t1"), ("duplicate", "deleted"))

    def test_cancel_of_a_dead_task_is_a_conflict(self):
        self.make_dead("t1")
        self.assert_error("BATON_CONFLICT", self.b.cancel, TYPE, "t1")


class LeaseTest(ProtocolTestCase):
    def test_reclaim_takes_back_an_idle_entry_as_a_lease_expired_attempt(self):
        self.enqueue("t1", max_retry=1)
        self.enqueue("t2", max_retry=1)
        first = self.dequeue("crashed", count=1)[0]
        self.assertEqual(self.b.reclaim(TYPE, GROUP, 60000, 10, **FAST), (0, 0, 0))
        time.sleep(0.3)
        second = self.dequeue("alive", count=1)[0]  # not idle for long: stays
        self.assertEqual(self.b.reclaim(TYPE, GROUP, 250, 10, reaper="reaper-1", **FAST),
                         (1, 1, 0))
        self.assertEqual(self.b.record(first.id)[:3], ("retry", TYPE, 1))
        self.assertEqual(self.b.record(second.id), ("queued", TYPE, 0, second.sid))
        (err,) = self.b.errors(first.id)
        self.assertEqual((err["kind"], err["worker"]), ("lease_expired", "crashed"))
        self.assertRegex(err["error"], r"^lease expired after \d+ ms on consumer crashed$")
        event = self.last_event(first.id)
        self.assert_event(event, "active", "retry", 1, "reaper-1", err["error"])
        self.assertEqual(self.pending(), 1)
        # Honours max_retry: the second lost lease is the last attempt.
        self.promote_when_due(self.r.zscore(self.k.scheduled(TYPE), first.id))
        again = self.dequeue("crashed", count=1)[0]
        self.assertEqual((again.id, again.attempt), (first.id, 1))
        time.sleep(0.1)
        self.b.ack(TYPE, GROUP, [(second.id, second.sid)], "alive")
        self.assertEqual(self.b.reclaim(TYPE, GROUP, 50, 10, **FAST), (1, 0, 1))
        self.assertEqual(self.b.record(first.id)[:3], ("dead", TYPE, 2))
        self.assertEqual([e["kind"] for e in self.b.errors(first.id)], ["lease_expired"] * 2)

    def test_reclaim_without_a_group_does_nothing(self):
        self.enqueue("t1")
        self.assertEqual(self.b.reclaim(TYPE, GROUP, 0, 10), (0, 0, 0))

    def test_reclaim_count_bounds_the_batch(self):
        self.b.enqueue(TYPE, [self.spec(f"t{i}") for i in range(5)])
        self.dequeue(count=5)
        time.sleep(0.06)
        self.assertEqual(self.b.reclaim(TYPE, GROUP, 50, 2, seed=7, **FAST), (2, 2, 0))
        self.assertEqual(self.b.reclaim(TYPE, GROUP, 50, 10, seed=8, **FAST), (3, 3, 0))

    def test_extend_keeps_the_lease_and_reports_sids_no_longer_held(self):
        self.b.enqueue(TYPE, [self.spec("t1"), self.spec("t2"), self.spec("t3")])
        mine = self.dequeue("me", count=2)
        other = self.dequeue("other", count=1)[0]
        time.sleep(0.3)
        sids = [e.sid for e in mine] + [other.sid, "1-1"]
        self.assertEqual(self.b.extend(TYPE, GROUP, "me", sids), [mine[0].sid, mine[1].sid])
        idle = {p["message_id"].decode(): p["time_since_delivered"]
                for p in self.r.xpending_range(self.k.stream(TYPE), GROUP, "-", "+", 10)}
        self.assertLess(idle[mine[0].sid], 250)
        self.assertGreaterEqual(idle[other.sid], 300)
        owners = {p["message_id"].decode(): p["consumer"].decode()
                  for p in self.r.xpending_range(self.k.stream(TYPE), GROUP, "-", "+", 10)}
        self.assertEqual(owners[other.sid], "other")  # never taken over
        # Only the entry that was not extended is reclaimed; after that "me" still holds both,
        # and "other" no longer holds its entry.
        self.assertEqual(self.b.reclaim(TYPE, GROUP, 250, 10, **FAST)[0], 1)
        self.assertEqual(self.b.extend(TYPE, GROUP, "me", [e.sid for e in mine]),
                         [e.sid for e in mine])
        self.assertEqual(self.b.extend(TYPE, GROUP, "other", [other.sid]), [])

    def test_extend_reports_an_entry_deleted_from_the_stream_as_not_held(self):
        self.enqueue("t1")
        e = self.dequeue_one("me")
        self.r.xdel(self.k.stream(TYPE), e.sid)
        self.assertEqual(self.b.extend(TYPE, GROUP, "me", [e.sid]), [])
        self.assertEqual(self.pending(), 0)

    def test_ack_of_a_dead_task_is_gone_and_it_stays_dead(self):
        self.enqueue("t1", max_retry=0)
        e = self.dequeue_one("slow")
        time.sleep(0.06)
        self.assertEqual(self.b.reclaim(TYPE, GROUP, 50, 10, **FAST), (1, 0, 1))
        self.assertEqual(self.b.ack(TYPE, GROUP, [(e.id, e.sid)], "slow"), ["gone"])
        self.assertEqual(self.b.record("t1")[0], "dead")
        self.assertEqual(self.r.zcard(self.k.dead(TYPE)), 1)
        self.assertIsNone(self.b.final_record("t1"))

    def test_stale_ack_after_reclaim_removes_the_waiting_retry(self):
        self.enqueue("t1")
        e = self.dequeue_one("slow")
        time.sleep(0.06)
        self.assertEqual(self.b.reclaim(TYPE, GROUP, 50, 10, base_ms=60000, max_ms=60000)[1], 1)
        self.assertEqual(self.b.ack(TYPE, GROUP, [(e.id, e.sid)], "slow"), ["stale_done"])
        self.assertEqual(self.r.zcard(self.k.scheduled(TYPE)), 0)
        self.assertIsNone(self.b.record("t1"))
        self.assertIsNone(self.b.body("t1"))
        self.assertIsNone(self.b.errors("t1"))
        marker = self.b.final_record("t1")
        self.assertEqual((marker["state"], marker["attempts"]), ("done", 1))
        self.assert_event(self.last_event("t1"), "retry", "done", 1, "slow")

    def test_stale_ack_after_the_retry_was_promoted_removes_the_new_copy(self):
        self.enqueue("t1")
        e = self.dequeue_one("slow")
        time.sleep(0.06)
        self.b.reclaim(TYPE, GROUP, 50, 10, **FAST)
        self.promote_when_due(self.r.zscore(self.k.scheduled(TYPE), "t1"))
        self.assertEqual(self.r.xlen(self.k.stream(TYPE)), 1)
        self.assertEqual(self.b.ack(TYPE, GROUP, [(e.id, e.sid)], "slow"), ["stale_done"])
        self.assertEqual(self.r.xlen(self.k.stream(TYPE)), 0)
        self.assertEqual(self.dequeue(), [])

    def test_fail_after_reclaim_is_stale(self):
        self.enqueue("t1")
        e = self.dequeue_one("slow")
        time.sleep(0.06)
        self.b.reclaim(TYPE, GROUP, 50, 10, **FAST)
        before = self.digest()
        self.assertEqual(self.fail(e, consumer="slow"), ("stale", "", 0))
        self.assertEqual(self.digest(), before)


class MalformedEntryTest(ProtocolTestCase):
    def raw(self, **fields):
        return self.r.xadd(self.k.stream(TYPE), fields).decode()

    def full(self, **overrides):
        fields = {"id": "x", "payload": "{}", "max_retry": "3", "delay_seconds": "0",
                  "created_at": str(CREATED), "execution_timeout": "", "extra": "",
                  "attempt": "0"}
        fields.update(overrides)
        return {k: v for k, v in fields.items() if v is not None}

    def test_malformed_entries_go_to_the_dead_letter_queue_with_a_reason(self):
        self.enqueue("good1")
        sid_missing = self.raw(**self.full(id="m1", payload=None))
        sid_int = self.raw(**self.full(id="m2", max_retry="three"))
        sid_norec = self.raw(**self.full(id="m3"))
        sid_noid = self.raw(**self.full(id=None))
        sid_badid = self.raw(**self.full(id="bad id|x"))
        self.enqueue("good2")
        entries, last_id = self.b.dequeue(TYPE, GROUP, "c1", 100)
        self.assertEqual([e.id for e in entries], ["good1", "good2"])
        self.assertEqual(last_id, "")
        expected = {
            "m1": "missing field payload",
            "m2": "max_retry is not an integer",
            "m3": "no task record for id m3",
            f"malformed-{sid_noid}": "missing field id",
            f"malformed-{sid_badid}": "id is not a valid task id",
        }
        dead = {m.decode() for m in self.r.zrange(self.k.dead(TYPE), 0, -1)}
        self.assertEqual(dead, set(expected))
        sids = {"m1": sid_missing, "m2": sid_int, "m3": sid_norec,
                f"malformed-{sid_noid}": sid_noid, f"malformed-{sid_badid}": sid_badid}
        for task_id, reason in expected.items():
            (err,) = self.b.errors(task_id)
            self.assertEqual(err["kind"], "malformed")
            self.assertEqual(err["error"], f"malformed stream entry {sids[task_id]}: {reason}")
            self.assertEqual(self.b.record(task_id), ("dead", TYPE, 1, ""))
            self.assert_event(self.last_event(task_id), "queued", "dead", 1, "c1", err["error"])
        self.assertEqual(self.b.body("m2")["max_retry"], "three")
        # Acked and deleted: only the two good tasks remain in the stream and the PEL.
        self.assertEqual((self.r.xlen(self.k.stream(TYPE)), self.pending()), (2, 2))

    def test_created_at_is_checked_on_every_entry(self):
        self.enqueue("good1")
        bad = {task_id: self.raw(**self.full(id=task_id, created_at=created))
               for task_id, created in (("m1", "1722489600.5"), ("m2", " 1722489600"),
                                        ("m3", "0x66AB9000"))}
        self.enqueue("good2")
        self.assertEqual([e.id for e in self.dequeue()], ["good1", "good2"])
        for task_id, sid in bad.items():
            self.assertEqual(self.b.errors(task_id)[0]["error"],
                             f"malformed stream entry {sid}: created_at is not an integer")

    def test_malformed_entry_never_overwrites_a_live_task_with_its_id(self):
        _, sid = self.enqueue("t1")
        bad = self.raw(**self.full(id="t1", payload=None))
        self.assertEqual([e.sid for e in self.dequeue()], [sid])
        self.assertEqual(self.b.record("t1"), ("queued", TYPE, 0, sid))
        self.assertEqual(self.b.record(f"malformed-{bad}"), ("dead", TYPE, 1, ""))
        self.assertEqual(self.b.errors(f"malformed-{bad}")[0]["error"],
                         f"malformed stream entry {bad}: missing field payload")

    def test_a_batch_of_only_malformed_entries_gives_an_id_to_block_after(self):
        sid = self.raw(junk="1")
        entries, last_id = self.b.dequeue(TYPE, GROUP, "c1", 1)
        self.assertEqual((entries, last_id), ([], sid))
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

    def test_malformed_pending_entry_is_buried_by_reclaim(self):
        sid = self.raw(**self.full(id="m1", attempt="x"))
        self.r.xgroup_create(self.k.stream(TYPE), GROUP, id="0")
        self.r.xreadgroup(GROUP, "rogue", {self.k.stream(TYPE): ">"})  # bypasses the checks
        time.sleep(0.06)
        self.assertEqual(self.b.reclaim(TYPE, GROUP, 50, 10), (1, 0, 1))
        self.assertEqual(self.b.errors("m1")[0]["error"],
                         f"malformed stream entry {sid}: attempt is not an integer")
        self.assertEqual(self.pending(), 0)

    def test_corrupt_body_surfaces_as_malformed_on_the_next_dequeue(self):
        status, due = self.enqueue("t1", run_at_ms=self.soon_ms())
        self.assertEqual(status, "scheduled")
        self.r.hset(self.k.bodies(), "t1", "not json")
        self.assertEqual(self.promote_when_due(due)[0], 1)
        self.assertEqual(self.dequeue(), [])
        self.assertEqual(self.b.record("t1")[0], "dead")
        self.assertIn("max_retry is not an integer", self.b.errors("t1")[0]["error"])


class RoundTripTest(ProtocolTestCase):
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
        self.fail(e, **FAST)
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
        # And through the dead-letter queue and a replay.
        self.fail(e, kind="non_retryable")
        self.b.dlq_replay(TYPE, "t1")
        e = self.dequeue_one()
        self.assertEqual((e.payload, e.extra, e.attempt), (self.PAYLOAD, self.EXTRA, 0))


if __name__ == "__main__":
    unittest.main()
