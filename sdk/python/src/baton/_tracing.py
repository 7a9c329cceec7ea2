"""W3C trace context in the contract's ``trace`` field, with optional OpenTelemetry spans.

- Producer: when ``opentelemetry-api`` is installed and a tracer provider records spans, each
  enqueued task gets a PRODUCER span ``send NS/TYPE`` and its ``trace.traceparent`` (and
  ``tracestate``) point at that span. Without OpenTelemetry, a task enqueued from inside a
  handler carries the trace context of the task being handled, so a chain of tasks keeps one
  trace across languages.
- Consumer: the worker runs each handler inside a CONSUMER span ``process NS/TYPE`` whose parent
  is the task's traceparent (when OpenTelemetry is installed), and makes the task's trace context
  the current one for tasks the handler enqueues. For ``executor="process"`` the span is made in
  the worker process and its context is handed to the child, which runs the handler in it.
A ``trace`` field the caller sets in ``extra`` is always kept as given.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import Any

try:  # optional extra: pip install './sdk/python[otel]'
    from opentelemetry import context as otel_context
    from opentelemetry import trace as otel_trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    _PROPAGATOR: TraceContextTextMapPropagator | None = TraceContextTextMapPropagator()
except ImportError:  # pragma: no cover - exercised by installs without the extra
    _PROPAGATOR = None

_TRACE_KEYS = ("traceparent", "tracestate")
# The trace field of the task whose handler runs in this context (thread or asyncio task).
current_trace: ContextVar[Mapping[str, str] | None] = ContextVar("baton_current_trace",
                                                                 default=None)


def otel_available() -> bool:
    """True when opentelemetry-api is importable (spans are made if a provider records them)."""
    return _PROPAGATOR is not None


def _carrier(trace: object) -> dict[str, str]:
    if not isinstance(trace, Mapping):
        return {}
    return {k: v for k, v in trace.items() if k in _TRACE_KEYS and isinstance(v, str)}


class ProducerSpans:
    """The PRODUCER spans of one enqueue call (one per task), ended together after the call."""

    def __init__(self) -> None:
        self._spans: list[Any] = []

    def start(self, namespace: str, task_type: str, task_id: str) -> dict[str, str] | None:
        """Starts the task's span; returns the trace field to send, or None for none."""
        if _PROPAGATOR is not None:
            tracer = otel_trace.get_tracer("baton")
            span = tracer.start_span(
                f"send {namespace}/{task_type}",
                kind=otel_trace.SpanKind.PRODUCER,
                attributes={
                    "messaging.system": "baton",
                    "messaging.operation.type": "send",
                    "messaging.destination.name": f"{namespace}/{task_type}",
                    "messaging.message.id": task_id,
                },
            )
            if span.is_recording():
                self._spans.append(span)
                carrier: dict[str, str] = {}
                _PROPAGATOR.inject(carrier, context=otel_trace.set_span_in_context(span))
                if carrier.get("traceparent"):
                    return carrier
        carried = current_trace.get()
        return dict(carried) if carried else None

    def __enter__(self) -> ProducerSpans:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: object) -> None:
        """Ends the spans, with the error that left the block if one did (it is not kept)."""
        self.end(error)

    def end(self, error: BaseException | None = None) -> None:
        for span in self._spans:
            if error is not None:
                span.record_exception(error)
                span.set_status(otel_trace.Status(otel_trace.StatusCode.ERROR, str(error)))
            span.end()
        self._spans.clear()


class NoSpans(ProducerSpans):
    """Makes no span and carries no trace (for validation that sends nothing)."""

    def start(self, namespace: str, task_type: str, task_id: str) -> dict[str, str] | None:
        return None


@contextlib.contextmanager
def consumer_span(namespace: str, task_type: str, task_id: str, attempt: int,
                  trace: object) -> Iterator[None]:
    """Runs the block as the handling of one task: its trace context is the current one, and
    with OpenTelemetry a CONSUMER span (child of the producer's) covers it. Exceptions pass
    through (recorded on the span)."""
    carrier = _carrier(trace)
    token = current_trace.set(carrier or None)
    try:
        if _PROPAGATOR is None:
            yield
            return
        parent = _PROPAGATOR.extract(carrier) if carrier else None
        tracer = otel_trace.get_tracer("baton")
        with tracer.start_as_current_span(
            f"process {namespace}/{task_type}",
            context=parent,
            kind=otel_trace.SpanKind.CONSUMER,
            attributes={
                "messaging.system": "baton",
                "messaging.operation.type": "process",
                "messaging.destination.name": f"{namespace}/{task_type}",
                "messaging.message.id": task_id,
                "baton.attempt": attempt,
            },
        ):
            yield
    finally:
        current_trace.reset(token)


def handing_over() -> dict[str, str] | None:
    """The trace context of the handling in progress, for a child process: the current span's
    (OpenTelemetry), else the carried trace field."""
    if _PROPAGATOR is not None:
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier)
        if carrier.get("traceparent"):
            return carrier
    carried = current_trace.get()
    return dict(carried) if carried else None


@contextlib.contextmanager
def handed_over(carrier: Mapping[str, str] | None) -> Iterator[None]:
    """In a process slot: runs the block in the context the worker handed over (no new span;
    the worker's CONSUMER span covers the attempt)."""
    token = current_trace.set(carrier or None)
    attached = None
    try:
        if _PROPAGATOR is not None and carrier:
            attached = otel_context.attach(_PROPAGATOR.extract(carrier))
        yield
    finally:
        if attached is not None:
            otel_context.detach(attached)
        current_trace.reset(token)
