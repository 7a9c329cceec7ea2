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


async def heartbeat_loop(runners: Sequence[TypeRunner], client: _redis.AsyncRedis) -> None:
    """Runs until cancelled."""
    periods = [max(r.config.lease_ms / 3000.0, 0.001) for r in runners]
    start = time.monotonic()
    next_beat = [start + p for p in periods]
    # After a failure retry sooner than the period (never later): one missed beat must not
    # cost the lease.
    backoff = Backoff(0.1, min(periods))
    outage = Outage("worker heartbeat")
    while True:
        await asyncio.sleep(max(0.0, min(next_beat) - time.monotonic()))
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
