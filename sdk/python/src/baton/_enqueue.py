"""Enqueue without I/O: requests are validated and turned into baton_v2_enqueue calls, replies
into results. The sync and the asyncio client share it, so they cannot drift apart."""

from __future__ import annotations

import enum
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Union

from . import _generated as gen
from . import _tracing, contract
from ._partitions import PartitionCounts, partition_of
from .errors import BatonError, InternalError, InvalidArgumentError, invalid, translate
from .ids import uuid7
from .keys import Keyspace

# Tasks per baton_v2_enqueue call (the Lua validates a whole call before writing anything).
CHUNK = 256

Payload = Union[Mapping[str, Any], bytes, bytearray, str]
Seconds = Union[int, float, timedelta]


class EnqueueStatus(str, enum.Enum):
    """What enqueue did with a task (compares equal to its string value)."""

    QUEUED = "queued"  # in the work stream now
    SCHEDULED = "scheduled"  # delayed: waits in the scheduled set until due
    DUPLICATE = "duplicate"  # this task id is live or finished recently: nothing written
    UNIQUE_CONFLICT = "unique_conflict"  # another task holds the unique key: nothing written

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class EnqueueResult:
    """The outcome of one enqueued task.

    ``stream_id`` is set when queued, ``due_ms`` (Unix ms, Redis clock) when scheduled,
    ``state`` (the existing task's state: queued, scheduled, retry, dead, done, cancelled, ...)
    for a duplicate, ``holder_id`` (the task holding the key) for a unique conflict.
    """

    task_id: str
    status: EnqueueStatus
    stream_id: str | None = None
    due_ms: int | None = None
    state: str | None = None
    holder_id: str | None = None

    @property
    def written(self) -> bool:
        """True when this call created the task (queued or scheduled)."""
        return self.status in (EnqueueStatus.QUEUED, EnqueueStatus.SCHEDULED)


@dataclass(frozen=True)
class TaskRequest:
    """One task for :meth:`Client.enqueue_many`; the fields are enqueue's arguments."""

    namespace: str
    task_type: str
    payload: Payload
    delay: Seconds = 0
    at: float | datetime | None = None
    max_retry: int = contract.DEFAULT_MAX_RETRY
    execution_timeout: int | None = None
    task_id: str | None = None
    unique_key: str | None = None
    unique_ttl: Seconds | None = None
    extra: Mapping[str, Any] | None = None


@dataclass
class Prepared:
    """A validated request: its baton_v2_enqueue item and unique key (whose lock key is in
    the task's partition, known only when the call is built)."""

    namespace: str
    task_type: str
    task_id: str
    item: tuple[gen.Arg, ...]
    unique_key: str | None


def _whole_seconds(field: str, value: object, rule: str) -> int:
    if isinstance(value, timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise invalid(field, f"{rule} (got {contract.brief(value)})")
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            raise invalid(field, f"{rule}: whole seconds (got {value!r})")
        value = int(value)
    return value


def _unix_seconds(at: float | datetime) -> float:
    if isinstance(at, datetime):
        if at.tzinfo is None:
            raise invalid("at", "must be a timezone-aware datetime or Unix seconds "
                                "(got a naive datetime)")
        return at.timestamp()
    if isinstance(at, bool) or not isinstance(at, (int, float)) or not math.isfinite(at):
        raise invalid("at", f"must be Unix seconds (got {contract.brief(at)})")
    return float(at)


def prepare(request: TaskRequest, spans: _tracing.ProducerSpans,
            now: float | None = None) -> Prepared:
    """Validates one request (every rule of the contract, in schema order) and builds its
    item. Raises InvalidArgumentError naming the field; nothing is written then."""
    task_id = uuid7() if request.task_id is None else contract.check_task_id(request.task_id)
    namespace = contract.check_name("namespace", request.namespace)
    task_type = contract.check_name("task_type", request.task_type)
    payload = contract.payload_text(request.payload)
    max_retry = contract.read_integer(contract.MAX_RETRY, request.max_retry)
    now = time.time() if now is None else now
    run_at_ms = 0
    if request.at is not None:
        if request.delay:
            raise invalid("at", "cannot be combined with delay (give one of them)")
        at = _unix_seconds(request.at)
        if not contract.MIN_CREATED_AT <= at <= contract.MAX_CREATED_AT:
            hint = ": milliseconds?" if at > contract.MAX_CREATED_AT else ""
            raise invalid("at", f"must be Unix seconds {contract.MIN_CREATED_AT}.."
                                f"{contract.MAX_CREATED_AT} (got {contract.brief(request.at)}"
                                f"{hint})")
        run_at_ms = max(1, math.ceil(at * 1000))
        delay = max(0, round(at - now))
        if delay > contract.MAX_DELAY_SECONDS:  # recorded as delay_seconds, which has this limit
            raise invalid("at", f"must be at most {contract.MAX_DELAY_SECONDS} s (365 days) "
                                f"ahead, the limit of delay_seconds (got {delay} s ahead)")
    else:
        try:
            delay = _whole_seconds("delay_seconds", request.delay,
                                   f"must be an integer 0..{contract.MAX_DELAY_SECONDS}")
            contract.check_integer(contract.DELAY_SECONDS, delay)
        except InvalidArgumentError as e:  # the argument's name, then the contract field's
            rule = e.message.removeprefix("delay_seconds: ")
            raise InvalidArgumentError(f"delay (delay_seconds): {rule}", field="delay") from None
    created_at = int(now)
    timeout: gen.Arg = ""
    if request.execution_timeout is not None:
        timeout = contract.read_integer(contract.EXECUTION_TIMEOUT, request.execution_timeout)
    extra = dict(request.extra) if request.extra else {}
    trace = spans.start(namespace, task_type, task_id)
    if trace and "trace" not in extra:
        extra["trace"] = trace
    extra_bytes = contract.extra_text(extra)
    unique_key: str | None = None
    unique_ttl = 0
    if request.unique_key is not None:
        if not isinstance(request.unique_key, str) or not request.unique_key:
            raise invalid("unique_key", f"must be a non-empty string "
                                        f"(got {contract.brief(request.unique_key)})")
        unique_ttl = _whole_seconds("unique_ttl", request.unique_ttl,
                                    "must be at least 1 second when unique_key is set")
        if unique_ttl < 1:
            raise invalid("unique_ttl", f"must be at least 1 second when unique_key is set "
                                        f"(got {unique_ttl})")
        unique_key = request.unique_key
    elif request.unique_ttl is not None:
        raise invalid("unique_ttl", "needs unique_key")
    item = (task_id, payload, max_retry, delay, created_at, timeout, extra_bytes, run_at_ms,
            unique_key or "", unique_ttl)
    return Prepared(namespace, task_type, task_id, item, unique_key)


def prepare_all(requests: Sequence[TaskRequest],
                spans: _tracing.ProducerSpans) -> list[Prepared]:
    """Validates every request first; the first invalid one fails the whole call with its
    index: ``requests[3]: max_retry: must be an integer 0..25 (got 99)``."""
    now = time.time()
    out = []
    for i, request in enumerate(requests):
        try:
            out.append(prepare(request, spans, now))
        except InvalidArgumentError as e:
            raise InvalidArgumentError(f"requests[{i}]: {e.message}", field=e.field) from None
    return out


def keyspace(keyspaces: dict[tuple[str, int], Keyspace], namespace: str,
             partition: int = 0) -> Keyspace:
    """The (cached) keyspace of a namespace's partition."""
    ks = keyspaces.get((namespace, partition))
    if ks is None:
        ks = keyspaces[(namespace, partition)] = Keyspace(namespace, partition)
    return ks


def calls(prepared: Sequence[Prepared], keyspaces: dict[tuple[str, int], Keyspace],
          partitions: PartitionCounts) -> list[tuple[gen.Call, list[int]]]:
    """The baton_v2_enqueue calls for prepared tasks: one per (namespace, partition, type) and
    chunk of CHUNK, each with the request indexes it carries (in order). Each task goes to the
    partition of its id under the namespace's count in partitions (its keys, its unique lock)."""
    groups: dict[tuple[str, int, str], list[int]] = {}
    for i, p in enumerate(prepared):
        partition = partition_of(p.task_id, partitions.count(p.namespace))
        groups.setdefault((p.namespace, partition, p.task_type), []).append(i)
    out = []
    for (namespace, partition, task_type), indexes in groups.items():
        ks = keyspace(keyspaces, namespace, partition)
        keys = ks.for_type(task_type)
        for start in range(0, len(indexes), CHUNK):
            chunk = indexes[start : start + CHUNK]
            items = [prepared[i].item for i in chunk]
            locks = [ks.unique(key) for i in chunk if (key := prepared[i].unique_key)]
            out.append((gen.enqueue(keys, len(chunk), items, locks), chunk))
    return out


def settle(prepared: Sequence[Prepared], calls: Sequence[tuple[gen.Call, list[int]]],
           replies: Sequence[Any]) -> list[EnqueueResult | BatonError]:
    """Each task's result, or the error of the call that carried it: a refused call wrote
    none of its tasks, while the other calls of the same round trip were written."""
    out: list[EnqueueResult | BatonError | None] = [None] * len(prepared)
    for (_, indexes), reply in zip(calls, replies, strict=True):
        if isinstance(reply, Exception):
            error = translate(reply)
            if error is not reply:
                error.__cause__ = reply
            for i in indexes:
                out[i] = error
            continue
        ids = [prepared[i].task_id for i in indexes]
        for i, result in zip(indexes, results(ids, reply), strict=True):
            out[i] = result
    return [r for r in out if r is not None]


def first_error(outcomes: Sequence[EnqueueResult | BatonError]) -> list[EnqueueResult]:
    """The results, or the first error raised (enqueue_many: one failed call fails it)."""
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
    return list(outcomes)  # type: ignore[arg-type]


def _s(value: object) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def results(task_ids: Sequence[str], reply: object) -> list[EnqueueResult]:
    """The results of one baton_v2_enqueue reply: a flat array of 2N values, status then detail
    for each task in call order (``[status_1, detail_1, status_2, detail_2, ...]``)."""
    if not isinstance(reply, list) or len(reply) != 2 * len(task_ids):
        raise InternalError(f"baton_v2_enqueue: unexpected reply {reply!r:.200}")
    out = []
    for i, task_id in enumerate(task_ids):
        raw_status, detail = reply[2 * i], reply[2 * i + 1]
        try:
            status = EnqueueStatus(_s(raw_status))
        except (TypeError, ValueError):
            raise InternalError(f"baton_v2_enqueue: unexpected result "
                                f"{[raw_status, detail]!r:.200}") from None
        if status is EnqueueStatus.QUEUED:
            out.append(EnqueueResult(task_id, status, stream_id=_s(detail)))
        elif status is EnqueueStatus.SCHEDULED:
            out.append(EnqueueResult(task_id, status, due_ms=int(detail)))
        elif status is EnqueueStatus.DUPLICATE:
            out.append(EnqueueResult(task_id, status, state=_s(detail)))
        else:
            out.append(EnqueueResult(task_id, status, holder_id=_s(detail)))
    return out
