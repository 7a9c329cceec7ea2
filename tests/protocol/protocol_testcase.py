"""Shared base of the protocol tests: one real redis-server per test class, FLUSHALL and a fresh
FUNCTION LOAD REPLACE before every test.

With BATON_PROTOCOL_CLUSTER=1 every test runs on one Redis Cluster shared by the process (3
primaries, 3 replicas): FLUSHALL, FUNCTION FLUSH and FUNCTION LOAD REPLACE on every primary before
each test, self.r is a redis.cluster.RedisCluster (FCALL goes to the node of its keys), and the
dataset helpers (digest, snapshot, all_keys) cover every primary."""

import socket
import time
import unittest

import redis

import baton_protocol as bp
import redis_harness

NS = "shop"
TYPE = "send_email"
GROUP = "workers"
CREATED = 1722489600
FAST = dict(base_ms=10, max_ms=40)  # retries come due within milliseconds
LEASE_CLOCK_SKEW_MS = 10  # see ProtocolTestCase.assert_lease_end


def resp_command(*args):
    """One command in RESP, for a raw socket."""
    parts = [a if isinstance(a, bytes) else str(a).encode() for a in args]
    return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)


class ProtocolTestCase(unittest.TestCase):
    server = None

    cluster = redis_harness.CLUSTER_MODE

    @classmethod
    def setUpClass(cls):
        if cls.cluster:
            cls.server = redis_harness.ClusterServer(NS)
            return
        # DEBUG DIGEST proves that a call wrote nothing at all.
        cls.server = redis_harness.RedisServer(["--enable-debug-command", "yes"]).start()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def setUp(self):
        if self.cluster:
            for node in self.server.node_clients():
                with node:
                    node.flushall()
                    node.execute_command("FUNCTION", "FLUSH")
                    bp.load_library(node)
            self.r = self.server.client()
        else:
            self.r = self.server.client()
            self.r.flushall()
            self.r.execute_command("FUNCTION", "FLUSH")
            bp.load_library(self.r)
        self.b = bp.Baton(self.r, NS)
        self.k = self.b.keys

    def tearDown(self):
        self.r.close()

    # Helpers

    def now_ms(self):
        sec, usec = self.r.time()
        return sec * 1000 + usec // 1000

    def digest(self):
        """DEBUG DIGEST of the dataset (on a cluster: of each primary, in port order)."""
        if self.cluster:
            out = []
            for node in self.server.node_clients():
                with node:
                    out.append(node.execute_command("DEBUG", "DIGEST"))
            return tuple(out)
        return self.r.execute_command("DEBUG", "DIGEST")

    def all_keys(self, pattern="*"):
        """KEYS pattern over the whole dataset (on a cluster: over every primary)."""
        if self.cluster:
            out = []
            for node in self.server.node_clients():
                with node:
                    out += node.keys(pattern)
            return out
        return self.r.keys(pattern)

    def each_primary(self):
        """A plain redis.Redis per primary (on a single server: the server's, once). Close them."""
        if self.cluster:
            return self.server.node_clients()
        return [self.server.client()]

    def spans_slots(self, keys):
        """True on a cluster when keys do not all hash to one slot (the server refuses such a call
        with CROSSSLOT before any function runs)."""
        return self.cluster and len({self.server.cluster.keyslot(k) for k in keys}) > 1

    def assert_cross_slot(self, command, name, keys, args):
        """On a cluster: the FCALL of keys that span slots, sent to the primary of KEYS[1], is
        refused by the server with CROSSSLOT (redis-py's cluster client would refuse it before
        sending it)."""
        with self.server.cluster.node_client(
                self.server.cluster.primary_for_key(keys[0])) as node:
            return self.assert_error("CROSSSLOT", node.execute_command, command, name,
                                     len(keys), *keys, *args)

    def snapshot(self):
        """The whole dataset: DEBUG DIGEST and the sorted key names."""
        return self.digest(), sorted(self.all_keys())

    def raw_port(self, args):
        """The port a raw command goes to: the server, or on a cluster the primary of the first
        key of an FCALL / FCALL_RO (the namespace's node when there is none)."""
        if not self.cluster:
            return self.server.port
        if len(args) > 3 and str(args[0]).upper() in ("FCALL", "FCALL_RO") and int(args[2]) > 0:
            return self.server.cluster.primary_for_key(args[3]).port
        return self.server.port

    def raw_reply(self, *args):
        """The first line of the raw RESP reply to one command (redis-py would strip an 'ERR '
        prefix from an error reply; this shows the bytes the server sent)."""
        with socket.create_connection(("127.0.0.1", self.raw_port(args)), timeout=5) as sock:
            sock.sendall(resp_command(*args))
            data = b""
            while b"\r\n" not in data:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
        return data.split(b"\r\n", 1)[0]

    @staticmethod
    def spec(task_id, **kwargs):
        kwargs.setdefault("payload", b'{"to":"a@example.com"}')
        kwargs.setdefault("created_at", CREATED)
        return bp.TaskSpec(id=task_id, **kwargs)

    def enqueue(self, task_id, task_type=TYPE, **kwargs):
        """Enqueues one task and returns its (status, detail)."""
        (result,) = self.b.enqueue(task_type, [self.spec(task_id, **kwargs)])
        return result

    def dequeue(self, consumer="c1", count=100, task_type=TYPE, lease_ms=0):
        return self.b.dequeue(task_type, GROUP, consumer, count, lease_ms).entries

    def dequeue_one(self, consumer="c1", lease_ms=0):
        entries = self.dequeue(consumer, lease_ms=lease_ms)
        self.assertEqual(len(entries), 1, entries)
        return entries[0]

    def ack(self, entries, consumer="c1"):
        return self.b.ack(TYPE, GROUP, consumer, [(e.id, e.sid) for e in entries])

    def fail_task(self, entry, kind="error", error="boom", stack="trace", consumer="c1",
                  **kwargs):
        """baton_v2_fail of a dequeued entry (not TestCase.fail, which assertions call)."""
        return self.b.fail(TYPE, GROUP, consumer, entry.id, entry.sid, kind, error, stack,
                           **kwargs)

    def lease(self, task_id, task_type=TYPE):
        """The lease end (ms) of an active task (queued and pending in GROUP), or None. Derived
        from the consumer group as docs/keyspace.md "Leases" says: delivery time (now - idle) +
        the holder's lease length; see assert_lease_end for its precision."""
        record = self.b.record(task_id)
        if record is None or record[0] != "queued":
            return None
        held = self.b.lease(task_type, GROUP, record[3])
        return None if held is None else held.ends_ms

    def assert_lease_end(self, value, earliest, latest):
        """Asserts that value, a lease end derived from the consumer group (self.lease, the
        next_deadline_ms or the error text of baton_v2_reclaim, the C++ inspector's), is that of
        a lease known to end between earliest and latest. The group keeps the delivery time and
        gives it back as an idle time measured a moment after the clock was read (TIME), so a
        derived end comes out a little early (a millisecond as a rule, up to
        LEASE_CLOCK_SKEW_MS here), never late."""
        self.assertTrue(earliest - LEASE_CLOCK_SKEW_MS <= value <= latest,
                        (value, earliest, latest))

    def set_idle(self, sid, idle_ms, task_type=TYPE):
        """Sets the delivery time of a pending entry idle_ms in the past, keeping its holder and
        delivery count (XCLAIM to the holder ... IDLE ms JUSTID), as if it had been delivered or
        last heartbeated that long ago."""
        (p,) = self.r.xpending_range(self.k.stream(task_type), GROUP, sid, sid, 1)
        self.r.xclaim(self.k.stream(task_type), GROUP, p["consumer"], 0, [sid], idle=idle_ms,
                      justid=True)

    def expire_lease(self, task_id, ago_ms=1000):
        """Makes a task's lease end ago_ms in the past, as if its holder had stopped
        heartbeating that long ago: its entry's idle time becomes the holder's lease length +
        ago_ms (the real-time runs are in LeaseTest)."""
        record = self.b.record(task_id)
        held = record and self.b.lease(TYPE, GROUP, record[3])
        self.assertTrue(held, f"{task_id} holds no lease")
        self.set_idle(record[3], held.lease_ms + ago_ms)

    def leases(self, task_type=TYPE):
        """The leases hash: consumer -> lease length (ms)."""
        return {c.decode(): int(v) for c, v in self.r.hgetall(self.k.leases(task_type)).items()}

    def error_fields(self, task_id):
        """Every field of task_id in the errors hash (its counter ID and its failures ID|K),
        sorted."""
        prefix = task_id.encode() + b"|"
        return sorted(f.decode() for f in self.r.hkeys(self.k.errors())
                      if f == task_id.encode() or f.startswith(prefix))

    def kill(self, task_id, **kwargs):
        """Enqueues task_id with no retry, runs it once and fails it: it is dead."""
        self.enqueue(task_id, max_retry=0, **kwargs)
        e = self.dequeue_one()
        self.assertEqual(e.id, task_id)
        self.assertEqual(self.fail_task(e, error="bad data")[0], "dead")
        return e

    def soon_ms(self, ahead_ms=300):
        """A run_at_ms still in the future when the enqueue runs, even on a loaded machine (a
        run_at_ms in the past is immediate: the task would be queued, not scheduled)."""
        return self.now_ms() + ahead_ms

    def sleep_until(self, due_ms):
        """Sleeps until due_ms (server clock) has passed."""
        wait = due_ms - self.now_ms() + 5
        if wait > 0:
            time.sleep(wait / 1000)

    def promote_when_due(self, due_ms):
        """Sleeps until due_ms (server clock) has passed, then promotes; returns the reply."""
        self.sleep_until(due_ms)
        return self.b.promote(TYPE)

    def wait_until(self, condition, timeout_s=5.0):
        deadline = time.monotonic() + timeout_s
        while not condition():
            if time.monotonic() > deadline:
                self.fail("condition not reached")
            time.sleep(0.01)

    def assert_error(self, code, fn, *args, **kwargs):
        """Asserts fn raises an error reply starting with code; returns the message."""
        with self.assertRaises(redis.exceptions.ResponseError) as cm:
            fn(*args, **kwargs)
        message = str(cm.exception)
        self.assertTrue(message.startswith(code), message)
        return message

    def pending(self, task_type=TYPE):
        return self.r.xpending(self.k.stream(task_type), GROUP)["pending"]

    def last_event(self, task_id):
        events = self.b.events(task_id)
        self.assertTrue(events, f"no event for {task_id}")
        return events[-1]

    def assert_event(self, event, frm, to, attempts, worker="", error=None, ids=None):
        """attempts: one attempt (int) of a one-task entry, or the list of a batch entry."""
        if not isinstance(attempts, list):
            attempts = [attempts]
        self.assertEqual((event["from"], event["to"], event["attempts"], event["worker"]),
                         (frm, to, [str(a) for a in attempts], worker), event)
        self.assertEqual(len(event["ids"]), len(event["attempts"]), event)
        self.assertEqual(event["type"], TYPE)
        if ids is not None:
            self.assertEqual(event["ids"], ids, event)
        if error is not None:
            self.assertEqual(event["error"], error)
