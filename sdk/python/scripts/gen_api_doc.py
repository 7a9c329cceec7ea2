#!/usr/bin/env python3
"""Writes docs/API.md, the API reference of the `baton` package, from its docstrings.

    .venv/bin/python scripts/gen_api_doc.py           write docs/API.md
    .venv/bin/python scripts/gen_api_doc.py --check   exit 1 when docs/API.md is stale

Run with the SDK's venv (it imports baton). Signatures are written as the source spells them
(the modules use postponed annotations), so the page does not depend on the Python version.
"""

from __future__ import annotations

import enum
import inspect
import pathlib
import sys
from typing import Any

SDK = pathlib.Path(__file__).resolve().parents[1]
TARGET = SDK / "docs" / "API.md"
sys.path.insert(0, str(SDK / "src"))

import baton  # noqa: E402

# (object, members to document); members None = the object alone.
SECTIONS: list[tuple[str, list[tuple[Any, list[str] | None]]]] = [
    ("Producer", [
        (baton.Client, ["enqueue", "enqueue_many", "enqueue_document", "cancel", "configure",
                        "library_version", "close", "redis"]),
        (baton.AsyncClient, ["enqueue", "enqueue_many", "enqueue_document", "cancel",
                             "configure", "library_version", "close"]),
        (baton.TaskRequest, None),
        (baton.EnqueueResult, ["written"]),
        (baton.EnqueueStatus, None),
    ]),
    ("Worker", [
        (baton.Worker, ["task", "register", "run", "serve", "start", "stop", "join", "stats",
                        "registrations"]),
        (baton.RetryPolicy, None),
        (baton.WorkerStats, None),
        (baton.Registration, None),
        (baton.Task, ["cancelled", "wait_cancelled", "remaining", "last_attempt", "headers",
                      "traceparent", "to_document"]),
    ]),
    ("Contract", [
        (baton.parse_task_document, None),
        (baton.TaskDocument, None),
        (baton.uuid7, None),
    ]),
    ("Errors", [
        (baton.BatonError, None),
        (baton.NonRetryableError, None),
        *[(cls, None) for cls in (baton.InvalidArgumentError, baton.NotFoundError,
                                  baton.ConflictError, baton.AlreadyExistsError,
                                  baton.VersionMismatchError, baton.UnavailableError,
                                  baton.ResourceExhaustedError, baton.InternalError)],
    ]),
]


def signature(obj: Any) -> str:
    """name(param: annotation = default, ...) -> return, as written in the source."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return ""
    parts = []
    star_done = False
    for p in sig.parameters.values():
        if p.name == "self" or p.name.startswith("_"):
            continue
        if p.kind is p.KEYWORD_ONLY and not star_done:
            parts.append("*")
            star_done = True
        if p.kind is p.VAR_POSITIONAL:
            star_done = True
        prefix = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "")
        text = prefix + p.name
        if p.annotation is not p.empty:
            text += f": {p.annotation}"
        if p.default is not p.empty:
            text += f" = {p.default!r}"
        parts.append(text)
    out = f"({', '.join(parts)})"
    if sig.return_annotation is not sig.empty and not inspect.isclass(obj):
        out += f" -> {sig.return_annotation}"
    return out


def doc(obj: Any) -> str:
    """The docstring as a fenced text block (docstrings are plain text, not Markdown)."""
    text = (inspect.getdoc(obj) or "").strip()
    return f"```text\n{text}\n```" if text else ""


def render_member(owner: Any, name: str) -> list[str]:
    attr = inspect.getattr_static(owner, name)
    qual = f"{owner.__name__}.{name}"
    if isinstance(attr, property):
        return [f"#### `{qual}` (property)", "", doc(attr.fget), ""]
    func = getattr(owner, name)
    kind = "async " if inspect.iscoroutinefunction(func) else ""
    return [f"#### `{kind}{qual}{signature(func)}`", "", doc(func), ""]


def render() -> str:
    lines = [
        "# `baton` API reference",
        "",
        "Generated from the docstrings by `scripts/gen_api_doc.py`; do not edit "
        "(`scripts/test.sh` fails when it is stale). Everything here is importable from "
        "`baton`.",
        "",
    ]
    for title, entries in SECTIONS:
        lines += [f"## {title}", ""]
        for obj, members in entries:
            kind = "class" if inspect.isclass(obj) else "function"
            if inspect.isclass(obj) and issubclass(obj, enum.Enum):
                values = ", ".join(f"`{m.name}` (`{m.value}`)" for m in obj)
                lines += [f"### enum `{obj.__name__}`", "", doc(obj), "", f"Members: {values}.",
                          ""]
                continue
            if inspect.isclass(obj) and issubclass(obj, BaseException):
                lines += [f"### exception `{obj.__name__}`", "", doc(obj), ""]
            else:
                lines += [f"### {kind} `{obj.__name__}{signature(obj)}`", "", doc(obj), ""]
            if inspect.isclass(obj) and issubclass(obj, baton.BatonError) and obj.code:
                lines += [f"Code `{obj.code}`, retryable: {obj.retryable}.", ""]
            for name in members or []:
                lines += render_member(obj, name)
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not TARGET.exists() or TARGET.read_text(encoding="utf-8") != text:
            print("gen_api_doc: docs/API.md is stale: run .venv/bin/python "
                  "scripts/gen_api_doc.py", file=sys.stderr)
            return 1
        return 0
    TARGET.parent.mkdir(exist_ok=True)
    TARGET.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
