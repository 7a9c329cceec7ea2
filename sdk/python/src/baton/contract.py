"""The task contract (contract/task.schema.json): every rule, with the error words every Baton SDK
uses, ``"<field>: <rule> (got <value>)"``, e.g. ``max_retry: must be an integer 0..25 (got 99)``.

Producers use the ``check_*`` and ``*_text`` functions; :func:`parse_task_document` parses and
validates a whole task document (what ``contract/fixtures`` test) and keeps the payload's exact
bytes. A document breaking several rules reports the first in schema order.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from . import _jsonspan
from .errors import InvalidArgumentError, invalid

# The contract's own top-level fields, in schema order; every other top-level field is "extra".
TASK_FIELDS = (
    "task_id",
    "namespace",
    "task_type",
    "payload",
    "max_retry",
    "delay_seconds",
    "created_at",
    "execution_timeout",
)
MAX_RETRY_LIMIT = 25
DEFAULT_MAX_RETRY = 3
MAX_DELAY_SECONDS = 31_536_000
MIN_CREATED_AT = 946_684_800  # 2000-01-01
MAX_CREATED_AT = 4_102_444_800  # 2100-01-01
MAX_EXECUTION_TIMEOUT = 86_400
PAYLOAD_MAX_BYTES = 524_288
TRACEPARENT_MAX_CHARS = 256
TRACESTATE_MAX_CHARS = 512
HEADERS_MAX_FIELDS = 64
HEADER_VALUE_MAX_CHARS = 1024

TASK_ID_RULE = "must be a string matching ^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$"
NAME_RULE = "must be a string matching ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
_TASK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_BRIEF_MAX = 40


class IntegerRule(NamedTuple):
    """An integer field with an inclusive range: ``<field>: <wording> min..max``."""

    field: str
    wording: str
    min: int
    max: int
    hint_milliseconds: bool = False  # created_at: flag values that look like Unix milliseconds


MAX_RETRY = IntegerRule("max_retry", "must be an integer", 0, MAX_RETRY_LIMIT)
DELAY_SECONDS = IntegerRule("delay_seconds", "must be an integer", 0, MAX_DELAY_SECONDS)
CREATED_AT = IntegerRule("created_at", "must be Unix seconds", MIN_CREATED_AT, MAX_CREATED_AT, True)
EXECUTION_TIMEOUT = IntegerRule("execution_timeout", "must be an integer", 1, MAX_EXECUTION_TIMEOUT)


def json_type_name(value: object) -> str:
    """The JSON type of a Python value: object, array, string, number, boolean, null."""
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if value is None:
        return "null"
    return type(value).__name__


def brief(value: object) -> str:
    """A short rendering of a value for error messages (at most about 40 characters)."""
    if isinstance(value, (Mapping, list, tuple)):
        if not value:
            return "{}" if isinstance(value, Mapping) else "[]"
        kind = "an object" if isinstance(value, Mapping) else "an array"
        return f"{kind} of {len(value)} element{'' if len(value) == 1 else 's'}"
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    if len(text) > _BRIEF_MAX:
        text = text[: _BRIEF_MAX - 3] + "..."
    return text


def _brief_name(value: object, max_chars: int) -> str:
    if isinstance(value, str) and len(value) > max_chars:
        return f"a string of {len(value)} characters"
    return brief(value)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def json_loads(text: bytes | str) -> Any:
    """Strict JSON parsing: NaN and Infinity (which Python accepts by default) are refused."""
    return json.loads(text, parse_constant=_reject_constant)


def _parse_error(error: Exception) -> str:
    if isinstance(error, RecursionError):
        return "nested too deeply"
    return str(error)


def check_task_id(task_id: object) -> str:
    """The task id, or InvalidArgumentError ``task_id: must be a string matching ...``."""
    if isinstance(task_id, str) and _TASK_ID.fullmatch(task_id):
        return task_id
    raise invalid("task_id", f"{TASK_ID_RULE} (got {_brief_name(task_id, 128)})")


def check_name(field_name: str, name: object) -> str:
    """A namespace or task type, or InvalidArgumentError naming field_name."""
    if isinstance(name, str) and _NAME.fullmatch(name):
        return name
    raise invalid(field_name, f"{NAME_RULE} (got {_brief_name(name, 64)})")


def _invalid_integer(rule: IntegerRule, shown: str, looks_like_ms: bool) -> InvalidArgumentError:
    hint = ": milliseconds?" if looks_like_ms else ""
    return invalid(rule.field, f"{rule.wording} {rule.min}..{rule.max} (got {shown}{hint})")


def check_integer(rule: IntegerRule, value: int) -> int:
    """value when within the rule's range."""
    if rule.min <= value <= rule.max:
        return value
    looks_like_ms = rule.hint_milliseconds and rule.min * 1000 <= value <= rule.max * 1000
    raise _invalid_integer(rule, str(value), looks_like_ms)


def read_integer(rule: IntegerRule, value: object) -> int:
    """An integer field's value: an int, or a float with an integral value (JSON Schema counts
    3.0 as an integer); booleans, strings, null and fractions are refused."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _invalid_integer(rule, brief(value), False)
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer() or abs(value) >= 2.0**63:
            raise _invalid_integer(rule, brief(value), False)
        value = int(value)
    return check_integer(rule, value)


def check_payload_text(text: bytes) -> bytes:
    """Raw payload text: at most 524288 bytes, valid JSON, an object. Returns it unchanged."""
    if len(text) > PAYLOAD_MAX_BYTES:
        raise invalid("payload", f"must be at most {PAYLOAD_MAX_BYTES} bytes serialized "
                                 f"(got {len(text)})")
    try:
        value = json_loads(text)
    except (ValueError, RecursionError) as e:
        raise invalid("payload", f"not valid JSON: {_parse_error(e)}") from None
    if not isinstance(value, dict):
        raise invalid("payload", f"must be a JSON object (got {json_type_name(value)})")
    return text


def payload_text(payload: object) -> bytes:
    """The payload as the JSON object text to store: a mapping is serialized compactly (UTF-8);
    bytes or str are JSON text taken as they are (validated, delivered byte for byte)."""
    if isinstance(payload, (bytes, bytearray, memoryview)):
        return check_payload_text(bytes(payload))
    if isinstance(payload, str):
        return check_payload_text(payload.encode("utf-8"))
    if not isinstance(payload, Mapping):
        raise invalid("payload", f"must be a JSON object (got {json_type_name(payload)})")
    text = dumps("payload", payload)
    if len(text) > PAYLOAD_MAX_BYTES:
        raise invalid("payload", f"must be at most {PAYLOAD_MAX_BYTES} bytes serialized "
                                 f"(got {len(text)})")
    return text


def dumps(field_name: str, value: object) -> bytes:
    """Compact UTF-8 JSON of value; InvalidArgumentError naming field_name when it has no JSON
    form (NaN, a datetime, ...)."""
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False,
                          allow_nan=False).encode("utf-8")
    except (TypeError, ValueError, UnicodeEncodeError, RecursionError) as e:
        raise invalid(field_name, f"not JSON-serializable: {_parse_error(e)}") from None


def _check_short_string(field_name: str, value: object, max_chars: int) -> None:
    rule = f"must be a string of at most {max_chars} characters"
    if not isinstance(value, str):
        raise invalid(field_name, f"{rule} (got {brief(value)})")
    if len(value) > max_chars:  # maxLength counts code points, as len() does
        raise invalid(field_name, f"{rule} (got a string of {len(value)} characters)")


def _check_trace(trace: object) -> None:
    if not isinstance(trace, Mapping):
        raise invalid("trace", f"must be a JSON object (got {json_type_name(trace)})")
    for key, value in trace.items():
        if key == "traceparent":
            _check_short_string("trace.traceparent", value, TRACEPARENT_MAX_CHARS)
        elif key == "tracestate":
            _check_short_string("trace.tracestate", value, TRACESTATE_MAX_CHARS)
        else:
            raise invalid("trace", f"unknown field {json.dumps(key, ensure_ascii=False)} "
                                   "(allowed: traceparent, tracestate)")


def _check_headers(headers: object) -> None:
    if not isinstance(headers, Mapping):
        raise invalid("headers", f"must be a JSON object (got {json_type_name(headers)})")
    if len(headers) > HEADERS_MAX_FIELDS:
        raise invalid("headers", f"must have at most {HEADERS_MAX_FIELDS} fields "
                                 f"(got {len(headers)})")
    for key, value in headers.items():
        _check_short_string(f"headers.{key}", value, HEADER_VALUE_MAX_CHARS)


def check_extra(extra: Mapping[str, Any], *, from_document: bool = False) -> None:
    """The extra top-level fields: no contract field, and ``trace`` / ``headers`` by their
    rules. Every other field is free (it travels untouched)."""
    for key in extra:
        if not isinstance(key, str):
            raise invalid("extra", f"field names must be strings (got {brief(key)})")
        if key in TASK_FIELDS and not from_document:
            raise invalid("extra", f'must not contain the contract field "{key}" '
                                   "(use the enqueue argument)")
    if "trace" in extra:
        _check_trace(extra["trace"])
    if "headers" in extra:
        _check_headers(extra["headers"])


def extra_text(extra: Mapping[str, Any] | None) -> bytes:
    """The stream's ``extra`` value: the JSON object text of the extra fields, b"" for none.
    Errors name the fields by where the caller put them: ``extra.trace: ...``,
    ``extra.headers.note: ...`` (a document names them as its top-level fields, ``trace``)."""
    if not extra:
        return b""
    if not isinstance(extra, Mapping):
        raise invalid("extra", f"must be a JSON object (got {json_type_name(extra)})")
    try:
        check_extra(extra)
    except InvalidArgumentError as e:
        if e.field is None or e.field == "extra":
            raise
        rule = e.message.removeprefix(f"{e.field}: ")
        raise invalid(f"extra.{e.field}", rule) from None
    return dumps("extra", dict(extra))


@dataclass(frozen=True)
class TaskDocument:
    """A validated task document. ``payload`` is the payload's JSON text exactly as written in
    the document; ``extra`` holds every top-level field that is not a contract field, and
    ``extra_text`` the JSON object text of those fields with their values as written (numbers
    keep their spelling: ``1.10``, ``1e400``)."""

    task_id: str
    namespace: str
    task_type: str
    payload: bytes
    max_retry: int
    delay_seconds: int
    created_at: int
    execution_timeout: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    extra_text: bytes = b""


def _required(document: Mapping[str, Any], name: str) -> Any:
    if name not in document:
        raise invalid(name, "required")
    return document[name]


def parse_task_document(text: bytes | str) -> TaskDocument:
    """Parses and validates a task document (contract/task.schema.json).

    Raises InvalidArgumentError naming the field and the rule: ``document: not valid JSON: ...``,
    ``task_id: required``, ``created_at: must be Unix seconds 946684800..4102444800 (got
    1722489600000: milliseconds?)``. The payload bytes are kept as written in text.
    """
    raw = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    try:
        document = json_loads(raw)
    except (ValueError, RecursionError) as e:
        raise invalid("document", f"not valid JSON: {_parse_error(e)}") from None
    if not isinstance(document, dict):
        raise invalid("document", f"must be a JSON object (got {json_type_name(document)})")
    task_id = check_task_id(_required(document, "task_id"))
    namespace = check_name("namespace", _required(document, "namespace"))
    task_type = check_name("task_type", _required(document, "task_type"))
    payload = _required(document, "payload")
    if not isinstance(payload, dict):
        raise invalid("payload", f"must be a JSON object (got {json_type_name(payload)})")
    payload_bytes = _jsonspan.member_text(raw, "payload")
    if payload_bytes is None:  # cannot happen for valid JSON; keep a safe fallback
        payload_bytes = dumps("payload", payload)
    if len(payload_bytes) > PAYLOAD_MAX_BYTES:
        raise invalid("payload", f"must be at most {PAYLOAD_MAX_BYTES} bytes serialized "
                                 f"(got {len(payload_bytes)})")
    max_retry = read_integer(MAX_RETRY, _required(document, "max_retry"))
    delay_seconds = read_integer(DELAY_SECONDS, _required(document, "delay_seconds"))
    created_at = read_integer(CREATED_AT, _required(document, "created_at"))
    execution_timeout = None
    if "execution_timeout" in document:
        execution_timeout = read_integer(EXECUTION_TIMEOUT, document["execution_timeout"])
    extra = {k: v for k, v in document.items() if k not in TASK_FIELDS}
    check_extra(extra, from_document=True)
    extra_bytes = b""
    if extra:
        members = _jsonspan.member_texts(raw)
        extra_bytes = b"{" + b",".join(
            json.dumps(k, ensure_ascii=False).encode("utf-8") + b":" + members[k]
            for k in extra) + b"}"
    return TaskDocument(task_id, namespace, task_type, payload_bytes, max_retry, delay_seconds,
                        created_at, execution_timeout, extra, extra_bytes)


__all__ = [
    "TASK_FIELDS",
    "InvalidArgumentError",
    "TaskDocument",
    "check_extra",
    "check_name",
    "check_payload_text",
    "check_task_id",
    "extra_text",
    "parse_task_document",
    "payload_text",
    "read_integer",
]
