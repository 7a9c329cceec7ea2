"""Language-neutral interop on protocol v2: Python speaking only FCALL as written in
docs/protocol.md, against the C++ library (through the `baton` CLI binary, built on baton::Client,
baton::Worker and baton::Inspector).

- Python enqueues tasks that the C++ worker (`baton work --exec`) runs, payload bytes intact.
- C++ enqueues tasks (`baton enqueue`) that Python dequeues, acks and fails; the C++ side
  (`baton task show --json`) then sees the outcome, and the lease, Python recorded.
- Leases belong to their holder across languages: a C++ worker running maintenance with a short
  lease of its own reclaims a task Python abandoned, never one Python still holds.

Needs the release build (scripts/test.sh builds it first). Run alone, it skips when the binary is
missing unless BATON_REQUIRE_BINARIES=1, which scripts/test.sh sets.
"""

import json
import os
import pathlib
import subprocess
import tempfile
import time
import unittest
import uuid

import baton_protocol as bp
from protocol_testcase import ProtocolTestCase

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("BATON_BUILD_DIR", ROOT / "build" / "release"))
BATON = BUILD / "cli" / "baton"
GROUP = "baton"  # the consumer group of Baton's workers (docs/protocol.md, one group per stream)


def uuid7():
    ms = int(time.time() * 1000)
    rand = int.from_bytes(os.urandom(10), "big")
    value = ((ms << 80) | (0x7 << 76) | (((rand >> 62) & 0xFFF) << 64) | (0b10 << 62)
             | (rand & ((1 << 62) - 1)))
    return str(uuid.UUID(int=value))


@unittest.skipUnless(BATON.exists() or os.environ.get("BATON_REQUIRE_BINARIES") == "1",
                     f"{BATON} not built")
class InteropTest(ProtocolTestCase):

    def url(self):
        if self.cluster:  # the C++ side routes by slot itself
            return self.server.cluster.url
        return f"redis://127.0.0.1:{self.server.port}"

    def baton(self, *args, check=True):
        return subprocess.run([str(BATON), "--redis", self.url(), *args], capture_output=True,
                              text=True, check=check, timeout=60)

    def start_worker(self, task_type, command, *extra):
        return subprocess.Popen(
            [str(BATON), "--redis", self.url(), "work", "--ns", "interop", "--type", task_type,
             "--exec", command, "--maintenance", *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    @staticmethod
    def stop_worker(worker):
        worker.terminate()
        worker.wait(timeout=30)

    def wait_for(self, condition, timeout_s=30):
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            if condition():
                return True
            time.sleep(0.1)
        return condition()

    def show(self, task_id):
        return json.loads(self.baton("--json", "task", "show", task_id, "--ns",
                                     "interop").stdout)

    def test_python_enqueues_cpp_worker_runs(self):
        ns_b = bp.Baton(self.r, "interop")
        payloads = {}
        specs = []
        for i in range(20):
            tid = uuid7()
            # Numbers and strings that a re-encoding would change.
            payload = ('{"n":12345678901234567890,"f":1.10,"i":%d,"s":"caf\\u00e9 \\"q\\""}' % i)
            payloads[tid] = payload.encode()
            specs.append(bp.TaskSpec(id=tid, payload=payload.encode(),
                                     extra=b'{"headers":{"from":"python"}}'))
        # No registration step: the type is new to the namespace and nobody SADDs anything.
        results = ns_b.enqueue("py2cpp", specs)
        self.assertTrue(all(status == "queued" for status, _ in results))
        self.assertEqual(self.r.exists(bp.NAMESPACES_KEY), 0)

        with tempfile.TemporaryDirectory() as out:
            worker = self.start_worker(
                "py2cpp",
                f'cat > "{out}/$BATON_TASK_ID.json"; '
                f'printf %s "$BATON_TASK" > "{out}/$BATON_TASK_ID.task"')
            try:
                self.wait_for(lambda: all(ns_b.final_state(t) for t in payloads))
            finally:
                self.stop_worker(worker)
            for tid, payload in payloads.items():
                self.assertEqual(ns_b.final_state(tid)[0], "done", tid)
                with open(f"{out}/{tid}.json", "rb") as f:
                    self.assertEqual(f.read(), payload)  # byte for byte
                with open(f"{out}/{tid}.task") as f:
                    task = json.load(f)
                self.assertEqual(task["task_id"], tid)
                self.assertEqual(task["namespace"], "interop")
                self.assertEqual(task["headers"], {"from": "python"})  # unknown field kept
        self.assertEqual(self.r.hlen(ns_b.keys.tasks()), 0)
        self.assertEqual(self.r.xpending(ns_b.keys.stream("py2cpp"), GROUP)["pending"], 0)
        # The C++ worker's acks are batch events that list the Python producer's ids.
        acked = {i for e in ns_b.events() if e["to"] == "done" for i in e["ids"]}
        self.assertEqual(acked, set(payloads))

    def test_cpp_enqueues_python_acks_and_fails(self):
        ids = []
        for i in range(4):
            out = self.baton("--json", "enqueue", "--ns", "interop", "--type", "cpp2py",
                             "--payload", json.dumps({"i": i}), "--max-retry", "0")
            ids.append(json.loads(out.stdout)["task_id"])
        ns_b = bp.Baton(self.r, "interop")
        delivery = ns_b.dequeue("cpp2py", GROUP, "python-consumer", 10, lease_ms=60000)
        self.assertEqual(sorted(e.id for e in delivery.entries), sorted(ids))
        by_id = {e.id: e for e in delivery.entries}
        # The C++ side sees the lease Python took (derived from the group's delivery time).
        shown = self.show(ids[0])
        self.assertEqual(shown["state"], "active")
        self.assert_lease_end(shown["lease_deadline_ms"], delivery.lease_deadline_ms,
                              delivery.lease_deadline_ms)
        ok, bad = ids[:2], ids[2:]
        self.assertEqual(ns_b.ack("cpp2py", GROUP, "python-consumer",
                                  [(t, by_id[t].sid) for t in ok]), ["done", "done"])
        for t in bad:
            outcome, _, attempt = ns_b.fail("cpp2py", GROUP, "python-consumer", t, by_id[t].sid,
                                            "error", "python says no", "Traceback: x.py:1")
            self.assertEqual((outcome, attempt), ("dead", 1))

        for t in ok:
            shown = self.show(t)
            self.assertEqual(shown["state"], "done")
            self.assertEqual(shown["finished_ms"], ns_b.final_state(t)[1])
        for t in bad:
            shown = self.show(t)
            self.assertEqual(shown["state"], "dead")
            self.assertEqual(shown["errors"][0]["error"], "python says no")
            self.assertEqual(shown["errors"][0]["stack"], "Traceback: x.py:1")
            self.assertEqual(shown["errors"][0]["worker"], "python-consumer")

    def test_cpp_worker_reclaims_only_the_leases_python_let_expire(self):
        ns_b = bp.Baton(self.r, "interop")
        ns_b.enqueue("leases", [bp.TaskSpec(id="held"), bp.TaskSpec(id="abandoned",
                                                                      max_retry=0)])
        # A lease length is per consumer: the holder and the one that goes away are two.
        holder = ns_b.dequeue("leases", GROUP, "python-holder", 1, lease_ms=60000)
        (held,) = holder.entries
        (abandoned,) = ns_b.dequeue("leases", GROUP, "python-gone", 1, lease_ms=1000).entries
        self.assertEqual((held.id, abandoned.id), ("held", "abandoned"))
        ns_b.enqueue("leases", [bp.TaskSpec(id="fresh")])
        # A C++ worker with maintenance on and a lease far shorter than Python's own.
        worker = self.start_worker("leases", "true", "--lease-ms", "1000")
        try:
            reclaimed = self.wait_for(lambda: ns_b.record("abandoned") is not None and
                                      ns_b.record("abandoned")[0] == "dead")
            ran = self.wait_for(lambda: ns_b.final_state("fresh") is not None)
            time.sleep(1.5)  # more maintenance passes, past the C++ worker's own lease
        finally:
            self.stop_worker(worker)
        self.assertTrue(reclaimed, ns_b.record("abandoned"))
        self.assertTrue(ran)
        (err,) = ns_b.error_history("abandoned")
        self.assertEqual((err["kind"], err["worker"]), ("lease_expired", "python-gone"))
        # The task Python still holds was never taken, nor renewed, whoever ran maintenance.
        self.assertEqual(ns_b.record("held"), ("queued", "leases", 0, held.sid))
        lease = ns_b.lease("leases", GROUP, held.sid)
        self.assertEqual(lease[:3], ("python-holder", 60000, 1))
        self.assert_lease_end(lease.ends_ms, holder.lease_deadline_ms, holder.lease_deadline_ms)
        self.assertEqual(ns_b.error_history("held"), [])
        pending = self.r.xpending_range(ns_b.keys.stream("leases"), GROUP, held.sid, held.sid, 1)
        self.assertEqual(pending[0]["consumer"], b"python-holder")
        self.assertEqual(ns_b.ack("leases", GROUP, "python-holder", [(held.id, held.sid)]),
                         ["done"])


if __name__ == "__main__":
    unittest.main()
