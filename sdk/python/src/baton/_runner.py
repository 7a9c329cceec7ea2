"""One task type's part of a worker: the fetch loop.

It is the worker loop of docs/protocol.md: it sends the acks and fails of finished attempts and,
in the same round trip, asks baton_v2_dequeue for as many tasks as the type has free slots
(batched fetch, batched acks). When the stream had nothing it blocks in ``XREAD BLOCK`` on a
second connection while still flushing completions as they arrive, so an ack never waits for the
block to end. The attempts themselves are run by :class:`baton._attempts.Attempts`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import redis.asyncio

from . import _generated as gen
from . import _outcome, _redis
from ._attempts import Attempts, Completion
from ._loops import Backoff, Outage
from .errors import BatonError, translate
from .keys import Keyspace
from .task import MalformedEntry, decode_entry

log = logging.getLogger("baton.worker")

ACKS_PER_CALL = 256
ENTRY_VALUES = 9  # per delivered task in baton_v2_dequeue's reply


@dataclass
class RunnerConfig:
    """Everything one TypeRunner needs to know."""

    namespace: str
    task_type: str
    handler: Callable[..., Any]
    executor: str  # "thread", "async" or "process"
    concurrency: int
    retry_base_ms: int
    retry_max_ms: int
    lease_ms: int
    non_retryable: tuple[type[BaseException], ...]
    group: str
    consumer: str
    fetch_batch: int
    block_ms: int
    process_start_method: str = "spawn"
    # The partition of the namespace served (docs/cluster.md, "Partitions"): its keys are
    # those of the storage namespace NS:p (NS for 0); tasks still carry namespace NS.
    partition: int = 0


@dataclass
class WorkerCounters:
    """Counted when Redis confirmed the outcome."""

    succeeded: int = 0  # acks recorded (done, or stale_done after a lost lease)
    failed: int = 0  # failures recorded (went to retry or dead), malformed included
    dead: int = 0  # of those, went to the dead-letter queue
    malformed: int = 0  # delivered entries that could not be decoded


class TypeRunner:
    """Fetches, runs and settles the tasks of one (namespace, task type) in one partition of
    the namespace."""

    def __init__(self, config: RunnerConfig, client: _redis.AsyncRedis,
                 counters: WorkerCounters):
        self.config = config
        self._redis = client
        self._counters = counters
        # Told the due time (Unix ms) of every retry this runner schedules (maintenance).
        self.on_retry: Callable[[int], None] | None = None
        keyspace = Keyspace(config.namespace, config.partition)
        self._keys = keyspace.for_type(config.task_type)
        self._completions: list[Completion] = []
        self._wake = asyncio.Event()
        self._stopping = False
        self._abandoned = False
        self._xread: asyncio.Task[Any] | None = None
        self._backoff = Backoff()
        label = f"{keyspace.storage}/{config.task_type}"  # NS:p/type in a partition p >= 1
        self._outage = Outage(f"worker {label}")
        self._random = random.Random()
        self._attempts = Attempts(label, config.handler, config.executor, config.concurrency,
                                  config.non_retryable, config.process_start_method,
                                  self._on_done, self._wake.set)

    @property
    def keys(self) -> Mapping[str, str]:
        """Every key of this (namespace, type), by kind."""
        return self._keys

    # ----------------------------------------------------------------------------- fetch loop

    async def fetch_loop(self) -> None:
        last_id = ""
        while True:
            if self._abandoned and not self._completions:
                break
            if self._stopping and not self._attempts and not self._completions:
                break
            batch, self._completions = self._completions, []
            count = 0
            if not self._stopping:
                count = min(self._attempts.free(), self.config.fetch_batch)
            if not batch and count <= 0:
                self._wake.clear()
                await self._wake.wait()
                continue
            calls = self._completion_calls(batch)
            if count > 0:
                calls.append(gen.dequeue(self._keys, self.config.group, self.config.consumer,
                                         count, self.config.lease_ms))
            try:
                replies = await self._pipeline(calls)
            except BatonError as e:
                # Sent again after the reconnect: an ack or fail that did run comes back as
                # gone / stale, which changes nothing.
                self._completions[:0] = batch
                self._outage.failed(e)
                if self._abandoned:
                    break
                await self._sleep(self._backoff.next())
                continue
            self._outage.ok()
            self._settle(batch, replies)
            if count <= 0:
                self._backoff.reset()
                continue
            dequeued = replies[-1]
            if isinstance(dequeued, BaseException) or not isinstance(dequeued, list):
                # E.g. the library was unloaded: wait with a growing backoff, never spin.
                self._outage.failed(translate(dequeued) if isinstance(dequeued, BaseException)
                                    else RuntimeError(f"unexpected reply {dequeued!r:.100}"))
                await self._sleep(self._backoff.next())
                continue
            self._backoff.reset()
            delivered, last_id = self._start(dequeued, last_id)
            if delivered == 0 and last_id:
                await self._block(last_id)
        self._cancel_xread()

    async def _pipeline(self, calls: Sequence[gen.Call]) -> list[Any]:
        try:
            return await _redis.apipeline(self._redis, [_redis.fcall_args(c) for c in calls])
        except (redis.exceptions.RedisError, OSError) as e:
            raise translate(e) from e

    async def _sleep(self, seconds: float) -> None:
        """Sleeps, returning early when the worker gives up (abandon)."""
        self._wake.clear()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._wait_abandoned(), seconds)

    async def _wait_abandoned(self) -> None:
        while not self._abandoned:
            await self._wake.wait()
            self._wake.clear()

    async def _block(self, last_id: str) -> None:
        """Waits for new entries (XREAD BLOCK on its own connection) or for a completion or a
        stop, whichever comes first. A pending XREAD is reused by the next call."""
        if self._completions or self._stopping:
            return
        xread = self._xread
        if xread is None:
            stream = self._keys["stream"]
            xread = self._xread = asyncio.ensure_future(_redis.aexecute(
                self._redis, "XREAD", "BLOCK", self.config.block_ms, "STREAMS", stream, last_id))
        self._wake.clear()
        waiter = asyncio.ensure_future(self._wake.wait())
        try:
            await asyncio.wait({xread, waiter}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
        if xread.done():
            if self._xread is xread:
                self._xread = None
            error = xread.exception() if not xread.cancelled() else None
            if error is not None:
                self._outage.failed(translate(error))
                await self._sleep(self._backoff.next())

    def _cancel_xread(self) -> None:
        if self._xread is not None:
            self._xread.cancel()
            self._xread = None

    # ------------------------------------------------------------------ acks and failures

    def _completion_calls(self, batch: Sequence[Completion]) -> list[gen.Call]:
        """Acks first, up to ACKS_PER_CALL per call, then one baton_v2_fail per failure."""
        c = self.config
        calls = []
        acks = [(x.task_id, x.sid) for x in batch if x.outcome.ok]
        for i in range(0, len(acks), ACKS_PER_CALL):
            chunk = acks[i : i + ACKS_PER_CALL]
            calls.append(gen.ack(self._keys, c.group, c.consumer, len(chunk), chunk))
        for x in batch:
            if x.outcome.ok:
                continue
            calls.append(gen.fail(self._keys, c.group, c.consumer, x.task_id, x.sid,
                                  x.outcome.kind, x.outcome.message, x.outcome.stack,
                                  c.retry_base_ms, c.retry_max_ms, repr(self._random.random())))
        return calls

    def _settle(self, batch: Sequence[Completion], replies: Sequence[Any]) -> None:
        acks = sum(1 for x in batch if x.outcome.ok)
        r = 0
        for _ in range(0, acks, ACKS_PER_CALL):
            reply = replies[r]
            r += 1
            if isinstance(reply, BaseException) or not isinstance(reply, list):
                log.error("%s: baton_v2_ack: %s", self._outage.what, reply)
                continue
            self._counters.succeeded += sum(1 for s in reply if s in (b"done", b"stale_done"))
        for x in batch:
            if x.outcome.ok:
                continue
            reply = replies[r]
            r += 1
            if isinstance(reply, BaseException) or not isinstance(reply, list) or not reply:
                log.error("%s: baton_v2_fail %s: %s", self._outage.what, x.task_id, reply)
                continue
            verdict = reply[0]
            if verdict in (b"retry", b"dead"):
                self._counters.failed += 1
            if verdict == b"dead":
                self._counters.dead += 1
            if verdict == b"retry" and self.on_retry is not None:
                self.on_retry(int(reply[1]))

    # ------------------------------------------------------------------------- attempts

    def _start(self, reply: list[Any], last_id: str) -> tuple[int, str]:
        """Starts an attempt for every delivered entry; returns (count, id to block after)."""
        entries, block_after = reply[0], reply[1]
        if isinstance(block_after, bytes):
            block_after = block_after.decode()
        n = len(entries) // ENTRY_VALUES
        c = self.config
        for i in range(n):
            values = entries[i * ENTRY_VALUES : (i + 1) * ENTRY_VALUES]
            cancel = threading.Event()
            try:
                task = decode_entry(c.namespace, c.task_type, values, cancel)
            except MalformedEntry as e:
                # Not a valid task: dead-letter it with the reason, never drop it, never crash.
                self._counters.malformed += 1
                sid, task_id = (v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
                                for v in values[:2])
                self._completions.append(Completion(task_id, sid,
                                                    _outcome.failure("malformed", str(e))))
                continue
            self._attempts.start(task, cancel)
        return n, block_after or last_id

    def _on_done(self, completion: Completion) -> None:
        """An attempt ended: the fetch loop sends its ack or fail (unless abandoned)."""
        if not self._abandoned:
            self._completions.append(completion)
        self._wake.set()

    # ------------------------------------------------------------------------- leases

    def held(self) -> list[tuple[str, str]]:
        """(task id, stream id) of the attempts to heartbeat: running, not timed out."""
        return self._attempts.held()

    def on_extend_reply(self, sent: Sequence[tuple[str, str]], reply: Any) -> None:
        """A task whose stream id baton_v2_extend did not return was taken back: another
        worker may run it now, so this attempt is cancelled (it can no longer be acked as
        ours; its ack or fail will be stale)."""
        if isinstance(reply, BaseException) or not isinstance(reply, list):
            log.warning("%s: baton_v2_extend: %s", self._outage.what, reply)
            return
        still = {s.decode() if isinstance(s, bytes) else str(s) for s in reply}
        for task_id, sid in sent:
            if sid not in still and self._attempts.lose(sid):
                log.warning("%s: lost the lease of task %s; cancelling its attempt",
                            self._outage.what, task_id)

    # ------------------------------------------------------------------------- stopping

    def begin_stop(self) -> None:
        """No new tasks; running ones finish and are acked."""
        self._stopping = True
        self._cancel_xread()
        self._wake.set()

    def abandon(self) -> None:
        """Stops waiting for running attempts: they are cancelled and left to their lease
        (another worker takes them over once it expires)."""
        self._stopping = True
        self._abandoned = True
        self._attempts.abandon()
        self._wake.set()

    @property
    def in_flight(self) -> int:
        return len(self._attempts)

    def close(self) -> None:
        """Releases the threads and child processes (after the fetch loop ended)."""
        self._attempts.close()
