#!/usr/bin/python3
"""The command `baton work --exec` runs for each conformance task (drivers/cli/driver).

  handler.py TASK_TYPE REPORT_FILE CORPUS_DIR

What `baton work` hands a command (docs/cli.md, "work"): the payload bytes on stdin, the task
document in $BATON_TASK (its payload null when the document is over 64 KiB), the attempt in
$BATON_ATTEMPT. Exit 0 is success; any other status is a failed attempt.
"""

import decimal
import hashlib
import json
import os
import sys
import time

# The fields of the task contract; every other top-level field of $BATON_TASK is "extra".
CONTRACT_FIELDS = {"task_id", "namespace", "task_type", "payload", "max_retry", "delay_seconds",
                   "created_at", "execution_timeout"}
PAYLOAD_CASE_PREFIX = "payload/"


def parse(data):
    """Python's json keeps integers exact; Decimal keeps 1.10 and 1e308 exact as well."""
    return json.loads(data, parse_float=decimal.Decimal)


def append(report, line):
    fd = os.open(report, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(line) + "\n").encode())  # one write per line
    finally:
        os.close(fd)


def task():
    # The envelope needs no lossless floats; plain floats keep the report plain JSON.
    return json.loads(os.environ["BATON_TASK"])


def value_equal(corpus, case, payload):
    if not case.startswith(PAYLOAD_CASE_PREFIX):
        return None
    try:
        with open(os.path.join(corpus, case[len(PAYLOAD_CASE_PREFIX):] + ".json"), "rb") as f:
            expected = parse(f.read())
    except (OSError, ValueError):
        return None
    try:
        return parse(payload) == expected
    except ValueError:
        return False


def echo(report, corpus):
    payload = sys.stdin.buffer.read()
    doc = task()
    extra = {k: v for k, v in doc.items() if k not in CONTRACT_FIELDS}
    case = extra.get("x_conformance_case") or ""
    append(report, {
        "type": "conf_echo", "case": case, "task_id": doc["task_id"],
        "namespace": doc["namespace"], "task_type": doc["task_type"],
        "max_retry": doc["max_retry"], "delay_seconds": doc["delay_seconds"],
        "created_at": doc["created_at"], "execution_timeout": doc.get("execution_timeout"),
        "extra": extra, "payload_sha256": hashlib.sha256(payload).hexdigest(),
        "payload_value_equal": value_equal(corpus, case, payload)})


def fail(report):
    append(report, {"type": "conf_fail", "task_id": os.environ["BATON_TASK_ID"],
                    "attempt": int(os.environ["BATON_ATTEMPT"])})
    # Uncaught: Python prints the traceback on stderr and exits 1; `baton work` keeps the last
    # 4 KB of stderr in the attempt's error.
    raise RuntimeError("conf_fail: deliberate failure on attempt %s" % os.environ["BATON_ATTEMPT"])


def sleep(report):
    payload = json.loads(sys.stdin.buffer.read())
    append(report, {"type": "conf_sleep", "task_id": os.environ["BATON_TASK_ID"],
                    "attempt": int(os.environ["BATON_ATTEMPT"]),
                    "started_ms": time.time_ns() // 1_000_000})
    # SIGTERM from `baton work` at the execution_timeout ends the process (default action).
    time.sleep(payload.get("sleep_ms", 0) / 1000.0)


def delay(report):
    append(report, {"type": "conf_delay", "task_id": os.environ["BATON_TASK_ID"],
                    "started_ms": time.time_ns() // 1_000_000})


def once(report):
    append(report, {"type": "conf_once", "task_id": os.environ["BATON_TASK_ID"]})


def main(task_type, report, corpus):
    if task_type == "conf_echo":
        echo(report, corpus)
    elif task_type == "conf_fail":
        fail(report)
    elif task_type == "conf_sleep":
        sleep(report)
    elif task_type == "conf_delay":
        delay(report)
    elif task_type == "conf_once":
        once(report)
    else:
        print("handler.py: unknown task type %r" % task_type, file=sys.stderr)
        return 65  # non-retryable (baton work --non-retryable-exit default)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
