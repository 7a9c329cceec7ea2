"""Protocol tests, part 3: what every function of baton_v2 shares, and the small functions.

- KEYS validation: each function refuses a key of another namespace, type or kind with
  'BATON_INVALID KEYS[i]' and writes nothing;
- error replies are clean (no 'ERR ' prefix, no 'script: ...' suffix) and Redis' own errors pass
  through as they are;
- a task type new to a namespace is announced on baton:v2:types;
- baton_v2_configure (namespace settings) and its validation;
- baton_v2_cron_mark (compare-and-set of a cron job's last tick);
- baton_v2_rescue_start / baton_v2_rescue_finish.
Run: cd /work/main && /usr/bin/python3 -m unittest discover -s tests/protocol -p 'test_*.py' -v
"""

import json
import threading
import unittest

import baton_generated as gen
import baton_protocol as bp
from protocol_testcase import GROUP, NS, TYPE, ProtocolTestCase

with open(bp.FUNCTIONS_DIR.parent / "contract" / "protocol.json") as _f:
    SETTINGS = json.load(_f)["namespace_config"]


class KeysValidationTest(ProtocolTestCase):
    def setUp(self):
        super().setUp()
        # Something for every function to act on, so that an accepted call would write.
        self.kill("dead1")
        self.enqueue("act1")
        self.active = self.dequeue_one()
        self.expire_lease("act1")  # reclaim would take it
        self.enqueue("q1")
        due = self.soon_ms(100)
        self.enqueue("s1", run_at_ms=due)
        self.sleep_until(due)  # promote would move it
        self.r.xgroup_create(self.k.stream(TYPE), "broken", id="0")

    def calls(self):
        """name -> (fixed ARGV, items, extra keys) of a call that passes every other check."""
        a = self.active
        return {
            "baton_v2_configure": ({}, [{"setting": "lease_ms", "value": 5000}], []),
            "baton_v2_enqueue": ({"n": 1}, [self.spec("new1", unique_key="u1",
                                                      unique_ttl_s=60).values()],
                                 [self.k.unique("u1")]),
            "baton_v2_dequeue": ({"group": GROUP, "consumer": "c2", "count": 10,
                                  "lease_ms": 0}, [], []),
            "baton_v2_start": ({"group": GROUP, "consumer": "c1", "lease_ms": 0, "n": 1},
                               [{"sid": a.sid, "id": a.id, "attempt": 0}], []),
            "baton_v2_ack": ({"group": GROUP, "consumer": "c1", "n": 1},
                             [{"id": a.id, "sid": a.sid}], []),
            "baton_v2_fail": ({"group": GROUP, "consumer": "c1", "id": a.id, "sid": a.sid,
                               "kind": "error", "error": "x", "stack": "", "base_ms": 10,
                               "max_ms": 10, "jitter": "0"}, [], []),
            "baton_v2_reclaim": ({"count": 10, "base_ms": 10, "max_ms": 10, "jitter_seed": 1,
                                  "reaper": "r"}, [], []),
            "baton_v2_extend": ({"group": GROUP, "consumer": "c1", "lease_ms": 0},
                                [{"id": a.id, "sid": a.sid}], []),
            "baton_v2_promote": ({"limit": 10}, [], []),
            "baton_v2_cancel": ({"id": "q1"}, [], []),
            "baton_v2_dlq_replay": ({"id": "dead1", "payload": ""}, [], []),
            "baton_v2_dlq_delete": ({"id": "dead1"}, [], []),
            "baton_v2_rescue_start": ({"group": "broken", "rescue_group": "rescue"}, [], []),
            "baton_v2_rescue_finish": ({"force": 1, "limit": 10}, [], []),
        }

    def wrong_keys(self, kinds, i):
        """(what, key) replacements for KEYS[i] (0-based here) that name another namespace, type,
        kind, or the v1 keyspace."""
        kind = kinds[i]
        other_ns = bp.Keys("other")
        out = []
        # KEYS[1] names the call's namespace and type: changing them there is foreign only when
        # another key still names the call's (else it is a whole call for another namespace or
        # type, e.g. baton_v2_dlq_delete, whose only typed key is KEYS[1]).
        if i > 0 or len(kinds) > 1:
            out.append(("namespace", other_ns.of(kind, TYPE)))
        typed_others = [k for k in kinds[1:] if gen.KEY_KINDS[k]["typed"]]
        if gen.KEY_KINDS[kind]["typed"] and (i > 0 or typed_others):
            out.append(("type", self.k.of(kind, "other_type")))
        other_kind = next(k for k in gen.KEY_KINDS if k not in kinds)
        out.append(("kind", self.k.of(other_kind, TYPE)))
        out.append(("v1", self.k.of(kind, TYPE).replace("baton:v2:", "baton:")))
        return out

    def test_every_function_refuses_a_foreign_key_and_writes_nothing(self):
        calls = self.calls()
        self.assertEqual(set(calls) | {"baton_v2_version", "baton_v2_cron_mark"},
                         set(gen.FUNCTIONS))
        before = self.snapshot()
        checked = 0
        for name, (fixed, items, extra) in calls.items():
            keys, args = bp.call_args(self.k, name, TYPE, fixed, items, extra)
            kinds = gen.FUNCTIONS[name][0] + ["unique"] * len(extra)
            for i in range(len(keys)):
                for what, wrong in self.wrong_keys(kinds, i):
                    with self.subTest(function=name, key=i + 1, wrong=what):
                        bad = list(keys)
                        bad[i] = wrong
                        if self.spans_slots(bad):  # a cluster refuses it before the function
                            self.assert_cross_slot("FCALL", name, bad, args)
                            self.assertEqual(self.snapshot(), before)
                            checked += 1
                            continue
                        message = self.assert_error("BATON_INVALID KEYS", self.r.execute_command,
                                                    "FCALL", name, len(bad), *bad, *args)
                        if i > 0 or what in ("kind", "v1"):
                            self.assertTrue(message.startswith(f"BATON_INVALID KEYS[{i + 1}]: "),
                                            message)
                        else:  # KEYS[1] names the call's namespace and type: KEYS[2] disagrees
                            self.assertTrue(message.startswith("BATON_INVALID KEYS[2]: "),
                                            message)
                        self.assertEqual(self.snapshot(), before)
                        checked += 1
            with self.subTest(function=name, missing_key=True):
                self.assert_error("BATON_INVALID KEYS", self.r.execute_command, "FCALL", name,
                                  len(keys) - 1, *keys[:-1], *args)
                self.assertEqual(self.snapshot(), before)
        self.assertGreater(checked, 150)

    def test_cron_mark_takes_only_the_cron_state_key(self):
        before = self.snapshot()
        for wrong in (["baton:{shop}:cron:state"], [self.k.config()],
                      [bp.CRON_STATE_KEY, self.k.config()]):
            with self.subTest(keys=wrong):
                if self.spans_slots(wrong):  # a cluster refuses it before the function
                    self.assert_cross_slot("FCALL", "baton_v2_cron_mark", wrong, ["job", 5])
                    continue
                self.assert_error("BATON_INVALID KEYS[1]", self.r.execute_command, "FCALL",
                                  "baton_v2_cron_mark", len(wrong), *wrong, "job", 5)
        self.assertEqual(self.snapshot(), before)

    def test_the_valid_calls_are_accepted(self):
        # The calls above are refused for their keys only: with the right keys they succeed
        # (fail and dlq_replay, which would race ack and dlq_delete, run in the other files).
        calls = self.calls()
        order = ["baton_v2_configure", "baton_v2_cancel", "baton_v2_enqueue", "baton_v2_extend",
                 "baton_v2_ack", "baton_v2_reclaim", "baton_v2_promote", "baton_v2_dequeue",
                 "baton_v2_dlq_delete", "baton_v2_rescue_start", "baton_v2_rescue_finish"]
        for name in order:  # each call changes the state the next one sees
            fixed, items, extra = calls[name]
            with self.subTest(function=name):
                keys, args = bp.call_args(self.k, name, TYPE, fixed, items, extra)
                self.r.execute_command("FCALL", name, len(keys), *keys, *args)


class ErrorReplyTest(ProtocolTestCase):
    def assert_clean(self, line, code):
        self.assertTrue(line.startswith(b"-" + code + b" "), line)
        for noise in (b"script", b"@user_function", b"ERR", b"f_"):
            self.assertNotIn(noise, line)

    def fcall_line(self, name, fixed, items=(), task_type=TYPE):
        keys, args = bp.call_args(self.k, name, task_type, fixed, items)
        return self.raw_reply("FCALL", name, len(keys), *keys, *args)

    def test_baton_errors_are_clean_replies(self):
        line = self.fcall_line("baton_v2_enqueue", {"n": 1},
                               [self.spec("t1", max_retry=99).values()])
        self.assert_clean(line, b"BATON_INVALID")
        self.assertEqual(line, b"-BATON_INVALID max_retry: must be an integer 0..25")
        line = self.fcall_line("baton_v2_cancel", {"id": "nope"})
        self.assertEqual(line, b"-BATON_NOT_FOUND task nope")
        self.enqueue("t1")
        self.dequeue_one("w1")
        line = self.fcall_line("baton_v2_cancel", {"id": "t1"})
        self.assert_clean(line, b"BATON_CONFLICT")
        self.assertIn(b"active on consumer w1", line)

    def test_error_codes_map_to_the_contract_codes(self):
        self.enqueue("t1")
        self.dequeue_one()
        cases = ((lambda: self.b.enqueue(TYPE, [self.spec("x", max_retry=99)]),
                  "invalid_argument", "BATON_INVALID"),
                 (lambda: self.b.cancel(TYPE, "nope"), "not_found", "BATON_NOT_FOUND"),
                 (lambda: self.b.cancel(TYPE, "t1"), "conflict", "BATON_CONFLICT"))
        for fn, code, lua_code in cases:
            with self.subTest(code=code):
                with self.assertRaises(bp.BatonError) as cm:
                    fn()
                self.assertEqual((cm.exception.code, cm.exception.lua_code), (code, lua_code))
                self.assertTrue(str(cm.exception).startswith(lua_code + " "))

    def test_redis_errors_inside_a_function_come_through_as_they_are(self):
        self.r.set(self.k.done(), "not a sorted set")
        line = self.fcall_line("baton_v2_enqueue", {"n": 1}, [self.spec("t1").values()])
        self.assertEqual(line, b"-WRONGTYPE Operation against a key holding the wrong kind of "
                               b"value")

    def test_redis_refusals_before_a_function_runs_come_through_as_they_are(self):
        self.r.config_set("maxmemory", 1)
        try:
            line = self.fcall_line("baton_v2_enqueue", {"n": 1}, [self.spec("t1").values()])
        finally:
            self.r.config_set("maxmemory", 0)
        self.assertTrue(line.startswith(b"-OOM "), line)
        self.assertNotIn(b"script", line)


class TypeAnnouncementTest(ProtocolTestCase):
    def test_a_type_new_to_a_namespace_is_announced_once(self):
        self.assertEqual(bp.TYPES_CHANNEL, "baton:v2:types")
        pubsub = self.r.pubsub(ignore_subscribe_messages=True)
        pubsub.subscribe(bp.TYPES_CHANNEL)
        self.enqueue("t1")
        self.enqueue("t2")  # known type: no message
        self.enqueue("t3", task_type="resize", delay_seconds=60)  # scheduled counts too
        self.assertEqual(self.enqueue("t1", task_type="third"), ("duplicate", "queued"))
        acme = bp.Baton(self.r, "acme")
        acme.enqueue(TYPE, [self.spec("t1")])
        messages = []
        for _ in range(40):
            m = pubsub.get_message(timeout=0.05)
            if m is None and len(messages) >= 3:
                break
            if m is not None:
                messages.append(m["data"].decode())
        pubsub.close()
        self.assertEqual(messages, [f"{NS}|{TYPE}", f"{NS}|resize", f"acme|{TYPE}"])
        self.assertEqual(self.r.smembers(self.k.types()), {TYPE.encode(), b"resize"})
        self.assertEqual(self.r.smembers(acme.keys.types()), {TYPE.encode()})
        # Registration in baton:v2:namespaces is a client convenience, not needed for this.
        self.assertEqual(self.r.exists(bp.NAMESPACES_KEY), 0)
        self.b.register_namespace()
        self.assertEqual(self.r.smembers(bp.NAMESPACES_KEY), {NS.encode()})


class ConfigureTest(ProtocolTestCase):
    def test_read_only_call_returns_the_defaults_and_writes_nothing(self):
        before = self.snapshot()
        self.assertEqual(self.b.configure(), gen.NAMESPACE_DEFAULTS)
        self.assertEqual(list(self.b.configure()), list(gen.NAMESPACE_DEFAULTS))
        self.assertEqual(self.snapshot(), before)
        self.assertEqual({k: v["default"] for k, v in SETTINGS.items()}, gen.NAMESPACE_DEFAULTS)

    def test_set_and_reset(self):
        got = self.b.configure(events_maxlen=0, dlq_max=2, lease_ms=1000)
        self.assertEqual(got, dict(gen.NAMESPACE_DEFAULTS, events_maxlen=0, dlq_max=2,
                                   lease_ms=1000))
        self.assertEqual(self.r.hgetall(self.k.config()),
                         {b"events_maxlen": b"0", b"dlq_max": b"2", b"lease_ms": b"1000"})
        self.assertEqual(bp.Baton(self.r, "other").configure(), gen.NAMESPACE_DEFAULTS)
        got = self.b.configure(dlq_max=None, lease_ms=None)
        self.assertEqual(got, dict(gen.NAMESPACE_DEFAULTS, events_maxlen=0))
        self.assertEqual(self.r.hgetall(self.k.config()), {b"events_maxlen": b"0"})

    def test_bounds_are_accepted_and_beyond_them_refused(self):
        before = self.snapshot()
        for name, spec in SETTINGS.items():
            lo, hi = spec["min"], spec["max"]
            for bad in (lo - 1, hi + 1, "1.5", "abc", " 5"):
                with self.subTest(setting=name, value=bad):
                    # A valid pair first: the call writes nothing at all when any pair is bad.
                    message = self.assert_error(f"BATON_INVALID {name}: ", self.b.configure,
                                                **{"dlq_max": 7, name: bad})
                    self.assertEqual(message, f"BATON_INVALID {name}: must be an integer "
                                              f"{lo}..{hi}")
                    self.assertEqual(self.snapshot(), before)
        for name, spec in SETTINGS.items():
            with self.subTest(setting=name):
                self.assertEqual(self.b.configure(**{name: spec["min"]})[name], spec["min"])
                self.assertEqual(self.b.configure(**{name: spec["max"]})[name], spec["max"])

    def test_unknown_setting_and_odd_arguments_are_refused(self):
        before = self.snapshot()
        message = self.assert_error("BATON_INVALID retention: is not a setting",
                                    self.b.configure, retention=5)
        self.assertIn("events_maxlen, done_retention_s, dlq_max, dlq_retention_s, lease_ms",
                      message)
        self.assert_error("BATON_INVALID ARGV", self.r.execute_command, "FCALL",
                          "baton_v2_configure", 1, self.k.config(), "lease_ms")
        self.assertEqual(self.snapshot(), before)

    def test_a_hand_written_value_out_of_range_falls_back_to_the_default(self):
        self.r.hset(self.k.config(), mapping={"lease_ms": "5", "dlq_max": "x"})
        self.assertEqual(self.b.configure(), gen.NAMESPACE_DEFAULTS)
        self.enqueue("t1")
        before = self.now_ms()
        deadline = self.b.dequeue(TYPE, GROUP, "c1", 1).lease_deadline_ms
        self.assertGreaterEqual(deadline, before + gen.NAMESPACE_DEFAULTS["lease_ms"])


class CronMarkTest(ProtocolTestCase):
    def test_compare_and_set_moves_forward_only(self):
        self.assertEqual(self.b.cron_mark("nightly", 100), 1)
        self.assertEqual(self.r.hget(bp.CRON_STATE_KEY, "nightly"), b"100")
        before = self.snapshot()
        self.assertEqual(self.b.cron_mark("nightly", 100), 0)
        self.assertEqual(self.b.cron_mark("nightly", 99), 0)
        self.assertEqual(self.snapshot(), before)
        self.assertEqual(self.b.cron_mark("nightly", 101), 1)
        self.assertEqual(self.b.cron_mark("hourly", 5), 1)
        self.assertEqual(self.r.hgetall(bp.CRON_STATE_KEY),
                         {b"nightly": b"101", b"hourly": b"5"})

    def test_invalid_arguments(self):
        before = self.snapshot()
        self.assert_error("BATON_INVALID job", self.b.cron_mark, "", 5)
        self.assert_error("BATON_INVALID tick", self.b.cron_mark, "j", -1)
        self.assert_error("BATON_INVALID tick", self.b.cron_mark, "j", "1.5")
        self.assert_error("BATON_INVALID ARGV", self.r.execute_command, "FCALL",
                          "baton_v2_cron_mark", 1, bp.CRON_STATE_KEY, "j")
        self.assertEqual(self.snapshot(), before)

    def test_exactly_one_of_many_racing_schedulers_wins_each_tick(self):
        wins = []
        lock = threading.Lock()

        def scheduler():
            b = bp.Baton(self.server.client(), NS)
            mine = [tick for tick in range(1000, 1050) if b.cron_mark("every_second", tick)]
            with lock:
                wins.extend(mine)
            b.r.close()

        threads = [threading.Thread(target=scheduler) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(sorted(wins), list(range(1000, 1050)))
        self.assertEqual(self.r.hget(bp.CRON_STATE_KEY, "every_second"), b"1049")


class RescueTest(ProtocolTestCase):
    def test_rescue_drains_a_broken_group_and_hands_back(self):
        self.b.enqueue(TYPE, [self.spec(f"t{i}") for i in (1, 2, 3)])
        stuck = self.dequeue("stuck", count=2)  # the broken group holds t1, t2
        last_sid = self.b.record("t3")[3]
        handover = self.b.rescue_start(TYPE, GROUP, "rescue")
        self.assertEqual(handover, last_sid)
        state = self.r.hgetall(self.k.rescue(TYPE))
        self.assertEqual((state[b"group"], state[b"rescue_group"], state[b"handover_id"]),
                         (GROUP.encode(), b"rescue", handover.encode()))
        self.assert_error("BATON_CONFLICT", self.b.rescue_start, TYPE, GROUP, "rescue2")
        # The rescue group sees the whole backlog: the stuck entries and the undelivered one.
        rescued = self.b.dequeue(TYPE, "rescue", "r1", 10).entries
        self.assertEqual([e.id for e in rescued], ["t1", "t2", "t3"])
        message = self.assert_error("BATON_CONFLICT", self.b.rescue_finish, TYPE)
        self.assertIn("3 pending", message)
        self.assertEqual(self.b.ack(TYPE, "rescue", "r1", [(e.id, e.sid) for e in rescued]),
                         ["done"] * 3)
        # The broken group only gets what came after the handover.
        self.enqueue("t4")
        self.assertEqual([e.id for e in self.dequeue("fresh")], ["t4"])
        t4_sid = self.b.record("t4")[3]
        finished = self.b.rescue_finish(TYPE)
        self.assertEqual(finished, (2, t4_sid, 0))  # t1, t2 acked in the broken group
        pending = self.r.xpending_range(self.k.stream(TYPE), GROUP, "-", "+", 10)
        self.assertEqual([p["message_id"].decode() for p in pending], [t4_sid])
        self.assertNotIn(b"rescue", [g["name"] for g in self.r.xinfo_groups(self.k.stream(TYPE))])
        self.assertEqual(self.r.exists(self.k.rescue(TYPE)), 0)
        self.assertEqual([self.b.final_state(e.id)[0] for e in stuck], ["done", "done"])
        self.assert_error("BATON_NOT_FOUND", self.b.rescue_finish, TYPE)

    def test_rescue_needs_a_stream_and_the_group(self):
        before = self.snapshot()
        self.assert_error("BATON_NOT_FOUND", self.b.rescue_start, TYPE, GROUP, "rescue")
        self.enqueue("t1")
        before = self.snapshot()
        self.assert_error("BATON_NOT_FOUND", self.b.rescue_start, TYPE, "nogroup", "rescue")
        self.assert_error("BATON_INVALID force", self.r.execute_command, "FCALL",
                          "baton_v2_rescue_finish", 2, self.k.stream(TYPE), self.k.rescue(TYPE),
                          "yes", 10)
        self.assertEqual(self.snapshot(), before)


if __name__ == "__main__":
    unittest.main()
