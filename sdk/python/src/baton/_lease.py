"""Lease heartbeats: every lease/3 of each task type, one baton_v2_extend per type (pipelined)
moves the lease deadline of the attempts still running. An attempt that timed out is no longer
extended, so its lease ends and a reaper may hand the task to another worker."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from . import _generated as gen
from . import _redis
from ._loops import Backoff, Outage
from ._runner import TypeRunner
from .errors import translate

# Longest sleep between passes: below the shortest period (lease_ms >= 1000), so a runner added
# while the loop sleeps (a new partition) gets its first beat in time.
MAX_SLEEP = 0.3


async def heartbeat_loop(runners: Sequence[TypeRunner], client: _redis.AsyncRedis) -> None:
    """Runs until cancelled. runners may grow while it runs (partitions served later)."""
    periods: list[float] = []
    next_beat: list[float] = []
    # After a failure retry sooner than the period (never later): one missed beat must not
    # cost the lease.
    backoff = Backoff(0.1, min(max(r.config.lease_ms / 3000.0, 0.001) for r in runners))
    outage = Outage("worker heartbeat")
    while True:
        for r in runners[len(periods):]:
            periods.append(max(r.config.lease_ms / 3000.0, 0.001))
            next_beat.append(time.monotonic() + periods[-1])
        await asyncio.sleep(min(MAX_SLEEP, max(0.0, min(next_beat) - time.monotonic())))
        now = time.monotonic()
        due = [i for i, t in enumerate(next_beat) if t <= now]
        sent: list[tuple[int, list[tuple[str, str]]]] = []
        for i in due:
            held = runners[i].held()
            if held:
                sent.append((i, held))
        try:
            replies = await _extend(runners, client, sent) if sent else []
        except Exception as e:  # noqa: BLE001 - any failure: log once, retry soon
            outage.failed(translate(e))
            retry = now + backoff.next()
            for i in due:
                next_beat[i] = min(retry, now + periods[i])
            continue
        outage.ok()
        backoff.reset()
        for (i, held), reply in zip(sent, replies, strict=True):
            runners[i].on_extend_reply(held, reply)
        for i in due:
            next_beat[i] = now + periods[i]


async def _extend(runners: Sequence[TypeRunner], client: _redis.AsyncRedis,
                  sent: Sequence[tuple[int, list[tuple[str, str]]]]) -> list[Any]:
    calls = []
    for i, held in sent:
        c = runners[i].config
        calls.append(_redis.fcall_args(gen.extend(runners[i].keys, c.group, c.consumer,
                                                  c.lease_ms, held)))
    return await _redis.apipeline(client, calls)
