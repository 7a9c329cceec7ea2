"""A running worker: connects, starts one TypeRunner per registered type and partition of its
namespace, the heartbeat loop, the partition watch and (opt-in) the maintenance loop, and stops
them gracefully.

Partitions (docs/cluster.md): a type of namespace NS is served in every partition 0..P-1 of NS,
one TypeRunner (fetch loop and slots of the type's concurrency) per partition. P is read at start
and every PARTITIONS_REFRESH_SECONDS; new partitions are served at once, without a restart.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
from collections.abc import Sequence
from typing import Any

import redis
import redis.asyncio

from . import _generated as gen
from . import _redis
from ._lease import heartbeat_loop
from ._loops import Outage
from ._maintenance import Maintenance
from ._partitions import counts_of, hmget_command
from ._runner import RunnerConfig, TypeRunner, WorkerCounters
from .errors import InternalError, translate
from .keys import Keyspace

log = logging.getLogger("baton.worker")
_REDIS_ERRORS = (redis.exceptions.RedisError, OSError)


class Engine:
    """One serve() of a Worker."""

    def __init__(self, url: str, redis_options: dict[str, Any] | None,
                 configs: Sequence[RunnerConfig], counters: WorkerCounters, maintenance: bool,
                 grace: float, block_ms: int):
        self._url = url
        self._redis_options = redis_options
        self._configs = configs
        self._counters = counters
        self._maintenance_on = maintenance
        self._grace = grace
        self._block_ms = block_ms
        self._stop = asyncio.Event()
        self._force = asyncio.Event()
        self.runners: list[TypeRunner] = []
        self._fetchers: list[asyncio.Future[None]] = []
        # (namespace, task type, partition) of every runner started: partitions only grow, and
        # one whose runner could not start is tried again at the next partition watch.
        self._started: set[tuple[str, str, int]] = set()
        self._maintenance: Maintenance | None = None

    def request_stop(self, force: bool = False) -> None:
        """Graceful stop; force ends the grace period at once, also one already running (a
        second SIGINT)."""
        if force:
            self._force.set()
        self._stop.set()

    async def _startup(
            self, client: _redis.AsyncRedis) -> tuple[dict[str, int], list[RunnerConfig]]:
        """Checks the library version, registers the namespaces (a convenience for the CLI),
        reads their partition counts and returns them and the runner configs of every
        partition, lease_ms 0 resolved. Errors are fatal here."""
        try:
            version = await _redis.aexecute(client, *_redis.fcall_args(gen.version()))
            _redis.check_version_reply(version)
            namespaces = sorted({c.namespace for c in self._configs})
            await client.sadd(gen.GLOBAL_KEYS["namespaces"], *namespaces)
            counts = await self._read_counts(client)
            configs = await self._with_leases(client, self._new_partitions(counts))
        except _REDIS_ERRORS as e:
            raise translate(e) from e
        return counts, configs

    async def _read_counts(self, client: _redis.AsyncRedis) -> dict[str, int]:
        """The partition count of every namespace served (one HMGET)."""
        namespaces = sorted({c.namespace for c in self._configs})
        return counts_of(namespaces, await _redis.aexecute(client, *hmget_command(namespaces)))

    def _new_partitions(self, counts: dict[str, int]) -> list[RunnerConfig]:
        """A config per registered type and partition without a runner yet."""
        return [dataclasses.replace(c, partition=p) for c in self._configs
                for p in range(counts[c.namespace])
                if (c.namespace, c.task_type, p) not in self._started]

    @staticmethod
    async def _with_leases(client: _redis.AsyncRedis,
                           configs: list[RunnerConfig]) -> list[RunnerConfig]:
        """lease_ms 0 resolved to the setting of the config's partition (one pipeline)."""
        wanted = sorted({(c.namespace, c.partition) for c in configs if c.lease_ms == 0})
        if not wanted:
            return configs
        calls = [_redis.fcall_args(gen.configure({"config": Keyspace(ns, p).of("config")}))
                 for ns, p in wanted]
        replies = await _redis.apipeline(client, calls)
        leases: dict[tuple[str, int], int] = {}
        for partition, reply in zip(wanted, replies, strict=True):
            if isinstance(reply, BaseException):
                raise translate(reply)
            settings = dict(zip(reply[::2], reply[1::2], strict=True))
            leases[partition] = int(settings[b"lease_ms"])
        return [c if c.lease_ms else _with_lease(c, leases[(c.namespace, c.partition)])
                for c in configs]

    def _start_runners(self, client: _redis.AsyncRedis, configs: list[RunnerConfig]) -> None:
        """A TypeRunner and its fetch loop per config; the heartbeat and maintenance loops
        serve them from their next pass (they read self.runners). When one cannot start (its
        threads or processes), InternalError is raised and those before it keep running."""
        for config in configs:
            try:
                runner = TypeRunner(config, client, self._counters)
            except Exception as e:
                label = f"{Keyspace(config.namespace, config.partition).storage}/" \
                        f"{config.task_type}"
                raise InternalError(f"worker {label} could not start: "
                                    f"{type(e).__name__}: {e}") from e
            if self._maintenance is not None:
                runner.on_retry = functools.partial(self._maintenance.on_retry, len(self.runners))
                self._maintenance.add(runner)
            self.runners.append(runner)
            fetcher = asyncio.ensure_future(runner.fetch_loop())
            fetcher.add_done_callback(self._on_fetcher_done)
            self._fetchers.append(fetcher)
            self._started.add((config.namespace, config.task_type, config.partition))

    def _on_fetcher_done(self, fetcher: asyncio.Future[None]) -> None:
        # A fetch loop only ends by itself when it crashed: that stops the whole worker.
        if not fetcher.cancelled() and fetcher.exception() is not None:
            self._stop.set()

    async def _watch_partitions(self, client: _redis.AsyncRedis) -> None:
        """Every PARTITIONS_REFRESH_SECONDS: serves the partitions the namespaces gained.
        Runs until cancelled (before the shutdown, so no runner starts during it)."""
        outage = Outage("worker partition watch")
        starting = Outage("worker partition watch (new runners)")
        while True:
            await asyncio.sleep(gen.PARTITIONS_REFRESH_SECONDS)
            try:
                counts = await self._read_counts(client)
                added = await self._with_leases(client, self._new_partitions(counts))
            except Exception as e:  # noqa: BLE001 - log once, try again next period
                outage.failed(translate(e))
                continue
            outage.ok()
            if not added:
                continue
            try:
                self._start_runners(client, added)
            except Exception as e:  # noqa: BLE001 - the rest are tried again next period
                starting.failed(e)
            else:
                starting.ok()
            served = [c for c in added if (c.namespace, c.task_type, c.partition) in self._started]
            if served:
                log.info("baton worker serves new partitions: %s",
                         ", ".join(f"{Keyspace(c.namespace, c.partition).storage}/"
                                   f"{c.task_type}" for c in served))

    async def serve(self, started: asyncio.Future[None] | None = None) -> None:
        client: _redis.AsyncRedis | None = None
        try:
            # The socket timeout must outlast XREAD BLOCK.
            client = _redis.async_client(self._url, self._redis_options,
                                         socket_timeout=self._block_ms / 1000.0 + 10.0)
            counts, configs = await self._startup(client)
            if self._maintenance_on:
                self._maintenance = Maintenance([], client, configs[0].consumer)
            self._start_runners(client, configs)
        except BaseException as e:
            # Runners already started (none has run yet) are undone before start() hears it.
            for fetcher in self._fetchers:
                fetcher.cancel()
            await asyncio.gather(*self._fetchers, return_exceptions=True)
            for r in self.runners:
                r.close()
            if client is not None:
                await client.aclose()
            if started is not None and not started.done():
                started.set_exception(e)
            raise
        helpers = [asyncio.ensure_future(heartbeat_loop(self.runners, client))]
        if self._maintenance is not None:
            helpers.append(asyncio.ensure_future(self._maintenance.loop()))
        watch = asyncio.ensure_future(self._watch_partitions(client))
        log.info("baton worker %s running %s", configs[0].consumer,
                 ", ".join(f"{c.namespace}/{c.task_type} ({c.executor} x{c.concurrency}"
                           f"{_partitions_text(counts[c.namespace])})"
                           for c in self._configs))
        if started is not None and not started.done():
            started.set_result(None)
        failed: BaseException | None = None
        try:
            await self._stop.wait()
            watch.cancel()
            await asyncio.gather(watch, return_exceptions=True)
            fetchers = list(self._fetchers)
            await self._shutdown(fetchers)
            failed = next((t.exception() for t in fetchers
                           if t.done() and not t.cancelled() and t.exception() is not None), None)
        finally:
            watch.cancel()
            for task in helpers:
                task.cancel()
            await asyncio.gather(*helpers, return_exceptions=True)
            for r in self.runners:
                r.close()
            await client.aclose()
        if failed is not None:
            # A fetch loop that crashed stopped the whole worker: say so (baton-worker exits 1,
            # so a supervisor restarts it) rather than returning as after a requested stop.
            raise InternalError(f"a fetch loop failed: {failed!r}") from failed

    async def _shutdown(self, fetchers: Sequence[asyncio.Future[None]]) -> None:
        for r in self.runners:
            r.begin_stop()
        # In-flight attempts get the grace period to finish; their acks go out as they do. A
        # forced stop (a second signal) ends the wait at once, also when it comes during it.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._grace
        pending: set[asyncio.Future[Any]] = {f for f in fetchers if not f.done()}
        forced: asyncio.Future[Any] = asyncio.ensure_future(self._force.wait())
        try:
            while pending and not self._force.is_set():
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                done, _ = await asyncio.wait({*pending, forced}, timeout=remaining,
                                             return_when=asyncio.FIRST_COMPLETED)
                pending -= done
        finally:
            forced.cancel()
        if pending:
            running = sum(r.in_flight for r in self.runners)
            why = "stopping at once" if self._force.is_set() else \
                f"shutdown grace of {self._grace:.1f} s over"
            log.warning("%s: %d attempt(s) left to their lease", why, running)
            for r in self.runners:
                r.abandon()
            _, pending = await asyncio.wait(pending, timeout=self._block_ms / 1000.0 + 6.0)
            for task in pending:
                task.cancel()
        for task in fetchers:
            if task.done() and not task.cancelled() and task.exception() is not None:
                log.error("fetch loop failed: %r", task.exception())


def _with_lease(config: RunnerConfig, lease_ms: int) -> RunnerConfig:
    return dataclasses.replace(config, lease_ms=lease_ms)


def _partitions_text(count: int) -> str:
    return f", {count} partitions" if count > 1 else ""
