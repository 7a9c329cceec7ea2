"""The running attempts of one task type: they run on threads (sync handlers), as asyncio tasks
(async handlers) or in child processes, each under its execution_timeout, and each ends exactly
once in a Completion handed to the fetch loop (on the event loop's thread)."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import _outcome, _tracing
from ._outcome import Outcome
from ._procpool import ProcessSlots
from ._threads import ThreadSlots, thread_stack
from .task import Task

log = logging.getLogger("baton.worker")

@dataclass
class Completion:
    """What the fetch loop sends for an attempt: an ack, or a fail with kind and error."""

    task_id: str
    sid: str
    outcome: Outcome


@dataclass(eq=False)
class Job:
    """One running attempt."""

    task: Task
    cancel: threading.Event
    finished: bool = False
    timed_out: bool = False
    lost: bool = False
    timer: asyncio.TimerHandle | None = None
    atask: asyncio.Task[Any] | None = None
    thread_ident: int | None = None
    slot: Any = None  # the process slot running it


def coroutine_stack(task: asyncio.Task[Any]) -> str:
    """Where a suspended task is: every coroutine of its await chain, outermost first (a
    suspended coroutine's frame has no f_back, so the chain is walked through cr_await)."""
    frames = []
    coro: Any = task.get_coro()
    while coro is not None:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is not None:
            frames.append((frame, frame.f_lineno))
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return "".join(traceback.StackSummary.extract(frames).format())


class Attempts:
    """Starts, times out, cancels and finishes the attempts of one task type."""

    def __init__(self, label: str, handler: Callable[..., Any], executor: str,
                 concurrency: int, non_retryable: tuple[type[BaseException], ...],
                 process_start_method: str, on_done: Callable[[Completion], None],
                 on_capacity: Callable[[], None]):
        self._handler = handler
        self._executor = executor
        self._concurrency = concurrency
        self._non_retryable = non_retryable
        self._on_done = on_done  # called on the loop when an attempt ends (once)
        self._on_capacity = on_capacity  # called on the loop when a slot comes back
        self._loop = asyncio.get_running_loop()
        self._jobs: dict[str, Job] = {}  # stream id -> running attempt
        self._inbox: collections.deque[tuple[Job, Outcome]] = collections.deque()
        self._inbox_scheduled = False
        # Timed-out async handlers that have not ended yet (one that catches CancelledError
        # keeps running): they keep their slot, so the type never exceeds its concurrency.
        self._lingering = 0
        self._threads: ThreadSlots | None = None
        self._processes: ProcessSlots | None = None
        if executor == "thread":
            self._threads = ThreadSlots(label, concurrency, self._run_in_thread, self._poke)
            try:
                self._threads.start()
            except BaseException:
                self._threads.stop()  # the threads that did start leave
                raise
        elif executor == "process":
            self._processes = ProcessSlots(concurrency, process_start_method)

    def free(self) -> int:
        """Slots free for new attempts."""
        unreplaced = self._threads.unreplaced if self._threads is not None else 0
        return self._concurrency - len(self._jobs) - unreplaced - self._lingering

    def __len__(self) -> int:
        return len(self._jobs)

    def start(self, task: Task, cancel: threading.Event) -> None:
        job = Job(task, cancel)
        self._jobs[task.stream_id] = job
        if self._executor != "process":  # a child process arms it once it starts the handler
            self._arm(job)
        if self._threads is not None:
            self._threads.submit(job)
        elif self._executor == "async":
            job.atask = self._loop.create_task(self._run_async(job))
        else:
            job.atask = self._loop.create_task(self._run_process(job))

    def _arm(self, job: Job) -> None:
        """Starts the execution_timeout countdown of an attempt."""
        timeout = job.task.execution_timeout
        if timeout is None or job.finished or job.timer is not None:
            return
        job.task.deadline = time.monotonic() + timeout
        job.timer = self._loop.call_later(timeout, self._on_timeout, job)

    def _run_in_thread(self, job: Job) -> None:
        """On a handler thread: run the attempt, hand the outcome to the loop."""
        job.thread_ident = threading.get_ident()
        task = job.task
        try:
            with _tracing.consumer_span(task.namespace, task.task_type, task.id, task.attempt,
                                        task.extra.get("trace")):
                self._handler(task)
            outcome = _outcome.SUCCESS
        except BaseException as e:  # noqa: BLE001 - a handler's failure is the task's
            outcome = _outcome.from_exception(e, self._non_retryable)
        self._inbox.append((job, outcome))
        if not self._inbox_scheduled:
            self._inbox_scheduled = True
            with contextlib.suppress(RuntimeError):  # a closed loop: the worker is gone
                self._loop.call_soon_threadsafe(self._drain_inbox)

    def _drain_inbox(self) -> None:
        # Reset the flag before draining, so a result appended meanwhile schedules a new drain.
        self._inbox_scheduled = False
        while self._inbox:
            job, outcome = self._inbox.popleft()
            self.complete(job, outcome)

    def _poke(self) -> None:
        """From a thread: a slot came back (an abandoned handler returned)."""
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._on_capacity)

    async def _run_async(self, job: Job) -> None:
        task = job.task
        try:
            with _tracing.consumer_span(task.namespace, task.task_type, task.id, task.attempt,
                                        task.extra.get("trace")):
                await self._handler(task)
            outcome = _outcome.SUCCESS
            if job.timed_out:
                log.warning("task %s: the handler ran on after its execution_timeout cancelled "
                            "it (it caught CancelledError); its slot was held until it ended",
                            task.id)
        except asyncio.CancelledError:
            if not (job.timed_out or job.lost):
                raise  # the worker is leaving: left to the lease
            outcome = _outcome.failure("error", "attempt cancelled: the lease was lost")
        except Exception as e:  # noqa: BLE001 - a handler's failure is the task's
            outcome = _outcome.from_exception(e, self._non_retryable)
        self.complete(job, outcome)

    async def _run_process(self, job: Job) -> None:
        assert self._processes is not None

        def on_slot(slot: Any) -> None:
            job.slot = slot

        def on_started() -> None:  # on the executor thread
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._arm, job)

        task = job.task
        with _tracing.consumer_span(task.namespace, task.task_type, task.id, task.attempt,
                                    task.extra.get("trace")):
            outcome = await self._processes.run(self._handler, task, self._non_retryable,
                                                _tracing.handing_over(), on_slot, on_started)
        if job.lost:
            outcome = _outcome.failure("error", "attempt stopped: the lease was lost (the "
                                                "handler's process was killed)")
        self.complete(job, outcome)

    def complete(self, job: Job, outcome: Outcome) -> None:
        """The end of an attempt, recorded once (a late return after a timeout is ignored)."""
        if job.finished:
            return
        job.finished = True
        if job.timer is not None:
            job.timer.cancel()
        self._jobs.pop(job.task.stream_id, None)
        self._on_done(Completion(job.task.id, job.task.stream_id, outcome))

    def _on_timeout(self, job: Job) -> None:
        """The attempt overran its execution_timeout: stop it (async: cancel; process: kill
        the child) or abandon it (thread), stop heartbeating it, and fail it as a timeout."""
        if job.finished:
            return
        job.timed_out = True
        job.cancel.set()
        if self._executor == "async" and job.atask is not None:
            where = "handler coroutine when the attempt was cancelled:\n" + \
                coroutine_stack(job.atask)
            job.atask.cancel()
            self._lingering += 1
            job.atask.add_done_callback(self._lingered)
        elif self._threads is not None:
            where = thread_stack(job.thread_ident)
            self._threads.abandon(job.thread_ident)
        else:
            where = "the handler's process was killed"
            if job.slot is not None:
                job.slot.kill()
        self.complete(job, _outcome.timeout(job.task.execution_timeout, where))

    def _lingered(self, atask: asyncio.Task[Any]) -> None:
        """A timed-out async handler has really ended: its slot comes back."""
        self._lingering -= 1
        self._on_capacity()

    def held(self) -> list[tuple[str, str]]:
        """(task id, stream id) of the attempts to heartbeat: running, not timed out."""
        return [(j.task.id, sid) for sid, j in self._jobs.items()
                if not (j.finished or j.timed_out or j.lost)]

    def lose(self, sid: str) -> bool:
        """The lease of the attempt at sid was taken back: cancel it (cooperatively for
        threads; a process slot's child is killed). True when there was such an attempt."""
        job = self._jobs.get(sid)
        if job is None or job.finished:
            return False
        job.lost = True
        job.cancel.set()
        if job.atask is not None and self._executor == "async":
            job.atask.cancel()
        elif job.slot is not None:  # another worker may run it now: stop this copy
            job.slot.kill()
        return True

    def abandon(self) -> None:
        """Stops waiting for the running attempts: they are cancelled and left to their lease;
        nothing is reported for them."""
        for job in list(self._jobs.values()):
            job.cancel.set()
            job.finished = True
            if job.timer is not None:
                job.timer.cancel()
            if job.atask is not None and self._executor == "async":
                job.atask.cancel()
        self._jobs.clear()

    def close(self) -> None:
        """Releases the threads and child processes."""
        if self._threads is not None:
            self._threads.stop()
        if self._processes is not None:
            self._processes.stop()
