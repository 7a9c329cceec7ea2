"""Enqueue and drain rates of Baton's Python SDK, Dramatiq and arq, in the same run, against the
same Redis, with the same 200-byte payload and a no-op handler (run by run.sh).

For each system: FLUSHALL (the Baton functions library stays), a producer process enqueues N
tasks (timed inside the producer), then one worker process drains them. The drain is timed from
outside by polling the broker's own state every 5 ms: from the first poll that sees a task taken
to the first poll that sees none left (for Baton: acked; for Dramatiq: acked and deleted; for arq:
finished and removed from the queue). Redis' CPU time during the drain is read from INFO.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import redis

HERE = pathlib.Path(__file__).resolve().parent
APPS = HERE / "apps"
SDK_SRC = HERE.parents[2] / "sdk" / "python" / "src"


@dataclass
class System:
    name: str
    python: str
    produce: Callable[[int, int], list[str]]  # producer command for (tasks, producers)
    worker: list[str]  # worker command (after python)
    remaining: Callable[[redis.Redis, int], int]
    produce_batched: list[str] | None = None
    concurrency_note: str = ""


def baton_remaining(r: redis.Redis, n: int) -> int:
    return n - int(r.zcard("baton:v2:{bench}:done"))


def dramatiq_remaining(r: redis.Redis, n: int) -> int:
    return int(r.hlen("dramatiq:default.msgs"))


def arq_remaining(r: redis.Redis, n: int) -> int:
    return int(r.zcard("arq:queue"))


def env(url: str, concurrency: int) -> dict[str, str]:
    return dict(os.environ, BENCH_REDIS_URL=url, BENCH_CONCURRENCY=str(concurrency),
                PYTHONPATH=os.pathsep.join([str(SDK_SRC), str(APPS)]))


def run_producer(python: str, args: list[str], environ: dict[str, str]) -> float:
    done = subprocess.run([python, *args], cwd=APPS, env=environ, capture_output=True,
                          text=True, timeout=1800, check=False)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return float(json.loads(line[7:])["rate"])
    raise RuntimeError(f"producer {args} failed: {done.stderr[-2000:]}")


def redis_cpu(r: redis.Redis) -> float:
    info = r.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def drain(system: System, r: redis.Redis, n: int, environ: dict[str, str],
          timeout: float, log: pathlib.Path) -> tuple[float, float]:
    """(tasks/s, Redis CPU us per task) of one worker process draining n queued tasks."""
    with open(log, "wb") as out:  # a file, not a pipe: a chatty worker must never block
        worker = subprocess.Popen([system.python, *system.worker], cwd=APPS, env=environ,
                                  stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + timeout
        started = cpu0 = None
        while time.monotonic() < deadline:
            left = system.remaining(r, n)
            now = time.perf_counter()
            if started is None and left < n:
                started, cpu0 = now, redis_cpu(r)
            if started is not None and left <= 0:
                assert cpu0 is not None
                return n / (now - started), (redis_cpu(r) - cpu0) * 1e6 / n
            if worker.poll() is not None:
                raise RuntimeError(f"{system.name} worker exited, see {log}")
            time.sleep(0.005)
        raise RuntimeError(f"{system.name}: {system.remaining(r, n)} tasks left after {timeout} s")
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--redis", required=True)
    parser.add_argument("--tasks", type=int, default=20000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--dramatiq-threads", type=int, default=0,
                        help="Dramatiq worker threads (default: --concurrency, as the others)")
    parser.add_argument("--arq-python", required=True)
    parser.add_argument("--producers", type=int, default=16,
                        help="concurrent producers (threads or coroutines) of the 2nd column")
    parser.add_argument("--only", default="", help="comma-separated system names")
    parser.add_argument("--logs", default=str(HERE / "results"))
    args = parser.parse_args()
    main_python = sys.executable
    n, c = args.tasks, args.concurrency
    args.dramatiq_threads = args.dramatiq_threads or c
    systems = [
        System("baton (threads)", main_python,
               lambda n, k: ["baton_app.py", str(n), "sync", str(k)],
               ["-m", "baton.cli", "baton_app:threads_app", "--log-level", "WARNING"],
               baton_remaining, ["baton_app.py", str(n), "batched", "500"],
               f"{c} threads; producers: Client from threads"),
        System("baton (asyncio)", main_python,
               lambda n, k: ["baton_app.py", str(n), "async", str(k)],
               ["-m", "baton.cli", "baton_app:asyncio_app", "--log-level", "WARNING"],
               baton_remaining, None,
               f"{c} asyncio tasks; producers: AsyncClient coroutines"),
        System("dramatiq", main_python, lambda n, k: ["dramatiq_app.py", str(n), str(k)],
               ["-m", "dramatiq", "dramatiq_app", "--processes", "1", "--threads",
                str(args.dramatiq_threads)],
               dramatiq_remaining, None,
               f"{args.dramatiq_threads} threads; producers: actor.send from threads"),
        System("arq", args.arq_python, lambda n, k: ["arq_app.py", str(n), str(k)],
               ["-m", "arq", "arq_app.WorkerSettings"], arq_remaining, None,
               f"max_jobs {c}; producers: enqueue_job coroutines"),
    ]
    if args.only:
        wanted = set(args.only.split(","))
        systems = [s for s in systems if s.name.split()[0] in wanted or s.name in wanted]
    r = redis.Redis.from_url(args.redis)
    logs = pathlib.Path(args.logs)
    logs.mkdir(parents=True, exist_ok=True)
    p = args.producers
    print(f"{n} tasks of a 200-byte payload, no-op handler, one worker process each; "
          f"Redis {r.info('server')['redis_version']} on the same machine")
    print(f"{'system':<16} {'enqueue/s':>9} {f'x{p} prod/s':>11} {'batch/s':>8} "
          f"{'drain/s':>8} {'redis us/task':>13}  worker; producers")
    rows = {}
    for s in systems:
        environ = env(args.redis, c)
        r.flushall()
        enqueue_rate = run_producer(s.python, s.produce(n, 1), environ)
        r.flushall()
        concurrent = run_producer(s.python, s.produce(n, p), environ)
        drain_rate, cpu = drain(s, r, n // p * p, environ, timeout=600,
                                log=logs / f"{s.name.split()[0]}-worker.log")
        batched = None
        if s.produce_batched is not None:
            r.flushall()
            batched = run_producer(s.python, s.produce_batched, environ)
        rows[s.name] = (enqueue_rate, concurrent, batched, drain_rate, cpu)
        print(f"{s.name:<16} {enqueue_rate:>9.0f} {concurrent:>11.0f} "
              f"{(f'{batched:.0f}' if batched else '-'):>8} {drain_rate:>8.0f} "
              f"{cpu:>13.1f}  {s.concurrency_note}", flush=True)
    r.flushall()
    baton_rows = [v for k, v in rows.items() if k.startswith("baton")]
    if baton_rows:
        best = [max(v[i] for v in baton_rows) for i in (0, 1, 3)]
        for other in ("dramatiq", "arq"):
            if other in rows:
                o = rows[other]
                print(f"baton/{other}: enqueue {best[0] / o[0]:.2f}x, with {p} producers "
                      f"{best[1] / o[1]:.2f}x, drain {best[2] / o[3]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
