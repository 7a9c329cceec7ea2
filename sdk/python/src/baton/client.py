"""The producer, synchronous: :class:`Client`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from types import TracebackType
from typing import Any

import redis

from . import _enqueue, _producer, _redis, _tracing, contract
from . import _generated as gen
from ._coalesce import SyncCoalescer
from ._durable import Wait
from ._enqueue import EnqueueResult, Payload, Seconds, TaskRequest
from ._partitions import PartitionCounts, hmget_command
from .errors import BatonError, translate
from .keys import Keyspace

_REDIS_ERRORS = (redis.exceptions.RedisError, OSError)


class Client:
    """Enqueues tasks (now, delayed, at a time, idempotent by id or unique key) and cancels them.

    Thread-safe: it uses a connection pool, so one Client may serve a whole process; enqueue
    calls made at the same time by several threads share round trips (group commit: a lone call
    is sent at once, calls arriving while it is in flight go together in the next). It connects
    on first use (for a redis+cluster:// URL: when made, to learn the slot map), and every
    connection first checks that Redis has the functions library this
    SDK speaks (``VersionMismatchError`` otherwise: run ``baton init``). A broken connection
    fails the call in progress with ``UnavailableError`` (the task may or may not have been
    written); the next call reconnects. Enqueueing again with the same task id is always safe: a
    task already written comes back as ``duplicate``. The default id is new on every call, so
    to retry pass your own: ``task_id=baton.uuid7()``, made once.

    A namespace spread over partitions (``HGET baton:v2:partitions NS``; docs/cluster.md,
    "Partitions") is handled here: the count is read on first use of a namespace and again
    when older than 5 s (cancel and configure read it afresh every time), each task goes to the
    partition of its id, and its document keeps the namespace.

    Args:
        url: ``redis://[user:password@]host:port[/db]``, ``rediss://...``, ``unix://path``, or
            ``redis+cluster://[user:password@]host:port[,host:port...]`` (seed nodes of a Redis
            Cluster: every call goes to the primary of its namespace's slot).
        redis_options: extra keyword arguments for ``redis.Redis.from_url`` (for a cluster:
            ``redis.cluster.RedisCluster``).
        socket_timeout: seconds to wait for a reply.
        wait_replicas: durable enqueue (0 = off): after each enqueue round trip, ``WAIT`` for
            this many replicas of the primary that took the tasks. Fewer acknowledgements
            within wait_timeout make the enqueue raise ``UnavailableError`` (the task was
            written on the primary and may still run, but it is not known to be durable).
        wait_timeout: seconds WAIT waits for the replicas (default 1); added to
            socket_timeout.
    """

    def __init__(self, url: str = "redis://127.0.0.1:6379", *,
                 redis_options: Mapping[str, Any] | None = None,
                 socket_timeout: float | None = 10.0, wait_replicas: int = 0,
                 wait_timeout: float = 1.0):
        self.url = url
        self._wait = Wait.of(wait_replicas, wait_timeout)
        if self._wait is not None and socket_timeout is not None:
            socket_timeout += wait_timeout  # a reply may come after WAIT's whole timeout
        self._redis = _redis.sync_client(url, redis_options, socket_timeout)
        self._keyspaces: dict[tuple[str, int], Keyspace] = {}
        self._partitions = PartitionCounts()
        self._coalescer = SyncCoalescer(self._send_each)

    @property
    def redis(self) -> _redis.SyncRedis:
        """The underlying redis-py client (bytes replies): a redis.Redis, or a
        redis.cluster.RedisCluster for a redis+cluster:// URL."""
        return self._redis

    def _fcall(self, call: gen.Call) -> Any:
        try:
            return _redis.execute(self._redis, *_redis.fcall_args(call))
        except _REDIS_ERRORS as e:
            raise translate(e) from e

    def _read_partitions(self, namespaces: Iterable[str], fresh: bool = False) -> None:
        """Reads the partition counts never read or older than 5 s (fresh: all of them) in
        one HMGET."""
        wanted = list(dict.fromkeys(namespaces)) if fresh else self._partitions.stale(namespaces)
        if wanted:
            try:
                reply = _redis.execute(self._redis, *hmget_command(wanted))
            except _REDIS_ERRORS as e:
                raise translate(e) from e
            self._partitions.update(wanted, reply)

    def library_version(self) -> str:
        """Connects if needed and returns the functions library version ("2")."""
        return _redis.check_version_reply(self._fcall(gen.version()))

    def enqueue(
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
        """Validates and enqueues one task.

        Args:
            namespace, task_type: where it goes (``^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$``).
            payload: a JSON object: a mapping (serialized compactly), or JSON text as bytes/str
                (stored and delivered byte for byte).
            delay: seconds (int or timedelta) before the first run; recorded as delay_seconds.
            at: first run time instead of delay: Unix seconds or an aware datetime.
            max_retry: retries after the first run (0..25, default 3).
            execution_timeout: seconds one attempt may take (1..86400), or None.
            task_id: your own id (idempotent: enqueueing it again is a ``duplicate``); default
                a new UUIDv7.
            unique_key, unique_ttl: while a task holding the key is within unique_ttl
                seconds, another enqueue with the key is a ``unique_conflict``.
            extra: other top-level fields of the task (``headers``, ``trace``, your own); they
                travel untouched to every consumer.

        Returns an EnqueueResult whose status is queued, scheduled, duplicate or
        unique_conflict. Raises InvalidArgumentError naming the field and the rule (nothing
        is written), UnavailableError, VersionMismatchError.
        """
        request = TaskRequest(namespace, task_type, payload, delay, at, max_retry,
                              execution_timeout, task_id, unique_key, unique_ttl, extra)
        with _tracing.ProducerSpans() as spans:
            prepared = _enqueue.prepare(request, spans)
            result = self._coalescer.submit(prepared)
        return result

    def enqueue_many(self, requests: Iterable[TaskRequest]) -> list[EnqueueResult]:
        """Enqueues many tasks in one round trip (one call per namespace partition, type and
        256 tasks); results in request order. Every request is validated first: one invalid
        request fails the call (``requests[3]: max_retry: ...``) and nothing is written. If
        Redis fails midway some calls may have been written: retrying with the same task ids
        is safe."""
        with _tracing.ProducerSpans() as spans:
            results = self._send(_enqueue.prepare_all(list(requests), spans))
        return results

    def enqueue_document(self, document: bytes | str | contract.TaskDocument, *,
                         at: float | datetime | None = None, unique_key: str | None = None,
                         unique_ttl: Seconds | None = None) -> EnqueueResult:
        """Enqueues a whole task document (contract/task.schema.json) as it is: its id,
        created_at, delay_seconds, payload bytes and extra fields (e.g. a task produced
        elsewhere). The document is validated first. Like enqueue, it makes a PRODUCER span
        (with OpenTelemetry); a document without a ``trace`` field gets one pointing at that
        span (or, without OpenTelemetry, the trace of the task being handled), while a
        document's own ``trace`` field is kept as written."""
        with _tracing.ProducerSpans() as spans:
            prepared = _producer.prepare_document(document, at, unique_key, unique_ttl, spans)
            result = self._coalescer.submit(prepared)
        return result

    def _send(self, prepared: list[_enqueue.Prepared]) -> list[EnqueueResult]:
        return _enqueue.first_error(self._send_each(prepared))

    def _send_each(
            self, prepared: list[_enqueue.Prepared]) -> list[EnqueueResult | BatonError]:
        """One round trip; each task's result or the error of its call."""
        if not prepared:
            return []
        self._read_partitions(p.namespace for p in prepared)
        calls = _enqueue.calls(prepared, self._keyspaces, self._partitions)
        if len(calls) == 1 and self._wait is None:
            replies: list[Any] = [self._fcall(calls[0][0])]
        else:
            try:
                replies = _redis.pipeline(self._redis, [_redis.fcall_args(c) for c, _ in calls],
                                          self._wait)
            except _REDIS_ERRORS as e:
                raise translate(e) from e
        return _enqueue.settle(prepared, calls, replies)

    def cancel(self, namespace: str, task_id: str) -> None:
        """Cancels a task that has not started (queued, scheduled or waiting to retry); it
        becomes final ``cancelled``. NotFoundError when there is no live task with that id,
        ConflictError when it is running or dead. In a partitioned namespace it looks in the
        id's partition first, then in the others."""
        contract.check_name("namespace", namespace)
        contract.check_task_id(task_id)
        # Read now, not from the 5 s copy: a task may be in a partition added a moment ago.
        self._read_partitions([namespace], fresh=True)
        order = _producer.cancel_order(namespace, task_id, self._partitions.count(namespace))
        commands = _producer.record_commands(self._keyspaces, namespace, task_id, order)
        try:
            records = [_redis.execute(self._redis, *commands[0])]
            if records[0] is None and len(order) > 1:
                records += _redis.pipeline(self._redis, commands[1:])
        except _REDIS_ERRORS as e:
            raise translate(e) from e
        partition, record = _producer.found(order[: len(records)], records)
        self._fcall(_producer.cancel_call(self._keyspaces, namespace, partition, task_id,
                                          record))

    def configure(self, namespace: str, **settings: int | str | None) -> dict[str, int]:
        """Changes namespace settings (events_maxlen, done_retention_s, dlq_max,
        dlq_retention_s, lease_ms; None = back to the default) and returns all of them. No
        argument: read only. All or nothing: a value out of range changes nothing. In a
        partitioned namespace every partition is written and partition 0's settings returned."""
        contract.check_name("namespace", namespace)
        items = _producer.configure_items(settings)
        if items:  # read now, not from the 5 s copy: a partition added a moment ago too
            self._read_partitions([namespace], fresh=True)
        calls = _producer.configure_calls(self._keyspaces, namespace,
                                          self._partitions.count(namespace), items)
        if len(calls) == 1:
            reply = self._fcall(calls[0])
        else:
            try:
                replies = _redis.pipeline(self._redis, [_redis.fcall_args(c) for c in calls])
            except _REDIS_ERRORS as e:
                raise translate(e) from e
            reply = _producer.first_configure_reply(replies)
        return _producer.configure_result(reply)

    def close(self) -> None:
        """Closes the connections."""
        self._redis.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
