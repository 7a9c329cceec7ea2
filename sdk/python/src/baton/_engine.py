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
from .errors import translate
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
        self._force = False
        self.runners: list[TypeRunner] = []

    def request_stop(self, force: bool = False) -> None:
        """Graceful stop; force skips the grace period (a second SIGINT)."""
        self._force = self._force or force
        self._stop.set()

    async def _startup(self, client: redis.asyncio.Redis) -> list[RunnerConfig]:
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
        # The socket timeout must outlast XREAD BLOCK.
        client = _redis.async_client(self._url, self._redis_options,
                                     socket_timeout=self._block_ms / 1000.0 + 10.0)
        try:
            configs = await self._startup(client)
        except BaseException as e:
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
        try:
            stopper = asyncio.ensure_future(self._stop.wait())
            await asyncio.wait([stopper, *fetchers], return_when=asyncio.FIRST_COMPLETED)
            stopper.cancel()
            await self._shutdown(fetchers)
        finally:
            for task in helpers:
                task.cancel()
            await asyncio.gather(*helpers, return_exceptions=True)
            for r in self.runners:
                r.close()
            await client.aclose()

    async def _shutdown(self, fetchers: Sequence[asyncio.Future[None]]) -> None:
        for r in self.runners:
            r.begin_stop()
        # In-flight attempts get the grace period to finish; their acks go out as they do.
        grace = 0.0 if self._force else self._grace
        _, pending = await asyncio.wait(fetchers, timeout=grace) if fetchers else (set(), set())
        if pending:
            running = sum(r.in_flight for r in self.runners)
            log.warning("shutdown grace of %.1f s over: %d attempt(s) left to their lease",
                        grace, running)
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
