"""The conformance matrix (tests/conformance/run.sh calls this; see README.md there).

Prepares every language driver, starts redis-server and batond, runs every producer x consumer
cell (2 at a time by default), prints the matrix and a closing line `N passed, N failed` counting
cells x cases. With --cluster the Redis is a 3-primary Redis Cluster (harness/cluster.py) and the
cells' namespaces are spread evenly over its primaries. Exit status 0 only when every case of
every cell passed; 1 otherwise (a broken driver, a failed case, a dead batond), 2 when the run
could not start.
"""

import argparse
import concurrent.futures
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

from harness import cases as case_defs
from harness import cell
from harness import cluster as cluster_defs
from harness import drivers as driver_defs
from harness import table
from harness.servers import Batond, RedisServer

HERE = os.path.dirname(os.path.abspath(__file__))
CONFORMANCE_DIR = os.path.dirname(HERE)
REPO = os.path.abspath(os.path.join(CONFORMANCE_DIR, "..", ".."))


class Run:
    """The shared servers and settings of one harness run (matrix or self-test)."""

    def __init__(self, keep=False, cluster=False, cluster_replicas=0):
        build = os.environ.get("BATON_BUILD_DIR", os.path.join(REPO, "build", "release"))
        self.build_dir = build if os.path.isabs(build) else os.path.join(REPO, build)
        self.baton_bin = os.path.join(self.build_dir, "cli", "baton")
        self.batond_bin = os.path.join(self.build_dir, "daemon", "batond")
        self.corpus_dir = os.path.join(REPO, "contract", "fixtures", "payloads")
        self.task_payload_dir = os.path.join(CONFORMANCE_DIR, "task_payloads")
        self.work_dir = tempfile.mkdtemp(prefix="baton-conformance-")
        self.keep = keep
        # Drivers find the build through BATON_BUILD_DIR (absolute from here on).
        self.env = dict(os.environ, BATON_BUILD_DIR=self.build_dir)
        self.cluster = cluster
        self.cluster_replicas = cluster_replicas
        self.redis = None
        self.batond = None
        self.ctx = None

    def check_binaries(self):
        missing = [p for p in (self.baton_bin, self.batond_bin) if not os.access(p, os.X_OK)]
        if missing:
            raise RuntimeError("not built: %s (run scripts/build.sh release, or set "
                               "BATON_BUILD_DIR)" % ", ".join(missing))
        # batond and baton embed the functions library they were built with; one older than
        # functions/*.lua would call the functions with stale KEYS lists and fail cells for
        # reasons that have nothing to do with the SDKs.
        lua_dir = os.path.join(REPO, "functions")
        newest = max(os.path.getmtime(os.path.join(lua_dir, f))
                     for f in os.listdir(lua_dir) if f.endswith(".lua"))
        stale = [p for p in (self.baton_bin, self.batond_bin) if os.path.getmtime(p) < newest]
        if stale:
            raise RuntimeError("older than functions/*.lua: %s (rebuild: scripts/build.sh "
                               "release, or run.sh without CONFORMANCE_NO_BUILD)"
                               % ", ".join(stale))

    def start(self):
        if self.cluster:
            self.redis = cluster_defs.ClusterRedis(self.cluster_replicas)
            self.redis.start()
            print("redis cluster: %s (%d replicas per primary); %s"
                  % (self.redis.url, self.cluster_replicas,
                     self.redis.load_functions(self.baton_bin, self.env)), flush=True)
        else:
            self.redis = RedisServer(self.work_dir)
            self.redis.start()
            self.redis.load_functions(REPO)
        # `baton init --check` compares the library version loaded with the one baton needs.
        check = subprocess.run([self.baton_bin, "--redis", self.redis.url, "init", "--check"],
                               capture_output=True, env=self.env)
        if check.returncode != 0:
            raise RuntimeError("baton init --check: %s"
                               % (check.stdout + check.stderr).decode(errors="replace").strip())
        self.batond = Batond(self.batond_bin, self.redis.url, self.work_dir)
        self.batond.start()
        self.ctx = cell.Context(self.redis, self.baton_bin, self.corpus_dir,
                                self.task_payload_dir, self.work_dir, self.env)

    def run_cells(self, pairs, jobs, on_done=None):
        """Runs (producer, consumer) Driver pairs, `jobs` at a time; {(p, c): CellResult}."""
        results = {}
        if self.cluster:
            # One namespace per cell, dealt round-robin to the primaries (harness/cluster.py).
            self.ctx.namespaces = self.redis.spread([(p.name, c.name) for p, c in pairs],
                                                    cell.namespace)
            print("cell namespaces per primary:", flush=True)
            for line in self.redis.describe_spread(self.ctx.namespaces):
                print(line, flush=True)
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = {pool.submit(cell.run, self.ctx, p, c): (p.name, c.name) for p, c in pairs}
            for future in concurrent.futures.as_completed(futures):
                p, c = futures[future]
                try:
                    result = future.result()
                except Exception as e:  # the harness failed on this cell: the cell fails
                    where = traceback.extract_tb(e.__traceback__)[-1]
                    reason = "harness error: %r (%s:%d)" % (
                        e, os.path.basename(where.filename), where.lineno)
                    result = cell.CellResult(p, c, {case: [reason] for case in case_defs.CASES},
                                             0.0, "")
                results[(p, c)] = result
                if on_done:
                    on_done(result)
        return results

    def stop(self, success):
        if self.batond:
            self.batond.stop()
        if self.redis:
            self.redis.stop()
        if success and not self.keep:
            shutil.rmtree(self.work_dir, ignore_errors=True)
        else:
            print("work directory kept: %s" % self.work_dir)


def _progress(result):
    print("  %-8s -> %-8s %d/%d  %5.1f s  %s" % (result.producer, result.consumer,
                                                result.passed(), len(case_defs.CASES),
                                                result.seconds, result.ns), flush=True)


def _details(results):
    lines = []
    for (p, c), result in sorted(results.items()):
        for case in case_defs.CASES:
            for reason in result.results[case]:
                lines.append("FAIL %s -> %s %s: %s" % (p, c, case, reason))
        for warning in result.warnings:
            lines.append("WARN %s -> %s: %s" % (p, c, warning))
    return lines


def main(argv):
    parser = argparse.ArgumentParser(prog="tests/conformance/run.sh", description=__doc__)
    parser.add_argument("--langs", help="only these drivers, comma separated (e.g. cpp,cli)")
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("CONFORMANCE_JOBS", "2")),
                        help="cells run at once (default 2)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument("--cluster", action="store_true",
                        help="run on a 3-primary Redis Cluster (redis+cluster:// URL)")
    parser.add_argument("--cluster-replicas", type=int, default=0, choices=(0, 1),
                        help="with --cluster: replicas per primary (default 0)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    only = set(args.langs.split(",")) if args.langs else None

    run = Run(keep=args.keep, cluster=args.cluster, cluster_replicas=args.cluster_replicas)
    try:
        run.check_binaries()
    except RuntimeError as e:
        print("conformance: %s" % e, file=sys.stderr)
        return 2
    drivers = driver_defs.discover(os.path.join(CONFORMANCE_DIR, "drivers"), only)
    print("preparing drivers:", flush=True)
    for d in drivers:
        driver_defs.prepare(d, run.env, run.work_dir)
        print("  %-8s %-7s %5.1f s  %s" % (d.name, d.state, d.prepare_seconds, d.reason),
              flush=True)
    ready = [d for d in drivers if d.state == "ready"]
    prepared = time.monotonic()
    success = False
    try:
        run.start()
        print("%s %s, batond running; %d cells, %d at a time:"
              % ("redis cluster" if run.cluster else "redis-server", run.redis.url,
                 len(ready) ** 2, args.jobs), flush=True)
        results = run.run_cells([(p, c) for p in ready for c in ready], max(1, args.jobs),
                                _progress)
        batond_alive = run.batond.alive()
        routing = run.redis.keys_by_primary(run.ctx.namespaces) if run.cluster else []
    except (RuntimeError, KeyboardInterrupt) as e:
        print("conformance: %s" % (e or "interrupted"), file=sys.stderr)
        run.stop(False)
        return 2

    case_count = len(case_defs.CASES)
    passed = sum(r.passed() for r in results.values())
    failed = sum(case_count - r.passed() for r in results.values())
    broken = [d for d in drivers if d.state == "broken"]
    present = [d for d in drivers if d.state != "absent"]
    # Every cell with a broken driver counts as failed in full: a language that is there but
    # cannot run is not absent.
    failed += case_count * sum(1 for p in present for c in present
                               if p.state == "broken" or c.state == "broken")
    if routing:
        print("where the cells' keys are (a SCAN of each primary):")
        for line in routing:
            print(line)
    print()
    print(table.render(drivers, results, case_count))
    print()
    for line in _details(results):
        print(line)
    for d in drivers:
        if d.state != "ready":
            print("%s %s: %s" % (d.state.upper(), d.name, d.reason))
    if not batond_alive:
        print("FAIL batond died during the run (log: %s)" % run.batond.log_path)
    if not ready:
        print("FAIL no language driver is ready")
    success = failed == 0 and batond_alive and bool(ready) and not broken
    run.stop(success)
    now = time.monotonic()
    print("cases: %s; prepare %.1f s, servers and cells %.1f s, total %.1f s"
          % (", ".join(case_defs.CASES), prepared - started, now - prepared, now - started))
    print("%d passed, %d failed" % (passed, failed))
    return 0 if success else 1
