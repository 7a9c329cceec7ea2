"""Shared base of the protocol tests: one real redis-server per test class, FLUSHALL and a fresh
FUNCTION LOAD REPLACE before every test."""

import time
import unittest

import redis

import baton_protocol as bp
import redis_harness

NS = "shop"
TYPE = "send_email"
GROUP = "workers"
CREATED = 1722489600


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

    @staticmethod
    def spec(task_id, **kwargs):
        kwargs.setdefault("payload", b'{"to":"a@example.com"}')
        kwargs.setdefault("created_at", CREATED)
        return bp.TaskSpec(id=task_id, **kwargs)

    def enqueue(self, task_id, task_type=TYPE, **kwargs):
        """Enqueues one task and returns its (status, detail)."""
        (result,) = self.b.enqueue(task_type, [self.spec(task_id, **kwargs)])
        return result

    def dequeue(self, consumer="c1", count=100, task_type=TYPE):
        entries, _ = self.b.dequeue(task_type, GROUP, consumer, count)
        return entries

    def dequeue_one(self, consumer="c1"):
        entries = self.dequeue(consumer)
        self.assertEqual(len(entries), 1, entries)
        return entries[0]

    def fail(self, entry, kind="error", error="boom", stack="trace", consumer="c1", **kwargs):
        return self.b.fail(TYPE, GROUP, entry.id, entry.sid, consumer, kind, error, stack,
                           **kwargs)

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

    def assert_event(self, event, frm, to, attempt, worker="", error=None):
        self.assertEqual((event["from"], event["to"], event["attempt"], event["worker"]),
                         (frm, to, str(attempt), worker), event)
        self.assertEqual(event["type"], TYPE)
        if error is not None:
            self.assertEqual(event["error"], error)
