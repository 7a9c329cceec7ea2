"""arq: producer (await enqueue_job per task, from one or several coroutines) and worker
settings (a no-op function, no result kept)."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from typing import Any, ClassVar

from arq import create_pool
from arq.connections import RedisSettings
from common import PAYLOAD, report

URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379")
SETTINGS = RedisSettings.from_dsn(URL)


async def noop(ctx: dict, payload: dict) -> None:
    pass


class WorkerSettings:
    functions: ClassVar[list[Any]] = [noop]
    redis_settings = SETTINGS
    keep_result = 0  # no result stored: the other systems keep none either
    max_jobs = int(os.environ.get("BENCH_CONCURRENCY", "64"))


async def produce(n: int, producers: int) -> None:
    pool = await create_pool(SETTINGS)
    await pool.ping()

    async def run(count: int) -> None:
        for _ in range(count):
            await pool.enqueue_job("noop", PAYLOAD)

    started = time.perf_counter()
    await asyncio.gather(*(run(n // producers) for _ in range(producers)))
    elapsed = time.perf_counter() - started
    await pool.aclose()
    total = n // producers * producers
    report(tasks=total, seconds=elapsed, rate=total / elapsed)


if __name__ == "__main__":
    asyncio.run(produce(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 1))
