"""Module-level handlers for the process executor tests (a spawned child imports them by name)."""

from __future__ import annotations

import os

import baton


def cpu_square(task: baton.Task) -> None:
    """Writes n*n and the child's pid to the file the payload names."""
    n = int(task.payload["n"])
    with open(task.payload["out"], "a", encoding="utf-8") as f:
        f.write(f"{task.id} {n * n} {os.getpid()}\n")


def spin_forever(task: baton.Task) -> None:
    """A CPU-bound handler that never returns (only a kill stops it)."""
    with open(task.payload["out"], "a", encoding="utf-8") as f:
        f.write(f"started {os.getpid()}\n")
    x = 0
    while True:
        x += 1


def refuse(task: baton.Task) -> None:
    raise baton.NonRetryableError(f"bad input {task.payload}")


def enqueue_child(task: baton.Task) -> None:
    """Enqueues a "child" task from inside a process slot (payload: url)."""
    with baton.Client(task.payload["url"]) as client:
        client.enqueue(task.namespace, "child", {})
