"""redis-py clients as Baton needs them: bytes replies, no silent retries, and the functions
library version checked on every (re)connect (docs/protocol.md, "What a client must do").

redis-py's own retries are turned off: a command re-sent after a broken connection may have run
already (a dequeue would then lose its delivery until the lease expires), so the SDK decides
itself what is safe to repeat.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import redis
import redis.asyncio
from redis.backoff import NoBackoff
from redis.retry import Retry

from . import _generated as gen
from .errors import LibraryVersionError

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
                socket_timeout: float | None = 10.0) -> redis.Redis:
    """A redis.Redis for url whose every connection checks the library version."""
    return redis.Redis.from_url(url, redis_connect_func=_sync_on_connect,
                                **_options(options, socket_timeout))


def async_client(url: str, options: Mapping[str, Any] | None = None,
                 socket_timeout: float | None = 10.0) -> redis.asyncio.Redis:
    """A redis.asyncio.Redis for url whose every connection checks the library version."""
    return redis.asyncio.Redis.from_url(url, redis_connect_func=_async_on_connect,
                                        **_options(options, socket_timeout))


def execute(client: redis.Redis, *args: gen.Arg) -> Any:
    """client.execute_command (untyped in redis-py) with typed arguments."""
    return client.execute_command(*args)  # type: ignore[no-untyped-call]


async def aexecute(client: redis.asyncio.Redis, *args: gen.Arg) -> Any:
    """redis.asyncio's execute_command (untyped in redis-py) with typed arguments."""
    return await client.execute_command(*args)  # type: ignore[no-untyped-call]


def fcall_args(call: gen.Call) -> list[gen.Arg]:
    """The command of a generated call: FCALL (or FCALL_RO) name numkeys keys... args..."""
    return ["FCALL_RO" if call.read_only else "FCALL", call.function, len(call.keys),
            *call.keys, *call.args]
