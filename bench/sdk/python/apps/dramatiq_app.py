"""Dramatiq with its Redis broker: producer (actor.send per task, from one or several threads)
and worker (a no-op actor)."""

from __future__ import annotations

import os
import sys
import threading
import time

import dramatiq
from common import PAYLOAD, report
from dramatiq.brokers.redis import RedisBroker

URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379")
dramatiq.set_broker(RedisBroker(url=URL))


@dramatiq.actor(max_retries=3)
def noop(payload: dict) -> None:
    pass


def produce(n: int, producers: int) -> None:
    noop.broker.client.ping()  # connect before timing

    def run(count: int) -> None:
        for _ in range(count):
            noop.send(PAYLOAD)

    threads = [threading.Thread(target=run, args=(n // producers,)) for _ in range(producers)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    total = n // producers * producers
    report(tasks=total, seconds=elapsed, rate=total / elapsed)


if __name__ == "__main__":
    produce(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 1)
