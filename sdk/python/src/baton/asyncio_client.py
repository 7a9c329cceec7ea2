"""The producer for asyncio programs: :class:`AsyncClient`, the same API as
:class:`baton.Client` with coroutines."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from types import TracebackType
from typing import Any

import redis
import redis.asyncio

from . import _enqueue, _producer, _redis, _tracing, contract
from . import _generated as gen
from ._coalesce import AsyncCoalescer
from ._durable import Wait
from ._enqueue import EnqueueResult, Payload, Seconds, TaskRequest
from ._partitions import PartitionCounts, hmget_command
from .errors import BatonError, translate
from .keys import Keyspace

_REDIS_ERRORS = (redis.exceptions.RedisError, OSError)


class AsyncClient:
    """Enqueues and cancels tasks from asyncio code; see :class:`baton.Client` for the
    semantics of every method and of the arguments (``redis+cluster://`` URLs, wait_replicas).
    Use it from one event loop (redis.asyncio's rule). Concurrent enqueue calls
    (``asyncio.gather``, many request handlers) share round trips."""

    def __init__(self, url: str = "redis://127.0.0.1:6379", *,
                 redis_options: Mapping[str, Any] | None = None,
                 socket_timeout: float | None = 10.0, wait_replicas: int = 0,
                 wait_timeout: float = 1.0):
        self.url = url
        self._wait = Wait.of(wait_replicas, wait_timeout)
        if self._wait is not None and socket_timeout is not None:
            socket_timeout += wait_timeout  # a reply may come after WAIT's whole timeout
        self._redis = _redis.async_client(url, redis_options, socket_timeout)
        self._keyspaces: dict[tuple[str, int], Keyspace] = {}
        self._partitions = PartitionCounts()
        self._coalescer = AsyncCoalescer(self._send_each)

    @property
    def redis(self) -> _redis.AsyncRedis:
        """The underlying redis.asyncio client (bytes replies): a RedisCluster for a
        redis+cluster:// URL."""
        return self._redis

    async def _fcall(self, call: gen.Call) -> Any:
        try:
            return await _redis.aexecute(self._redis, *_redis.fcall_args(call))
        except _REDIS_ERRORS as e:
            raise translate(e) from e

    async def _read_partitions(self, namespaces: Iterable[str], fresh: bool = False) -> None:
        """Reads the partition counts never read or older than 5 s (fresh: all of them) in
        one HMGET."""
        wanted = list(dict.fromkeys(namespaces)) if fresh else self._partitions.stale(namespaces)
        if wanted:
            try:
                reply = await _redis.aexecute(self._redis, *hmget_command(wanted))
            except _REDIS_ERRORS as e:
                raise translate(e) from e
            self._partitions.update(wanted, reply)

    async def library_version(self) -> str:
        """Connects if needed and returns the functions library version ("2")."""
        return _redis.check_version_reply(await self._fcall(gen.version()))

    async def enqueue(
        self,
        namespace: str,
        task_type: str,
        payload: Payload,
        *,
        delay: Seconds = 0,
        at: float | datetime | None = None,
        max_retry: int = contract.DEFAULT_MAX_RETRY,
        execution_timeout: int | None = None,
        task_id: str | None = None,
        unique_key: str | None = None,
        unique_ttl: Seconds | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> EnqueueResult:
        """Validates and enqueues one task (see :meth:`baton.Client.enqueue`)."""
        request = TaskRequest(namespace, task_type, payload, delay, at, max_retry,
                              execution_timeout, task_id, unique_key, unique_ttl, extra)
        with _tracing.ProducerSpans() as spans:
            prepared = _enqueue.prepare(request, spans)
            result = await self._coalescer.submit(prepared)
        return result

    async def enqueue_many(self, requests: Iterable[TaskRequest]) -> list[EnqueueResult]:
        """Enqueues many tasks in one round trip (see :meth:`baton.Client.enqueue_many`)."""
        with _tracing.ProducerSpans() as spans:
            prepared = _enqueue.prepare_all(list(requests), spans)
            results = await self._send(prepared)
        return results

    async def enqueue_document(self, document: bytes | str | contract.TaskDocument, *,
                               at: float | datetime | None = None,
                               unique_key: str | None = None,
                               unique_ttl: Seconds | None = None) -> EnqueueResult:
        """Enqueues a whole task document as it is (see
        :meth:`baton.Client.enqueue_document`)."""
        with _tracing.ProducerSpans() as spans:
            prepared = _producer.prepare_document(document, at, unique_key, unique_ttl, spans)
            result = await self._coalescer.submit(prepared)
        return result

    async def _send(self, prepared: list[_enqueue.Prepared]) -> list[EnqueueResult]:
        return _enqueue.first_error(await self._send_each(prepared))

    async def _send_each(
            self, prepared: list[_enqueue.Prepared]) -> list[EnqueueResult | BatonError]:
        """One round trip; each task's result or the error of its call."""
        if not prepared:
            return []
        await self._read_partitions(p.namespace for p in prepared)
        calls = _enqueue.calls(prepared, self._keyspaces, self._partitions)
        if len(calls) == 1 and self._wait is None:
            replies: list[Any] = [await self._fcall(calls[0][0])]
        else:
            try:
                replies = await _redis.apipeline(
                    self._redis, [_redis.fcall_args(c) for c, _ in calls], self._wait)
            except _REDIS_ERRORS as e:
                raise translate(e) from e
        return _enqueue.settle(prepared, calls, replies)

    async def cancel(self, namespace: str, task_id: str) -> None:
        """Cancels a task that has not started (see :meth:`baton.Client.cancel`)."""
        contract.check_name("namespace", namespace)
        contract.check_task_id(task_id)
        # Read now, not from the 5 s copy: a task may be in a partition added a moment ago.
        await self._read_partitions([namespace], fresh=True)
        order = _producer.cancel_order(namespace, task_id, self._partitions.count(namespace))
        commands = _producer.record_commands(self._keyspaces, namespace, task_id, order)
        try:
            records = [await _redis.aexecute(self._redis, *commands[0])]
            if records[0] is None and len(order) > 1:
                records += await _redis.apipeline(self._redis, commands[1:])
        except _REDIS_ERRORS as e:
            raise translate(e) from e
        partition, record = _producer.found(order[: len(records)], records)
        await self._fcall(_producer.cancel_call(self._keyspaces, namespace, partition, task_id,
                                                record))

    async def configure(self, namespace: str, **settings: int | str | None) -> dict[str, int]:
        """Changes and returns namespace settings (see :meth:`baton.Client.configure`)."""
        contract.check_name("namespace", namespace)
        items = _producer.configure_items(settings)
        if items:  # read now, not from the 5 s copy: a partition added a moment ago too
            await self._read_partitions([namespace], fresh=True)
        calls = _producer.configure_calls(self._keyspaces, namespace,
                                          self._partitions.count(namespace), items)
        if len(calls) == 1:
            reply = await self._fcall(calls[0])
        else:
            try:
                replies = await _redis.apipeline(self._redis,
                                                 [_redis.fcall_args(c) for c in calls])
            except _REDIS_ERRORS as e:
                raise translate(e) from e
            reply = _producer.first_configure_reply(replies)
        return _producer.configure_result(reply)

    async def close(self) -> None:
        """Closes the connections."""
        await self._redis.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()
