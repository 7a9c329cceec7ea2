"""One cell of the matrix: producer P's tasks run by consumer C, in a namespace of their own.

Order: start C's consumer, run P's producer, wait until every produced task is final (done or
dead) as Redis says, stop the consumer gracefully, then collect what the CLI shows
(`baton --json task show`, `baton --json dlq list`) and evaluate the six checks.
"""

import json
import os
import subprocess
import time

from harness import cases as case_defs
from harness import checks
from harness.servers import stop_process

# The consumer runs at most this long (it is stopped as soon as the cell's tasks are final).
CONSUME_SECONDS = 240
PRODUCE_TIMEOUT_S = 120
# How long the produced tasks may take to become final. The slowest path is the CLI consumer's
# conf_fail: `baton work` retries with the default backoff (2 s, then 4 s, plus jitter).
SETTLE_TIMEOUT_S = 90
CONSUMER_STOP_TIMEOUT_S = 30
CLI_TIMEOUT_S = 60


class Context:
    """What every cell shares."""

    def __init__(self, redis_server, baton_bin, corpus_dir, task_payload_dir, work_dir, env):
        self.redis = redis_server
        self.baton_bin = baton_bin
        self.corpus_dir = corpus_dir
        self.task_payload_dir = task_payload_dir
        self.work_dir = work_dir
        self.env = env
        # (producer, consumer) -> namespace where the run chose one (the cluster run spreads
        # them over the primaries); any other cell gets namespace(producer, consumer).
        self.namespaces = {}
        self.corpus_sha = {path: checks.file_sha256(path)
                           for path in case_defs.corpus_files(corpus_dir).values()}


class CellResult:
    def __init__(self, producer, consumer, results, seconds, cell_dir, warnings=(), ns=""):
        self.producer = producer
        self.ns = ns
        self.warnings = list(warnings)  # defects that fail no case (e.g. an unclean exit)
        self.consumer = consumer
        self.results = results  # case -> list of failure reasons
        self.seconds = seconds
        self.dir = cell_dir

    def passed(self):
        return sum(1 for reasons in self.results.values() if not reasons)


def namespace(producer, consumer):
    return "conf-%s-to-%s" % (producer, consumer)


def _read_report(path, obs):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return
    for raw in data.splitlines():
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except ValueError:
            line = None
        if isinstance(line, dict):
            obs.report.append(line)
        else:
            obs.report_errors.append(raw[:200].decode(errors="replace"))


def _baton_json(ctx, args):
    """The JSON document a `baton --json ...` command prints, or an error string."""
    run = subprocess.run([ctx.baton_bin, "--redis", ctx.redis.url, "--json"] + args,
                         capture_output=True, timeout=CLI_TIMEOUT_S, env=ctx.env)
    try:
        doc = json.loads(run.stdout)
    except ValueError:
        doc = None
    if run.returncode != 0 or not isinstance(doc, dict):
        return "exit %d: %s" % (run.returncode, run.stderr.decode(errors="replace").strip())
    return doc


def _last_line(path):
    """The last non-empty, non-indented line of a log: where a driver that gave up says why
    (stack frames, indented in every language here, are skipped)."""
    try:
        with open(path, "rb") as f:
            lines = [line for line in f.read().decode(errors="replace").splitlines()
                     if line.strip()]
    except OSError:
        return "(no log)"
    unindented = [line for line in lines if not line[0].isspace()]
    return (unindented or lines or ["(empty log)"])[-1][:300]


def _final(client, ns, task_id):
    """True when the task is done/cancelled/... (ZSET done) or dead (record "dead|...")."""
    if client.zscore("baton:v2:{%s}:done" % ns, task_id) is not None:
        return True
    record = client.hget("baton:v2:{%s}:tasks" % ns, task_id)
    return record is not None and record.startswith("dead|")


def _wait_settled(ctx, obs, consumer):
    ids = {p.get("task_id") for p in obs.produced
           if p.get("status") in ("queued", "scheduled") and isinstance(p.get("task_id"), str)}
    client = ctx.redis.client()
    try:
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        while ids and time.monotonic() < deadline and consumer.poll() is None:
            ids = {i for i in ids if not _final(client, obs.ns, i)}
            time.sleep(0.2)
    finally:
        client.close()


def _collect(ctx, obs):
    ids = {p.get("task_id") for p in obs.produced if isinstance(p.get("task_id"), str)}
    ids |= {line["task_id"] for line in obs.lines if line["task_id"]}
    client = ctx.redis.client()  # a cluster client in the cluster run: routed by slot
    try:
        for task_id in ids:
            obs.done[task_id] = client.zscore("baton:v2:{%s}:done" % obs.ns, task_id)
            obs.records[task_id] = client.hget("baton:v2:{%s}:tasks" % obs.ns, task_id)
    finally:
        client.close()
    shown = {p.get("task_id") for p in obs.produced
             if isinstance(p.get("task_id"), str) and
             not str(p.get("case", "")).startswith("payload/")}
    for task_id in shown:
        obs.task_show[task_id] = _baton_json(ctx, ["task", "show", task_id, "--ns", obs.ns])
    for task_type in ("conf_fail", "conf_sleep"):
        obs.dlq[task_type] = _baton_json(ctx, ["dlq", "list", "--ns", obs.ns, "--type", task_type])


def run(ctx, producer, consumer):
    """Runs the cell of `producer` x `consumer` (Driver objects); returns a CellResult."""
    started = time.monotonic()
    cell_dir = os.path.join(ctx.work_dir, "cells", "%s-to-%s" % (producer.name, consumer.name))
    os.makedirs(cell_dir, exist_ok=True)
    obs = checks.Observation()
    obs.ns = ctx.namespaces.get((producer.name, consumer.name)) or \
        namespace(producer.name, consumer.name)
    obs.consumer = consumer.name
    obs.lines = case_defs.build(ctx.corpus_dir, ctx.task_payload_dir)
    obs.corpus_sha = ctx.corpus_sha
    cases_path = os.path.join(cell_dir, "cases.jsonl")
    with open(cases_path, "w", encoding="utf-8") as f:
        for line in obs.lines:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    report_path = os.path.join(cell_dir, "report.jsonl")

    with open(os.path.join(cell_dir, "consumer.log"), "wb") as log:
        consumer_proc = subprocess.Popen(
            [consumer.driver, "consume", "--redis", ctx.redis.url, "--ns", obs.ns,
             "--report", report_path, "--corpus", ctx.corpus_dir,
             "--seconds", str(CONSUME_SECONDS)],
            stdout=log, stderr=subprocess.STDOUT, env=ctx.env, start_new_session=True)
    try:
        obs.produce_start = time.time()
        with open(os.path.join(cell_dir, "producer.log"), "wb") as log:
            try:
                run_p = subprocess.run(
                    [producer.driver, "produce", "--redis", ctx.redis.url, "--ns", obs.ns,
                     "--cases", cases_path],
                    stdout=subprocess.PIPE, stderr=log, env=ctx.env, timeout=PRODUCE_TIMEOUT_S)
                obs.producer_rc, out = run_p.returncode, run_p.stdout
            except subprocess.TimeoutExpired as e:
                obs.producer_rc, out = "timeout", e.stdout or b""
        obs.produce_end = time.time()
        with open(os.path.join(cell_dir, "producer.out"), "wb") as f:
            f.write(out)
        with open(os.path.join(cell_dir, "producer.log"), "rb") as f:
            obs.producer_error = f.read().decode(errors="replace")
        for raw in out.splitlines():
            try:
                line = json.loads(raw)
            except ValueError:
                line = None
            if isinstance(line, dict):
                obs.produced.append(line)
        _wait_settled(ctx, obs, consumer_proc)
    finally:
        exited_early = consumer_proc.poll()
        consumer_rc = stop_process(consumer_proc, CONSUMER_STOP_TIMEOUT_S)
    _read_report(report_path, obs)
    _collect(ctx, obs)
    results = checks.evaluate(obs)
    warnings = []
    if exited_early is not None:
        warnings.append("the consumer exited by itself with status %s before the tasks were "
                        "final: %s" % (exited_early, _last_line(
                            os.path.join(cell_dir, "consumer.log"))))
    elif consumer_rc != 0:
        warnings.append("the consumer exited with status %s after SIGTERM (log: %s)" % (
            consumer_rc, os.path.join(cell_dir, "consumer.log")))
    with open(os.path.join(cell_dir, "results.json"), "w", encoding="utf-8") as f:
        json.dump({"results": results, "produced": obs.produced, "task_show": obs.task_show},
                  f, indent=1, ensure_ascii=False)
    return CellResult(producer.name, consumer.name, results, time.monotonic() - started, cell_dir,
                      warnings, obs.ns)
