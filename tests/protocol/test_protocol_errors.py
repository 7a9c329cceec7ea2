"""Protocol tests, part 3: the error history (baton:v2:{NS}:errors, docs/keyspace.md): one field
per failure (ID -> N, ID|K -> failure K), the newest ERRORS_KEPT kept, the count going on across
dead-letter replays, and every field of a task removed by ack, cancel, dlq_delete and the
dead-letter caps.

Run: cd /work/main && /usr/bin/python3 -m unittest discover -s tests/protocol -p 'test_*.py' -v
"""

import json
import unittest

import baton_protocol as bp
from protocol_testcase import TYPE, ProtocolTestCase

NOW = dict(base_ms=0, max_ms=0)  # retries come due at once


class ErrorHistoryTest(ProtocolTestCase):
    def fail_times(self, task_id, times, first=1):
        """Runs task_id `times` times, failing each run (error 'err K' for the K-th failure of
        this history, counting from `first`); retries come due at once. Returns the last outcome."""
        outcome = None
        for k in range(first, first + times):
            e = self.dequeue_one(f"w{k}")
            self.assertEqual(e.id, task_id)
            outcome, at, _ = self.fail_task(e, error=f"err {k}", stack=f"stack {k}",
                                            consumer=f"w{k}", **NOW)
            if outcome == "retry":
                self.promote_when_due(at)
        return outcome

    def raw_errors(self):
        return {f.decode(): v.decode() for f, v in self.r.hgetall(self.k.errors()).items()}

    def test_each_failure_is_a_field_of_its_own(self):
        self.enqueue("t1", max_retry=5)
        self.fail_times("t1", 1)
        first = self.raw_errors()
        self.assertEqual(sorted(first), ["t1", "t1|1"])
        self.assertEqual(first["t1"], "1")
        self.fail_times("t1", 2, first=2)
        errors = self.raw_errors()
        self.assertEqual(sorted(errors), ["t1", "t1|1", "t1|2", "t1|3"])
        self.assertEqual(errors["t1"], "3")
        # Nothing recorded before is rewritten: failure 1 is the same bytes.
        self.assertEqual(errors["t1|1"], first["t1|1"])
        for k in (1, 2, 3):
            e = json.loads(errors[f"t1|{k}"])
            self.assertEqual({x: v for x, v in e.items() if x != "at_ms"},
                             {"attempt": k, "kind": "error", "error": f"err {k}",
                              "stack": f"stack {k}", "worker": f"w{k}"})
            self.assertIsInstance(e["at_ms"], int)
        self.assertEqual([e["attempt"] for e in self.b.error_history("t1")], [1, 2, 3])

    def test_only_the_newest_are_kept_and_the_count_goes_on_across_replays(self):
        kept = bp.ERRORS_KEPT
        self.assertEqual(kept, 50)
        self.enqueue("t1", max_retry=25)
        self.assertEqual(self.fail_times("t1", 26), "dead")
        self.assertEqual(self.r.hget(self.k.errors(), "t1"), b"26")
        self.b.dlq_replay(TYPE, "t1")
        self.assertEqual(len(self.b.error_history("t1")), 26)  # the history stays
        self.assertEqual(self.fail_times("t1", 26, first=27), "dead")
        self.b.dlq_replay(TYPE, "t1")
        self.assertEqual(self.fail_times("t1", 3, first=53), "retry")
        n = 55
        self.assertEqual(self.r.hget(self.k.errors(), "t1"), str(n).encode())
        self.assertEqual(self.error_fields("t1"),
                         sorted(["t1"] + [f"t1|{k}" for k in range(n - kept + 1, n + 1)]))
        history = self.b.error_history("t1")
        self.assertEqual(len(history), kept)
        self.assertEqual([e["error"] for e in history],
                         [f"err {k}" for k in range(n - kept + 1, n + 1)])  # oldest first
        # attempt numbers restart with each replay: 6..26 of the first run, 1..26, 1..3
        self.assertEqual([e["attempt"] for e in history],
                         list(range(6, 27)) + list(range(1, 27)) + [1, 2, 3])

    def test_ack_removes_every_field_of_the_task_and_no_other(self):
        self.enqueue("other", max_retry=0)
        self.fail_times("other", 1)
        self.enqueue("t1", max_retry=5)
        self.enqueue("t2", max_retry=5)
        for k in (1, 2):
            entries = self.dequeue(count=2)
            for e in entries:
                _, at, _ = self.fail_task(e, **NOW)
            self.promote_when_due(at)
        self.assertEqual(len(self.error_fields("t1")), 3)
        self.assertEqual(self.ack(self.dequeue(count=2)), ["done", "done"])
        self.assertEqual(self.error_fields("t1"), [])
        self.assertEqual(self.error_fields("t2"), [])
        self.assertEqual(self.error_fields("other"), ["other", "other|1"])

    def test_ack_of_a_replayed_task_removes_its_history(self):
        # A replayed task runs with attempt 0 again, like a first run: the history is still found.
        self.kill("t1")
        self.b.dlq_replay(TYPE, "t1")
        self.assertEqual(self.ack([self.dequeue_one()]), ["done"])
        self.assertEqual(self.raw_errors(), {})

    def test_a_history_longer_than_the_kept_window_is_removed_whole(self):
        self.enqueue("t1", max_retry=25)
        self.fail_times("t1", 26)
        self.b.dlq_replay(TYPE, "t1")
        self.fail_times("t1", 26, first=27)
        self.assertEqual(len(self.error_fields("t1")), bp.ERRORS_KEPT + 1)
        self.assertEqual(self.b.dlq_delete(TYPE, "t1"), "deleted")
        self.assertEqual(self.raw_errors(), {})

    def test_cancel_of_a_retrying_task_removes_its_history(self):
        self.enqueue("t1", max_retry=5)
        e = self.dequeue_one()
        self.fail_task(e)  # default backoff: it waits in the scheduled set
        self.assertEqual(self.b.record("t1")[0], "retry")
        self.assertEqual(self.error_fields("t1"), ["t1", "t1|1"])
        self.assertEqual(self.b.cancel(TYPE, "t1"), "cancelled")
        self.assertEqual(self.raw_errors(), {})

    def test_the_dead_letter_caps_remove_the_history_of_dropped_tasks(self):
        self.b.configure(dlq_max=1)
        self.enqueue("d1", max_retry=1)
        self.fail_times("d1", 2)
        self.assertEqual(self.error_fields("d1"), ["d1", "d1|1", "d1|2"])
        self.kill("d2")
        self.assertEqual(self.b.final_state("d1")[0], "dropped")
        self.assertEqual(sorted(self.raw_errors()), ["d2", "d2|1"])

    def test_a_counter_written_by_hand_that_is_no_integer_restarts_the_history(self):
        self.r.hset(self.k.errors(), "t1", "oops")
        self.enqueue("t1", max_retry=5)
        self.fail_times("t1", 2)
        self.assertEqual(self.r.hget(self.k.errors(), "t1"), b"2")
        self.assertEqual([e["error"] for e in self.b.error_history("t1")], ["err 1", "err 2"])


if __name__ == "__main__":
    unittest.main()
