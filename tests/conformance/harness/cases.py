"""The tasks one cell enqueues (the `--cases` file of DRIVERS.md) and the six case names.

Every corpus file becomes one conf_echo task (case "payload/<name>"). Those tasks also carry the
envelope case: their settings vary (SDK-made and given task ids, max_retry 0..25, a delayed one,
execution_timeout absent / 30 / 86400) and all carry unknown top-level fields, so the envelope is
checked on every one of them. The other cases have one or two tasks each.
"""

import os
import secrets

CASES = ("payload", "envelope", "failure", "timeout", "delay", "idempotency")

# The unknown top-level fields every task carries (beside x_conformance_case): nested values,
# non-ASCII text, a field name with punctuation.
UNKNOWN_FIELDS = {
    "x_unknown": {"a": 1, "nested": {"list": [1, "二", None, True, False, -2.5]}, "emoji": "🚀"},
    "x-dashed.name": "kept as is",
}

# Settings of the conf_echo tasks, cycled over the corpus (sorted by name): (task_id given?,
# max_retry, delay_seconds, execution_timeout).
ECHO_VARIANTS = (
    (False, 3, 0, None),
    (True, 0, 0, 30),
    (False, 25, 0, 86400),
    (False, 1, 1, None),
    (True, 5, 0, None),
    (False, 2, 0, 7),
)

# Pinned variants: the 500 KiB document always asks the producer SDK for the id (a CLI producer
# cannot pass so big a payload on its command line, and --file needs an id in the document).
PINNED_VARIANTS = {"large_500kib": (False, 1, 1, None)}

FAIL_MAX_RETRY = 2
SLEEP_TIMEOUT_S = 1
SLEEP_MS = 4000
DELAY_SECONDS = 1


def corpus_files(corpus_dir):
    """name -> absolute path of every *.json file of the corpus."""
    return {f[:-len(".json")]: os.path.join(corpus_dir, f)
            for f in sorted(os.listdir(corpus_dir)) if f.endswith(".json")}


def _line(case, task_type, payload_file, max_retry=0, delay_seconds=0, execution_timeout=None,
          task_id=None):
    return {"case": case, "task_type": task_type, "payload_file": payload_file,
            "max_retry": max_retry, "delay_seconds": delay_seconds,
            "execution_timeout": execution_timeout, "task_id": task_id,
            "extra": dict(UNKNOWN_FIELDS, x_conformance_case=case)}


def build(corpus_dir, task_payload_dir):
    """The case lines of one cell, in enqueue order."""
    lines = []
    suffix = secrets.token_hex(4)
    for i, (name, path) in enumerate(corpus_files(corpus_dir).items()):
        given_id, max_retry, delay, timeout = PINNED_VARIANTS.get(
            name, ECHO_VARIANTS[i % len(ECHO_VARIANTS)])
        task_id = "conf.echo:%s-%s" % (name, suffix) if given_id else None
        lines.append(_line("payload/" + name, "conf_echo", path, max_retry, delay, timeout,
                           task_id))
    for variant in ("error", "panic"):
        lines.append(_line("failure/" + variant, "conf_fail",
                           os.path.join(task_payload_dir, "fail_%s.json" % variant),
                           max_retry=FAIL_MAX_RETRY))
    lines.append(_line("timeout", "conf_sleep", os.path.join(task_payload_dir, "sleep_4000.json"),
                       max_retry=0, execution_timeout=SLEEP_TIMEOUT_S))
    lines.append(_line("delay", "conf_delay", os.path.join(task_payload_dir, "plain.json"),
                       delay_seconds=DELAY_SECONDS))
    once_id = "conf-once-" + suffix
    for _ in range(2):
        lines.append(_line("idempotency", "conf_once",
                           os.path.join(task_payload_dir, "plain.json"), task_id=once_id))
    return lines
