"""Rolling upgrade: protocol v1 (library `baton`, keys 'baton:{NS}:...') and v2 (library
`baton_v2`, keys 'baton:v2:{NS}:...') loaded side by side in one Redis.

During a rollout, v1-era producers and workers (baton_protocol_v1.py, the old client, on
contract/legacy/baton_v1.lua) keep running while v2 ones start, in the same namespace and task
type names. Loading v2 (FUNCTION LOAD REPLACE, what `baton init` does) must not touch v1, and each
version must run every one of its own tasks exactly once, in its own keyspace, even for task ids
both versions use.
Run: cd /work/main && /usr/bin/python3 -m unittest discover -s tests/protocol -p 'test_*.py' -v
"""

import collections
import threading
import time
import unittest

import redis

import baton_generated as gen
import baton_protocol as v2
import baton_protocol_v1 as v1
import redis_harness

NS = "shop"
TYPE = "send_email"
GROUP = "workers"
CREATED = 1722489600
FAST = dict(base_ms=10, max_ms=40)
V1_FUNCTIONS = {"baton_version", "baton_enqueue", "baton_dequeue", "baton_ack", "baton_fail",
                "baton_reclaim", "baton_extend", "baton_promote", "baton_cancel",
                "baton_dlq_replay", "baton_dlq_delete"}


def library_list(r):
    """FUNCTION LIST WITHCODE as {library name: (function names, code)}."""
    out = {}
    for lib in r.execute_command("FUNCTION", "LIST", "WITHCODE"):
        info = dict(zip(lib[::2], lib[1::2]))
        names = set()
        for fn in info[b"functions"]:
            fn_info = dict(zip(fn[::2], fn[1::2]))
            names.add(fn_info[b"name"].decode())
        out[info[b"library_name"].decode()] = (names, info[b"library_code"].decode())
    return out


class Worker(threading.Thread):
    """Runs tasks of one protocol version until `expected` ids have succeeded; the first attempt
    of each id in `fail_first` fails (and retries after a short backoff). runs: id -> the
    attempts that ran."""

    def __init__(self, version, server, expected, fail_first, consumer):
        super().__init__(daemon=True)
        self.version = version
        self.server = server
        self.expected = set(expected)
        self.fail_first = set(fail_first)
        self.consumer = consumer
        self.runs = collections.defaultdict(list)
        self.succeeded = set()
        self.error = None

    def run(self):
        r = self.server.client()
        try:
            if self.version == 1:
                b = v1.Baton(r, NS)
            else:
                b = v2.Baton(r, NS)
            deadline = time.monotonic() + 60
            while self.succeeded != self.expected and time.monotonic() < deadline:
                b.promote(TYPE)
                if self.version == 1:
                    entries, _ = b.dequeue(TYPE, GROUP, self.consumer, 10)
                else:
                    entries = b.dequeue(TYPE, GROUP, self.consumer, 10).entries
                if not entries:
                    time.sleep(0.005)
                    continue
                finished = []
                for e in entries:
                    self.runs[e.id].append(e.attempt)
                    if e.id in self.fail_first and e.attempt == 0:
                        self.fail_attempt(b, e)
                    else:
                        finished.append((e.id, e.sid))
                statuses = self.ack(b, finished)
                if statuses != ["done"] * len(finished):
                    raise AssertionError(f"v{self.version} ack: {statuses}")
                self.succeeded.update(task_id for task_id, _ in finished)
        except Exception as e:  # reported by the test
            self.error = e
        finally:
            r.close()

    def fail_attempt(self, b, e):
        if self.version == 1:
            outcome = b.fail(TYPE, GROUP, e.id, e.sid, self.consumer, "error", "first try",
                             **FAST)
        else:
            outcome = b.fail(TYPE, GROUP, self.consumer, e.id, e.sid, "error", "first try",
                             **FAST)
        if outcome[0] != "retry":
            raise AssertionError(f"v{self.version} fail: {outcome}")

    def ack(self, b, finished):
        if not finished:
            return []
        if self.version == 1:
            return b.ack(TYPE, GROUP, finished, self.consumer)
        return b.ack(TYPE, GROUP, self.consumer, finished)


class UpgradeCoexistenceTest(unittest.TestCase):
    server = None

    @classmethod
    def setUpClass(cls):
        if redis_harness.CLUSTER_MODE:
            raise unittest.SkipTest(
                "on a cluster: the v1 -> v2 rolling upgrade is from a single Redis (v1 and its "
                "client, baton_protocol_v1.py, predate cluster support); a cluster starts on v2")
        cls.server = redis_harness.RedisServer().start()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def setUp(self):
        self.r = self.server.client()
        self.r.flushall()
        self.r.execute_command("FUNCTION", "FLUSH")

    def tearDown(self):
        self.r.close()

    def v1_keys(self):
        """Every v1 key of the namespace with its DUMP: the whole v1 state."""
        keys = sorted(k for k in self.r.keys("baton:{" + NS + "}:*"))
        return {k: self.r.dump(k) for k in keys}

    def test_v1_and_v2_run_side_by_side_and_nothing_is_lost(self):
        self.assertEqual(v1.load_library(self.r), "baton")
        b1 = v1.Baton(self.r, NS)
        self.assertEqual(b1.version(), "1")
        shared = [f"shared-{i}" for i in range(40)]  # ids both versions use
        v1_ids = shared + [f"v1-{i}" for i in range(60)]
        v2_ids = shared + [f"v2-{i}" for i in range(60)]
        v1_fail = set(v1_ids[::7])
        v2_fail = set(v2_ids[::5])

        # Before the upgrade: v1 work queued, some of it in flight on a v1 worker.
        spec1 = [v1.TaskSpec(id=t, payload=b'{"v":1}', created_at=CREATED) for t in v1_ids]
        self.assertEqual({s for s, _ in b1.enqueue(TYPE, spec1[:50])}, {"queued"})
        in_flight, _ = b1.dequeue(TYPE, GROUP, "v1-before", 5)
        self.assertEqual(len(in_flight), 5)
        before = self.v1_keys()

        # The upgrade: v2 is loaded next to v1 (twice, as two `baton init` would).
        self.assertEqual(v2.load_library(self.r), "baton_v2")
        self.assertEqual(self.v1_keys(), before)  # loading v2 touched no v1 data
        libraries = library_list(self.r)
        self.assertEqual(set(libraries), {"baton", "baton_v2"})
        self.assertEqual(libraries["baton"], (V1_FUNCTIONS, v1.library_source()))
        self.assertEqual(libraries["baton_v2"], (set(gen.FUNCTIONS), v2.library_source()))
        self.assertEqual((b1.version(), v2.Baton(self.r, NS).version()), ("1", "2"))

        # The rollout: v1 and v2 producers and workers at the same time, same names.
        in_flight_ids = {e.id for e in in_flight}
        w1 = Worker(1, self.server, set(v1_ids) - in_flight_ids, v1_fail, "v1-worker")
        w2 = Worker(2, self.server, v2_ids, v2_fail, "v2-worker")
        w1.start()
        w2.start()
        r2 = self.server.client()
        b2 = v2.Baton(r2, NS)
        spec2 = [v2.TaskSpec(id=t, payload=b'{"v":2}', created_at=CREATED) for t in v2_ids]
        statuses = []
        for i in range(0, len(spec2), 20):
            statuses += b2.enqueue(TYPE, spec2[i:i + 20])
            if i == 40:
                v2.load_library(self.r)  # a second `baton init` while both run
                self.assertEqual(set(library_list(self.r)), {"baton", "baton_v2"})
        # A shared id already known to v1 is new to v2: its own keyspace, its own task.
        self.assertEqual({s for s, _ in statuses}, {"queued"})
        self.assertEqual({s for s, _ in b1.enqueue(TYPE, spec1[50:])}, {"queued"})
        # The v1 worker that held tasks over the upgrade finishes them with v1.
        self.assertEqual(b1.ack(TYPE, GROUP, [(e.id, e.sid) for e in in_flight], "v1-before"),
                         ["done"] * 5)
        w1.join(90)
        w2.join(90)
        r2.close()
        self.assertIsNone(w1.error)
        self.assertIsNone(w2.error)

        # Every task ran exactly once to success in its own keyspace (failures: once more).
        self.assertEqual(w1.succeeded, set(v1_ids) - in_flight_ids)
        self.assertEqual(w2.succeeded, set(v2_ids))
        for worker, fail_first in ((w1, v1_fail), (w2, v2_fail)):
            for task_id, attempts in worker.runs.items():
                want = [0, 1] if task_id in fail_first else [0]
                self.assertEqual(attempts, want, (worker.version, task_id))
        self.assertFalse(set(w1.runs) & in_flight_ids)

        # v1 state: a done marker per v1 id, nothing left; v2 state: the done set has exactly
        # the v2 ids, nothing left.
        for task_id in v1_ids:
            self.assertEqual(b1.final_record(task_id)["state"], "done", task_id)
        for task_id in v2_ids:
            self.assertEqual(b2.final_state(task_id)[0], "done", task_id)
        self.assertEqual({m.decode() for m in self.r.zrange(b2.keys.done(), 0, -1)},
                         set(v2_ids))
        for k in (v1.Keys(NS).tasks(), b2.keys.tasks()):
            self.assertEqual(self.r.exists(k), 0, k)
        self.assertEqual(self.r.xlen(v1.Keys(NS).stream(TYPE)), 0)
        self.assertEqual(self.r.xlen(b2.keys.stream(TYPE)), 0)
        # No v2 lease left: nothing pending; the leases hash holds only the worker's length.
        self.assertEqual(self.r.xpending(b2.keys.stream(TYPE), GROUP)["pending"], 0)
        self.assertEqual(self.r.hgetall(b2.keys.leases(TYPE)),
                         {b"v2-worker": str(gen.NAMESPACE_DEFAULTS["lease_ms"]).encode()})
        # Each keyspace only ever saw its own ids.
        v1_seen = {e["id"] for e in b1.events()}
        v2_seen = {i for e in b2.events() for i in e["ids"]}
        self.assertEqual(v1_seen, set(v1_ids))
        self.assertEqual(v2_seen, set(v2_ids))
        for key in self.r.keys("*"):
            key = key.decode()
            self.assertTrue(key.startswith(("baton:{shop}:", "baton:v2:{shop}:")), key)

    def test_wakeups_go_to_each_versions_own_channel(self):
        v1.load_library(self.r)
        v2.load_library(self.r)
        pubsub = self.r.pubsub(ignore_subscribe_messages=True)
        pubsub.subscribe(v1.WAKEUP_CHANNEL, v2.WAKEUP_CHANNEL)
        (s1,) = v1.Baton(self.r, NS).enqueue(TYPE, [v1.TaskSpec(id="a", delay_seconds=60)])
        (s2,) = v2.Baton(self.r, NS).enqueue(TYPE, [v2.TaskSpec(id="a", delay_seconds=90)])
        messages = []
        for _ in range(40):
            m = pubsub.get_message(timeout=0.05)
            if m is None and len(messages) >= 2:
                break
            if m is not None:
                messages.append((m["channel"].decode(), m["data"].decode()))
        pubsub.close()
        self.assertEqual(sorted(messages),
                         sorted([("baton:wakeup", f"{NS}|{TYPE}|{s1[1]}"),
                                 ("baton:v2:wakeup", f"{NS}|{TYPE}|{s2[1]}")]))

    def test_v2_functions_refuse_v1_keys(self):
        v1.load_library(self.r)
        v2.load_library(self.r)
        v1.Baton(self.r, NS).enqueue(TYPE, [v1.TaskSpec(id="a")])
        before = self.v1_keys()
        k1 = v1.Keys(NS)
        keys = [k1.stream(TYPE), k1.scheduled(TYPE), k1.tasks(), k1.bodies(), k1.events(),
                k1.types(), k1.prefix + "done", k1.prefix + "ended", k1.prefix + "config"]
        _, args = v2.call_args(v2.Keys(NS), "baton_v2_enqueue", TYPE, {"n": 1},
                               [v2.TaskSpec(id="b").values()])
        with self.assertRaises(redis.exceptions.ResponseError) as cm:
            self.r.execute_command("FCALL", "baton_v2_enqueue", len(keys), *keys, *args)
        self.assertTrue(str(cm.exception).startswith("BATON_INVALID KEYS[1]"), cm.exception)
        self.assertEqual(self.v1_keys(), before)


if __name__ == "__main__":
    unittest.main()
