"""Unit tests of the checks: a synthetic cell that passes, then one defect at a time.

Run by the self-test (CONFORMANCE_SELFTEST=1 run.sh), or alone from tests/conformance:
  /usr/bin/python3 -m unittest harness.test_checks
"""

import copy
import os
import time
import unittest
import uuid

from harness import cases as case_defs
from harness import checks

CONFORMANCE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(CONFORMANCE_DIR, "..", "..", "contract", "fixtures", "payloads")
TASK_PAYLOADS = os.path.join(CONFORMANCE_DIR, "task_payloads")
NS = "conf-unit"


def _uuid7(ms):
    value = (ms << 80) | (0x7 << 76) | (0x2 << 62) | 0x123456789
    return str(uuid.UUID(int=value))


def good_observation():
    """An observation of a cell in which everything went right."""
    obs = checks.Observation()
    obs.ns = NS
    obs.consumer = "python"
    obs.lines = case_defs.build(CORPUS, TASK_PAYLOADS)
    now = time.time()
    obs.produce_start, obs.produce_end, obs.producer_rc = now, now + 1, 0
    obs.corpus_sha = {line["payload_file"]: checks.file_sha256(line["payload_file"])
                      for line in obs.lines}
    ms = int(now * 1000)
    for i, line in enumerate(obs.lines):
        task_id = line["task_id"] or _uuid7(ms + i)
        first_once = line["case"] == "idempotency" and not obs.produced_for("idempotency")
        status = ("scheduled" if line["delay_seconds"] else
                  "queued" if line["case"] != "idempotency" or first_once else "duplicate")
        obs.produced.append({"case": line["case"], "task_id": task_id, "status": status})
        if status == "duplicate":
            continue
        task_type = line["task_type"]
        if task_type == "conf_echo":
            obs.report.append({
                "type": "conf_echo", "case": line["case"], "task_id": task_id, "namespace": NS,
                "task_type": task_type, "max_retry": line["max_retry"],
                "delay_seconds": line["delay_seconds"], "created_at": int(now),
                "execution_timeout": line["execution_timeout"], "extra": dict(line["extra"]),
                "payload_sha256": obs.corpus_sha[line["payload_file"]],
                "payload_value_equal": True})
            obs.done[task_id] = ms + 100
        elif task_type == "conf_fail":
            runs = 1 + line["max_retry"]
            for n in range(1, runs + 1):
                obs.report.append({"type": "conf_fail", "task_id": task_id, "attempt": n})
            obs.task_show[task_id] = {"state": "dead", "errors": [
                {"attempt": n, "kind": "error", "error": "boom",
                 "stack": 'Traceback (most recent call last):\n  File "h.py", line 3, in f',
                 "at_ms": ms + 1000 * n} for n in range(1, runs + 1)]}
            dead = obs.dlq.setdefault("conf_fail", {"dead": []})
            dead["dead"].append({"task_id": task_id, "attempts": runs})
            obs.records[task_id] = "dead|conf_fail|%d|" % runs
        elif task_type == "conf_sleep":
            obs.report.append({"type": "conf_sleep", "task_id": task_id, "attempt": 1,
                               "started_ms": ms})
            obs.task_show[task_id] = {"state": "dead", "errors": [
                {"attempt": 1, "kind": "timeout", "error": "execution_timeout", "stack": "w",
                 "at_ms": ms + 1100}]}
            obs.dlq.setdefault("conf_sleep", {"dead": []})["dead"].append(
                {"task_id": task_id, "attempts": 1})
        elif task_type == "conf_delay":
            obs.report.append({"type": "conf_delay", "task_id": task_id,
                               "started_ms": ms + 1005})
            obs.task_show[task_id] = {"state": "done", "events": [
                {"from": "new", "to": "scheduled", "at_ms": ms}]}
            obs.done[task_id] = ms + 1010
        elif task_type == "conf_once":
            obs.report.append({"type": "conf_once", "task_id": task_id})
            obs.done[task_id] = ms + 10
    return obs


def _first(obs, kind):
    return next(r for r in obs.report if r["type"] == kind)


class ChecksTest(unittest.TestCase):
    def assert_only_fails(self, obs, case, fragment):
        results = checks.evaluate(obs)
        for name, reasons in results.items():
            if name == case:
                self.assertTrue(any(fragment in r for r in reasons),
                                "%s: expected a reason with %r, got %r" % (name, fragment, reasons))
            else:
                self.assertEqual(reasons, [], name)

    def test_good_cell_passes_every_case(self):
        self.assertEqual(checks.evaluate(good_observation()),
                         {case: [] for case in case_defs.CASES})

    def test_changed_payload_bytes(self):
        obs = good_observation()
        _first(obs, "conf_echo")["payload_sha256"] = "0" * 64
        self.assert_only_fails(obs, "payload", "payload sha256")

    def test_lossy_value_without_lossless_option(self):
        obs = good_observation()
        _first(obs, "conf_echo")["payload_value_equal"] = None
        self.assert_only_fails(obs, "payload", "lossless_value_equal None")

    def test_lossless_option_accepted(self):
        obs = good_observation()
        report = _first(obs, "conf_echo")
        report["payload_value_equal"], report["lossless_value_equal"] = None, True
        self.assertEqual(checks.evaluate(obs)["payload"], [])

    def test_created_at_in_milliseconds(self):
        obs = good_observation()
        _first(obs, "conf_echo")["created_at"] *= 1000
        self.assert_only_fails(obs, "envelope", "not Unix seconds")

    def test_max_retry_as_float(self):
        obs = good_observation()
        report = _first(obs, "conf_echo")
        report["max_retry"] = float(report["max_retry"])
        self.assert_only_fails(obs, "envelope", "max_retry arrived as")

    def test_unknown_field_lost(self):
        obs = good_observation()
        del _first(obs, "conf_echo")["extra"]["x-dashed.name"]
        self.assert_only_fails(obs, "envelope", "unknown fields arrived")

    def test_sdk_id_not_uuid7(self):
        obs = good_observation()
        line = next(p for p, c in zip(obs.produced, obs.lines)
                    if c["case"].startswith("payload/") and c["task_id"] is None)
        old = line["task_id"]
        line["task_id"] = str(uuid.uuid4())
        for r in obs.report:
            if r.get("task_id") == old:
                r["task_id"] = line["task_id"]
        self.assert_only_fails(obs, "envelope", "not a lowercase canonical UUIDv7")

    def test_missing_stack(self):
        obs = good_observation()
        doc = next(d for d in obs.task_show.values() if d["state"] == "dead" and
                   d["errors"][0]["kind"] == "error")
        doc["errors"][1]["stack"] = " "
        self.assert_only_fails(obs, "failure", "has no stack")

    def test_stack_of_another_language(self):
        obs = good_observation()
        doc = next(d for d in obs.task_show.values() if d["state"] == "dead" and
                   d["errors"][0]["kind"] == "error")
        doc["errors"][0]["stack"] = "Error: boom\n    at handler (file:///w/driver.mjs:78:27)"
        self.assert_only_fails(obs, "failure", "the stack has no python frame")

    def test_retry_without_backoff(self):
        obs = good_observation()
        doc = next(d for d in obs.task_show.values() if d["state"] == "dead" and
                   d["errors"][0]["kind"] == "error")
        doc["errors"][1]["at_ms"] = doc["errors"][0]["at_ms"] + 5
        self.assert_only_fails(obs, "failure", "no backoff")

    def test_timeout_recorded_as_lease_expiry(self):
        obs = good_observation()
        doc = next(d for d in obs.task_show.values() if d["errors"] and
                   d["errors"][0]["kind"] == "timeout")
        doc["errors"][0]["kind"] = "lease_expired"
        self.assert_only_fails(obs, "timeout", "expected 'timeout'")

    def test_timeout_not_enforced(self):
        obs = good_observation()
        doc = next(d for d in obs.task_show.values() if d["errors"] and
                   d["errors"][0]["kind"] == "timeout")
        doc["errors"][0]["at_ms"] += case_defs.SLEEP_MS
        self.assert_only_fails(obs, "timeout", "was not stopped")

    def test_delay_started_early(self):
        obs = good_observation()
        _first(obs, "conf_delay")["started_ms"] -= 20
        self.assert_only_fails(obs, "delay", "before its due time")

    def test_idempotent_task_ran_twice(self):
        obs = good_observation()
        obs.report.append(copy.deepcopy(_first(obs, "conf_once")))
        self.assert_only_fails(obs, "idempotency", "ran 2 times")

    def test_missing_report_fails_instead_of_passing(self):
        obs = good_observation()
        obs.report = []
        results = checks.evaluate(obs)
        self.assertTrue(all(results[case] for case in case_defs.CASES), results)


if __name__ == "__main__":
    unittest.main()
