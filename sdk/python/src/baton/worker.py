"""The worker: register handlers per (namespace, task type), then run.

Each registered type has its own fetch loop and slots (threads for sync handlers, asyncio tasks
for async ones, child processes for ``executor="process"``), so a slow or backlogged type never
delays another. In a namespace spread over P partitions (docs/cluster.md, "Partitions") a type
has one fetch loop and its own slots per partition, P is read again every 5 s, and new
partitions are served without a restart; handlers see the namespace, never ``NS:p``.

At-least-once: a task is acked only after its handler returned. Every task the
worker takes is leased to it in Redis and the lease is extended every lease/3 while the handler
runs; a worker that dies stops extending, and once the lease ends whoever reclaims (batond, or a
worker with ``maintenance=True``) hands the task to another worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
import secrets
import signal
import socket
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from . import contract
from ._engine import Engine
from ._runner import RunnerConfig, WorkerCounters
from .errors import AlreadyExistsError, ConflictError, invalid

log = logging.getLogger("baton.worker")

Executor = Literal["auto", "thread", "async", "process"]
H = TypeVar("H", bound=Callable[..., Any])


@dataclass(frozen=True)
class RetryPolicy:
    """Backoff of failed attempts: the delay after the n-th failure is
    ``min(base_ms * 2**(n-1), max_ms)`` (computed by Redis) plus up to 25% jitter (drawn by the
    SDK)."""

    base_ms: int = 2000
    max_ms: int = 600_000

    def __post_init__(self) -> None:
        if self.base_ms < 1 or self.max_ms < self.base_ms:
            raise invalid("retry", f"base_ms must be >= 1 and max_ms >= base_ms "
                                   f"(got {self.base_ms}, {self.max_ms})")


@dataclass(frozen=True)
class WorkerStats:
    """Counters since the worker started, counted when Redis confirmed the outcome."""

    succeeded: int  # acks recorded (done, or stale_done after a lost lease)
    failed: int  # failures recorded (went to retry or dead), malformed included
    dead: int  # of those, went to the dead-letter queue
    malformed: int  # delivered entries that could not be decoded


@dataclass(frozen=True)
class Registration:
    """One registered handler (see :meth:`Worker.task`)."""

    namespace: str
    task_type: str
    handler: Callable[..., Any]
    executor: Literal["thread", "async", "process"]
    concurrency: int | None
    retry: RetryPolicy
    lease_ms: int
    non_retryable: tuple[type[BaseException], ...]


def _is_async(handler: Callable[..., Any]) -> bool:
    """An async def function (or partial of one), or an object with an async __call__."""
    if inspect.iscoroutinefunction(handler):
        return True
    return not inspect.isroutine(handler) and inspect.iscoroutinefunction(
        type(handler).__call__)


class Worker:
    """Runs the handlers of registered task types.

    Args:
        redis_url: the Redis to work from (``redis://...``, or the seed nodes of a Redis
            Cluster: ``redis+cluster://[user:password@]host:port[,host:port...]``).
        service: first part of the consumer name ``<service>:<host>:<pid>:<random>:python``.
        group: the consumer group every worker of a type shares (``baton``).
        concurrency: default slots per task type (threads, tasks or processes).
        fetch_batch: most tasks per dequeue call (1..1000).
        block_ms: how long an idle fetch loop blocks in XREAD (an idle type costs Redis about
            two commands per block).
        shutdown_grace: seconds running attempts get to finish on stop; the rest are
            cancelled and left to their lease.
        maintenance: also promote due delayed/retrying tasks and reclaim expired leases of
            this worker's types (for setups without batond; off by default).
        redis_options: extra keyword arguments for ``redis.asyncio.Redis.from_url`` (for a
            cluster: ``redis.asyncio.cluster.RedisCluster``).
        process_start_method: multiprocessing start method of process slots (``spawn``).
    """

    def __init__(
        self,
        redis_url: str = "redis://127.0.0.1:6379",
        *,
        service: str = "worker",
        group: str = "baton",
        concurrency: int = 4,
        fetch_batch: int = 64,
        block_ms: int = 5000,
        shutdown_grace: float = 10.0,
        maintenance: bool = False,
        redis_options: Mapping[str, Any] | None = None,
        process_start_method: str = "spawn",
    ):
        if concurrency < 1:
            raise invalid("concurrency", f"must be >= 1 (got {concurrency})")
        if not 1 <= fetch_batch <= 1000:
            raise invalid("fetch_batch", f"must be 1..1000 (got {fetch_batch})")
        if block_ms < 1:
            raise invalid("block_ms", f"must be >= 1 (got {block_ms})")
        if shutdown_grace < 0:
            raise invalid("shutdown_grace", f"must be >= 0 (got {shutdown_grace})")
        if not group:
            raise invalid("group", "must not be empty")
        self.redis_url = redis_url
        self.group = group
        self.concurrency = concurrency
        self.fetch_batch = fetch_batch
        self.block_ms = block_ms
        self.shutdown_grace = shutdown_grace
        self.maintenance = maintenance
        self.redis_options = dict(redis_options or {})
        self.process_start_method = process_start_method
        self.consumer_name = f"{service}:{socket.gethostname()}:{os.getpid()}:" \
                             f"{secrets.token_hex(3)}:python"
        self._registrations: list[Registration] = []
        self._counters = WorkerCounters()
        self._lock = threading.Lock()
        self._state = "new"  # new, running, stopped
        self._stop_requested = False
        self._engine: Engine | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------- registration

    def task(self, namespace: str, task_type: str, *, concurrency: int | None = None,
             executor: Executor = "auto", retry: RetryPolicy | None = None, lease_ms: int = 0,
             non_retryable: Sequence[type[BaseException]] = ()) -> Callable[[H], H]:
        """Decorator registering the handler of (namespace, task_type); the function is
        returned unchanged (still callable and testable on its own).

        The handler takes one :class:`baton.Task`. Returning is success; raising is a failed
        attempt (retried with backoff until max_retry is used up, then dead-lettered) with the
        Python traceback recorded; :class:`baton.NonRetryableError` (or a type listed in
        non_retryable) sends the task straight to the dead-letter queue.

        Args:
            concurrency: slots of this type (default: the worker's), in each partition of a
                partitioned namespace.
            executor: ``auto`` (async for ``async def``, else threads), ``thread``, ``async``
                or ``process`` (CPU-bound work in child processes; the handler must be a
                module-level function).
            retry: backoff of failed attempts (default base 2 s, max 10 min).
            lease_ms: the lease of this type's tasks, 1000..86400000; 0 = the namespace's
                ``lease_ms`` setting (30 s unless changed), read once when the worker starts.
                Extended every lease/3.
            non_retryable: exception types that are not worth retrying.
        """

        def decorate(handler: H) -> H:
            self.register(namespace, task_type, handler, concurrency=concurrency,
                          executor=executor, retry=retry, lease_ms=lease_ms,
                          non_retryable=non_retryable)
            return handler

        return decorate

    def register(self, namespace: str, task_type: str, handler: Callable[..., Any], *,
                 concurrency: int | None = None, executor: Executor = "auto",
                 retry: RetryPolicy | None = None, lease_ms: int = 0,
                 non_retryable: Sequence[type[BaseException]] = ()) -> None:
        """Registers a handler; the arguments are those of :meth:`task`."""
        contract.check_name("namespace", namespace)
        contract.check_name("task_type", task_type)
        if not callable(handler):
            raise invalid("handler", "must be callable")
        if concurrency is not None and concurrency < 1:
            raise invalid("concurrency", f"must be >= 1 (got {concurrency})")
        if lease_ms != 0 and not 1000 <= lease_ms <= 86_400_000:
            raise invalid("lease_ms", f"must be 0 (the namespace's lease_ms) or "
                                      f"1000..86400000 (got {lease_ms})")
        is_async = _is_async(handler)
        if executor == "auto":
            resolved: Literal["thread", "async", "process"] = "async" if is_async else "thread"
        elif executor in ("thread", "process") and is_async:
            raise invalid("executor", f"{executor} needs a plain function (got an async one)")
        elif executor == "async" and not is_async:
            raise invalid("executor", "async needs an async def handler")
        elif executor in ("thread", "async", "process"):
            resolved = executor
        else:
            raise invalid("executor", f"must be auto, thread, async or process "
                                      f"(got {executor!r})")
        for t in non_retryable:
            if not (isinstance(t, type) and issubclass(t, BaseException)):
                raise invalid("non_retryable", f"must be exception types (got {t!r})")
        with self._lock:
            if self._state != "new":
                raise ConflictError("register: the worker has already started")
            if any(r.namespace == namespace and r.task_type == task_type
                   for r in self._registrations):
                raise AlreadyExistsError(
                    f"register: a handler for {namespace}/{task_type} is already registered")
            self._registrations.append(Registration(
                namespace, task_type, handler, resolved, concurrency, retry or RetryPolicy(),
                lease_ms, tuple(non_retryable)))

    @property
    def registrations(self) -> tuple[Registration, ...]:
        return tuple(self._registrations)

    # -------------------------------------------------------------------------- running

    @property
    def stats(self) -> WorkerStats:
        c = self._counters
        return WorkerStats(c.succeeded, c.failed, c.dead, c.malformed)

    def _configs(self) -> list[RunnerConfig]:
        return [
            RunnerConfig(
                namespace=r.namespace, task_type=r.task_type, handler=r.handler,
                executor=r.executor, concurrency=r.concurrency or self.concurrency,
                retry_base_ms=r.retry.base_ms, retry_max_ms=r.retry.max_ms,
                lease_ms=r.lease_ms, non_retryable=r.non_retryable, group=self.group,
                consumer=self.consumer_name, fetch_batch=self.fetch_batch,
                block_ms=self.block_ms, process_start_method=self.process_start_method)
            for r in self._registrations
        ]

    async def serve(self, *, handle_signals: bool = False,
                    _started: asyncio.Future[None] | None = None) -> WorkerStats:
        """Runs in the current event loop until :meth:`stop` (or SIGTERM/SIGINT with
        handle_signals, main thread only), then stops gracefully and returns the stats.

        Raises VersionMismatchError (run ``baton init``) or UnavailableError when it cannot
        start; once running it reconnects by itself (backoff 100 ms doubling to 5 s) and keeps
        unsent acks until they are sent.
        """
        with self._lock:
            if self._state != "new":
                raise ConflictError("serve: a worker runs once")
            if not self._registrations:
                raise invalid("handlers", "register at least one handler before running")
            self._state = "running"
            self._loop = asyncio.get_running_loop()
            self._engine = Engine(self.redis_url, self.redis_options, self._configs(),
                                  self._counters, self.maintenance, self.shutdown_grace,
                                  self.block_ms)
            if self._stop_requested:
                self._engine.request_stop()
        signals: list[signal.Signals] = []
        if handle_signals:
            for sig in (signal.SIGTERM, signal.SIGINT):
                self._loop.add_signal_handler(sig, self._on_signal, sig)
                signals.append(sig)
        try:
            await self._engine.serve(_started)
        finally:
            for sig in signals:
                self._loop.remove_signal_handler(sig)
            with self._lock:
                self._state = "stopped"
        return self.stats

    def _on_signal(self, sig: signal.Signals) -> None:
        engine = self._engine
        if engine is None:
            return
        if self._stop_requested:
            log.warning("%s again: stopping without waiting for running tasks", sig.name)
            engine.request_stop(force=True)
            return
        log.info("%s: stopping gracefully (again to stop at once)", sig.name)
        self._stop_requested = True
        engine.request_stop()

    def run(self, *, handle_signals: bool = True) -> WorkerStats:
        """Runs until SIGTERM/SIGINT (or :meth:`stop`) in a new event loop; returns the
        stats. SIGTERM or Ctrl-C stops gracefully: no new tasks, running ones get
        ``shutdown_grace`` seconds to finish and are acked; a second one stops at once (running
        tasks are left to their lease). Raises InternalError when a fetch loop failed."""
        return asyncio.run(self.serve(handle_signals=handle_signals))

    def start(self, timeout: float = 30.0) -> None:
        """Runs the worker on a background thread; returns once it is connected and running
        (or raises why it could not start). Stop it with :meth:`stop` and :meth:`join`."""
        started: threading.Event = threading.Event()
        failure: list[BaseException] = []

        async def main() -> None:
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            serving = asyncio.ensure_future(self.serve(_started=future))
            try:
                await future
            except BaseException as e:  # noqa: BLE001 - start() raises it in the caller
                failure.append(e)
                started.set()
                await asyncio.gather(serving, return_exceptions=True)
                return
            started.set()
            await serving

        def target() -> None:
            try:
                asyncio.run(main())
            except BaseException as e:  # reported by start(), or logged
                if not started.is_set():
                    failure.append(e)
                    started.set()
                else:
                    log.exception("worker stopped with an error")

        self._thread = threading.Thread(target=target, name="baton-worker", daemon=True)
        self._thread.start()
        if not started.wait(timeout):
            self.stop()
            raise TimeoutError(f"worker did not start within {timeout} s")
        if failure:
            raise failure[0]

    def stop(self) -> None:
        """Asks the worker to stop gracefully (thread-safe; returns at once)."""
        with self._lock:
            self._stop_requested = True
            engine, loop = self._engine, self._loop
        if engine is not None and loop is not None:
            with contextlib.suppress(RuntimeError):  # a closed loop: already stopped
                loop.call_soon_threadsafe(engine.request_stop)

    def join(self, timeout: float | None = None) -> bool:
        """Waits for a worker started with :meth:`start` to end; True when it ended."""
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()
