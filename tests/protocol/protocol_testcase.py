"""Shared base of the protocol tests: one real redis-server per test class, FLUSHALL and a fresh
FUNCTION LOAD REPLACE before every test."""

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


def resp_command(*args):
    """One command in RESP, for a raw socket."""
    parts = [a if isinstance(a, bytes) else str(a).encode() for a in args]
    return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)


class ProtocolTestCase(unittest.TestCase):
    server = None

    @classmethod
    def setUpClass(cls):
        # DEBUG DIGEST proves that a call wrote nothing at all.
        cls.server = redis_harness.RedisServer(["--enable-debug-command", "yes"]).start()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def setUp(self):
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
        return self.r.execute_command("DEBUG", "DIGEST")

    def snapshot(self):
        """The whole dataset: DEBUG DIGEST and the sorted key names."""
        return self.digest(), sorted(self.r.keys("*"))

    def raw_reply(self, *args):
        """The first line of the raw RESP reply to one command (redis-py would strip an 'ERR '
        prefix from an error reply; this shows the bytes the server sent)."""
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=5) as sock:
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
        """The lease deadline (ms) of a task, or None."""
        score = self.r.zscore(self.k.leases(task_type), task_id)
        return None if score is None else int(score)

    def expire_lease(self, task_id, ago_ms=1000):
        """Moves a lease deadline into the past, as if the holder had stopped heartbeating that
        long ago (the real-time runs are in LeaseTest)."""
        self.assertIsNotNone(self.lease(task_id), f"{task_id} holds no lease")
        self.r.zadd(self.k.leases(TYPE), {task_id: self.now_ms() - ago_ms}, xx=True)

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
