#!/usr/bin/python3
"""The chaos run (tests/chaos/README.md): a real Baton deployment on loopback (queue Redis with
AOF, two batond, the collector, C++ and Python workers) under a seeded schedule of kill -9s,
Redis restarts, network cuts and clock skew, then an exact account of every task produced.

Started by tests/chaos/run.sh, which builds the C++ worker and the Python SDK venv first.
Environment: CHAOS_SECONDS (75), CHAOS_SEED (random, printed), CHAOS_RATE (tasks/s, 20),
CHAOS_DRAIN_S (120), CHAOS_SKEW_S (90), CHAOS_OUT (build/test-output/chaos),
CHAOS_CPP_WORKER, CHAOS_SDK_PYTHON, BATON_BUILD_DIR (build/release).
Exit status: 0 when every invariant holds, 1 when one fails (details printed and in report.json),
2 when the run could not be set up."""
import os
import pathlib
import random
import shutil
import statistics
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests" / "protocol"))
sys.path.insert(0, str(HERE))

import redis  # noqa: E402

import accounting  # noqa: E402
import baton_protocol as bp  # noqa: E402
import report as report_mod  # noqa: E402
from cluster import ManagedProcess, RedisServer, Supervisor, now_ms  # noqa: E402
from producer import Producer  # noqa: E402
from schedule import make_schedule  # noqa: E402
from tcp_proxy import TcpProxy  # noqa: E402

NS = "chaos"
LEASE_MS = 3000
CONCURRENCY = 4


def env_int(name, default):
    return int(os.environ.get(name, default))


def log(msg):
    print(f"[chaos {time.strftime('%H:%M:%S')}] {msg}", flush=True)


class Run:
    def __init__(self):
        self.seconds = env_int("CHAOS_SECONDS", 75)
        self.seed = env_int("CHAOS_SEED", random.SystemRandom().randrange(1, 2**31))
        self.rate = env_int("CHAOS_RATE", 20)
        self.drain_limit = env_int("CHAOS_DRAIN_S", 120)
        skew = env_int("CHAOS_SKEW_S", 90)
        self.skew_worker, self.skew_batond = f"+{skew}s", f"-{skew}s"
        self.out = pathlib.Path(os.environ.get("CHAOS_OUT", ROOT / "build/test-output/chaos"))
        self.bin = pathlib.Path(os.environ.get("BATON_BUILD_DIR", ROOT / "build/release"))
        self.cpp_worker = os.environ["CHAOS_CPP_WORKER"]
        self.sdk_python = os.environ["CHAOS_SDK_PYTHON"]
        self.logs = self.out / "logs"
        shutil.rmtree(self.logs, ignore_errors=True)
        self.logs.mkdir(parents=True)
        self.work = tempfile.mkdtemp(prefix="baton-chaos-")
        self.faults = {"worker_kills": [], "batond_kills": [], "cuts": [], "redis_outages": []}
        self.failures = []

    # --- set-up --------------------------------------------------------------------------------

    def start(self):
        logs = str(self.logs)
        self.redis = RedisServer("redis-queue", self.work, logs, aof=True)
        self.ledger = RedisServer("redis-ledger", self.work, logs, aof=False)
        self.redis.start()
        self.ledger.start()
        init = ManagedProcess("baton-init", [str(self.bin / "cli/baton"), "--redis",
                                             self.redis.url, "init"], logs)
        init.start()
        if init.proc.wait(30) != 0:
            raise RuntimeError(f"baton init failed, see {init.log_path}")
        r = self.redis.client()
        baton = bp.Baton(r, NS)
        baton.configure(events_maxlen=10_000_000)  # keep every event for the accounting
        baton.register_namespace()

        self.collector_db = os.path.join(self.work, "stats.db")
        self.collector = ManagedProcess(
            "collector", [str(self.bin / "collector/baton-collector"), "--redis", self.redis.url,
                          "--store", f"sqlite://{self.collector_db}", "--listen", "127.0.0.1:0",
                          "--name", "chaos-collector", "--discovery-interval-ms", "500"], logs)
        self.batonds = {}
        for label, skew in (("batond-1", None), ("batond-2", self.skew_batond)):
            self.batonds[label] = ManagedProcess(
                label, [str(self.bin / "daemon/batond"), "--redis-url", self.redis.url,
                        "--instance", label, "--retry-base-ms", "200", "--retry-max-ms", "2000",
                        "--discovery-interval-ms", "1000"], logs, skew=skew)
        # Workers: label -> (language, proxied, skew). The proxied ones reach Redis through a
        # TcpProxy the chaos cuts; cpp-b runs with its clock ahead.
        layout = {"cpp-a": ("cpp", False, None), "cpp-b": ("cpp", False, self.skew_worker),
                  "cpp-c": ("cpp", True, None), "py-a": ("py", False, None),
                  "py-b": ("py", True, None)}
        self.proxies, self.workers = {}, {}
        for label, (lang, proxied, skew) in layout.items():
            url = self.redis.url
            if proxied:
                self.proxies[label] = TcpProxy(self.redis.port, label)
                url = f"redis://127.0.0.1:{self.proxies[label].port}"
            prog = [self.cpp_worker] if lang == "cpp" else [self.sdk_python,
                                                             str(HERE / "py_worker.py")]
            self.workers[label] = ManagedProcess(
                label, prog + [url, self.ledger.url, NS, lang, str(CONCURRENCY), str(LEASE_MS),
                               label], logs, skew=skew)
        for p in [self.collector, *self.batonds.values(), *self.workers.values()]:
            p.start()
        self.supervisor = Supervisor([self.collector, *self.batonds.values(),
                                      *self.workers.values()])
        self.supervisor.start()
        time.sleep(2)  # let the workers join their groups

    # --- faults --------------------------------------------------------------------------------

    def fault_start(self, f):
        if f.kind == "kill_worker":
            pid, at = self.workers[f.target].kill9()
            self.faults["worker_kills"].append({"label": f.target, "pid": pid, "ms": at})
        elif f.kind == "kill_batond":
            pid, at = self.batonds[f.target].kill9()
            self.faults["batond_kills"].append({"label": f.target, "pid": pid, "ms": at})
        elif f.kind == "cut_network":
            self.proxies[f.target].cut(f.mode)
            self.faults["cuts"].append({"label": f.target, "mode": f.mode, "start": now_ms(),
                                        "end": None})
        else:
            acked = self.producer.acked  # a counter: the producer thread is adding tasks
            pid, at = self.redis.process.kill9()
            self.faults["redis_outages"].append({"start": at, "end": None, "pid": pid,
                                                 "acked_before": acked})

    def fault_end(self, f):
        if f.kind == "kill_worker":
            self.workers[f.target].start()
        elif f.kind == "kill_batond":
            self.batonds[f.target].start()
        elif f.kind == "cut_network":
            self.proxies[f.target].heal()
            for c in self.faults["cuts"]:
                if c["label"] == f.target and c["end"] is None:
                    c["end"] = now_ms()
        else:
            self.redis.start(timeout=60)  # same port, same dir: replays the AOF
            outage = self.faults["redis_outages"][-1]
            outage["end"] = now_ms()
            libs = self.redis.client().execute_command("FUNCTION", "LIST")
            outage["functions_after_restart"] = len(libs)
            if not libs:
                self.failures.append(f"functions library gone after the redis restart at "
                                     f"{outage['start']} (AOF should keep it)")

    def run_chaos(self, faults):
        actions = []  # (offset s, order, callable)
        for f in faults:
            actions.append((f.at_s, 1, lambda f=f: self.fault_start(f)))
            actions.append((f.at_s + f.down_s, 0, lambda f=f: self.fault_end(f)))
        actions.sort(key=lambda a: (a[0], a[1]))
        t0 = time.monotonic()
        for at, _, action in actions:
            wait = t0 + at - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            action()
        wait = t0 + self.seconds - time.monotonic()
        if wait > 0:
            time.sleep(wait)

    # --- the end -------------------------------------------------------------------------------

    def drain(self, r):
        """Waits until no acknowledged task is live (queued, scheduled, retrying) any more."""
        keys = bp.Keys(NS)
        start = time.monotonic()
        while time.monotonic() - start < self.drain_limit:
            try:
                live = [bp._s(v).split("|", 1)[0] for v in r.hvals(keys.tasks())]
            except redis.exceptions.RedisError:
                live = ["?"]
            if all(s == "dead" for s in live) and self.producer.done.is_set():
                return round(time.monotonic() - start, 2)
            time.sleep(0.25)
        return None

    def wait_collector(self, states):
        """The collector may lag: poll its store until it has every final task or stops moving."""
        best, stale_since = None, time.monotonic()
        while time.monotonic() - stale_since < 10:
            try:
                cov = accounting.collector_coverage(self.collector_db, NS, states)
            except Exception as e:  # the store may not exist yet: that is a finding too
                cov = {"error": str(e), "coverage": 0.0}
            if best is None or cov.get("coverage", 0) > best.get("coverage", 0):
                best, stale_since = cov, time.monotonic()
            if cov.get("coverage") == 1.0:
                break
            time.sleep(1)
        return best

    def account(self, drain_s):
        r = self.redis.client()
        produced = self.producer.tasks
        acked = {i: t for i, t in produced.items() if t["acked_ms"]}
        states = accounting.final_states(r, NS, produced)
        counts = {"done": 0, "dead": 0, "queued": 0, "missing": 0, "inconsistent": 0}
        dead_by_kind = {}
        for task_id, (state, detail) in states.items():
            if task_id not in acked:
                continue  # never acknowledged: may or may not exist, nothing to account
            counts[state] += 1
            kind = produced[task_id]["kind"]
            if state == "missing":
                self.failures.append(f"{task_id} ({kind}) acknowledged at "
                                     f"{produced[task_id]['acked_ms']} is nowhere in Redis: LOST")
            elif state == "inconsistent":
                self.failures.append(f"{task_id} ({kind}) inconsistent: {detail}")
            elif state == "dead":
                dead_by_kind[detail["kind"]] = dead_by_kind.get(detail["kind"], 0) + 1
                if kind == "dead" and detail["kind"] not in ("error", "lease_expired"):
                    self.failures.append(f"{task_id} (always fails) dead as {detail}")
                elif kind == "fatal" and detail["kind"] not in ("non_retryable",
                                                                "lease_expired"):
                    self.failures.append(f"{task_id} (non-retryable) dead as {detail}")
                elif kind not in ("dead", "fatal") and "lease_expired" not in detail["kinds"]:
                    self.failures.append(f"{task_id} ({kind}, should succeed) dead without a "
                                         f"lost lease: {detail}")
            elif state == "done" and kind in ("dead", "fatal"):
                self.failures.append(f"{task_id} ({kind}, never succeeds) is done")
        unexpected_producer_errors = {i: t["error"] for i, t in produced.items() if "error" in t}
        for task_id, err in unexpected_producer_errors.items():
            self.failures.append(f"producer: enqueue {task_id} answered {err}")
        unknown = accounting.unknown_ids(r, NS, produced)
        for task_id in unknown[:20]:
            self.failures.append(f"{task_id} is in Redis but was never produced (unknown)")

        # Executions: the ledger against the final states and the faults.
        ledger = accounting.read_ledger(self.ledger.client())
        reclaims = accounting.read_reclaims(r, NS)
        executions = sum(len(v) for v in ledger.values())
        interrupted = sum(1 for v in ledger.values() for run in v if run["end"] is None)
        planned = sum(1 for v in ledger.values() for run in v[:-1]
                      if run["outcome"] in ("error", "fatal"))
        by_cause, duplicates = {}, 0
        for task_id, runs in ledger.items():
            if task_id not in produced:
                self.failures.append(f"ledger: {task_id} executed but never produced")
                continue
            causes, problems = accounting.explain_reruns(task_id, runs, reclaims, self.faults)
            duplicates += len(causes)
            for c in causes:
                by_cause[c] = by_cause.get(c, 0) + 1
            self.failures += problems
            state = states[task_id][0]
            if state == "done" and not any(run["outcome"] == "ok" for run in runs):
                self.failures.append(f"{task_id} is done but no execution succeeded: {runs}")
        for task_id, (state, _) in states.items():
            if state == "done" and task_id not in ledger:
                self.failures.append(f"{task_id} is done but never executed")

        # Tasks acknowledged before each Redis kill -9 must all be there (appendfsync always).
        first_kill = min((o["start"] for o in self.faults["redis_outages"]), default=None)
        before = [i for i, t in acked.items()
                  if first_kill is not None and t["acked_ms"] <= first_kill]
        lost_before = [i for i in before if states[i][0] == "missing"]

        lates = [c["late_ms"] for v in reclaims.values() for c in v]
        kill_to_reclaim = []
        for k in self.faults["worker_kills"]:
            for v in reclaims.values():
                for c in v:
                    if c["pid"] == k["pid"] and c["ms"] >= k["ms"]:
                        kill_to_reclaim.append(c["ms"] - k["ms"])
        late = accounting.late_reclaims(reclaims, self.faults, LEASE_MS, 1500)
        collector = self.wait_collector(states)
        if "error" in collector:
            self.failures.append(f"collector store unreadable: {collector['error']}")

        if drain_s is None:
            self.failures.append(f"not drained within {self.drain_limit} s: "
                                 f"{counts['queued']} task(s) still live")
        # Exits we did not cause (the supervisor restarted them). The C++ worker's Run() returns
        # kUnavailable when Redis is down at its start: a worker restarted during a Redis outage
        # exits, which the report marks rather than hides.
        exits = {}
        for p in [self.collector, *self.batonds.values(), *self.workers.values()]:
            for at, pid, status in p.unexpected_exits:
                during = any(o["start"] <= at <= (o["end"] or at) + 2000
                             for o in self.faults["redis_outages"])
                exits.setdefault(p.label, []).append(
                    {"ms": at, "pid": pid, "status": status,
                     "around_redis_outage": during})
        return {
            "seed": self.seed, "chaos_seconds": self.seconds, "rate_per_s": self.rate,
            "lease_ms": LEASE_MS,
            "skew": {"worker": f"cpp-b {self.skew_worker}",
                     "batond": f"batond-2 {self.skew_batond}"},
            "tasks": {"produced": len(produced), "acknowledged": len(acked),
                      "enqueue_retries": self.producer.retries, **counts, "unknown": len(unknown),
                      "dead_by_kind": dead_by_kind,
                      "by_kind": _count(t["kind"] for t in produced.values()),
                      "acked_before_redis_kill": len(before),
                      "lost_after_redis_kill": len(lost_before)},
            "duplicates": {"executions": executions, "interrupted": interrupted,
                           "planned_retries": planned, "duplicates": duplicates,
                           "by_cause": by_cause},
            "faults": {"worker_kills": len(self.faults["worker_kills"]),
                       "batond_kills": len(self.faults["batond_kills"]),
                       "redis_restarts": len(self.faults["redis_outages"]),
                       "network_cuts": len(self.faults["cuts"]),
                       "unexpected_exits": sum(len(v) for v in exits.values()),
                       "unexpected_exit_details": exits, "log": self.faults},
            "drain": {"seconds": drain_s, "limit_s": self.drain_limit},
            "reclaims": {"count": len(lates), "max_late_ms": max(lates, default=None),
                         "p50_late_ms": statistics.median(lates) if lates else None,
                         "kill_to_reclaim_max_ms": max(kill_to_reclaim, default=None),
                         "later_than_1500ms": len(late),
                         "later_than_1500ms_without_fault": sum(1 for c in late if not c["faults"]),
                         "latest": late[:10]},
            "collector": collector,
            "failures": self.failures,
        }

    def stop(self):
        self.supervisor.stopping.set()
        for p in [*self.workers.values(), *self.batonds.values(), self.collector]:
            p.stop()
        for proxy in self.proxies.values():
            proxy.stop()
        self.redis.process.stop()
        self.ledger.process.stop()


def _count(items):
    out = {}
    for i in items:
        out[i] = out.get(i, 0) + 1
    return out


def main():
    run = Run()
    log(f"seed {run.seed} (replay: CHAOS_SEED={run.seed} CHAOS_SECONDS={run.seconds} "
        f"tests/chaos/run.sh); work dir {run.work}; logs in {run.logs}")
    try:
        run.start()
    except Exception as e:
        log(f"set-up failed: {e}")
        return 2
    result = None
    try:
        faults = make_schedule(run.seed, run.seconds, list(run.workers), list(run.batonds),
                               list(run.proxies))
        log(f"schedule ({len(faults)} faults):")
        for f in faults:
            print("  " + f.describe(), flush=True)
        rng = random.Random(run.seed)
        run.producer = Producer(run.redis.url, NS, ["cpp", "py"], run.rate * run.seconds,
                                run.rate, rng)
        run.producer.start()
        log(f"chaos for {run.seconds} s, producing {run.rate} tasks/s")
        run.run_chaos(faults)
        log("chaos over, everything healed; draining")
        run.producer.done.wait(30)
        run.producer.stopping.set()
        run.producer.join(10)
        drain_s = run.drain(run.redis.client())
        log(f"drained in {drain_s} s" if drain_s is not None else "drain timed out")
        result = run.account(drain_s)
    finally:
        run.stop()
        if result is not None:
            report_mod.write(result, str(run.out / "report.json"))
    if result is None:
        return 2
    print(report_mod.render(result), flush=True)
    log(f"report: {run.out / 'report.json'}")
    if not result["failures"]:
        shutil.rmtree(run.work, ignore_errors=True)
    else:
        log(f"kept the work dir (AOF, collector store) for inspection: {run.work}")
    return 1 if result["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
