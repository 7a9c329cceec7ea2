"""The six checks of one cell (DRIVERS.md, "What run.sh checks"), from what the cell observed.

Each check returns a list of failure reasons; an empty list is a pass. A check never passes for
lack of evidence: a missing producer line, report line, Redis record or CLI answer is a failure
that says what was missing.
"""

import hashlib
import re

from harness import cases as case_defs

UUID7 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
# Fields a consumer may report in "extra" although the producer did not send them: contract
# fields that some SDKs keep among the extra fields (they are known to the contract, not unknown).
EXTRA_IGNORED = {"trace", "headers"}
# created_at and UUIDv7 timestamps must fall within the produce call, give or take this much.
CLOCK_SLACK_S = 5
# What a stack of each consumer language looks like (one frame): the failure case requires every
# recorded stack to be one "from that language". Languages not listed need a non-empty stack only.
# The CLI's worker is libbaton, so its stacks are C++ frames (the command's stderr, here a Python
# traceback, is in the error message).
STACK_FRAME = {
    "cpp": re.compile(r"#\d+ "),
    "cli": re.compile(r"#\d+ "),
    "python": re.compile(r'File "[^"]+", line \d+'),
    "node": re.compile(r"\n\s+at \S"),
    "go": re.compile(r"\.go:\d+"),
    "java": re.compile(r"\n\s+at [\w.$<>/]+\("),
}
# Smallest backoff a driver may use (DRIVERS.md: base 100 ms); a retry sooner than
# base * 2^(n-1) after the n-th failure means the SDK did not back off.
MIN_BACKOFF_BASE_MS = 100


class Observation:
    """Everything a cell saw; filled in by cell.py."""

    def __init__(self):
        self.ns = ""
        self.consumer = ""        # the consumer's language (drivers/<lang>)
        self.lines = []           # the case lines sent to the producer
        self.produced = []        # the producer's stdout lines (dicts), in order
        self.producer_rc = None
        self.producer_error = ""  # stderr tail when the producer failed
        self.produce_start = 0.0  # time.time() around the producer run
        self.produce_end = 0.0
        self.report = []          # the consumer's report lines (dicts)
        self.report_errors = []   # report lines that were not JSON objects
        self.done = {}            # task_id -> finished Unix ms (ZSCORE done), or None
        self.records = {}         # task_id -> live task record "STATE|TYPE|ATTEMPT|SID", or None
        self.task_show = {}       # task_id -> `baton --json task show` document, or an error str
        self.dlq = {}             # task type -> `baton --json dlq list` document, or an error str
        self.corpus_sha = {}      # payload file path -> sha256 hex

    def produced_for(self, case):
        return [p for p in self.produced if p.get("case") == case]

    def reports(self, kind, task_id):
        return [r for r in self.report if r.get("type") == kind and r.get("task_id") == task_id]


def _lines(obs, prefix):
    return [line for line in obs.lines if line["case"] == prefix or
            line["case"].startswith(prefix + "/")]


def _one_produced(obs, line, reasons):
    """The producer's line for a case that is enqueued once; None (with a reason) otherwise."""
    produced = obs.produced_for(line["case"])
    if len(produced) != 1:
        reasons.append("%s: the producer printed %d result lines, expected 1%s"
                       % (line["case"], len(produced), _producer_hint(obs)))
        return None
    expected = "scheduled" if line["delay_seconds"] > 0 else "queued"
    if produced[0].get("status") != expected:
        reasons.append("%s: enqueue status %r, expected %r"
                       % (line["case"], produced[0].get("status"), expected))
        return None
    return produced[0]


def _producer_hint(obs):
    if obs.producer_rc not in (0, None):
        return " (producer exited %s: %s)" % (obs.producer_rc, obs.producer_error[-300:])
    return ""


def check_payload(obs):
    reasons = []
    for line in _lines(obs, "payload"):
        produced = _one_produced(obs, line, reasons)
        if produced is None:
            continue
        reports = obs.reports("conf_echo", produced.get("task_id"))
        if not reports:
            reasons.append("%s: no conf_echo report for task %s (state %s)"
                           % (line["case"], produced.get("task_id"),
                              _state(obs, produced.get("task_id"))))
            continue
        want = obs.corpus_sha[line["payload_file"]]
        for r in reports:
            if r.get("payload_sha256") != want:
                reasons.append("%s: payload sha256 %s, the file's is %s (the bytes changed)"
                               % (line["case"], r.get("payload_sha256"), want))
            equal = r.get("payload_value_equal")
            if equal is None:
                if r.get("lossless_value_equal") is not True:
                    reasons.append("%s: payload_value_equal null and lossless_value_equal %r"
                                   % (line["case"], r.get("lossless_value_equal")))
            elif equal is not True:
                reasons.append("%s: payload_value_equal %r" % (line["case"], equal))
    return reasons


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def check_envelope(obs):
    reasons = []
    lo, hi = obs.produce_start - CLOCK_SLACK_S, obs.produce_end + CLOCK_SLACK_S
    for line in _lines(obs, "payload"):
        case = line["case"]
        produced = obs.produced_for(case)
        if len(produced) != 1:
            reasons.append("%s: no single producer line" % case)
            continue
        task_id = produced[0].get("task_id")
        if produced[0].get("id_made_by", "sdk") != "sdk":
            reasons.append("%s: the SDK did not make the task id, the %s made %s: %s"
                           % (case, produced[0].get("id_made_by"), task_id,
                              produced[0].get("note", "")))
        if line["task_id"] is not None:
            if task_id != line["task_id"]:
                reasons.append("%s: producer reported task_id %r, the given id was %r"
                               % (case, task_id, line["task_id"]))
        elif not isinstance(task_id, str) or not UUID7.match(task_id):
            reasons.append("%s: SDK-made task_id %r is not a lowercase canonical UUIDv7"
                           % (case, task_id))
        elif not lo * 1000 <= int(task_id.replace("-", "")[:12], 16) <= hi * 1000:
            reasons.append("%s: UUIDv7 %s carries a timestamp outside the produce call"
                           % (case, task_id))
        reports = obs.reports("conf_echo", task_id)
        if not reports:
            reasons.append("%s: no conf_echo report for task %s" % (case, task_id))
            continue
        for r in reports:
            expected = {"case": case, "namespace": obs.ns, "task_type": "conf_echo",
                        "max_retry": line["max_retry"], "delay_seconds": line["delay_seconds"],
                        "execution_timeout": line["execution_timeout"]}
            for field, want in expected.items():
                got = r.get(field, "<missing>")
                same = got == want and (type(got) is type(want) or want is None)
                if not same:
                    reasons.append("%s: %s arrived as %r, sent %r" % (case, field, got, want))
            created = r.get("created_at")
            if not _is_int(created):
                reasons.append("%s: created_at %r is not an integer" % (case, created))
            elif not lo <= created <= hi:
                reasons.append("%s: created_at %d is not Unix seconds of the produce time "
                               "(%d..%d)" % (case, created, int(lo), int(hi)))
            extra = r.get("extra")
            if not isinstance(extra, dict):
                reasons.append("%s: extra %r is not an object" % (case, extra))
                continue
            got_extra = {k: v for k, v in extra.items() if k not in EXTRA_IGNORED}
            if got_extra != line["extra"]:
                reasons.append("%s: unknown fields arrived as %s, sent %s"
                               % (case, _short(got_extra), _short(line["extra"])))
    return reasons


def _short(value, limit=300):
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _state(obs, task_id):
    if obs.done.get(task_id) is not None:
        return "done"
    record = obs.records.get(task_id)
    return record.split("|", 1)[0] if record else "unknown"


def _show(obs, task_id, reasons, case):
    doc = obs.task_show.get(task_id)
    if not isinstance(doc, dict):
        reasons.append("%s: baton task show %s failed: %s" % (case, task_id, doc))
        return None
    return doc


def _dead_entry(obs, task_type, task_id, reasons, case):
    dlq = obs.dlq.get(task_type)
    if not isinstance(dlq, dict):
        reasons.append("%s: baton dlq list failed: %s" % (case, dlq))
        return None
    for entry in dlq.get("dead", []):
        if entry.get("task_id") == task_id:
            return entry
    reasons.append("%s: task %s is not in the dead-letter queue (state %s)"
                   % (case, task_id, _state(obs, task_id)))
    return None


def check_failure(obs):
    reasons = []
    for line in _lines(obs, "failure"):
        case = line["case"]
        produced = _one_produced(obs, line, reasons)
        if produced is None:
            continue
        task_id = produced.get("task_id")
        runs = 1 + line["max_retry"]
        dead = _dead_entry(obs, "conf_fail", task_id, reasons, case)
        if dead is not None and dead.get("attempts") != runs:
            reasons.append("%s: dead after %r attempts, expected %d"
                           % (case, dead.get("attempts"), runs))
        attempts = [r.get("attempt") for r in obs.reports("conf_fail", task_id)]
        if attempts != list(range(1, runs + 1)):
            reasons.append("%s: the handler saw attempts %r, expected %r"
                           % (case, attempts, list(range(1, runs + 1))))
        doc = _show(obs, task_id, reasons, case)
        if doc is None:
            continue
        if doc.get("state") != "dead":
            reasons.append("%s: task show state %r, expected 'dead'" % (case, doc.get("state")))
        errors = doc.get("errors") or []
        if [e.get("attempt") for e in errors] != list(range(1, runs + 1)):
            reasons.append("%s: task show lists errors of attempts %r, expected %r"
                           % (case, [e.get("attempt") for e in errors],
                              list(range(1, runs + 1))))
        for e in errors:
            n = e.get("attempt")
            if e.get("kind") != "error":
                reasons.append("%s: attempt %s failed with kind %r, expected 'error'"
                               % (case, n, e.get("kind")))
            if not str(e.get("error") or "").strip():
                reasons.append("%s: attempt %s has an empty error message" % (case, n))
            stack = str(e.get("stack") or "")
            frame = STACK_FRAME.get(obs.consumer)
            if not stack.strip():
                reasons.append("%s: attempt %s has no stack" % (case, n))
            elif frame is not None and not frame.search(stack):
                reasons.append("%s: attempt %s: the stack has no %s frame (/%s/): %s"
                               % (case, n, obs.consumer, frame.pattern, _short(stack, 200)))
        at = [e.get("at_ms") for e in errors]
        for n in range(1, len(at)):
            if not (_is_int(at[n]) and _is_int(at[n - 1])):
                reasons.append("%s: error times %r are not integers" % (case, at))
                break
            least = MIN_BACKOFF_BASE_MS * 2 ** (n - 1)
            if at[n] - at[n - 1] < least:
                reasons.append("%s: attempt %d failed %d ms after attempt %d: no backoff "
                               "(at least %d ms)" % (case, n + 1, at[n] - at[n - 1], n, least))
    return reasons


def check_timeout(obs):
    reasons = []
    for line in _lines(obs, "timeout"):
        case = line["case"]
        produced = _one_produced(obs, line, reasons)
        if produced is None:
            continue
        task_id = produced.get("task_id")
        runs = obs.reports("conf_sleep", task_id)
        if [r.get("attempt") for r in runs] != [1]:
            reasons.append("%s: the handler saw attempts %r, expected [1]"
                           % (case, [r.get("attempt") for r in runs]))
        doc = _show(obs, task_id, reasons, case)
        if doc is None:
            continue
        errors = doc.get("errors") or []
        if doc.get("state") != "dead" or len(errors) != 1:
            reasons.append("%s: state %r with %d recorded failures, expected dead after 1 "
                           "(max_retry 0)" % (case, doc.get("state"), len(errors)))
        if not errors:
            continue
        if errors[0].get("kind") != "timeout":
            reasons.append("%s: the attempt failed with kind %r (%s), expected 'timeout'"
                           % (case, errors[0].get("kind"), _short(errors[0].get("error"), 200)))
        if runs and _is_int(runs[0].get("started_ms")) and _is_int(errors[0].get("at_ms")):
            took = errors[0]["at_ms"] - runs[0]["started_ms"]
            if took >= case_defs.SLEEP_MS:
                reasons.append("%s: the failure was recorded %d ms after the handler started: "
                               "the %d ms sleep was not stopped at the %d s execution_timeout"
                               % (case, took, case_defs.SLEEP_MS, case_defs.SLEEP_TIMEOUT_S))
        else:
            reasons.append("%s: no started_ms / at_ms to time the attempt" % case)
    return reasons


def check_delay(obs):
    reasons = []
    for line in _lines(obs, "delay"):
        case = line["case"]
        produced = _one_produced(obs, line, reasons)
        if produced is None:
            continue
        task_id = produced.get("task_id")
        runs = obs.reports("conf_delay", task_id)
        if len(runs) != 1:
            reasons.append("%s: the handler ran %d times, expected once" % (case, len(runs)))
            continue
        started = runs[0].get("started_ms")
        doc = _show(obs, task_id, reasons, case)
        if doc is None:
            continue
        enqueued = [e.get("at_ms") for e in doc.get("events") or []
                    if e.get("from") == "new" and e.get("to") == "scheduled"]
        if len(enqueued) != 1 or not _is_int(enqueued[0]) or not _is_int(started):
            reasons.append("%s: cannot time it: new->scheduled events %r, started_ms %r"
                           % (case, enqueued, started))
            continue
        due = enqueued[0] + 1000 * line["delay_seconds"]
        if started < due:
            reasons.append("%s: the handler started %d ms before its due time"
                           % (case, due - started))
    return reasons


def check_idempotency(obs):
    reasons = []
    for_case = [line for line in obs.lines if line["case"] == "idempotency"]
    if not for_case:
        return ["idempotency: no case line"]
    task_id = for_case[0]["task_id"]
    produced = obs.produced_for("idempotency")
    statuses = [p.get("status") for p in produced]
    if statuses != ["queued", "duplicate"]:
        reasons.append("idempotency: enqueue statuses %r, expected ['queued', 'duplicate']%s"
                       % (statuses, _producer_hint(obs)))
    if any(p.get("task_id") != task_id for p in produced):
        reasons.append("idempotency: the producer reported ids %r, the given id was %r"
                       % ([p.get("task_id") for p in produced], task_id))
    runs = obs.reports("conf_once", task_id)
    if len(runs) != 1:
        reasons.append("idempotency: the handler ran %d times, expected once" % len(runs))
    if obs.done.get(task_id) is None:
        reasons.append("idempotency: task %s is not done (state %s)"
                       % (task_id, _state(obs, task_id)))
    return reasons


CHECKS = {
    "payload": check_payload,
    "envelope": check_envelope,
    "failure": check_failure,
    "timeout": check_timeout,
    "delay": check_delay,
    "idempotency": check_idempotency,
}
assert tuple(CHECKS) == case_defs.CASES


def evaluate(obs):
    """case -> list of failure reasons (empty: passed)."""
    results = {}
    for name, check in CHECKS.items():
        try:
            results[name] = check(obs)
        except Exception as e:  # a malformed report must fail the case, not stop the run
            results[name] = ["%s: checker error on this cell's data: %r" % (name, e)]
    if obs.report_errors:
        results["payload"] = results["payload"] + [
            "report lines that are not JSON objects: %s" % _short(obs.report_errors)]
    return results


def file_sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()
