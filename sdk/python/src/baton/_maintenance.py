"""In-process maintenance (opt-in, ``Worker(maintenance=True)``) for setups without batond:
promotes due delayed and retrying tasks (baton_v2_promote) and takes back expired leases
(baton_v2_reclaim) of this worker's task types, in every partition it serves.

It never polls faster than Redis says: each call returns the next due time or lease deadline
(server clock), and the loop sleeps until the earliest one, at most 1 s at a time. A retry this
worker schedules wakes it early. Several maintenance loops and batond may run at once safely:
every step is one atomic function call.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Sequence

from . import _generated as gen
from . import _redis
from ._loops import Backoff, Outage
from ._runner import TypeRunner
from .errors import translate

PROMOTE_LIMIT = 1000  # tasks per baton_v2_promote call
RECLAIM_COUNT = 100  # expired leases per baton_v2_reclaim call
MAX_SLEEP = 1.0
MIN_SLEEP = 0.01


class Maintenance:
    """The promote / reclaim loop of one worker."""

    def __init__(self, runners: Sequence[TypeRunner], client: _redis.AsyncRedis,
                 reaper: str):
        self._runners = list(runners)
        self._redis = client
        self._reaper = reaper
        now = time.monotonic()
        self._promote_at = [now] * len(runners)
        self._reclaim_at = [now] * len(runners)
        self._offset_ms: float | None = None  # server ms - local monotonic ms
        self._wake = asyncio.Event()
        self._random = random.Random()

    def add(self, runner: TypeRunner) -> None:
        """Serves one more runner (a partition the namespace gained), from the next pass; its
        index is the number of runners added before it."""
        self._runners.append(runner)
        now = time.monotonic()
        self._promote_at.append(now)
        self._reclaim_at.append(now)
        self._wake.set()

    def on_retry(self, index: int, due_ms: int) -> None:
        """A task of runner index was scheduled to retry at due_ms (server clock)."""
        due = time.monotonic()
        if self._offset_ms is not None:
            due = (due_ms - self._offset_ms) / 1000.0
        if due < self._promote_at[index]:
            self._promote_at[index] = due
            self._wake.set()

    def _local_due(self, at_ms: int, now_ms: int, progressed: bool, now: float) -> float:
        if at_ms < 0:
            return now + MAX_SLEEP
        # Due now: call again at once when the call hit its limit; otherwise do not spin.
        least = 0.0 if progressed else MIN_SLEEP
        return now + min(max((at_ms - now_ms) / 1000.0, least), MAX_SLEEP)

    async def loop(self) -> None:
        """Runs until cancelled."""
        backoff = Backoff()
        outage = Outage("worker maintenance")
        wake_at = time.monotonic()
        while True:
            self._wake.clear()
            delay = wake_at - time.monotonic()
            if delay > 0:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), delay)
            try:
                await self._pass(time.monotonic())
            except Exception as e:  # noqa: BLE001 - log once, retry with backoff
                outage.failed(translate(e))
                wake_at = time.monotonic() + backoff.next()
                continue
            outage.ok()
            backoff.reset()
            wake_at = min(*self._promote_at, *self._reclaim_at)

    async def _pass(self, now: float) -> None:
        sent: list[tuple[int, bool]] = []
        calls: list[list[gen.Arg]] = []
        for i, runner in enumerate(self._runners):
            c = runner.config
            if self._promote_at[i] <= now:
                calls.append(_redis.fcall_args(gen.promote(runner.keys, PROMOTE_LIMIT)))
                sent.append((i, True))
            if self._reclaim_at[i] <= now:
                call = gen.reclaim(runner.keys, RECLAIM_COUNT, c.retry_base_ms, c.retry_max_ms,
                                   self._random.randrange(2**31), self._reaper)
                calls.append(_redis.fcall_args(call))
                sent.append((i, False))
        if not sent:
            return
        replies = await _redis.apipeline(self._redis, calls)
        after = time.monotonic()
        for (i, promote), reply in zip(sent, replies, strict=True):
            # promote: [promoted, next_due_ms, now_ms]; reclaim: [reclaimed, retried, dead,
            # next_deadline_ms, now_ms].
            if isinstance(reply, BaseException) or not isinstance(reply, list) or \
                    len(reply) != (3 if promote else 5):
                raise translate(reply) if isinstance(reply, BaseException) else \
                    RuntimeError(f"unexpected maintenance reply {reply!r:.100}")
            values = [int(v) for v in reply]
            server_now = values[-1]
            self._offset_ms = server_now - after * 1000.0
            if promote:
                self._promote_at[i] = self._local_due(values[1], server_now, values[0] > 0, after)
            else:
                self._reclaim_at[i] = self._local_due(values[3], server_now, values[0] > 0, after)
                if values[1] > 0:  # retries scheduled: promote says when they are due
                    self._promote_at[i] = after
