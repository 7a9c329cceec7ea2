"""Language-neutral interop: Python speaking only FCALL as written in docs/protocol.md, against
the C++ library (through the `baton` CLI binary, built on baton::Client and baton::Worker).

- Python enqueues tasks that the C++ worker (`baton work --exec`) runs, payload bytes intact.
- C++ enqueues tasks (`baton enqueue`) that Python dequeues, acks and fails; the C++ side
  (`baton task show --json`) then sees the outcome Python recorded.

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
BATON = pathlib.Path(os.environ.get("BATON_BUILD_DIR", ROOT / "build" / "release")) / "cli" / "baton"


def uuid7():
    ms = int(time.time() * 1000)
    rand = int.from_bytes(os.urandom(10), "big")
    value = ((ms << 80) | (0x7 << 76) | (((rand >> 62) & 0xFFF) << 64) | (0b10 << 62)
             | (rand & ((1 << 62) - 1)))
    return str(uuid.UUID(int=value))


@unittest.skipUnless(BATON.exists() or os.environ.get("BATON_REQUIRE_BINARIES") == "1",
                     f"{BATON} not built")
class InteropTest(ProtocolTestCase):

    def baton(self, *args, check=True):
        url = f"redis://127.0.0.1:{self.server.port}"
        return subprocess.run([str(BATON), "--redis", url, *args], capture_output=True,
                              text=True, check=check, timeout=60)

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
        results = ns_b.enqueue("py2cpp", specs)
        self.assertTrue(all(status == "queued" for status, _ in results))

        with tempfile.TemporaryDirectory() as out:
            worker = subprocess.Popen(
                [str(BATON), "--redis", f"redis://127.0.0.1:{self.server.port}", "work",
                 "--ns", "interop", "--type", "py2cpp",
                 "--exec", f'cat > "{out}/$BATON_TASK_ID.json"; printf %s "$BATON_TASK" > "{out}/$BATON_TASK_ID.task"'],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                deadline = time.time() + 30
                while time.time() < deadline:
                    if all(self.r.exists(ns_b.keys.done(t)) for t in payloads):
                        break
                    time.sleep(0.1)
            finally:
                worker.terminate()
                worker.wait(timeout=20)
            for tid, payload in payloads.items():
                self.assertIsNotNone(ns_b.final_record(tid), f"{tid} not done")
                with open(f"{out}/{tid}.json", "rb") as f:
                    self.assertEqual(f.read(), payload)  # byte for byte
                with open(f"{out}/{tid}.task") as f:
                    task = json.load(f)
                self.assertEqual(task["task_id"], tid)
                self.assertEqual(task["namespace"], "interop")
                self.assertEqual(task["headers"], {"from": "python"})  # unknown field kept
        self.assertEqual(self.r.hlen(ns_b.keys.tasks()), 0)

    def test_cpp_enqueues_python_acks_and_fails(self):
        ids = []
        for i in range(4):
            out = self.baton("--json", "enqueue", "--ns", "interop", "--type", "cpp2py",
                             "--payload", json.dumps({"i": i}), "--max-retry", "0")
            ids.append(json.loads(out.stdout)["task_id"])
        ns_b = bp.Baton(self.r, "interop")
        entries, _ = ns_b.dequeue("cpp2py", "baton", "python-consumer", 10)
        self.assertEqual(sorted(e.id for e in entries), sorted(ids))
        by_id = {e.id: e for e in entries}
        ok, bad = ids[:2], ids[2:]
        self.assertEqual(ns_b.ack("cpp2py", "baton", [(t, by_id[t].sid) for t in ok],
                                  "python-consumer"), ["done", "done"])
        for t in bad:
            outcome, _, attempt = ns_b.fail("cpp2py", "baton", t, by_id[t].sid, "python-consumer",
                                            "error", "python says no", "Traceback: x.py:1")
            self.assertEqual((outcome, attempt), ("dead", 1))

        for t in ok:
            shown = json.loads(self.baton("--json", "task", "show", t, "--ns", "interop").stdout)
            self.assertEqual(shown["state"], "done")
        for t in bad:
            shown = json.loads(self.baton("--json", "task", "show", t, "--ns", "interop").stdout)
            self.assertEqual(shown["state"], "dead")
            self.assertEqual(shown["errors"][0]["error"], "python says no")
            self.assertEqual(shown["errors"][0]["stack"], "Traceback: x.py:1")
            self.assertEqual(shown["errors"][0]["worker"], "python-consumer")


if __name__ == "__main__":
    unittest.main()
