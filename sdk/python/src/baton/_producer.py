"""What the sync and the asyncio client share besides enqueue: argument handling of
enqueue_document, cancel and configure over a namespace's partitions, and reply parsing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from . import _enqueue, _tracing, contract
from . import _generated as gen
from ._partitions import partition_of
from .errors import InternalError, NotFoundError, invalid, translate
from .keys import Keyspace


def prepare_document(document: bytes | str | contract.TaskDocument, at: float | datetime | None,
                     unique_key: str | None, unique_ttl: _enqueue.Seconds | None,
                     spans: _tracing.ProducerSpans) -> _enqueue.Prepared:
    """The item of a whole task document, enqueued as it is (id, created_at, payload bytes,
    extra fields); only the scheduling (at) and the unique key come from the arguments. Once it
    is valid, the task's PRODUCER span starts in spans; a document without a ``trace`` field
    gets the span's trace context (as enqueue does), one with a ``trace`` field keeps it."""
    doc = document if isinstance(document, contract.TaskDocument) else \
        contract.parse_task_document(document)
    contract.check_extra(doc.extra, from_document=True)
    # Reuse the request rules for the scheduling arguments (no span for this probe).
    probe = _enqueue.prepare(
        _enqueue.TaskRequest(doc.namespace, doc.task_type, b"{}", at=at, task_id=doc.task_id,
                             unique_key=unique_key, unique_ttl=unique_ttl),
        _tracing.NoSpans())
    run_at_ms = probe.item[7]
    timeout: gen.Arg = "" if doc.execution_timeout is None else doc.execution_timeout
    extra = b""
    if doc.extra:  # as written in the document when parsed here (numbers keep their spelling)
        extra = doc.extra_text or contract.dumps("extra", doc.extra)
    trace = spans.start(doc.namespace, doc.task_type, doc.task_id)
    if trace and "trace" not in doc.extra:  # appended: the fields as written stay as they are
        member = b'"trace":' + contract.dumps("extra.trace", trace)
        extra = extra[:-1] + b"," + member + b"}" if extra else b"{" + member + b"}"
    item = (doc.task_id, doc.payload, doc.max_retry, doc.delay_seconds, doc.created_at, timeout,
            extra, run_at_ms, probe.item[8], probe.item[9])
    return _enqueue.Prepared(doc.namespace, doc.task_type, doc.task_id, item, probe.unique_key)


def cancel_order(namespace: str, task_id: str, count: int) -> list[int]:
    """The partitions to look for a task in: its id's partition first (where this SDK puts
    it), then the others (where it went before the count grew)."""
    contract.check_name("namespace", namespace)
    contract.check_task_id(task_id)
    first = partition_of(task_id, count)
    return [first, *(p for p in range(count) if p != first)]


def record_commands(keyspaces: dict[tuple[str, int], Keyspace], namespace: str, task_id: str,
                    partitions: Sequence[int]) -> list[list[gen.Arg]]:
    """HGET tasks ID in each partition."""
    return [["HGET", _enqueue.keyspace(keyspaces, namespace, p).of("tasks"), task_id]
            for p in partitions]


def found(partitions: Sequence[int], records: Sequence[object]) -> tuple[int, object]:
    """The first partition whose record is there, and the record (None: in none of them)."""
    for partition, record in zip(partitions, records, strict=True):
        if isinstance(record, BaseException):
            raise translate(record)
        if record is not None:
            return partition, record
    return partitions[0], None


def cancel_call(keyspaces: dict[tuple[str, int], Keyspace], namespace: str, partition: int,
                task_id: str, record: object) -> gen.Call:
    """The baton_v2_cancel call for a task whose record (HGET tasks ID) in a partition is
    given."""
    if record is None:
        raise NotFoundError(f"no live task {task_id} in namespace {namespace}")
    text = record.decode("utf-8", "replace") if isinstance(record, bytes) else str(record)
    task_type = text.split("|")[1]
    return gen.cancel(_enqueue.keyspace(keyspaces, namespace, partition).for_type(task_type),
                      task_id)


def configure_calls(keyspaces: dict[tuple[str, int], Keyspace], namespace: str, count: int,
                    items: list[tuple[gen.Arg, gen.Arg]]) -> list[gen.Call]:
    """baton_v2_configure of every partition (only partition 0 when it only reads)."""
    partitions = range(count) if items else range(1)
    return [gen.configure({"config": _enqueue.keyspace(keyspaces, namespace, p).of("config")},
                          items) for p in partitions]


def first_configure_reply(replies: Sequence[object]) -> object:
    """Partition 0's reply; the first partition's error, if any refused."""
    for reply in replies:
        if isinstance(reply, Exception):
            raise translate(reply)
    return replies[0]


def configure_items(settings: Mapping[str, int | str | None]) -> list[tuple[gen.Arg, gen.Arg]]:
    items: list[tuple[gen.Arg, gen.Arg]] = []
    for name, value in settings.items():
        if name not in gen.NAMESPACE_CONFIG:
            raise invalid(name, f"is not a setting (settings: {', '.join(gen.NAMESPACE_CONFIG)})")
        items.append((name, "" if value is None else value))
    return items


def configure_result(reply: object) -> dict[str, int]:
    if not isinstance(reply, list) or len(reply) % 2:
        raise InternalError(f"baton_v2_configure: unexpected reply {reply!r:.200}")
    out = {}
    for i in range(0, len(reply), 2):
        name = reply[i]
        out[name.decode() if isinstance(name, bytes) else str(name)] = int(reply[i + 1])
    return out
