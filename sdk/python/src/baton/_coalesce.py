"""Group commit for enqueue: concurrent calls share round trips.

One baton_v2_enqueue call has a fixed cost in Redis far above its cost per task (measured: about
70 us of Redis CPU for a call of one task, about 10 us per task in calls of 100). So when several
threads (or coroutines) enqueue at once, the first sends its task at once and the others,
arriving while that call is in flight, are sent together in the next call (one FCALL per
namespace and type).
A lone caller never waits for anybody: with no concurrency this is exactly one call per
enqueue. If Redis refuses a shared call (BATON_INVALID: the Lua validates a whole call and writes
nothing), every task of it is sent again on its own, so only the culprit gets the error; the other
calls of the same round trip (other namespaces or types) were written and keep their results.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ._enqueue import EnqueueResult, Prepared
from .errors import BatonError, InvalidArgumentError, UnavailableError

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


Outcomes = list[EnqueueResult | BatonError]


def _settle(batch: Sequence[_Waiter], outcomes: Sequence[EnqueueResult | BaseException]) -> None:
    for waiter, outcome in zip(batch, outcomes, strict=True):
        if isinstance(outcome, BaseException):
            waiter.result, waiter.error = None, outcome
        else:
            waiter.result, waiter.error = outcome, None


def _refused(batch: Sequence[_Waiter]) -> list[_Waiter]:
    """The waiters to send again alone: those of refused calls (which wrote nothing), when
    more than one task was refused (a lone refused task already has its own error)."""
    refused = [w for w in batch if isinstance(w.error, InvalidArgumentError)]
    return refused if len(refused) > 1 else []


def _hand_over(pending: Sequence[_Waiter]) -> bool:
    """The next waiting caller (if any) leads: it sends what gathered. Returns whether a caller
    is still busy sending. (The sync coalescer calls it under its lock.)"""
    if not pending:
        return False
    pending[0].lead = True
    pending[0].event.set()
    return True


class SyncCoalescer:
    """Group commit for the thread-safe sync Client."""

    def __init__(self, send: Callable[[list[Prepared]], Outcomes]):
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
            try:
                me.event.wait()
            except BaseException:
                # Left while waiting (e.g. KeyboardInterrupt): not sent. A promotion that came
                # meanwhile is passed on, or the next caller would wait forever.
                self._withdraw(me)
                raise
            if not me.lead:
                return me.outcome()
            with self._lock:  # promoted: send what gathered meanwhile (this one first)
                batch, self._pending = self._pending[:MAX_BATCH], self._pending[MAX_BATCH:]
        try:
            self._run(batch)
        finally:
            with self._lock:
                self._busy = _hand_over(self._pending)
            for waiter in batch:
                if waiter is not me:
                    waiter.event.set()
        return me.outcome()

    def _withdraw(self, me: _Waiter) -> None:
        with self._lock:
            if me in self._pending:
                self._pending.remove(me)
            if me.lead:
                me.lead = False
                self._busy = _hand_over(self._pending)

    def _run(self, batch: list[_Waiter]) -> None:
        try:
            _settle(batch, self._send([w.prepared for w in batch]))
        except BaseException as e:  # noqa: BLE001 - every caller of the call gets it
            _settle(batch, [e] * len(batch))
        for waiter in _refused(batch):  # find the culprit: each task alone
            try:
                _settle([waiter], self._send([waiter.prepared]))
            except BaseException as alone:  # noqa: BLE001 - handed to its caller
                _settle([waiter], [alone])


class AsyncCoalescer:
    """Group commit for the AsyncClient (one event loop)."""

    def __init__(self, send: Callable[[list[Prepared]], Awaitable[Outcomes]]):
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
                    self._busy = _hand_over(self._pending)
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
            self._busy = _hand_over(self._pending)
            for waiter in batch:
                if waiter.result is None and waiter.error is None:  # this leader was cancelled
                    waiter.error = UnavailableError(
                        f"the enqueue call carrying task {waiter.prepared.task_id} was "
                        "cancelled: it may or may not have been written (enqueue again with "
                        "the same task id to be sure)")
                if waiter is not me:
                    waiter.event.set()
        return me.outcome()

    async def _run(self, batch: list[_Waiter]) -> None:
        try:
            _settle(batch, await self._send([w.prepared for w in batch]))
        except Exception as e:  # noqa: BLE001 - every caller of the call gets it
            _settle(batch, [e] * len(batch))
        for waiter in _refused(batch):  # find the culprit: each task alone
            try:
                _settle([waiter], await self._send([waiter.prepared]))
            except Exception as alone:  # noqa: BLE001 - handed to its caller
                _settle([waiter], [alone])
