"""A running worker: connects, starts one TypeRunner per registered type, the heartbeat loop and
(opt-in) the maintenance loop, and stops them gracefully."""

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
from ._maintenance import Maintenance
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

    def request_stop(self, force: bool = False) -> None:
        """Graceful stop; force ends the grace period at once, also one already running (a
        second SIGINT)."""
        if force:
            self._force.set()
        self._stop.set()

    async def _startup(self, client: _redis.AsyncRedis) -> list[RunnerConfig]:
        """Checks the library version, registers the namespaces (a convenience for the CLI)
        and resolves lease_ms 0 to the namespace's setting. Errors are fatal here."""
        try:
            version = await _redis.aexecute(client, *_redis.fcall_args(gen.version()))
            _redis.check_version_reply(version)
            namespaces = sorted({c.namespace for c in self._configs})
            await client.sadd(gen.GLOBAL_KEYS["namespaces"], *namespaces)
            leases: dict[str, int] = {}
            for ns in {c.namespace for c in self._configs if c.lease_ms == 0}:
                reply = await _redis.aexecute(client, *_redis.fcall_args(
                    gen.configure({"config": Keyspace(ns).of("config")})))
                settings = dict(zip(reply[::2], reply[1::2], strict=True))
                leases[ns] = int(settings[b"lease_ms"])
        except _REDIS_ERRORS as e:
            raise translate(e) from e
        return [c if c.lease_ms else _with_lease(c, leases[c.namespace]) for c in self._configs]

    async def serve(self, started: asyncio.Future[None] | None = None) -> None:
        client: _redis.AsyncRedis | None = None
        try:
            # The socket timeout must outlast XREAD BLOCK.
            client = _redis.async_client(self._url, self._redis_options,
                                         socket_timeout=self._block_ms / 1000.0 + 10.0)
            configs = await self._startup(client)
        except BaseException as e:
            if client is not None:
                await client.aclose()
            if started is not None and not started.done():
                started.set_exception(e)
            raise
        self.runners = [TypeRunner(c, client, self._counters) for c in configs]
        fetchers = [asyncio.ensure_future(r.fetch_loop()) for r in self.runners]
        helpers = [asyncio.ensure_future(heartbeat_loop(self.runners, client))]
        if self._maintenance_on:
            maintenance = Maintenance(self.runners, client, configs[0].consumer)
            for i, runner in enumerate(self.runners):
                runner.on_retry = functools.partial(maintenance.on_retry, i)
            helpers.append(asyncio.ensure_future(maintenance.loop()))
        log.info("baton worker %s running %s", configs[0].consumer,
                 ", ".join(f"{c.namespace}/{c.task_type} ({c.executor} x{c.concurrency})"
                           for c in configs))
        if started is not None and not started.done():
            started.set_result(None)
        failed: BaseException | None = None
        try:
            stopper = asyncio.ensure_future(self._stop.wait())
            await asyncio.wait([stopper, *fetchers], return_when=asyncio.FIRST_COMPLETED)
            stopper.cancel()
            await self._shutdown(fetchers)
            failed = next((t.exception() for t in fetchers
                           if t.done() and not t.cancelled() and t.exception() is not None), None)
        finally:
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
