"""Child processes for CPU-bound task types (``executor="process"``).

Each slot is one child process started with the ``spawn`` method (no inherited threads, event
loop or Redis connections) that runs handlers one at a time. The handler and the task are sent
pickled, so the handler must be importable by name (a module-level function) and the payload
picklable (it is plain JSON data). Unlike threads, a child *can* be stopped: when an attempt
overruns its execution_timeout the child is killed and the slot starts a fresh one, the way
Celery's prefork pool enforces hard time limits.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import multiprocessing.connection
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from . import _outcome, _tracing
from ._outcome import Outcome


def _child_main(conn: multiprocessing.connection.Connection) -> None:
    """The child's loop: receive (handler, task, non_retryable, trace context), run, send the
    outcome."""
    # Ctrl-C reaches the whole process group; the parent decides when children stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        handler, task, non_retryable, carrier = message
        try:
            conn.send(("started",))
            if task.execution_timeout is not None:
                task.deadline = time.monotonic() + task.execution_timeout
            with _tracing.handed_over(carrier):
                handler(task)
            result: tuple[str, str, str] = tuple(_outcome.SUCCESS)  # type: ignore[assignment]
        except BaseException as e:  # noqa: BLE001 - every failure is reported to the parent
            result = tuple(_outcome.from_exception(e, non_retryable))  # type: ignore[assignment]
        try:
            conn.send(result)
        except (OSError, ValueError):
            return


class _Slot:
    """One child process and the pipe to it; used by one attempt at a time."""

    def __init__(self, context: Any):
        self._context = context
        self._process: Any = None
        self._conn: multiprocessing.connection.Connection | None = None
        self._lock = threading.Lock()

    def _ensure(self) -> multiprocessing.connection.Connection:
        if self._process is None or not self._process.is_alive() or self._conn is None:
            parent, child = self._context.Pipe()
            process = self._context.Process(target=_child_main, args=(child,), daemon=True,
                                            name="baton-process-slot")
            process.start()
            child.close()
            self._process, self._conn = process, parent
        return self._conn

    def call(self, message: tuple[Any, ...], on_started: Callable[[], None]) -> Outcome:
        """Runs one handler in the child (blocking; called on an executor thread). on_started
        is called when the child starts the handler (a cold child first imports the
        application: that time does not count against execution_timeout)."""
        with self._lock:
            conn = self._ensure()
        try:
            conn.send(message)
            conn.recv()  # ("started",)
            on_started()
            kind, text, stack = conn.recv()
            return Outcome(kind, text, stack)
        except (EOFError, OSError):
            code = self._process.exitcode if self._process is not None else None
            self._drop()
            return _outcome.failure("error", f"the handler's process died (exit code {code})")
        except Exception as e:  # noqa: BLE001 - e.g. the handler or task cannot be pickled
            return _outcome.from_exception(e)

    def kill(self) -> None:
        """Stops the child now (its attempt timed out, or the worker is leaving)."""
        process = self._process
        if process is not None and process.is_alive():
            process.kill()
        self._drop()

    def _drop(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
            if self._process is not None:
                self._process.join(timeout=5)
            self._process, self._conn = None, None

    def close(self) -> None:
        conn = self._conn
        if conn is not None:
            with contextlib.suppress(OSError, ValueError):
                conn.send(None)
        self._drop()


class ProcessSlots:
    """``size`` child processes for one task type, started on first use."""

    def __init__(self, size: int, start_method: str = "spawn"):
        context = multiprocessing.get_context(start_method)
        self._all = [_Slot(context) for _ in range(size)]
        self._idle: asyncio.Queue[_Slot] = asyncio.Queue()
        for slot in self._all:
            self._idle.put_nowait(slot)
        self._executor = ThreadPoolExecutor(max_workers=size, thread_name_prefix="baton-proc")

    async def run(self, handler: Callable[[Any], Any], task: Any,
                  non_retryable: tuple[type[BaseException], ...],
                  carrier: dict[str, str] | None,
                  on_slot: Callable[[_Slot | None], None],
                  on_started: Callable[[], None]) -> Outcome:
        slot = await self._idle.get()
        on_slot(slot)
        try:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._executor, slot.call,
                                              (handler, task, non_retryable, carrier), on_started)
        finally:
            on_slot(None)
            self._idle.put_nowait(slot)

    def stop(self) -> None:
        for slot in self._all:
            slot.kill()
        self._executor.shutdown(wait=False, cancel_futures=True)
