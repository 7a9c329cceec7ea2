"""Group commit for enqueue: concurrent calls share round trips.

One baton_v2_enqueue call has a fixed cost in Redis far above its cost per task (measured: about
70 us of Redis CPU for a call of one task, about 10 us per task in calls of 100). So when several
threads (or coroutines) enqueue at once, the first sends its task at once and the others,
arriving while that call is in flight, are sent together in the next call (one FCALL per
namespace and type).
A lone caller never waits for anybody: with no concurrency this is exactly one call per
enqueue. If Redis refuses a shared call (BATON_INVALID: the Lua validates a whole call and writes
nothing), every task of it is sent again on its own, so only the culprit gets the error.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from ._enqueue import EnqueueResult, Prepared
from .errors import InvalidArgumentError, UnavailableError

MAX_BATCH = 1024  # tasks per shared round trip


class _Waiter:
    __slots__ = ("error", "event", "lead", "prepared", "result")

    def __init__(self, prepared: Prepared, event: Any = None):
        self.prepared = prepared
        self.event = event  # made only for a caller that has to wait
        self.lead = False
        self.result: EnqueueResult | None = None
        self.error: BaseException | None = None

    def outcome(self) -> EnqueueResult:
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result


def _settle(batch: list[_Waiter], results: list[EnqueueResult]) -> None:
    for waiter, result in zip(batch, results, strict=True):
        waiter.result = result


class SyncCoalescer:
    """Group commit for the thread-safe sync Client."""

    def __init__(self, send: Callable[[list[Prepared]], list[EnqueueResult]]):
        self._send = send
        self._lock = threading.Lock()
        self._pending: list[_Waiter] = []
        self._busy = False

    def submit(self, prepared: Prepared) -> EnqueueResult:
        me = _Waiter(prepared)
        with self._lock:
            if self._busy:
                me.event = threading.Event()
                self._pending.append(me)
                batch = None
            else:
                self._busy = True
                batch = [me]
        if batch is None:
            me.event.wait()
            if not me.lead:
                return me.outcome()
            with self._lock:  # promoted: send what gathered meanwhile (this one first)
                batch, self._pending = self._pending[:MAX_BATCH], self._pending[MAX_BATCH:]
        try:
            self._run(batch)
        finally:
            with self._lock:
                if self._pending:
                    successor = self._pending[0]
                    successor.lead = True
                    successor.event.set()
                else:
                    self._busy = False
            for waiter in batch:
                if waiter is not me:
                    waiter.event.set()
        return me.outcome()

    def _run(self, batch: list[_Waiter]) -> None:
        try:
            _settle(batch, self._send([w.prepared for w in batch]))
        except InvalidArgumentError as e:
            if len(batch) == 1:
                batch[0].error = e
                return
            for waiter in batch:  # find the culprit: each task alone
                try:
                    waiter.result = self._send([waiter.prepared])[0]
                except BaseException as alone:  # noqa: BLE001 - handed to its caller
                    waiter.error = alone
        except BaseException as e:  # noqa: BLE001 - every caller of the call gets it
            for waiter in batch:
                waiter.error = e


class AsyncCoalescer:
    """Group commit for the AsyncClient (one event loop)."""

    def __init__(self, send: Callable[[list[Prepared]], Awaitable[list[EnqueueResult]]]):
        self._send = send
        self._pending: list[_Waiter] = []
        self._busy = False

    async def submit(self, prepared: Prepared) -> EnqueueResult:
        me = _Waiter(prepared)
        if self._busy:
            me.event = asyncio.Event()
            self._pending.append(me)
            try:
                await me.event.wait()
            except asyncio.CancelledError:
                # Cancelled while waiting: not sent. A promotion that came meanwhile is passed on.
                if me in self._pending:
                    self._pending.remove(me)
                if me.lead:
                    self._hand_over()
                raise
            if not me.lead:
                return me.outcome()
            batch, self._pending = self._pending[:MAX_BATCH], self._pending[MAX_BATCH:]
        else:
            self._busy = True
            batch = [me]
        try:
            await self._run(batch)
        finally:
            self._hand_over()
            for waiter in batch:
                if waiter.result is None and waiter.error is None:  # this leader was cancelled
                    waiter.error = UnavailableError(
                        f"the enqueue call carrying task {waiter.prepared.task_id} was "
                        "cancelled: it may or may not have been written (enqueue again with "
                        "the same task id to be sure)")
                if waiter is not me:
                    waiter.event.set()
        return me.outcome()

    def _hand_over(self) -> None:
        """The next waiting caller sends what gathered; or nobody is busy any more."""
        if self._pending:
            successor = self._pending[0]
            successor.lead = True
            successor.event.set()
        else:
            self._busy = False

    async def _run(self, batch: list[_Waiter]) -> None:
        try:
            _settle(batch, await self._send([w.prepared for w in batch]))
        except InvalidArgumentError as e:
            if len(batch) == 1:
                batch[0].error = e
                return
            for waiter in batch:
                try:
                    waiter.result = (await self._send([waiter.prepared]))[0]
                except Exception as alone:  # noqa: BLE001 - handed to its caller
                    waiter.error = alone
        except Exception as e:  # noqa: BLE001 - every caller of the call gets it
            for waiter in batch:
                waiter.error = e
