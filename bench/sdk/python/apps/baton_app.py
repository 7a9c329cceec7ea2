"""Baton: producers (sync Client, AsyncClient; one task per call, concurrent callers, and
enqueue_many batches) and the worker apps (a sync no-op handler on threads, an async no-op
handler on asyncio tasks)."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time

from common import PAYLOAD, PAYLOAD_BYTES, report

import baton

NS, TYPE = "bench", "noop"
URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379")
CONCURRENCY = int(os.environ.get("BENCH_CONCURRENCY", "64"))

threads_app = baton.Worker(URL, service="bench-threads", fetch_batch=256)
asyncio_app = baton.Worker(URL, service="bench-asyncio", fetch_batch=256)


@threads_app.task(NS, TYPE, concurrency=CONCURRENCY)
def noop(task: baton.Task) -> None:
    pass


@asyncio_app.task(NS, TYPE, concurrency=CONCURRENCY)
async def anoop(task: baton.Task) -> None:
    pass


def produce_sync(n: int, producers: int) -> float:
    with baton.Client(URL) as client:
        client.library_version()  # connect before timing

        def run(count: int) -> None:
            for _ in range(count):
                client.enqueue(NS, TYPE, PAYLOAD_BYTES)

        threads = [threading.Thread(target=run, args=(n // producers,)) for _ in range(producers)]
        started = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return time.perf_counter() - started


async def produce_async(n: int, producers: int) -> float:
    async with baton.AsyncClient(URL) as client:
        await client.library_version()

        async def run(count: int) -> None:
            for _ in range(count):
                await client.enqueue(NS, TYPE, PAYLOAD_BYTES)

        started = time.perf_counter()
        await asyncio.gather(*(run(n // producers) for _ in range(producers)))
        return time.perf_counter() - started


def produce_batched(n: int, batch: int) -> float:
    with baton.Client(URL) as client:
        client.library_version()
        started = time.perf_counter()
        for first in range(0, n, batch):
            client.enqueue_many(baton.TaskRequest(NS, TYPE, PAYLOAD)
                                for _ in range(min(batch, n - first)))
        return time.perf_counter() - started


if __name__ == "__main__":
    # baton_app.py N sync|async|batched PRODUCERS_OR_BATCH
    n, mode, k = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    if mode == "sync":
        seconds = produce_sync(n, k)
    elif mode == "async":
        seconds = asyncio.run(produce_async(n, k))
    else:
        seconds = produce_batched(n, k)
    report(tasks=n // k * k if mode != "batched" else n, seconds=seconds,
           rate=(n // k * k if mode != "batched" else n) / seconds)
