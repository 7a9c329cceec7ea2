"""The task a handler receives, and how the worker rebuilds it from a dequeued stream entry.

Payload ownership (seed note 5.3: a Python handler that mutates its payload dict must not corrupt
it for anyone else). Baton's choice is a **private copy**: ``Task.payload`` is a plain ``dict``
parsed for this attempt alone from the payload bytes, which are immutable (``payload_bytes``).
Nothing else ever reads that dict: the worker records failures from the bytes, a retry is
delivered again from the bytes kept in Redis, and another handler (or another attempt) gets its
own parse. A handler may therefore use and even modify ``payload`` like any dict, pass it on as
``**kwargs`` or to libraries that expect a ``dict``; a read-only proxy would break exactly that
code while protecting nothing (nested values would stay mutable unless the whole tree were
rebuilt). The same holds for ``extra``.

Times are Unix **seconds** (``created_at``), as in every Baton language; ``deadline`` is on the
``time.monotonic()`` clock because it is only compared with this process' clock.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from . import contract

_NEVER = threading.Event()  # a cancel flag that is never set (tasks built outside a worker)


class Task:
    """One attempt of one task, as the handler sees it.

    Attributes:
        id: the task id (``task_id`` of the contract).
        namespace, task_type: where it was enqueued.
        payload: the payload, a private ``dict`` of this attempt (see the module docstring).
        payload_bytes: the payload exactly as the producer wrote it (JSON object text).
        attempt: 1 on the first run, 2 on the first retry, ...
        max_retry: retries allowed after the first run (the task runs at most 1 + max_retry).
        delay_seconds: the delay the producer asked for (already waited out).
        created_at: Unix seconds when the producer created the task.
        execution_timeout: the limit of one attempt in seconds, or None.
        extra: every other top-level field of the task document (``trace``, ``headers``,
            fields of newer producers), kept untouched.
        extra_bytes: those fields as delivered (JSON object text, b"" for none): what
            :meth:`to_document` writes, so their numbers keep their spelling.
        stream_id: the stream entry id of this delivery.
        deadline: ``time.monotonic()`` value (this process' clock, not Unix time) past which
            the attempt times out, or None; :meth:`remaining` gives the seconds left.
    """

    __slots__ = (
        "_cancel",
        "attempt",
        "created_at",
        "deadline",
        "delay_seconds",
        "execution_timeout",
        "extra",
        "extra_bytes",
        "id",
        "max_retry",
        "namespace",
        "payload",
        "payload_bytes",
        "stream_id",
        "task_type",
    )

    def __init__(
        self,
        *,
        id: str,
        namespace: str,
        task_type: str,
        payload: dict[str, Any],
        payload_bytes: bytes,
        attempt: int = 1,
        max_retry: int = contract.DEFAULT_MAX_RETRY,
        delay_seconds: int = 0,
        created_at: int = 0,
        execution_timeout: int | None = None,
        extra: dict[str, Any] | None = None,
        stream_id: str = "",
        deadline: float | None = None,
        cancel: threading.Event | None = None,
        extra_bytes: bytes | None = None,
    ):
        self.id = id
        self.namespace = namespace
        self.task_type = task_type
        self.payload = payload
        self.payload_bytes = payload_bytes
        self.attempt = attempt
        self.max_retry = max_retry
        self.delay_seconds = delay_seconds
        self.created_at = created_at
        self.execution_timeout = execution_timeout
        self.extra = {} if extra is None else extra
        self.extra_bytes = extra_bytes  # None: to_document serializes extra
        self.stream_id = stream_id
        self.deadline = deadline
        self._cancel = _NEVER if cancel is None else cancel

    @property
    def cancelled(self) -> bool:
        """True once the attempt should stop: its execution_timeout passed, the lease was lost
        (another worker may run the task now) or the worker gave up waiting at shutdown. Long
        synchronous handlers check it and return early (Python cannot stop a thread). Always
        False in ``executor="process"`` handlers: their child process is killed instead."""
        return self._cancel.is_set()

    def wait_cancelled(self, timeout: float | None = None) -> bool:
        """Sleeps up to timeout seconds, returning early (True) when the attempt is cancelled:
        a cancellable ``time.sleep`` for synchronous handlers."""
        return self._cancel.wait(timeout)

    def remaining(self) -> float | None:
        """Seconds left before the execution_timeout (negative when past), or None."""
        return None if self.deadline is None else self.deadline - time.monotonic()

    @property
    def last_attempt(self) -> bool:
        """True when a failure of this attempt sends the task to the dead-letter queue."""
        return self.attempt >= 1 + self.max_retry

    @property
    def headers(self) -> Mapping[str, str]:
        """The ``headers`` extra field (string metadata), or an empty mapping."""
        headers = self.extra.get("headers")
        return headers if isinstance(headers, Mapping) else {}

    @property
    def traceparent(self) -> str | None:
        """The W3C traceparent the producer sent (``trace.traceparent``), or None."""
        trace = self.extra.get("trace")
        value = trace.get("traceparent") if isinstance(trace, Mapping) else None
        return value if isinstance(value, str) else None

    def to_document(self) -> bytes:
        """The contract task document (JSON bytes); the payload bytes are spliced in as they
        came, so exotic numbers keep their spelling."""
        parts = [
            b'{"task_id":', json.dumps(self.id).encode(),
            b',"namespace":', json.dumps(self.namespace).encode(),
            b',"task_type":', json.dumps(self.task_type).encode(),
            b',"payload":', self.payload_bytes,
            b',"max_retry":', str(self.max_retry).encode(),
            b',"delay_seconds":', str(self.delay_seconds).encode(),
            b',"created_at":', str(self.created_at).encode(),
        ]  # fmt: skip
        if self.execution_timeout is not None:
            parts += [b',"execution_timeout":', str(self.execution_timeout).encode()]
        inner = self.extra_bytes.strip()[1:-1].strip() if self.extra_bytes else b""
        if inner:
            parts += [b",", inner]
        elif self.extra_bytes is None:
            for key, value in self.extra.items():
                parts += [b",", json.dumps(key, ensure_ascii=False).encode(), b":",
                          json.dumps(value, ensure_ascii=False).encode()]
        parts.append(b"}")
        return b"".join(parts)

    def __getstate__(self) -> dict[str, Any]:
        # The cancel flag belongs to this process; a task sent to a process pool gets none.
        return {name: getattr(self, name) for name in self.__slots__ if name != "_cancel"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            setattr(self, name, value)
        self._cancel = _NEVER

    def __repr__(self) -> str:
        return (f"Task(id={self.id!r}, namespace={self.namespace!r}, "
                f"task_type={self.task_type!r}, attempt={self.attempt})")


class MalformedEntry(Exception):
    """A delivered entry that is not a valid task (e.g. its payload is not a JSON object). The
    worker fails it with kind ``malformed``: it goes to the dead-letter queue with the reason."""


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _int(value: object, field: str) -> int:
    try:
        return int(_text(value))
    except ValueError:
        raise MalformedEntry(f"{field}: must be an integer (got {_text(value)[:40]!r})") from None


def decode_entry(namespace: str, task_type: str, values: Sequence[object],
                 cancel: threading.Event | None = None) -> Task:
    """The Task of one delivered entry of baton_v2_dequeue: ``SID, id, payload, max_retry,
    delay_seconds, created_at, execution_timeout, extra, attempt``. Raises MalformedEntry."""
    sid, task_id, payload, max_retry, delay, created, timeout, extra, attempt = values
    payload_bytes = payload if isinstance(payload, bytes) else _text(payload).encode()
    try:
        parsed = contract.json_loads(payload_bytes)
    except (ValueError, RecursionError) as e:
        raise MalformedEntry(f"payload: not valid JSON: {e}") from None
    if not isinstance(parsed, dict):
        raise MalformedEntry(
            f"payload: must be a JSON object (got {contract.json_type_name(parsed)})")
    extras: dict[str, Any] = {}
    extra_bytes = extra if isinstance(extra, bytes) else _text(extra).encode()
    if extra:
        try:
            decoded = contract.json_loads(extra if isinstance(extra, bytes) else _text(extra))
        except (ValueError, RecursionError) as e:
            raise MalformedEntry(f"extra: not valid JSON: {e}") from None
        if not isinstance(decoded, dict):
            raise MalformedEntry(
                f"extra: must be a JSON object (got {contract.json_type_name(decoded)})")
        extras = decoded
    timeout_text = _text(timeout)
    return Task(
        id=_text(task_id),
        namespace=namespace,
        task_type=task_type,
        payload=parsed,
        payload_bytes=payload_bytes,
        attempt=_int(attempt, "attempt") + 1,
        max_retry=_int(max_retry, "max_retry"),
        delay_seconds=_int(delay, "delay_seconds"),
        created_at=_int(created, "created_at"),
        execution_timeout=_int(timeout_text, "execution_timeout") if timeout_text else None,
        extra=extras,
        stream_id=_text(sid),
        cancel=cancel,
        extra_bytes=extra_bytes,
    )
