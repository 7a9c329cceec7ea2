"""redis-py clients as Baton needs them: bytes replies, no silent retries, and the functions
library version checked on every (re)connect (docs/protocol.md, "What a client must do").

redis-py's own retries are turned off: a command re-sent after a broken connection may have run
already (a dequeue would then lose its delivery until the lease expires), so the SDK decides
itself what is safe to repeat.

A ``redis+cluster://`` URL gives redis-py's cluster clients instead, with the same three
guarantees; every call then goes through _cluster.py's routing (execute, pipeline).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Union

import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.asyncio.retry
import redis.cluster
from redis.backoff import NoBackoff
from redis.retry import Retry

from . import _cluster
from . import _generated as gen
from ._durable import Wait
from .errors import LibraryVersionError

SyncRedis = Union[redis.Redis, redis.cluster.RedisCluster]
AsyncRedis = Union[redis.asyncio.Redis, redis.asyncio.cluster.RedisCluster]
# A call that failed this way may have run: a pipeline raises it (as redis-py's own does).
_BROKEN = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)

VERSION_FUNCTION = gen.version().function


def _not_loaded(error: Exception) -> LibraryVersionError:
    return LibraryVersionError(
        f"functions library version none loaded in Redis, this client needs {gen.VERSION}: "
        f"run 'baton init' ({error})")


def check_version_reply(reply: object) -> str:
    """The library version of a baton_v2_version reply; LibraryVersionError unless it is ours."""
    version = reply.decode("utf-8", "replace") if isinstance(reply, bytes) else str(reply)
    if version != gen.VERSION:
        raise LibraryVersionError(
            f"functions library version {version} loaded in Redis, this client needs "
            f"{gen.VERSION}: run 'baton init'")
    return version


def _sync_on_connect(connection: Any) -> None:
    """redis_connect_func: the usual handshake, then the version check. An error here makes
    redis-py drop the connection and raise it to the caller."""
    connection.on_connect()
    _sync_check_version(connection)


def _sync_check_version(connection: Any) -> None:
    """The version check alone: RedisCluster.on_connect has done the handshake already."""
    connection.send_command("FCALL_RO", VERSION_FUNCTION, "0")
    try:
        reply = connection.read_response()
    except redis.exceptions.ResponseError as e:
        raise _not_loaded(e) from None
    check_version_reply(reply)


async def _async_on_connect(connection: Any) -> None:
    await connection.on_connect()
    await connection.send_command("FCALL_RO", VERSION_FUNCTION, "0")
    try:
        reply = await connection.read_response()
    except redis.exceptions.ResponseError as e:
        raise _not_loaded(e) from None
    check_version_reply(reply)


def _options(options: Mapping[str, Any] | None, socket_timeout: float | None) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "socket_timeout": socket_timeout,
        "socket_connect_timeout": 5.0,
        "decode_responses": False,
    }
    kwargs.update(options or {})
    kwargs["retry"] = Retry(NoBackoff(), 0)
    return kwargs


def sync_client(url: str, options: Mapping[str, Any] | None = None,
                socket_timeout: float | None = 10.0) -> SyncRedis:
    """A redis.Redis (a RedisCluster for redis+cluster://) for url whose every connection
    checks the library version."""
    if _cluster.is_cluster_url(url):
        return _cluster.sync_cluster(url, _options(options, socket_timeout),
                                     _sync_check_version)
    return redis.Redis.from_url(url, redis_connect_func=_sync_on_connect,
                                **_options(options, socket_timeout))


def async_client(url: str, options: Mapping[str, Any] | None = None,
                 socket_timeout: float | None = 10.0) -> AsyncRedis:
    """A redis.asyncio.Redis (a RedisCluster for redis+cluster://) for url whose every
    connection checks the library version."""
    if _cluster.is_cluster_url(url):
        kwargs = _options(options, socket_timeout)
        kwargs["retry"] = redis.asyncio.retry.Retry(NoBackoff(), 0)
        # Its per-node pools refuse a connection past max_connections (100) instead of
        # waiting, and a worker holds one per task type in XREAD BLOCK: redis.asyncio.Redis's
        # default unless the caller set one.
        kwargs.setdefault("max_connections", 2**31)
        return _cluster.async_cluster(url, kwargs, _async_on_connect)
    return redis.asyncio.Redis.from_url(url, redis_connect_func=_async_on_connect,
                                        **_options(options, socket_timeout))


def _raise_broken(replies: Sequence[Any]) -> list[Any]:
    for reply in replies:
        if isinstance(reply, _BROKEN):
            raise reply
    return list(replies)


def execute(client: SyncRedis, *args: gen.Arg) -> Any:
    """One command (routed by its key on a cluster); its reply, or its error raised."""
    if isinstance(client, redis.cluster.RedisCluster):
        reply = _cluster.run(client, [args])[0]
        if isinstance(reply, Exception):
            raise reply
        return reply
    return client.execute_command(*args)  # type: ignore[no-untyped-call]


async def aexecute(client: AsyncRedis, *args: gen.Arg) -> Any:
    """:func:`execute` for redis.asyncio."""
    if isinstance(client, redis.asyncio.cluster.RedisCluster):
        reply = (await _cluster.arun(client, [args]))[0]
        if isinstance(reply, Exception):
            raise reply
        return reply
    return await client.execute_command(*args)  # type: ignore[no-untyped-call]


def _node_name(client: Any) -> str:
    kwargs = client.connection_pool.connection_kwargs
    return str(kwargs.get("path") or f"{kwargs.get('host')}:{kwargs.get('port')}")


def _durable(client: Any, replies: list[Any], wait: Wait | None) -> list[Any]:
    """Without the WAIT reply; every successful reply replaced by the error of a failed WAIT."""
    if wait is None:
        return replies
    error = wait.check(_node_name(client), replies.pop())
    return [error if error and not isinstance(r, Exception) else r for r in replies]


def pipeline(client: SyncRedis, commands: Sequence[Sequence[gen.Arg]],
             wait: Wait | None = None) -> list[Any]:
    """Commands in one round trip per node (no transaction): each reply or its error. A broken
    connection raises (some commands may have run). wait: WAIT after them, same connection."""
    if isinstance(client, redis.cluster.RedisCluster):
        return _raise_broken(_cluster.run(client, commands, wait))
    with client.pipeline(transaction=False) as pipe:
        for command in commands:
            pipe.execute_command(*command)  # type: ignore[no-untyped-call]
        if wait is not None:
            pipe.execute_command(*wait.command())  # type: ignore[no-untyped-call]
        return _durable(client, list(pipe.execute(raise_on_error=False)), wait)


async def apipeline(client: AsyncRedis, commands: Sequence[Sequence[gen.Arg]],
                    wait: Wait | None = None) -> list[Any]:
    """:func:`pipeline` for redis.asyncio."""
    if isinstance(client, redis.asyncio.cluster.RedisCluster):
        return _raise_broken(await _cluster.arun(client, commands, wait))
    async with client.pipeline(transaction=False) as pipe:
        for command in commands:
            pipe.execute_command(*command)
        if wait is not None:
            pipe.execute_command(*wait.command())
        return _durable(client, list(await pipe.execute(raise_on_error=False)), wait)


def fcall_args(call: gen.Call) -> list[gen.Arg]:
    """The command of a generated call: FCALL (or FCALL_RO) name numkeys keys... args..."""
    return ["FCALL_RO" if call.read_only else "FCALL", call.function, len(call.keys),
            *call.keys, *call.args]
