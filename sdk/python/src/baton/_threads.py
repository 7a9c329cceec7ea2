"""Threads that run one task type's synchronous handlers.

Python cannot stop a thread. When an attempt overruns its execution_timeout the worker fails it
at once (kind ``timeout``) and *abandons* the thread: its handler keeps running until it returns
(it can see ``task.cancelled``), and its result is ignored. A replacement thread keeps the type's
concurrency, up to as many abandoned threads as the concurrency; beyond that the type runs with
fewer threads (``unreplaced``) until abandoned handlers return, so a handler that hangs forever
cannot make the process grow threads without bound.
"""

from __future__ import annotations

import queue
import sys
import threading
import traceback
from collections.abc import Callable
from typing import Any


class ThreadSlots:
    """A fixed set of handler threads fed from one queue."""

    def __init__(self, name: str, size: int, run: Callable[[Any], None],
                 on_capacity: Callable[[], None]):
        self._name = name
        self._size = size
        self._run = run
        self._on_capacity = on_capacity  # called (from a thread) when a slot comes back
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._abandoned: set[int] = set()  # idents of threads whose attempt was abandoned
        self._threads = 0
        self._serial = 0
        self.unreplaced = 0  # abandoned threads that got no replacement (capacity lost)
        self._stopped = False

    def start(self) -> None:
        for _ in range(self._size):
            self._spawn()

    def _spawn(self) -> None:
        with self._lock:
            self._threads += 1
            self._serial += 1
            serial = self._serial
        t = threading.Thread(target=self._loop, name=f"baton-{self._name}-{serial}", daemon=True)
        t.start()

    def submit(self, job: Any) -> None:
        self._queue.put(job)

    def _loop(self) -> None:
        me = threading.get_ident()
        while True:
            job = self._queue.get()
            if job is None:
                with self._lock:
                    self._threads -= 1
                return
            self._run(job)
            with self._lock:
                if me not in self._abandoned:
                    continue
                self._abandoned.discard(me)
                if self._stopped or self.unreplaced == 0:
                    self._threads -= 1  # replaced already: this thread leaves
                    return
                self.unreplaced -= 1  # takes its slot back
            self._on_capacity()

    def abandon(self, ident: int | None) -> None:
        """The attempt running on thread ident timed out: replace the thread if allowed."""
        if ident is None:
            return
        with self._lock:
            if ident in self._abandoned:
                return
            self._abandoned.add(ident)
            replace = len(self._abandoned) <= self._size and not self._stopped
            if not replace:
                self.unreplaced += 1
        if replace:
            self._spawn()

    def stop(self) -> None:
        """Lets idle threads exit; busy ones exit when their handler returns (daemon threads:
        a handler that never returns does not keep the process alive)."""
        with self._lock:
            self._stopped = True
            count = self._threads
        for _ in range(count):
            self._queue.put(None)


def thread_stack(ident: int | None) -> str:
    """Where thread ident is now: the stack of a handler being abandoned."""
    frame = sys._current_frames().get(ident) if ident is not None else None
    if frame is None:
        return "(the handler's thread had already left it)"
    return "handler thread stack when the attempt was abandoned:\n" + "".join(
        traceback.format_stack(frame))
