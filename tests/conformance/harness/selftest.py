"""The harness' self-test (CONFORMANCE_SELFTEST=1 tests/conformance/run.sh): the checks can fail.

1. The checker's unit tests (harness/test_checks.py): synthetic observations with one defect each.
2. Two real cells against redis-server and batond: the control cpp -> cli must pass all six
   cases, and the deliberately broken driver (selftest/broken/: the CLI driver with one defect
   per case) must fail all six, each for the reason its defect causes. The control's consumer is
   the unbroken CLI consumer; its producer is C++ because the CLI producer has a finding of its
   own (README.md). Exit 0 only when every expectation holds.
With --cluster (CONFORMANCE_SELFTEST=1 run.sh --cluster) the two cells run on the Redis Cluster
of the cluster run, in namespaces on two different primaries.
"""

import os
import sys
import time
import unittest

from harness import cases as case_defs
from harness import drivers as driver_defs
from harness import test_checks
from harness.matrix import CONFORMANCE_DIR, Run

# case -> a fragment of the failure reason the broken driver's defect for that case must cause.
EXPECTED_REASON = {
    "payload": "payload sha256",
    "envelope": "unknown fields arrived",
    "failure": "is not in the dead-letter queue",
    "timeout": "recorded failures, expected dead after 1",
    "delay": "enqueue status 'queued', expected 'scheduled'",
    "idempotency": "enqueue statuses ['queued', 'queued']",
}


def _unit_tests():
    suite = unittest.defaultTestLoader.loadTestsFromModule(test_checks)
    result = unittest.TextTestRunner(stream=sys.stdout, verbosity=1).run(suite)
    return result.wasSuccessful()


def main(argv):
    started = time.monotonic()
    ok = _unit_tests()
    run = Run(keep="--keep" in argv, cluster="--cluster" in argv)
    try:
        run.check_binaries()
    except RuntimeError as e:
        print("selftest: %s" % e)
        return 2
    cpp = driver_defs.Driver("cpp", os.path.join(CONFORMANCE_DIR, "drivers", "cpp"))
    cli = driver_defs.Driver("cli", os.path.join(CONFORMANCE_DIR, "drivers", "cli"))
    broken = driver_defs.Driver("broken", os.path.join(CONFORMANCE_DIR, "selftest", "broken"))
    for d in (cpp, cli, broken):
        driver_defs.prepare(d, run.env, run.work_dir)
        if d.state != "ready":
            print("selftest: driver %s is %s: %s" % (d.name, d.state, d.reason))
            run.stop(False)
            return 1
    met, unmet = 0, []
    try:
        run.start()
        results = run.run_cells([(cpp, cli), (broken, broken)], jobs=2)
    except RuntimeError as e:
        print("selftest: %s" % e)
        run.stop(False)
        return 1
    control = results[("cpp", "cli")]
    for case in case_defs.CASES:
        if control.results[case]:
            unmet.append("control cpp -> cli %s failed: %s" % (case, control.results[case]))
        else:
            met += 1
    faulty = results[("broken", "broken")]
    for case in case_defs.CASES:
        reasons = faulty.results[case]
        want = EXPECTED_REASON[case]
        if any(want in reason for reason in reasons):
            met += 1
            print("broken -> broken %-11s failed as it must: %s"
                  % (case, next(r for r in reasons if want in r)))
        else:
            unmet.append("broken -> broken %s: expected a failure containing %r, got %r"
                         % (case, want, reasons))
    for line in unmet:
        print("SELFTEST FAIL " + line)
    ok = ok and not unmet
    run.stop(ok)
    print("selftest: %d expectations met, %d not met (%.1f s)"
          % (met, len(unmet), time.monotonic() - started))
    return 0 if ok else 1
