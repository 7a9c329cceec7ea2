"""Finds the exact text of a top-level member of a JSON object.

Python's json module gives values, not their spelling; the contract wants the payload delivered
byte for byte (``1.10`` stays ``1.10``, ``123456789012345678901234567890`` stays as written). The
document is first parsed with :func:`json.loads` (which checks the syntax); this scanner then
locates the member's value in the original bytes. It relies on the text being valid JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

_WS = re.compile(rb"[ \t\r\n]*")
# A JSON string token, unrolled so that long strings do not backtrack.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
# The next character that matters inside a container.
_STRUCTURAL = re.compile(rb'["{}\[\]]')
# A scalar (number, true, false, null) runs until a delimiter.
_SCALAR = re.compile(rb"[^,}\]\s]+")


def _skip_ws(text: bytes, pos: int) -> int:
    m = _WS.match(text, pos)
    return m.end() if m else pos


def _value_end(text: bytes, pos: int) -> int:
    """The index just past the JSON value starting at pos."""
    first = text[pos : pos + 1]
    if first == b'"':
        m = _STRING.match(text, pos)
        if m is None:
            raise ValueError("unterminated string")
        return m.end()
    if first in (b"{", b"["):
        depth = 0
        while True:
            m = _STRUCTURAL.search(text, pos)
            if m is None:
                raise ValueError("unterminated container")
            c = text[m.start() : m.start() + 1]
            if c == b'"':
                s = _STRING.match(text, m.start())
                if s is None:
                    raise ValueError("unterminated string")
                pos = s.end()
                continue
            depth += 1 if c in (b"{", b"[") else -1
            pos = m.end()
            if depth == 0:
                return pos
    m = _SCALAR.match(text, pos)
    if m is None:
        raise ValueError(f"no value at {pos}")
    return m.end()


def _members(text: bytes) -> Iterator[tuple[str, int, int]]:
    """(name, start, end) of each top-level member's value of the JSON object in text, in order
    (nothing when text is no object)."""
    pos = _skip_ws(text, 0)
    if text[pos : pos + 1] != b"{":
        return
    pos = _skip_ws(text, pos + 1)
    while text[pos : pos + 1] == b'"':
        key = _STRING.match(text, pos)
        if key is None:
            raise ValueError("unterminated member name")
        pos = _skip_ws(text, key.end())
        pos = _skip_ws(text, pos + 1)  # the ':'
        end = _value_end(text, pos)
        yield json.loads(key.group(0)), pos, end
        pos = _skip_ws(text, end)
        if text[pos : pos + 1] != b",":
            break
        pos = _skip_ws(text, pos + 1)


def member_span(text: bytes, name: str) -> tuple[int, int] | None:
    """(start, end) of the value of the top-level member ``name`` of the JSON object in text,
    or None when absent. With duplicate names the last one wins, as with json.loads."""
    found: tuple[int, int] | None = None
    for key, start, end in _members(text):
        if key == name:
            found = (start, end)
    return found


def member_texts(text: bytes) -> dict[str, bytes]:
    """The exact bytes of every top-level member's value, by name (the last of duplicates)."""
    return {key: text[start:end] for key, start, end in _members(text)}


def member_text(text: bytes, name: str) -> bytes | None:
    """The exact bytes of the value of top-level member ``name``, or None."""
    span = member_span(text, name)
    return None if span is None else text[span[0] : span[1]]
