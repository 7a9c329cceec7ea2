"""Soak run: Baton under a steady load for a long time (bench/soak/run.sh starts it).

Starts a private redis-server (free loopback port, no persistence), loads the functions library,
configures the namespace's retention short enough to reach a steady state within the warm-up
(done_retention_s, events_maxlen: docs/keyspace.md), starts batond, C++ workers (soak_worker)
and optionally a Python SDK worker, then holds --rate tasks/s for --seconds (a seeded mix of
immediate, delayed and retried tasks, producer.py), sampling every --window seconds: Redis
used_memory and key sizes, the RSS of batond, each worker and redis-server, the achieved rate and
the latencies of the window (tracker.py). Then it stops producing, waits for the queue to drain
and accounts for every task.

Exit status 1 (the reasons are printed and in the report) when:
  - the rate was not held: a window's enqueue rate under --rate-floor x rate, or a work-stream
    backlog over --backlog-s seconds of traffic after warm-up;
  - a task is lost or stuck (not done after the drain), died, ran more often than expected, or
    the events reader lost its place;
  - a process exited early or not cleanly;
  - memory grew after warm-up beyond the bounds (stats.leak_verdict): batond and every worker
    (RSS) by --rss-bound-kib, Redis used_memory by --redis-bound-kib, each with --slope-bound
    KiB/min. Runs shorter than 300 s (CI) get generous defaults (16 MiB RSS, 32 MiB Redis, no
    slope bound), since a slow shared VM makes short series noisy; longer runs get 8 MiB / 16 MiB
    and 100 KiB/min.
Writes the windows and the summary to --out (JSON).
"""

import argparse
import json
import os
import sys
import shutil
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "protocol"))
sys.path.insert(0, os.path.dirname(HERE))  # bench/: collector_api

import baton_protocol as bp  # noqa: E402
from redis_harness import RedisServer  # noqa: E402

import report  # noqa: E402
import stats  # noqa: E402
from processes import Process, rss_kib  # noqa: E402
from producer import Mix, Producer  # noqa: E402
from tracker import LATENCY_KINDS, Tracker  # noqa: E402

NS = "soak"
TYPES = {"cpp": "soak_cpp", "py": "soak_py"}


def parse_args():
    env = os.environ
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--seconds", type=float, default=float(env.get("SOAK_SECONDS", 60)))
    ap.add_argument("--rate", type=float, default=float(env.get("SOAK_RATE", 500)))
    ap.add_argument("--window", type=float, default=5.0, help="seconds per sample")
    ap.add_argument("--warmup", type=float, help="seconds before memory is judged "
                    "(default: 25 under 300 s runs, else 180)")
    ap.add_argument("--delayed", type=float, default=0.2, help="share of delayed tasks")
    ap.add_argument("--retried", type=float, default=0.1, help="share of tasks failing once")
    ap.add_argument("--max-delay-s", type=int, default=3)
    ap.add_argument("--work-ms", type=int, default=1, help="handler time per attempt")
    ap.add_argument("--cpp-workers", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=16, help="per worker")
    ap.add_argument("--python", default="", help="the SDK venv's python: adds a Python worker")
    ap.add_argument("--py-share", type=float, default=0.2, help="share of tasks for it")
    ap.add_argument("--retry-base-ms", type=int, default=100)
    ap.add_argument("--done-retention-s", type=int, help="default: 15 under 300 s runs, else 60")
    ap.add_argument("--events-maxlen", type=int, default=10000)
    ap.add_argument("--rate-floor", type=float, help="default: 0.85 under 300 s runs, else 0.95")
    ap.add_argument("--backlog-s", type=float, help="default: 5 under 300 s runs, else 2")
    ap.add_argument("--rss-bound-kib", type=int)
    ap.add_argument("--redis-bound-kib", type=int)
    ap.add_argument("--slope-bound", type=float, help="KiB/min, default none under 300 s")
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "test-output", "soak",
                                                  "report.json"))
    o = ap.parse_args()
    ci = o.seconds < 300
    defaults = {"warmup": 25 if ci else 180, "done_retention_s": 15 if ci else 60,
                "rate_floor": 0.85 if ci else 0.95, "backlog_s": 5 if ci else 2,
                "rss_bound_kib": 16384 if ci else 8192, "redis_bound_kib": 32768 if ci else 16384,
                "slope_bound": None if ci else 100.0}
    for name, value in defaults.items():
        if getattr(o, name) is None:
            setattr(o, name, value)
    o.mode = "ci" if ci else "long"
    if not o.python:
        o.py_share = 0.0
    return o


def redis_sample(r, ns_keys, types):
    info = r.info("memory")
    pipe = r.pipeline(transaction=False)
    for t in types:
        pipe.xlen(ns_keys.stream(t))
    for t in types:
        pipe.zcard(ns_keys.scheduled(t))
    pipe.hlen(ns_keys.tasks())
    pipe.zcard(ns_keys.done())
    pipe.xlen(ns_keys.events())
    pipe.hlen(ns_keys.bodies())
    pipe.hlen(ns_keys.errors())
    pipe.dbsize()
    v = pipe.execute()
    n = len(types)
    return {"used_memory_kib": info["used_memory"] // 1024,
            "used_memory_rss_kib": info["used_memory_rss"] // 1024,
            "streams": sum(v[:n]), "scheduled": sum(v[n:2 * n]), "tasks": v[2 * n],
            "done": v[2 * n + 1], "events": v[2 * n + 2], "bodies": v[2 * n + 3],
            "errors": v[2 * n + 4], "keys": v[2 * n + 5]}


def start_processes(o, url, run_dir, procs):
    procs.append(Process("batond", [os.path.join(o.build_dir, "daemon", "batond"), "--redis-url", url,
                                "--instance", "soak"], run_dir, ready_text="batond running"))
    worker = os.path.join(o.build_dir, "bench", "soak_worker")
    for i in range(o.cpp_workers):
        procs.append(Process(f"cpp-{i + 1}", [worker, url, NS, TYPES["cpp"], str(o.concurrency),
                                              "30000", str(o.retry_base_ms)],
                             run_dir, ready_text="started"))
    if o.python:
        procs.append(Process("py-1", [o.python, os.path.join(HERE, "soak_worker.py"), url, NS,
                                      TYPES["py"], str(o.concurrency), "30000",
                                      str(o.retry_base_ms)], run_dir, ready_text="started"))


def run(o, server, run_dir, procs):
    url = f"redis://127.0.0.1:{server.port}"
    r = server.client()
    bp.load_library(r)
    baton = bp.Baton(r, NS)
    baton.configure(done_retention_s=o.done_retention_s, events_maxlen=o.events_maxlen)
    start_processes(o, url, run_dir, procs)
    types = [TYPES["cpp"]] + ([TYPES["py"]] if o.python else [])
    tracker = Tracker(server.client(), baton.keys.events())
    mix = Mix(o.delayed, o.retried, o.py_share, o.max_delay_s, o.work_ms)
    producer = Producer(server.client(), NS, o.rate, o.seconds, mix,
                        {"cpp": TYPES["cpp"], "py": TYPES["py"] if o.python else None}, tracker)
    failures = []
    windows = []
    series = {p.name: [] for p in procs}
    series["redis used_memory"] = []
    series["redis-server"] = []
    tracker.start()
    t0 = time.monotonic()
    producer.start()
    report.print_header(o, procs)
    last_t, last_produced, last_done = 0.0, 0, 0
    next_sample = o.window
    while True:
        time.sleep(max(0.0, t0 + next_sample - time.monotonic()))
        t = time.monotonic() - t0
        produced, done = producer.produced, tracker.done_count
        rs = redis_sample(r, baton.keys, types)
        w = {"t": round(t, 1), "produced_per_s": round((produced - last_produced) / (t - last_t)),
             "done_per_s": round((done - last_done) / (t - last_t)), **rs,
             "rss_kib": {p.name: rss_kib(p.pid) for p in procs},
             "latency_ms": {k: stats.percentiles(v)
                            for k, v in tracker.take_window().samples.items()}}
        w["rss_kib"]["redis-server"] = rss_kib(server.process.pid)
        windows.append(w)
        for name, kib in w["rss_kib"].items():
            series[name].append((t, kib))
        series["redis used_memory"].append((t, rs["used_memory_kib"]))
        report.print_window(w, procs)
        if producer.is_alive() and w["produced_per_s"] < o.rate_floor * o.rate:
            failures.append(f"rate not held at t={t:.0f}s: {w['produced_per_s']}/s "
                            f"< {o.rate_floor} x {o.rate:g}")
        if t >= o.warmup and rs["streams"] > max(1000, o.backlog_s * o.rate):
            failures.append(f"backlog at t={t:.0f}s: {rs['streams']} stream entries "
                            f"> {o.backlog_s} s of traffic")
        for p in procs:
            if not p.alive():
                failures.append(f"{p.name} exited early ({p.popen.returncode}): {p.log_tail(300)}")
        if t >= o.seconds - o.window / 2 or any(not p.alive() for p in procs) or tracker.error:
            break
        last_t, last_produced, last_done = t, produced, done
        next_sample += o.window
    producer.stop_event.set()
    producer.join()
    elapsed = time.monotonic() - t0
    drain_start = time.monotonic()
    while tracker.done_count < producer.produced and time.monotonic() - drain_start < \
            o.max_delay_s + 30 and not tracker.error:
        time.sleep(0.2)
    drain_s = time.monotonic() - drain_start
    time.sleep(0.5)
    tracker.stop_event.set()
    tracker.join()
    while tracker.read_once():  # whatever came after the last read
        pass
    for p in procs:
        code = p.stop()
        if code != 0:
            failures.append(f"{p.name} exited with {code} on SIGTERM: {p.log_tail(300)}")
    return summarize(o, r, baton, producer, tracker, windows, series, failures, elapsed, drain_s)


def account(r, baton, producer, tracker):
    """Every produced task: done (its done event was read), or else where Redis has it."""
    missing = [seq for seq in range(producer.produced) if not tracker.done[seq]]
    found = {"done_without_event": 0, "still_live": [], "lost": []}
    for i in range(0, len(missing), 1000):
        chunk = [f"s{seq}" for seq in missing[i:i + 1000]]
        scores = r.zmscore(baton.keys.done(), chunk)
        records = r.hmget(baton.keys.tasks(), chunk)
        for task_id, score, record in zip(chunk, scores, records):
            if score is not None:
                found["done_without_event"] += 1
            elif record is not None:
                found["still_live"].append(f"{task_id}={record.decode()}")
            else:
                found["lost"].append(task_id)
    return found


def summarize(o, r, baton, producer, tracker, windows, series, failures, elapsed, drain_s):
    found = account(r, baton, producer, tracker)
    if producer.error:
        failures.append(f"producer failed: {producer.error}")
    if tracker.error:
        failures.append(f"events reader failed: {tracker.error}")
    if producer.rejected:
        failures.append(f"{len(producer.rejected)} enqueues not accepted, e.g. "
                        f"{producer.rejected[:3]}")
    if found["lost"]:
        failures.append(f"{len(found['lost'])} tasks lost, e.g. {found['lost'][:5]}")
    if found["still_live"]:
        failures.append(f"{len(found['still_live'])} tasks not done after the drain, e.g. "
                        f"{found['still_live'][:5]}")
    if tracker.duplicates:
        failures.append(f"{len(tracker.duplicates)} extra runs, e.g. {tracker.duplicates[:5]}")
    if tracker.anomalies:
        failures.append(f"{len(tracker.anomalies)} unexpected transitions, e.g. "
                        f"{tracker.anomalies[:5]}")
    if tracker.gaps:
        failures.append(f"the events reader fell behind the events cap {tracker.gaps} times")
    memory = {}
    for name, points in series.items():
        g = stats.growth(points, o.warmup)
        memory[name] = g
        if name == "redis-server":
            continue  # the allocator keeps freed pages: reported, judged by used_memory
        bound = o.redis_bound_kib if name == "redis used_memory" else o.rss_bound_kib
        reason = stats.leak_verdict(g, bound, o.slope_bound)
        if reason:
            failures.append(f"memory of {name}: {reason}")
    rate = producer.produced / producer.duration if producer.duration else 0
    if rate < o.rate_floor * o.rate:
        failures.append(f"overall rate {rate:.0f}/s < {o.rate_floor} x {o.rate:g}")
    summary = {
        "mode": o.mode, "seconds": round(producer.duration, 1), "target_rate": o.rate,
        "achieved_rate": round(rate, 1), "produced": producer.produced,
        "done": tracker.done_count + found["done_without_event"],
        "done_without_event": found["done_without_event"], "retries": tracker.retries,
        "lost": len(found["lost"]), "not_done": len(found["still_live"]),
        "extra_runs": len(tracker.duplicates), "drain_s": round(drain_s, 1),
        "latency_ms": {k: stats.percentiles(tracker.overall.samples[k]) for k in LATENCY_KINDS},
        "memory": memory, "failures": failures, "ok": not failures,
        "settings": {k: v for k, v in vars(o).items() if k not in ("out",)},
    }
    return {"summary": summary, "windows": windows}


def main():
    o = parse_args()
    run_dir = os.path.join(os.path.dirname(o.out), "logs")  # kept for a failed run
    shutil.rmtree(run_dir, ignore_errors=True)
    os.makedirs(run_dir)
    server = RedisServer().start()
    procs = []
    try:
        result = run(o, server, run_dir, procs)
    finally:
        for p in procs:
            p.stop()
        server.stop()
    with open(o.out, "w") as f:
        json.dump(result, f, indent=1)
    report.print_summary(result["summary"], o.out)
    return 0 if result["summary"]["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
