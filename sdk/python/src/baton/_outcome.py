"""The outcome of one attempt: success, or a failure kind with a message and a stack, in the
form baton_v2_fail records (``kind``, ``error``, ``stack``)."""

from __future__ import annotations

import traceback
from typing import NamedTuple

from .errors import NonRetryableError

# Limits of what one failure record keeps (a deep recursion can make a huge traceback).
MESSAGE_MAX = 4096
STACK_MAX = 32768


class Outcome(NamedTuple):
    """kind: "" (success), "error", "non_retryable", "timeout" or "malformed"."""

    kind: str
    message: str = ""
    stack: str = ""

    @property
    def ok(self) -> bool:
        return not self.kind


SUCCESS = Outcome("")


def _cap(text: str, limit: int) -> str:
    """text, or its head and tail around a marker when longer than limit characters."""
    if len(text) <= limit:
        return text
    head = limit // 4
    tail = limit - head - 40
    return f"{text[:head]}\n... ({len(text) - head - tail} characters cut) ...\n{text[-tail:]}"


def exception_name(error: BaseException) -> str:
    """``ValueError``, or ``package.module.Error`` for exceptions outside the builtins."""
    cls = type(error)
    if cls.__module__ in ("builtins", "__main__"):
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


def failure(kind: str, message: str, stack: str = "") -> Outcome:
    return Outcome(kind, _cap(message, MESSAGE_MAX), _cap(stack, STACK_MAX))


def from_exception(error: BaseException,
                   non_retryable: tuple[type[BaseException], ...] = ()) -> Outcome:
    """The failure of a handler that raised: message ``<type>: <text>``, stack the Python
    traceback; non_retryable for NonRetryableError and the registration's extra types."""
    retry = not isinstance(error, (NonRetryableError, *non_retryable))
    stack = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    return failure("error" if retry else "non_retryable", f"{exception_name(error)}: {error}",
                   stack)


def timeout(seconds: int | None, where: str) -> Outcome:
    """The failure of an attempt that overran its execution_timeout; where says what the
    handler was doing when it was stopped."""
    return failure("timeout", f"execution_timeout of {seconds}s exceeded", where)
