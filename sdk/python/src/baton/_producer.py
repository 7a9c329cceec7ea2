"""What the sync and the asyncio client share besides enqueue: argument handling of
enqueue_document, cancel and configure, and reply parsing."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from . import _enqueue, _tracing, contract
from . import _generated as gen
from .errors import InternalError, NotFoundError, invalid
from .keys import Keyspace


def keyspace(keyspaces: dict[str, Keyspace], namespace: str) -> Keyspace:
    ks = keyspaces.get(namespace)
    if ks is None:
        ks = keyspaces[namespace] = Keyspace(namespace)
    return ks


def prepare_document(document: bytes | str | contract.TaskDocument, at: float | datetime | None,
                     unique_key: str | None, unique_ttl: _enqueue.Seconds | None,
                     keyspaces: dict[str, Keyspace],
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
        keyspaces, _tracing.NoSpans())
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
    return _enqueue.Prepared(doc.namespace, doc.task_type, doc.task_id, item, probe.unique_lock)


def cancel_call(keyspaces: dict[str, Keyspace], namespace: str, task_id: str,
                record: object) -> gen.Call:
    """The baton_v2_cancel call for a task whose record (HGET tasks ID) is given."""
    if record is None:
        raise NotFoundError(f"no live task {task_id} in namespace {namespace}")
    text = record.decode("utf-8", "replace") if isinstance(record, bytes) else str(record)
    task_type = text.split("|")[1]
    return gen.cancel(keyspace(keyspaces, namespace).for_type(task_type), task_id)


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
