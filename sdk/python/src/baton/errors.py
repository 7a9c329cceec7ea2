"""Errors of the SDK: one class per contract code (generated from contract/errors.json), the
exception a handler raises to skip retries, and the translation of redis-py's errors.

Every error the SDK raises is a :class:`BatonError` with the contract ``code``; refusals of the
Redis Functions library (``BATON_INVALID field: rule``) keep their words without the prefix, so a
bad field reads the same whether the SDK or Redis found it.
"""

from __future__ import annotations

import redis.exceptions

from ._errbase import BatonError
from ._generated import (
    ERRORS_BY_LUA,
    REDIS_ERRORS,
    AlreadyExistsError,
    ConflictError,
    InternalError,
    InvalidArgumentError,
    NotFoundError,
    ResourceExhaustedError,
    UnavailableError,
    VersionMismatchError,
)

__all__ = [
    "AlreadyExistsError",
    "BatonError",
    "ConflictError",
    "InternalError",
    "InvalidArgumentError",
    "NonRetryableError",
    "NotFoundError",
    "ResourceExhaustedError",
    "UnavailableError",
    "VersionMismatchError",
    "invalid",
    "translate",
]


class NonRetryableError(Exception):
    """Raise it from a handler to send the task straight to the dead-letter queue, without
    retries (failure kind ``non_retryable``): the input is wrong and trying again cannot help."""


class LibraryVersionError(redis.exceptions.RedisError):
    """Raised inside redis-py's connect hook when the functions library is missing or another
    version. It is a RedisError so that redis-py drops the half-made connection; the SDK turns
    it into :class:`VersionMismatchError` for the caller."""


def invalid(field: str, rule: str) -> InvalidArgumentError:
    """The error of a value that breaks a rule: message ``"<field>: <rule>"``."""
    return InvalidArgumentError(f"{field}: {rule}", field=field)


# redis-py strips the first word of some error replies and raises a class of its own instead.
_STRIPPED_PREFIXES: dict[type[redis.exceptions.ResponseError], str] = {
    redis.exceptions.OutOfMemoryError: "OOM",
    redis.exceptions.ReadOnlyError: "READONLY",
    redis.exceptions.NoScriptError: "NOSCRIPT",
    redis.exceptions.TryAgainError: "TRYAGAIN",
    redis.exceptions.MasterDownError: "MASTERDOWN",  # before its base class ClusterDownError
    redis.exceptions.ClusterDownError: "CLUSTERDOWN",
}


def reply_text(error: redis.exceptions.ResponseError) -> str:
    """The error reply as Redis sent it (redis-py may have cut off its first word)."""
    message = str(error)
    status = getattr(error, "status_code", None)
    if isinstance(status, str) and status:
        return f"{status} {message}"
    for cls, prefix in _STRIPPED_PREFIXES.items():
        if isinstance(error, cls):
            return f"{prefix} {message}"
    first = message.split(" ", 1)[0]
    if first and first.replace("_", "").isalpha() and first.isupper():
        return message  # a code redis-py left in place: BATON_INVALID, BUSY, ...
    return f"ERR {message}"  # redis-py strips "ERR " and raises a plain ResponseError


def _from_reply(message: str) -> BatonError:
    code, _, rest = message.partition(" ")
    cls = ERRORS_BY_LUA.get(code)
    if cls is not None:
        field = rest.split(": ", 1)[0] if cls is InvalidArgumentError and ": " in rest else None
        return cls(rest, field=field)
    for prefix, redis_cls, hint in REDIS_ERRORS:
        if message.startswith(prefix):
            return redis_cls(message, hint=hint)
    return InternalError(f"unexpected error reply from Redis: {message}")


def translate(error: BaseException) -> BatonError:
    """The BatonError for an exception raised by redis-py (or already a BatonError)."""
    if isinstance(error, BatonError):
        return error
    if isinstance(error, LibraryVersionError):
        return VersionMismatchError(str(error))
    if isinstance(error, redis.exceptions.RedisClusterException):
        # redis-py wraps what went wrong while learning the slot map: a seed node without the
        # library is a version mismatch, anything else (no node reachable) is unavailable.
        cause = error.__cause__ or error.__context__
        while cause is not None and not isinstance(cause, LibraryVersionError):
            cause = cause.__cause__ or cause.__context__
        if cause is not None:
            return VersionMismatchError(str(cause))
        return UnavailableError(f"Redis Cluster unavailable: {error}")
    if isinstance(error, redis.exceptions.ResponseError):
        return _from_reply(reply_text(error))
    if isinstance(error, (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError,
                          ConnectionError, TimeoutError, OSError)):
        return UnavailableError(f"Redis unavailable: {error}")
    if isinstance(error, redis.exceptions.RedisError):
        return InternalError(f"{type(error).__name__}: {error}")
    return InternalError(f"{type(error).__name__}: {error}")
