"""W3C trace context: the producer's span is the parent of the consumer's, a task enqueued in a
handler continues the trace, and without OpenTelemetry the context is still carried."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import baton
from baton import _tracing
from harness import State, free_port, wait_for

_EXPORTER = InMemorySpanExporter()


@pytest.fixture(scope="module", autouse=True)
def provider() -> None:
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
    trace.set_tracer_provider(tracer_provider)


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    _EXPORTER.clear()
    yield _EXPORTER


def run_chain(url: str, client: baton.Client, ns: str, state: State) -> tuple[str, str]:
    """Enqueues a parent task whose handler enqueues a child; returns both trace fields."""
    seen: dict[str, str | None] = {}
    lock = threading.Lock()
    app = baton.Worker(url, block_ms=500)

    @app.task(ns, "parent")
    def parent(task: baton.Task) -> None:
        with lock:
            seen["parent"] = task.traceparent
        with baton.Client(url) as inner:
            inner.enqueue(ns, "child", {})

    @app.task(ns, "child")
    async def child(task: baton.Task) -> None:
        seen["child"] = task.traceparent

    client.enqueue(ns, "parent", {})
    app.start()
    try:
        assert wait_for(lambda: len(seen) == 2)
    finally:
        app.stop()
        app.join(60)
    assert seen["parent"] and seen["child"]
    return seen["parent"], seen["child"]


def test_spans_link_producer_and_consumer(url: str, client: baton.Client, ns: str,
                                          state: State, spans: InMemorySpanExporter) -> None:
    parent_tp, child_tp = run_chain(url, client, ns, state)
    by_name = {s.name: s for s in spans.get_finished_spans()}
    send_parent = by_name[f"send {ns}/parent"]
    process_parent = by_name[f"process {ns}/parent"]
    send_child = by_name[f"send {ns}/child"]
    process_child = by_name[f"process {ns}/child"]
    trace_id = send_parent.context.trace_id
    assert {s.context.trace_id for s in by_name.values()} == {trace_id}  # one trace
    assert process_parent.parent is not None
    assert process_parent.parent.span_id == send_parent.context.span_id
    assert send_child.parent is not None
    assert send_child.parent.span_id == process_parent.context.span_id
    assert process_child.parent is not None
    assert process_child.parent.span_id == send_child.context.span_id
    assert process_parent.kind == trace.SpanKind.CONSUMER
    assert send_parent.kind == trace.SpanKind.PRODUCER
    # The task carried the producer span's W3C traceparent.
    version, tp_trace, tp_parent, flags = parent_tp.split("-")
    assert (version, tp_trace, tp_parent) == ("00", f"{trace_id:032x}",
                                              f"{send_parent.context.span_id:016x}")
    assert int(flags, 16) & 1  # sampled
    assert child_tp.split("-")[1] == f"{trace_id:032x}"


def test_caller_trace_field_is_kept(client: baton.Client, ns: str, state: State) -> None:
    given = {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
    result = client.enqueue(ns, "t", {}, extra={"trace": given})
    extra = json.loads(state.delivered("t")[result.task_id]["extra"])
    assert extra["trace"] == given


def test_context_is_carried_without_opentelemetry(url: str, client: baton.Client, ns: str,
                                                  state: State,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_tracing, "_PROPAGATOR", None)
    given = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    seen: list[str | None] = []
    app = baton.Worker(url, block_ms=500)

    @app.task(ns, "parent")
    def parent(task: baton.Task) -> None:
        with baton.Client(url) as inner:
            inner.enqueue(ns, "child", {})

    @app.task(ns, "child")
    def child(task: baton.Task) -> None:
        seen.append(task.traceparent)

    client.enqueue(ns, "parent", {}, extra={"trace": {"traceparent": given}})
    untraced = client.enqueue(ns, "plain", {})
    app.start()
    try:
        assert wait_for(lambda: seen == [given])
    finally:
        app.stop()
        app.join(60)
    assert "trace" not in (state.delivered("plain")[untraced.task_id]["extra"] or b"{}").decode()


def test_process_handlers_are_traced(url: str, client: baton.Client, ns: str, state: State,
                                     spans: InMemorySpanExporter) -> None:
    """executor="process": the worker makes the CONSUMER span, and a task the child process
    enqueues continues that trace (the child has no tracer provider of its own)."""
    import proc_handlers

    seen: list[str | None] = []
    app = baton.Worker(url, block_ms=500)
    app.register(ns, "parent", proc_handlers.enqueue_child, executor="process", concurrency=1)

    @app.task(ns, "child")
    def child(task: baton.Task) -> None:
        seen.append(task.traceparent)

    client.enqueue(ns, "parent", {"url": url})
    app.start()
    try:
        assert wait_for(lambda: len(seen) == 1, timeout=60)
    finally:
        app.stop()
        app.join(60)
    by_name = {s.name: s for s in spans.get_finished_spans()}
    send_parent = by_name[f"send {ns}/parent"]
    process_parent = by_name[f"process {ns}/parent"]
    assert process_parent.kind == trace.SpanKind.CONSUMER
    assert process_parent.parent is not None
    assert process_parent.parent.span_id == send_parent.context.span_id
    assert seen[0] is not None
    _, trace_id, parent_span, _ = seen[0].split("-")
    assert trace_id == f"{send_parent.context.trace_id:032x}"
    assert parent_span == f"{process_parent.context.span_id:016x}"


def document(ns: str, task_id: str, extra: str = "") -> str:
    return (f'{{"task_id":"{task_id}","namespace":"{ns}","task_type":"doc","payload":{{}},'
            f'"max_retry":1,"delay_seconds":0,"created_at":1722489600{extra}}}')


def test_enqueue_document_makes_a_producer_span(client: baton.Client, ns: str, state: State,
                                                spans: InMemorySpanExporter) -> None:
    """enqueue_document, like enqueue: a PRODUCER span per task, and a document without a trace
    field gets the span's traceparent appended after its own fields (kept as written)."""
    task_id = baton.uuid7()
    result = client.enqueue_document(document(ns, task_id, ',"x_price":1.10'))
    assert result.status == "queued"
    (span,) = [s for s in spans.get_finished_spans() if s.name == f"send {ns}/doc"]
    assert span.kind == trace.SpanKind.PRODUCER
    assert span.status.status_code == trace.StatusCode.UNSET
    assert span.attributes is not None
    assert span.attributes["messaging.message.id"] == task_id
    assert span.attributes["messaging.destination.name"] == f"{ns}/doc"
    extra = state.delivered("doc")[task_id]["extra"]
    assert extra.startswith(b'{"x_price":1.10,"trace":{"traceparent":"00-')
    traceparent = json.loads(extra)["trace"]["traceparent"]
    assert traceparent.split("-")[1:3] == [f"{span.context.trace_id:032x}",
                                           f"{span.context.span_id:016x}"]
    # Without other fields the trace is the only one.
    bare_id = baton.uuid7()
    client.enqueue_document(document(ns, bare_id))
    assert set(json.loads(state.delivered("doc")[bare_id]["extra"])) == {"trace"}


def test_enqueue_document_keeps_its_own_trace(client: baton.Client, ns: str, state: State,
                                              spans: InMemorySpanExporter) -> None:
    task_id = baton.uuid7()
    own = ',"trace":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}'
    client.enqueue_document(document(ns, task_id, own))
    assert state.delivered("doc")[task_id]["extra"] == ("{" + own[1:] + "}").encode()
    assert [s.name for s in spans.get_finished_spans()] == [f"send {ns}/doc"]


def test_enqueue_document_span_records_the_error(ns: str,
                                                 spans: InMemorySpanExporter) -> None:
    """A failed send ends the span with the error; an invalid document makes no span."""
    with baton.Client(f"redis://127.0.0.1:{free_port()}") as c:
        with pytest.raises(baton.UnavailableError):
            c.enqueue_document(document(ns, baton.uuid7()))
        with pytest.raises(baton.InvalidArgumentError, match=r"^max_retry: "):
            c.enqueue_document(document(ns, baton.uuid7()).replace('"max_retry":1',
                                                                    '"max_retry":99'))
    (span,) = spans.get_finished_spans()
    assert span.name == f"send {ns}/doc"
    assert span.status.status_code == trace.StatusCode.ERROR
    assert [e.name for e in span.events] == ["exception"]


def test_async_enqueue_document_span_is_the_consumer_parent(
        url: str, ns: str, state: State, spans: InMemorySpanExporter) -> None:
    """AsyncClient.enqueue_document: its PRODUCER span is the parent of the worker's CONSUMER
    span, and a failed send is recorded on it."""
    task_id = baton.uuid7()

    async def produce() -> None:
        async with baton.AsyncClient(url) as c:
            assert (await c.enqueue_document(document(ns, task_id))).status == "queued"
        async with baton.AsyncClient(f"redis://127.0.0.1:{free_port()}") as down:
            with pytest.raises(baton.UnavailableError):
                await down.enqueue_document(document(ns, baton.uuid7()))

    asyncio.run(produce())
    seen: list[str | None] = []
    app = baton.Worker(url, block_ms=500)

    @app.task(ns, "doc")
    async def doc(task: baton.Task) -> None:
        seen.append(task.traceparent)

    app.start()
    try:
        assert wait_for(lambda: len(seen) == 1)
    finally:
        app.stop()
        app.join(60)
    sends = [s for s in spans.get_finished_spans() if s.name == f"send {ns}/doc"]
    assert [s.status.status_code for s in sends] == [trace.StatusCode.UNSET,
                                                      trace.StatusCode.ERROR]
    (process,) = [s for s in spans.get_finished_spans() if s.name == f"process {ns}/doc"]
    assert process.parent is not None
    assert process.parent.span_id == sends[0].context.span_id
    assert process.context.trace_id == sends[0].context.trace_id
    assert seen[0] is not None and seen[0].split("-")[2] == f"{sends[0].context.span_id:016x}"
