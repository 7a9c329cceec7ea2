#!/usr/bin/python3
"""The broken driver's task command: the CLI driver's handler, except that conf_fail succeeds and
conf_sleep returns at once (both still write their report lines)."""

import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "conformance_cli_handler", os.path.join(HERE, "..", "..", "drivers", "cli", "handler.py"))
real = importlib.util.module_from_spec(spec)
spec.loader.exec_module(real)


def fail_but_succeed(report):
    real.append(report, {"type": "conf_fail", "task_id": os.environ["BATON_TASK_ID"],
                         "attempt": int(os.environ["BATON_ATTEMPT"])})


def sleep_not(report):
    sys.stdin.buffer.read()
    real.append(report, {"type": "conf_sleep", "task_id": os.environ["BATON_TASK_ID"],
                         "attempt": int(os.environ["BATON_ATTEMPT"]),
                         "started_ms": real.time.time_ns() // 1_000_000})


real.fail = fail_but_succeed
real.sleep = sleep_not

if __name__ == "__main__":
    sys.exit(real.main(*sys.argv[1:4]))
