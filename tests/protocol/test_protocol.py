"""Protocol tests, part 1: version, enqueue, dequeue, ack, promote, cancel, wakeup, events.

Language-neutral: these drive the Redis Functions library through FCALL with the reference client
baton_protocol.py, against a real redis-server. Failure paths (fail, reclaim, extend, the
dead-letter queue, malformed entries) are in test_protocol_recovery.py.
Run: cd /work/main && /usr/bin/python3 -m unittest discover -s tests/protocol -p 'test_*.py' -v
"""

import json
import threading
import unittest

import baton_protocol as bp
from protocol_testcase import CREATED, GROUP, NS, TYPE, ProtocolTestCase


class VersionTest(ProtocolTestCase):
    def test_version_matches_contract(self):
        self.assertEqual(self.b.version(), bp.LIBRARY_VERSION)
        with open(bp.FUNCTIONS_DIR.parent / "contract" / "protocol.json") as f:
            self.assertEqual(json.load(f)["version"], self.b.version())

    def test_version_is_read_only(self):
        flags = self.r.execute_command("FUNCTION", "LIST", "LIBRARYNAME", "baton")
        functions = dict(zip(flags[0][::2], flags[0][1::2]))[b"functions"]
        by_name = {}
        for fn in functions:
            info = dict(zip(fn[::2], fn[1::2]))
            by_name[info[b"name"]] = info[b"flags"]
        self.assertEqual(by_name[b"baton_version"], [b"no-writes"])
        self.assertEqual(len(by_name), 11)


class EnqueueTest(ProtocolTestCase):
    def test_immediate_task_goes_to_the_stream(self):
        status, sid = self.enqueue("t1", max_retry=2, execution_timeout=30,
                                   extra=b'{"headers":{"a":"b"}}')
        self.assertEqual(status, "queued")
        self.assertEqual(self.b.record("t1"), ("queued", TYPE, 0, sid))
        entries = self.r.xrange(self.k.stream(TYPE))
        self.assertEqual(len(entries), 1)
        entry_id, fields = entries[0]
        self.assertEqual(entry_id.decode(), sid)
        self.assertEqual(list(fields.items()), [
            (b"id", b"t1"), (b"payload", b'{"to":"a@example.com"}'), (b"max_retry", b"2"),
            (b"delay_seconds", b"0"), (b"created_at", str(CREATED).encode()),
            (b"execution_timeout", b"30"), (b"extra", b'{"headers":{"a":"b"}}'),
            (b"attempt", b"0")])
        self.assertEqual(self.r.smembers(self.k.types()), {TYPE.encode()})
        self.assert_event(self.last_event("t1"), "new", "queued", 0)

    def test_delayed_task_is_scheduled_at_now_plus_delay(self):
        before = self.now_ms()
        status, due = self.enqueue("t1", delay_seconds=30)
        after = self.now_ms()
        self.assertEqual(status, "scheduled")
        self.assertTrue(before + 30000 <= due <= after + 30000, (before, due, after))
        self.assertEqual(self.r.zscore(self.k.scheduled(TYPE), "t1"), due)
        self.assertEqual(self.b.record("t1"), ("scheduled", TYPE, 0, ""))
        self.assertEqual(self.b.body("t1"), {
            "payload": '{"to":"a@example.com"}', "max_retry": "3", "delay_seconds": "30",
            "created_at": str(CREATED), "execution_timeout": "", "extra": ""})
        self.assertEqual(self.r.xlen(self.k.stream(TYPE)), 0)
        self.assert_event(self.last_event("t1"), "new", "scheduled", 0)

    def test_run_at_is_absolute_and_a_past_run_at_is_immediate(self):
        run_at = self.now_ms() + 3600 * 1000
        self.assertEqual(self.enqueue("later", run_at_ms=run_at, delay_seconds=5),
                         ("scheduled", run_at))
        status, _ = self.enqueue("past", run_at_ms=self.now_ms() - 1000, delay_seconds=60)
        self.assertEqual(status, "queued")

    def test_batch_of_several(self):
        results = self.b.enqueue(TYPE, [self.spec("a"), self.spec("b", delay_seconds=10),
                                        self.spec("c"), self.spec("a")])
        self.assertEqual([s for s, _ in results], ["queued", "scheduled", "queued", "duplicate"])
        self.assertEqual(results[3][1], "queued")
        self.assertEqual(self.r.xlen(self.k.stream(TYPE)), 2)
        self.assertEqual(self.r.hlen(self.k.tasks()), 3)
        entries = self.dequeue()
        self.assertEqual([e.id for e in entries], ["a", "c"])

    def test_duplicate_of_a_live_task_writes_nothing(self):
        self.enqueue("t1")
        self.enqueue("t2", delay_seconds=60)
        self.dequeue_one()  # active: the record still says queued
        before = self.digest()
        self.assertEqual(self.enqueue("t1", payload=b'{"other":1}'), ("duplicate", "queued"))
        self.assertEqual(self.enqueue("t2"), ("duplicate", "scheduled"))
        self.assertEqual(self.digest(), before)

    def test_duplicate_after_done_within_retention_writes_nothing(self):
        self.enqueue("t1")
        e = self.dequeue_one()
        self.assertEqual(self.b.ack(TYPE, GROUP, [(e.id, e.sid)], "c1"), ["done"])
        before = self.digest()
        self.assertEqual(self.enqueue("t1"), ("duplicate", "done"))
        self.assertEqual(self.digest(), before)
        # After the retention the id can be used again.
        self.r.delete(self.k.done("t1"))
        self.assertEqual(self.enqueue("t1")[0], "queued")

    def test_unique_key_conflict_and_expiry(self):
        self.assertEqual(self.enqueue("t1", unique_key="user:7", unique_ttl_s=60)[0], "queued")
        ttl = self.r.ttl(self.k.unique("user:7"))
        self.assertTrue(55 <= ttl <= 60, ttl)
        self.assertEqual(self.r.get(self.k.unique("user:7")), b"t1")
        before = self.digest()
        self.assertEqual(self.enqueue("t2", unique_key="user:7", unique_ttl_s=60),
                         ("unique_conflict", "t1"))
        self.assertEqual(self.digest(), before)
        self.r.pexpire(self.k.unique("user:7"), 1)  # let the lock run out
        self.wait_until(lambda: not self.r.exists(self.k.unique("user:7")))
        self.assertEqual(self.enqueue("t2", unique_key="user:7", unique_ttl_s=60)[0], "queued")
        self.assertEqual(self.r.get(self.k.unique("user:7")), b"t2")

    def test_invalid_arguments_are_refused_and_nothing_is_written(self):
        before = self.digest()
        cases = [
            ("max_retry", dict(max_retry=26)),
            ("payload", dict(payload=b"[1,2]")),
            ("payload", dict(payload=b"")),
            ("delay_seconds", dict(delay_seconds=-1)),
            ("created_at", dict(created_at=1722489600123)),
            ("execution_timeout", dict(execution_timeout=0)),
            ("extra", dict(extra=b'"x"')),
            ("unique_ttl_s", dict(unique_key="k", unique_ttl_s=0)),
        ]
        for field, kwargs in cases:
            with self.subTest(field=field, kwargs=kwargs):
                message = self.assert_error("BATON_INVALID", self.b.enqueue, TYPE,
                                            [self.spec("ok"), self.spec("bad", **kwargs)])
                self.assertIn(f"BATON_INVALID {field} (task 2): ", message)
        message = self.assert_error("BATON_INVALID", self.enqueue, "bad id")
        self.assertTrue(message.startswith("BATON_INVALID task_id: must match"), message)
        self.assert_error("BATON_INVALID task_type", self.b.enqueue, "bad type", [])
        self.assertEqual(self.digest(), before)

    def test_task_id_rule_at_its_edges(self):
        for good in ("a", "Z", "0", "a_b.c:d-e", "x" * 128, "0AF7651916CD43DD-8448eb211c80319c"):
            with self.subTest(good=good):
                self.assertEqual(self.enqueue(good)[0], "queued")
        before = self.digest()
        for bad in ("", "-a", ".a", "_a", ":a", "a b", "a|b", "a{b}", "caf\u00e9", "x" * 129):
            with self.subTest(bad=bad):
                self.assert_error("BATON_INVALID task_id", self.enqueue, bad)
        self.assertEqual(self.digest(), before)

    def test_events_stream_is_capped_after_every_call(self):
        capped = bp.Baton(self.r, NS, events_maxlen=10)
        capped.enqueue(TYPE, [self.spec(f"t{i}") for i in range(300)])
        # MAXLEN ~ removes whole stream nodes only (at most 100 entries each by default).
        length = self.r.xlen(self.k.events())
        self.assertTrue(10 <= length < 110, length)
        self.assertEqual(self.b.events()[-1]["id"], "t299")
        entries, _ = capped.dequeue(TYPE, GROUP, "c1", 300)
        capped.ack(TYPE, GROUP, [(e.id, e.sid) for e in entries], "c1")
        length = self.r.xlen(self.k.events())
        self.assertTrue(10 <= length < 110, length)
        self.assert_event(self.b.events()[-1], "active", "done", 1, "c1")

    def test_wrong_key_count_is_refused(self):
        keys = [self.k.stream(TYPE), self.k.scheduled(TYPE), self.k.tasks(), self.k.bodies(),
                self.k.events(), self.k.types()]
        args = [TYPE, 0, 1] + self.spec("t1").argv()
        self.assert_error("BATON_INVALID KEYS", self.r.execute_command, "FCALL",
                          "baton_enqueue", len(keys), *keys, *args)

    def test_events_maxlen_zero_emits_nothing(self):
        quiet = bp.Baton(self.r, NS, events_maxlen=0)
        quiet.enqueue(TYPE, [self.spec("t1")])
        entries, _ = quiet.dequeue(TYPE, GROUP, "c1", 10)
        quiet.ack(TYPE, GROUP, [(entries[0].id, entries[0].sid)], "c1")
        self.assertEqual(self.r.exists(self.k.events()), 0)

    def test_wakeup_is_published_when_a_task_becomes_the_earliest(self):
        pubsub = self.r.pubsub(ignore_subscribe_messages=True)
        pubsub.subscribe(bp.WAKEUP_CHANNEL)
        _, due1 = self.enqueue("t1", delay_seconds=100)
        self.enqueue("t2", delay_seconds=200)  # later: no wakeup
        _, due3 = self.enqueue("t3", delay_seconds=50)
        self.enqueue("t4")  # immediate: no wakeup
        messages = []
        for _ in range(50):
            m = pubsub.get_message(timeout=0.05)
            if m is None and len(messages) >= 2:
                break
            if m is not None:
                messages.append(m["data"].decode())
        pubsub.close()
        self.assertEqual(messages, [f"{NS}|{TYPE}|{due1}", f"{NS}|{TYPE}|{due3}"])


class DequeueAckTest(ProtocolTestCase):
    def test_group_is_created_at_zero_so_the_backlog_is_delivered(self):
        self.b.enqueue(TYPE, [self.spec(f"t{i}") for i in range(5)])
        self.assertEqual(self.r.exists(self.k.stream(TYPE)), 1)
        entries = self.dequeue(count=3)
        self.assertEqual([e.id for e in entries], ["t0", "t1", "t2"])
        self.assertEqual([e.id for e in self.dequeue(count=10)], ["t3", "t4"])
        self.assertEqual(self.pending(), 5)

    def test_dequeue_reply_and_event(self):
        status, sid = self.enqueue("t1", max_retry=4, delay_seconds=0, execution_timeout=9,
                                   extra=b'{"trace":{"traceparent":"00-ab-cd-01"}}')
        e = self.dequeue_one("worker-a")
        self.assertEqual(e, bp.Entry(sid=sid, id="t1", payload=b'{"to":"a@example.com"}',
                                     max_retry=4, delay_seconds=0, created_at=CREATED,
                                     execution_timeout=9,
                                     extra=b'{"trace":{"traceparent":"00-ab-cd-01"}}',
                                     attempt=0))
        self.assert_event(self.last_event("t1"), "queued", "active", 1, "worker-a")
        doc = json.loads(bp.task_document(NS, TYPE, e))
        self.assertEqual(doc, {"task_id": "t1", "namespace": NS, "task_type": TYPE,
                               "payload": {"to": "a@example.com"}, "max_retry": 4,
                               "delay_seconds": 0, "created_at": CREATED,
                               "execution_timeout": 9,
                               "trace": {"traceparent": "00-ab-cd-01"}})

    def test_empty_dequeue_returns_the_id_to_block_after(self):
        entries, last_id = self.b.dequeue(TYPE, GROUP, "c1", 10)
        self.assertEqual((entries, last_id), ([], "0-0"))
        _, sid = self.enqueue("t1")
        entries, last_id = self.b.dequeue(TYPE, GROUP, "c1", 10)
        self.assertEqual((len(entries), last_id), (1, ""))
        entries, last_id = self.b.dequeue(TYPE, GROUP, "c1", 10)
        self.assertEqual((entries, last_id), ([], sid))
        # XREAD after last_id blocks until a new entry arrives, then returns it.
        _, sid2 = self.enqueue("t2")
        reply = self.r.xread({self.k.stream(TYPE): last_id}, block=100)
        self.assertEqual(reply[0][1][0][0].decode(), sid2)

    def test_ack_writes_the_done_marker_and_removes_the_task(self):
        self.enqueue("t1")
        e = self.dequeue_one("worker-a")
        before = self.now_ms()
        self.assertEqual(self.b.ack(TYPE, GROUP, [(e.id, e.sid)], "worker-a", retention_s=3600),
                         ["done"])
        marker = self.b.final_record("t1")
        self.assertEqual({k: v for k, v in marker.items() if k != "finished_ms"},
                         {"state": "done", "type": TYPE, "attempts": 1, "worker": "worker-a"})
        self.assertTrue(before <= marker["finished_ms"] <= self.now_ms())
        ttl = self.r.ttl(self.k.done("t1"))
        self.assertTrue(3590 <= ttl <= 3600, ttl)
        self.assertIsNone(self.b.record("t1"))
        self.assertEqual(self.r.xlen(self.k.stream(TYPE)), 0)
        self.assertEqual(self.pending(), 0)
        self.assert_event(self.last_event("t1"), "active", "done", 1, "worker-a")
        # A second ack finds nothing.
        self.assertEqual(self.b.ack(TYPE, GROUP, [(e.id, e.sid)], "worker-a"), ["gone"])

    def test_invalid_ack_arguments_are_refused_and_nothing_is_written(self):
        self.b.enqueue(TYPE, [self.spec("t1"), self.spec("t2")])
        e1, e2 = self.dequeue()
        before = self.digest()
        for done, field in (([(e1.id, e1.sid), (e2.id, "bad")], "SID"),
                            ([(e1.id, e1.sid), (e2.id, "")], "SID"),
                            ([(e1.id, e1.sid), ("", e2.sid)], "id"),
                            ([(e1.id, "1-x"), (e2.id, e2.sid)], "SID")):
            with self.subTest(done=done):
                self.assert_error(f"BATON_INVALID {field}", self.b.ack, TYPE, GROUP, done, "c1")
        self.assertEqual(self.digest(), before)
        self.assertEqual(self.b.ack(TYPE, GROUP, [(e1.id, e1.sid), (e2.id, e2.sid)], "c1"),
                         ["done", "done"])

    def test_large_batches_cross_the_command_chunk_size(self):
        n = 1200
        results = self.b.enqueue(TYPE, [self.spec(f"t{i}") for i in range(n)])
        self.assertEqual({s for s, _ in results}, {"queued"})
        entries = self.dequeue(count=n)
        self.assertEqual(len(entries), n)
        statuses = self.b.ack(TYPE, GROUP, [(e.id, e.sid) for e in entries], "c1")
        self.assertEqual(statuses, ["done"] * n)
        self.assertEqual((self.r.hlen(self.k.tasks()), self.r.xlen(self.k.stream(TYPE)),
                          self.pending()), (0, 0, 0))

    def test_same_task_twice_in_one_ack_batch(self):
        self.enqueue("t1")
        e = self.dequeue_one()
        self.assertEqual(self.b.ack(TYPE, GROUP, [(e.id, e.sid), (e.id, e.sid)], "c1"),
                         ["done", "gone"])
        self.assertEqual(len([x for x in self.b.events("t1") if x["to"] == "done"]), 1)


class PromoteTest(ProtocolTestCase):
    def test_promote_moves_due_tasks_only(self):
        due = self.soon_ms()
        results = self.b.enqueue(TYPE, [self.spec(f"due{i}", run_at_ms=due) for i in range(5)])
        self.assertEqual(results, [("scheduled", due)] * 5)
        _, later = self.enqueue("later", delay_seconds=3600)
        promoted, next_due, now_ms = self.promote_when_due(due)
        self.assertEqual((promoted, next_due), (5, later))
        self.assertTrue(now_ms >= due)
        self.assertEqual(self.b.promote(TYPE)[:2], (0, later))
        entries = self.dequeue()
        self.assertEqual(sorted(e.id for e in entries), [f"due{i}" for i in range(5)])
        self.assertEqual([e.attempt for e in entries], [0] * 5)
        self.assertEqual(self.b.record("later")[0], "scheduled")
        self.assertEqual(self.r.hkeys(self.k.bodies()), [b"later"])
        self.assert_event(self.b.events("due0")[1], "scheduled", "queued", 0)

    def test_promote_respects_the_limit(self):
        due = self.soon_ms()
        results = self.b.enqueue(TYPE, [self.spec(f"d{i}", run_at_ms=due) for i in range(7)])
        self.assertEqual({s for s, _ in results}, {"scheduled"})
        self.sleep_until(due)
        promoted, next_due, now_ms = self.b.promote(TYPE, limit=3)
        self.assertEqual(promoted, 3)
        self.assertTrue(next_due <= now_ms)  # more are due: the caller calls again
        self.assertEqual(self.b.promote(TYPE, limit=3)[0], 3)
        self.assertEqual(self.b.promote(TYPE, limit=3)[:2], (1, -1))
        self.assertEqual(self.r.xlen(self.k.stream(TYPE)), 7)

    def test_members_without_a_scheduled_record_are_dropped_not_promoted(self):
        self.enqueue("live")  # queued: a stray member of the same id must not be re-added
        self.r.zadd(self.k.scheduled(TYPE), {"live": 1, "ghost": 1})
        self.assertEqual(self.b.promote(TYPE)[:2], (0, -1))
        self.assertEqual(self.r.xlen(self.k.stream(TYPE)), 1)
        self.assertEqual(self.b.record("live")[0], "queued")
        self.assertIsNone(self.b.record("ghost"))

    def test_concurrent_promoters_never_promote_a_task_twice(self):
        due = self.soon_ms(1000)
        n = 300
        for i in range(0, n, 100):
            results = self.b.enqueue(TYPE, [self.spec(f"t{j}", run_at_ms=due)
                                            for j in range(i, i + 100)])
            self.assertEqual({s for s, _ in results}, {"scheduled"})
        self.sleep_until(due)
        counts = []

        def promoter():
            b = bp.Baton(self.server.client(), NS)
            total = 0
            while True:
                promoted, next_due, now_ms = b.promote(TYPE, limit=7)
                total += promoted
                if next_due == -1 or next_due > now_ms:
                    break
            counts.append(total)
            b.r.close()

        threads = [threading.Thread(target=promoter) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(sum(counts), n)
        ids = [f[b"id"].decode() for _, f in self.r.xrange(self.k.stream(TYPE))]
        self.assertEqual(sorted(ids), sorted(f"t{j}" for j in range(n)))
        self.assertEqual(self.r.zcard(self.k.scheduled(TYPE)), 0)
        self.assertEqual(self.r.hlen(self.k.bodies()), 0)


class CancelTest(ProtocolTestCase):
    def test_cancel_queued_task(self):
        _, sid = self.enqueue("t1")
        self.assertEqual(self.b.cancel(TYPE, "t1", retention_s=600), "cancelled")
        self.assertIsNone(self.b.record("t1"))
        self.assertEqual(self.r.xlen(self.k.stream(TYPE)), 0)
        self.assertEqual(self.b.final_record("t1")["state"], "cancelled")
        self.assertTrue(590 <= self.r.ttl(self.k.done("t1")) <= 600)
        self.assert_event(self.last_event("t1"), "queued", "cancelled", 0)
        self.assertEqual(self.enqueue("t1"), ("duplicate", "cancelled"))

    def test_cancel_queued_task_not_yet_delivered_to_an_existing_group(self):
        self.enqueue("t1")
        self.dequeue_one()  # creates the group; t1 is active
        self.enqueue("t2")
        self.assertEqual(self.b.cancel(TYPE, "t2"), "cancelled")
        self.assertEqual(self.dequeue(), [])

    def test_cancel_checks_every_consumer_group(self):
        self.enqueue("t1")
        self.r.xgroup_create(self.k.stream(TYPE), "rescue", id="0")
        self.r.xreadgroup("rescue", "r1", {self.k.stream(TYPE): ">"})
        message = self.assert_error("BATON_CONFLICT", self.b.cancel, TYPE, "t1")
        self.assertIn("active on consumer r1", message)

    def test_cancel_scheduled_task(self):
        self.enqueue("t1", delay_seconds=60)
        self.assertEqual(self.b.cancel(TYPE, "t1"), "cancelled")
        self.assertEqual(self.r.zcard(self.k.scheduled(TYPE)), 0)
        self.assertIsNone(self.b.body("t1"))
        self.assert_event(self.last_event("t1"), "scheduled", "cancelled", 0)

    def test_cancel_active_task_is_a_conflict(self):
        self.enqueue("t1")
        self.dequeue_one()
        before = self.digest()
        message = self.assert_error("BATON_CONFLICT", self.b.cancel, TYPE, "t1")
        self.assertIn("active", message)
        self.assertEqual(self.digest(), before)

    def test_cancel_unknown_task_is_not_found(self):
        self.assert_error("BATON_NOT_FOUND", self.b.cancel, TYPE, "nope")

    def test_cancel_with_keys_of_another_type_is_refused(self):
        self.enqueue("t1")
        self.assert_error("BATON_INVALID", self.b.cancel, "other_type", "t1")
        self.assertEqual(self.b.record("t1")[0], "queued")


if __name__ == "__main__":
    unittest.main()
