"""Protocol tests, part 1: version, enqueue, dequeue, ack, promote, cancel, per-call events,
final states (done ZSET + ended HASH) and their retention.

Language-neutral: these drive the Redis Functions library (baton_v2) through FCALL with the
reference client baton_protocol.py, against a real redis-server. Failure paths (fail, reclaim,
extend, leases, the dead-letter queue, malformed entries) are in test_protocol_recovery.py; the
contract checks every function shares (KEYS validation, error replies, configure, cron_mark,
rescue, type announcements) in test_protocol_contract.py.
Run: cd /work/main && /usr/bin/python3 -m unittest discover -s tests/protocol -p 'test_*.py' -v
"""

import json
import threading
import time
import unittest

import baton_generated as gen
import baton_protocol as bp
from protocol_testcase import CREATED, GROUP, NS, TYPE, ProtocolTestCase

FAKE_LIBRARY = """#!lua name=baton_v2
redis.register_function{function_name='baton_v2_version', flags={'no-writes'},
  callback=function() return '3' end}
"""


class VersionTest(ProtocolTestCase):
    def test_version_matches_contract(self):
        self.assertEqual(self.b.version(), bp.LIBRARY_VERSION)
        with open(bp.FUNCTIONS_DIR.parent / "contract" / "protocol.json") as f:
            contract = json.load(f)
        self.assertEqual((contract["library"], contract["version"]), ("baton_v2", "2"))
        self.assertEqual(self.b.version(), contract["version"])

    def test_library_registers_exactly_the_contract_functions(self):
        for node in self.each_primary():  # on a cluster: every primary has it
            with node:
                self.check_library_functions(node)

    def check_library_functions(self, node):
        (lib,) = node.execute_command("FUNCTION", "LIST", "LIBRARYNAME", "baton_v2")
        lib = dict(zip(lib[::2], lib[1::2]))
        self.assertEqual(lib[b"library_name"], b"baton_v2")
        flags = {}
        for fn in lib[b"functions"]:
            info = dict(zip(fn[::2], fn[1::2]))
            flags[info[b"name"].decode()] = info[b"flags"]
        self.assertEqual(set(flags), set(gen.FUNCTIONS))
        self.assertEqual(len(flags), 16)
        self.assertEqual(flags["baton_v2_version"], [b"no-writes"])
        self.assertEqual(flags["baton_v2_enqueue"], [])

    def test_client_refuses_a_redis_without_the_library(self):
        self.r.execute_command("FUNCTION", "FLUSH")
        other = self.server.client()
        with self.assertRaisesRegex(bp.VersionMismatch, "^functions library version none "
                                    "loaded in Redis, this client needs 2: run 'baton init'"):
            bp.Baton(other, NS)
        other.close()

    def test_client_refuses_another_version(self):
        self.r.execute_command("FUNCTION", "LOAD", "REPLACE", FAKE_LIBRARY)
        other = self.server.client()
        with self.assertRaisesRegex(bp.VersionMismatch, "^functions library version 3 loaded "
                                    "in Redis, this client needs 2: run 'baton init'$"):
            bp.Baton(other, NS)
        other.close()

    def test_version_is_checked_again_on_every_reconnect(self):
        client = self.server.client()
        b = bp.Baton(client, NS)
        self.assertEqual(b.enqueue(TYPE, [self.spec("t1")])[0][0], "queued")
        # The library is replaced by another version and the connection drops: the next call
        # reconnects, and the reconnect refuses to go on.
        self.r.execute_command("FUNCTION", "LOAD", "REPLACE", FAKE_LIBRARY)
        # (b.node(): the client's connection to the namespace's node, on a cluster too)
        self.b.node().client_kill_filter(_id=b.node().client_id())
        time.sleep(0.1)  # the close reaches the client's socket
        with self.assertRaisesRegex(bp.VersionMismatch, "version 3 loaded"):
            b.enqueue(TYPE, [self.spec("t2")])
        self.assertIsNone(self.b.record("t2"))
        # With the right library back, the next reconnect passes the check.
        bp.load_library(self.r)
        self.assertEqual(b.enqueue(TYPE, [self.spec("t2")])[0][0], "queued")
        # A client made by connect() checks from its first connection.
        self.r.execute_command("FUNCTION", "LOAD", "REPLACE", FAKE_LIBRARY)
        fresh = bp.connect(f"redis://127.0.0.1:{self.server.port}")
        with self.assertRaises(bp.VersionMismatch):
            fresh.ping()
        client.close()
        fresh.close()


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
        # Two fields, in this order: task 'ID|MAX_RETRY|DELAY_SECONDS|CREATED_AT|
        # EXECUTION_TIMEOUT|ATTEMPT|EXTRA' and the payload bytes.
        self.assertEqual(list(fields.items()), [
            (b"task", b't1|2|0|%d|30|0|{"headers":{"a":"b"}}' % CREATED),
            (b"payload", b'{"to":"a@example.com"}')])
        self.assertEqual(self.r.smembers(self.k.types()), {TYPE.encode()})
        self.assertTrue(self.k.stream(TYPE).startswith("baton:v2:{shop}:"))
        self.assert_event(self.last_event("t1"), "new", "queued", 0, ids=["t1"])

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
        self.assert_event(self.last_event("t1"), "new", "scheduled", 0, ids=["t1"])

    def test_run_at_is_absolute_and_a_past_run_at_is_immediate(self):
        run_at = self.now_ms() + 3600 * 1000
        self.assertEqual(self.enqueue("later", run_at_ms=run_at, delay_seconds=5),
                         ("scheduled", run_at))
        status, _ = self.enqueue("past", run_at_ms=self.now_ms() - 1000, delay_seconds=60)
        self.assertEqual(status, "queued")

    def test_batch_of_several_with_one_events_entry_per_target_state(self):
        results = self.b.enqueue(TYPE, [self.spec("a"), self.spec("b", delay_seconds=10),
                                        self.spec("c"), self.spec("a")])
        self.assertEqual([s for s, _ in results], ["queued", "scheduled", "queued", "duplicate"])
        self.assertEqual(results[3][1], "queued")
        self.assertEqual(self.r.xlen(self.k.stream(TYPE)), 2)
        self.assertEqual(self.r.hlen(self.k.tasks()), 3)
        events = self.b.events()
        self.assertEqual(len(events), 2, events)
        by_to = {e["to"]: e for e in events}
        self.assert_event(by_to["queued"], "new", "queued", [0, 0], ids=["a", "c"])
        self.assert_event(by_to["scheduled"], "new", "scheduled", [0], ids=["b"])
        self.assertEqual([e.id for e in self.dequeue()], ["a", "c"])

    def test_duplicate_of_a_live_task_writes_nothing(self):
        self.enqueue("t1")
        self.enqueue("t2", delay_seconds=60)
        self.dequeue_one()  # active: the record still says queued
        before = self.snapshot()
        self.assertEqual(self.enqueue("t1", payload=b'{"other":1}'), ("duplicate", "queued"))
        self.assertEqual(self.enqueue("t2"), ("duplicate", "scheduled"))
        self.assertEqual(self.snapshot(), before)

    def test_duplicate_after_done_reports_done_and_writes_nothing(self):
        self.enqueue("t1")
        self.assertEqual(self.ack([self.dequeue_one()]), ["done"])
        before = self.snapshot()
        self.assertEqual(self.enqueue("t1"), ("duplicate", "done"))
        self.assertEqual(self.b.enqueue(TYPE, [self.spec("t1"), self.spec("t1")]),
                         [("duplicate", "done")] * 2)
        self.assertEqual(self.snapshot(), before)
        # Only the done set remembers it: dropping it (what the retention does) frees the id.
        self.r.zrem(self.k.done(), "t1")
        self.assertEqual(self.enqueue("t1")[0], "queued")

    def test_final_states_are_trimmed_after_done_retention(self):
        self.assertEqual(self.b.configure(done_retention_s=1)["done_retention_s"], 1)
        self.b.enqueue(TYPE, [self.spec("t1"), self.spec("t2"), self.spec("t3")])
        self.assertEqual(self.b.cancel(TYPE, "t3"), "cancelled")
        e1, e2 = self.dequeue()
        self.assertEqual(self.ack([e1]), ["done"])
        self.assertEqual((self.b.final_state("t1")[0], self.b.final_state("t3")[0]),
                         ("done", "cancelled"))
        self.assertEqual(self.enqueue("t3"), ("duplicate", "cancelled"))
        time.sleep(1.1)
        # Every call that finishes tasks trims the final states older than the retention.
        self.assertEqual(self.ack([e2]), ["done"])
        self.assertIsNone(self.b.final_state("t1"))
        self.assertIsNone(self.b.final_state("t3"))
        self.assertIsNone(self.b.ended("t3"))
        self.assertEqual(self.b.final_state("t2")[0], "done")
        self.assertEqual(self.r.zcard(self.k.done()), 1)
        self.assertEqual(self.enqueue("t1")[0], "queued")
        self.assertEqual(self.enqueue("t3")[0], "queued")

    def test_expired_final_state_is_no_duplicate_before_any_trim(self):
        # Regression: with nothing finishing in the namespace, no call trims the done set; an id
        # past done_retention_s must still be free for enqueue.
        self.assertEqual(self.b.configure(done_retention_s=1)["done_retention_s"], 1)
        self.enqueue("t1")
        self.assertEqual(self.ack(self.dequeue()), ["done"])
        self.assertEqual(self.enqueue("t1"), ("duplicate", "done"))
        time.sleep(1.1)
        self.assertEqual(self.r.zcard(self.k.done()), 1)  # not trimmed yet
        self.assertEqual(self.enqueue("t1")[0], "queued")

    def test_unique_key_conflict_and_expiry(self):
        self.assertEqual(self.enqueue("t1", unique_key="user:7", unique_ttl_s=60)[0], "queued")
        ttl = self.r.ttl(self.k.unique("user:7"))
        self.assertTrue(55 <= ttl <= 60, ttl)
        self.assertEqual(self.r.get(self.k.unique("user:7")), b"t1")
        self.assertEqual(self.k.unique("user:7"), "baton:v2:{shop}:unique:user:7")
        before = self.snapshot()
        self.assertEqual(self.enqueue("t2", unique_key="user:7", unique_ttl_s=60),
                         ("unique_conflict", "t1"))
        self.assertEqual(self.snapshot(), before)
        self.r.pexpire(self.k.unique("user:7"), 1)  # let the lock run out
        self.wait_until(lambda: not self.r.exists(self.k.unique("user:7")))
        self.assertEqual(self.enqueue("t2", unique_key="user:7", unique_ttl_s=60)[0], "queued")
        self.assertEqual(self.r.get(self.k.unique("user:7")), b"t2")

    def test_unique_keys_of_a_batch_follow_task_order(self):
        results = self.b.enqueue(TYPE, [self.spec("t1", unique_key="u1", unique_ttl_s=60),
                                        self.spec("t2"),
                                        self.spec("t3", unique_key="u3", unique_ttl_s=60)])
        self.assertEqual([s for s, _ in results], ["queued"] * 3)
        self.assertEqual((self.r.get(self.k.unique("u1")), self.r.get(self.k.unique("u3"))),
                         (b"t1", b"t3"))

    def test_invalid_arguments_are_refused_and_nothing_is_written(self):
        before = self.snapshot()
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
        self.assert_error("BATON_INVALID KEYS[1]", self.b.enqueue, "bad type", [])
        self.assertEqual(self.snapshot(), before)

    def test_task_id_rule_at_its_edges(self):
        for good in ("a", "Z", "0", "a_b.c:d-e", "x" * 128, "0AF7651916CD43DD-8448eb211c80319c"):
            with self.subTest(good=good):
                self.assertEqual(self.enqueue(good)[0], "queued")
        before = self.snapshot()
        for bad in ("", "-a", ".a", "_a", ":a", "a b", "a|b", "a{b}", "caf\u00e9", "x" * 129):
            with self.subTest(bad=bad):
                self.assert_error("BATON_INVALID task_id", self.enqueue, bad)
        self.assertEqual(self.snapshot(), before)

    def test_wakeup_is_published_when_a_task_becomes_the_earliest(self):
        pubsub = self.r.pubsub(ignore_subscribe_messages=True)
        pubsub.subscribe(bp.WAKEUP_CHANNEL)
        self.assertEqual(bp.WAKEUP_CHANNEL, "baton:v2:wakeup")
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


class EventsSettingTest(ProtocolTestCase):
    def test_events_are_capped_by_the_namespace_setting(self):
        self.assertEqual(self.b.configure(events_maxlen=10)["events_maxlen"], 10)
        pipe = self.r.pipeline(transaction=False)
        for i in range(300):  # 300 calls: one events entry each
            keys, args = bp.call_args(self.k, "baton_v2_enqueue", TYPE, {"n": 1},
                                      [self.spec(f"t{i}").values()])
            pipe.execute_command("FCALL", "baton_v2_enqueue", len(keys), *keys, *args)
        pipe.execute()
        # MAXLEN ~ removes whole stream nodes only (at most 100 entries each by default).
        length = self.r.xlen(self.k.events())
        self.assertTrue(10 <= length < 110, length)
        self.assertEqual(self.b.events()[-1]["ids"], ["t299"])
        delivery = self.b.dequeue(TYPE, GROUP, "c1", 300)
        self.assertEqual(self.ack(delivery.entries), ["done"] * 300)
        length = self.r.xlen(self.k.events())
        self.assertTrue(10 <= length < 110, length)
        self.assert_event(self.b.events()[-1], "active", "done", [1] * 300, "c1",
                          ids=[f"t{i}" for i in range(300)])

    def test_events_maxlen_zero_emits_nothing(self):
        self.b.configure(events_maxlen=0)
        self.enqueue("t1")
        self.enqueue("t2", max_retry=0)
        self.assertEqual(self.ack([self.dequeue(count=1)[0]]), ["done"])
        self.assertEqual(self.fail_task(self.dequeue_one())[0], "dead")
        self.assertEqual(self.r.exists(self.k.events()), 0)
        # Back to the default: events again.
        self.b.configure(events_maxlen=None)
        self.enqueue("t3")
        self.assertEqual(len(self.b.events()), 1)

    def test_a_caller_cannot_pass_an_events_cap_any_more(self):
        for name, (_, argv, per_item) in gen.FUNCTIONS.items():
            for field in argv + per_item:
                self.assertNotIn("maxlen", field, name)
                self.assertNotIn("retention", field, name)
        self.enqueue("t1")
        before = self.snapshot()
        # The v1 shape: an events cap after the other arguments is one value too many.
        keys, args = bp.call_args(self.k, "baton_v2_enqueue", TYPE, {"n": 1},
                                  [self.spec("t2").values()])
        self.assert_error("BATON_INVALID ARGV", self.r.execute_command, "FCALL",
                          "baton_v2_enqueue", len(keys), *keys, *args, 10)
        keys, args = bp.call_args(self.k, "baton_v2_dequeue", TYPE,
                                  {"group": GROUP, "consumer": "c1", "count": 1, "lease_ms": 0})
        self.assert_error("BATON_INVALID ARGV", self.r.execute_command, "FCALL",
                          "baton_v2_dequeue", len(keys), *keys, *args, 10)
        self.assertEqual(self.snapshot(), before)


class DequeueAckTest(ProtocolTestCase):
    def test_group_is_created_at_zero_so_the_backlog_is_delivered(self):
        self.b.enqueue(TYPE, [self.spec(f"t{i}") for i in range(5)])
        self.assertEqual(self.r.exists(self.k.stream(TYPE)), 1)
        entries = self.dequeue(count=3)
        self.assertEqual([e.id for e in entries], ["t0", "t1", "t2"])
        self.assertEqual([e.id for e in self.dequeue(count=10)], ["t3", "t4"])
        self.assertEqual(self.pending(), 5)

    def test_dequeue_reply_lease_and_event(self):
        status, sid = self.enqueue("t1", max_retry=4, delay_seconds=0, execution_timeout=9,
                                   extra=b'{"trace":{"traceparent":"00-ab-cd-01"}}')
        before = self.now_ms()
        delivery = self.b.dequeue(TYPE, GROUP, "worker-a", 10, lease_ms=5000)
        after = self.now_ms()
        (e,) = delivery.entries
        self.assertEqual(e, bp.Entry(sid=sid, id="t1", payload=b'{"to":"a@example.com"}',
                                     max_retry=4, delay_seconds=0, created_at=CREATED,
                                     execution_timeout=9,
                                     extra=b'{"trace":{"traceparent":"00-ab-cd-01"}}',
                                     attempt=0))
        self.assertEqual(delivery.last_id, "")
        self.assertTrue(before + 5000 <= delivery.lease_deadline_ms <= after + 5000, delivery)
        # The lease ends at the delivery time in the group + the consumer's lease length.
        self.assertEqual(self.leases(), {"worker-a": 5000})
        self.assert_lease_end(self.lease("t1"), before + 5000, delivery.lease_deadline_ms)
        self.assert_event(self.last_event("t1"), "queued", "active", 1, "worker-a", ids=["t1"])
        doc = json.loads(bp.task_document(NS, TYPE, e))
        self.assertEqual(doc, {"task_id": "t1", "namespace": NS, "task_type": TYPE,
                               "payload": {"to": "a@example.com"}, "max_retry": 4,
                               "delay_seconds": 0, "created_at": CREATED,
                               "execution_timeout": 9,
                               "trace": {"traceparent": "00-ab-cd-01"}})

    def test_lease_zero_takes_the_namespace_setting(self):
        self.b.enqueue(TYPE, [self.spec("t1"), self.spec("t2")])
        before = self.now_ms()
        d1 = self.b.dequeue(TYPE, GROUP, "c1", 1)
        self.assertTrue(before + gen.NAMESPACE_DEFAULTS["lease_ms"] <= d1.lease_deadline_ms
                        <= self.now_ms() + gen.NAMESPACE_DEFAULTS["lease_ms"], d1)
        self.assertEqual(self.leases(), {"c1": gen.NAMESPACE_DEFAULTS["lease_ms"]})
        self.b.configure(lease_ms=7000)
        before = self.now_ms()
        d2 = self.b.dequeue(TYPE, GROUP, "c1", 1)
        self.assertTrue(before + 7000 <= d2.lease_deadline_ms <= self.now_ms() + 7000, d2)
        # The resolved length is stored: a later change of the setting does not move it.
        self.assertEqual(self.leases(), {"c1": 7000})
        self.assert_lease_end(self.lease("t2"), before + 7000, d2.lease_deadline_ms)
        self.b.configure(lease_ms=9000)
        self.assert_lease_end(self.lease("t2"), before + 7000, d2.lease_deadline_ms)

    def test_lease_out_of_range_is_refused(self):
        self.enqueue("t1")
        before = self.snapshot()
        for lease_ms in (999, 86400001, -1):
            with self.subTest(lease_ms=lease_ms):
                self.assert_error("BATON_INVALID lease_ms", self.b.dequeue, TYPE, GROUP, "c1",
                                  1, lease_ms)
        self.assertEqual(self.snapshot(), before)

    def test_one_events_entry_per_batch_call(self):
        ids = [f"t{i}" for i in range(5)]
        self.b.enqueue(TYPE, [self.spec(i) for i in ids])
        entries = self.dequeue("w1", count=5)
        self.assertEqual(self.ack(entries, "w1"), ["done"] * 5)
        events = self.b.events()
        self.assertEqual(len(events), 3, events)
        self.assert_event(events[0], "new", "queued", [0] * 5, ids=ids)
        self.assert_event(events[1], "queued", "active", [1] * 5, "w1", ids=ids)
        self.assert_event(events[2], "active", "done", [1] * 5, "w1", ids=ids)
        self.assertEqual(set(events[0]) - {"event_id"},
                         {"type", "from", "to", "worker", "ids", "attempts", "error"})

    def test_empty_dequeue_returns_the_id_to_block_after(self):
        self.assertEqual(self.b.dequeue(TYPE, GROUP, "c1", 10), ([], "0-0", 0))
        _, sid = self.enqueue("t1")
        delivery = self.b.dequeue(TYPE, GROUP, "c1", 10)
        self.assertEqual((len(delivery.entries), delivery.last_id), (1, ""))
        self.assertEqual(self.b.dequeue(TYPE, GROUP, "c1", 10), ([], sid, 0))
        # XREAD after last_id blocks until a new entry arrives, then returns it.
        _, sid2 = self.enqueue("t2")
        reply = self.r.xread({self.k.stream(TYPE): sid}, block=100)
        self.assertEqual(reply[0][1][0][0].decode(), sid2)

    def test_ack_records_done_and_removes_the_task(self):
        self.enqueue("t1")
        e = self.dequeue_one("worker-a")
        self.assertIsNotNone(self.lease("t1"))
        before = self.now_ms()
        self.assertEqual(self.ack([e], "worker-a"), ["done"])
        state, finished = self.b.final_state("t1")
        self.assertEqual(state, "done")
        self.assertTrue(before <= finished <= self.now_ms())
        self.assertIsNone(self.b.ended("t1"))  # a plain success costs one ZADD member
        self.assertEqual(self.r.exists(self.k.ended()), 0)
        self.assertIsNone(self.b.record("t1"))
        self.assertIsNone(self.lease("t1"))
        self.assertEqual(self.r.xlen(self.k.stream(TYPE)), 0)
        self.assertEqual(self.pending(), 0)
        self.assert_event(self.last_event("t1"), "active", "done", 1, "worker-a")
        # A second ack finds nothing.
        self.assertEqual(self.ack([e], "worker-a"), ["gone"])

    def test_invalid_ack_arguments_are_refused_and_nothing_is_written(self):
        self.b.enqueue(TYPE, [self.spec("t1"), self.spec("t2")])
        e1, e2 = self.dequeue()
        before = self.snapshot()
        for done, field in (([(e1.id, e1.sid), (e2.id, "bad")], "SID"),
                            ([(e1.id, e1.sid), (e2.id, "")], "SID"),
                            ([(e1.id, e1.sid), ("", e2.sid)], "id"),
                            ([(e1.id, "1-x"), (e2.id, e2.sid)], "SID")):
            with self.subTest(done=done):
                self.assert_error(f"BATON_INVALID {field}", self.b.ack, TYPE, GROUP, "c1", done)
        self.assert_error("BATON_INVALID consumer", self.b.ack, TYPE, GROUP, "",
                          [(e1.id, e1.sid)])
        self.assertEqual(self.snapshot(), before)
        self.assertEqual(self.ack([e1, e2]), ["done", "done"])

    def test_large_batches_cross_the_command_chunk_size(self):
        n = 1200
        results = self.b.enqueue(TYPE, [self.spec(f"t{i}") for i in range(n)])
        self.assertEqual({s for s, _ in results}, {"queued"})
        entries = self.dequeue(count=1000) + self.dequeue(count=1000)
        self.assertEqual(len(entries), n)
        # n leases, and nothing stored per task: one lease length for the one consumer.
        self.assertEqual(self.pending(), n)
        lease_ms = gen.NAMESPACE_DEFAULTS["lease_ms"]
        self.assertEqual(self.leases(), {"c1": lease_ms})
        self.assertEqual(self.ack(entries), ["done"] * n)
        self.assertEqual((self.r.hlen(self.k.tasks()), self.r.xlen(self.k.stream(TYPE)),
                          self.pending(), self.r.zcard(self.k.done())), (0, 0, 0, n))
        self.assertEqual(self.leases(), {"c1": lease_ms})
        self.assertEqual(len(self.b.events()[-1]["ids"]), n)

    def test_a_backlog_past_64_records_gets_a_hash_table_and_nothing_else(self):
        # A listpack hash scans its entries on every lookup; past 64 records enqueue converts
        # the tasks hash (with a field written and deleted at once) and leaves no trace of it.
        # Calls of up to 64 tasks look at the size every 16th call per namespace.
        self.b.enqueue(TYPE, [self.spec(f"a{i}") for i in range(64)])
        self.assertEqual(self.r.object("encoding", self.k.tasks()), b"listpack")
        for i in range(16):
            self.b.enqueue(TYPE, [self.spec(f"b{i}")])  # one task per call
        self.assertEqual(self.r.object("encoding", self.k.tasks()), b"hashtable")
        self.assertEqual(self.r.hlen(self.k.tasks()), 80)
        self.assertFalse(self.r.hexists(self.k.tasks(), ""))
        # A batch that alone passes the mark converts the new hash too.
        other = bp.Baton(self.r, "other")
        other.enqueue(TYPE, [self.spec(f"c{i}") for i in range(65)])
        self.assertEqual(self.r.object("encoding", other.keys.tasks()), b"hashtable")
        self.assertEqual(self.r.hlen(other.keys.tasks()), 65)
        self.assertEqual(self.ack(self.dequeue(count=100)), ["done"] * 80)
        self.assertEqual(self.r.exists(self.k.tasks()), 0)

    def test_acked_entries_leave_the_stream_whatever_is_still_pending(self):
        # Every acked entry is deleted (XDEL), whether or not an older entry is still pending
        # (e.g. held by a worker that died); the entries not yet delivered stay.
        stream = self.k.stream(TYPE)
        sids = [sid for _, sid in self.b.enqueue(TYPE, [self.spec(f"t{i}") for i in range(14)])]
        entries = self.dequeue(count=10)  # t0..t9 delivered, t10..t13 not yet
        held, later = entries[0], entries[1:]
        self.assertEqual(self.ack(later), ["done"] * 9)
        left = [sid.decode() for sid, _ in self.r.xrange(stream)]
        self.assertEqual(left, [held.sid] + sids[10:])
        rest = self.dequeue(count=10)
        self.assertEqual([e.id for e in rest], ["t10", "t11", "t12", "t13"])
        self.assertEqual(self.ack([held] + rest), ["done"] * 5)
        self.assertEqual((self.r.xlen(stream), self.pending(), self.r.hlen(self.k.tasks())),
                         (0, 0, 0))

    def test_ack_trims_nothing_another_group_has_not_passed(self):
        # A second group on the stream (e.g. baton rescue's) that has not read yet: only the
        # acked entries go, the unread one stays for both groups.
        stream = self.k.stream(TYPE)
        sids = [sid for _, sid in self.b.enqueue(TYPE, [self.spec(f"t{i}") for i in range(5)])]
        self.r.xgroup_create(stream, "other", id="0")
        entries = self.dequeue(count=4)
        self.assertEqual(self.ack(entries), ["done"] * 4)
        self.assertEqual([sid.decode() for sid, _ in self.r.xrange(stream)], [sids[4]])
        read = self.r.xreadgroup("other", "o1", {stream: ">"})
        self.assertEqual([sid.decode() for sid, _ in read[0][1]], [sids[4]])

    def test_same_task_twice_in_one_ack_batch(self):
        self.enqueue("t1")
        e = self.dequeue_one()
        self.assertEqual(self.ack([e, e]), ["done", "gone"])
        self.assertEqual([x["ids"] for x in self.b.events("t1") if x["to"] == "done"], [["t1"]])


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
        (event,) = [e for e in self.b.events() if e["from"] == "scheduled"]
        self.assert_event(event, "scheduled", "queued", [0] * 5,
                          ids=[f"due{i}" for i in range(5)])

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
        ids = [f[b"task"].decode().split("|", 1)[0]
               for _, f in self.r.xrange(self.k.stream(TYPE))]
        self.assertEqual(sorted(ids), sorted(f"t{j}" for j in range(n)))
        self.assertEqual(self.r.zcard(self.k.scheduled(TYPE)), 0)
        self.assertEqual(self.r.hlen(self.k.bodies()), 0)


class CancelTest(ProtocolTestCase):
    def test_cancel_queued_task(self):
        self.enqueue("t1")
        before = self.now_ms()
        self.assertEqual(self.b.cancel(TYPE, "t1"), "cancelled")
        self.assertIsNone(self.b.record("t1"))
        self.assertEqual(self.r.xlen(self.k.stream(TYPE)), 0)
        state, finished = self.b.final_state("t1")
        self.assertEqual(state, "cancelled")
        self.assertTrue(before <= finished <= self.now_ms())
        self.assertEqual(self.b.ended("t1"), ("cancelled", TYPE, 0, ""))
        self.assert_event(self.last_event("t1"), "queued", "cancelled", 0)
        before = self.snapshot()
        self.assertEqual(self.enqueue("t1"), ("duplicate", "cancelled"))
        self.assertEqual(self.snapshot(), before)

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
        before = self.snapshot()
        message = self.assert_error("BATON_CONFLICT", self.b.cancel, TYPE, "t1")
        self.assertIn("active", message)
        self.assertEqual(self.snapshot(), before)

    def test_cancel_unknown_task_is_not_found(self):
        with self.assertRaises(bp.BatonError) as cm:
            self.b.cancel(TYPE, "nope")
        self.assertEqual((cm.exception.code, str(cm.exception)),
                         ("not_found", "BATON_NOT_FOUND task nope"))

    def test_cancel_with_keys_of_another_type_is_refused(self):
        self.enqueue("t1")
        before = self.snapshot()
        self.assert_error("BATON_INVALID KEYS[1]", self.b.cancel, "other_type", "t1")
        self.assertEqual(self.snapshot(), before)
        self.assertEqual(self.b.record("t1")[0], "queued")


if __name__ == "__main__":
    unittest.main()
