"""Redis Cluster mode: the ``redis+cluster://`` URL, redis-py's cluster clients set up as Baton
needs them, and the routing of every call the SDK makes.

redis-py discovers the topology and keeps one connection pool per node (each connection checks
the library version, see _redis.py); this module decides where each call goes and sends it
itself, because redis-py would otherwise

- find the key of every FCALL / XREAD with an extra ``COMMAND GETKEYS`` round trip, and
- (sync ClusterPipeline) send a pipelined command again after a connection error, although it
  may have run.

Each call goes to the primary of its first key's slot (an FCALL names its keys, all in one
namespace's slot; keyless ones go to any primary); a batch is one pipeline per node. A reply
MOVED / ASK / TRYAGAIN means "not executed here", so only such a call is sent again (to the
named node, after ASKING for ASK), at most REDIRECTS times. A connection error is never
retried: the call fails (it may or may not have run) and the slot map is refreshed so the next
call finds a new primary after a failover.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import redis
import redis.asyncio.cluster
import redis.cluster
from redis.crc import key_slot

from . import _generated as gen
from ._durable import Wait
from .errors import UnavailableError, invalid, translate

SCHEME = "redis+cluster://"
RULE = "redis+cluster://[user:password@]host:port[,host:port...]"
REDIRECTS = 16  # redis-py's RedisClusterRequestTTL
# What redis-py raises (RedisClusterException, e.g. SlotNotCoveredError, is no RedisError).
_ERRORS = (redis.exceptions.RedisError, redis.exceptions.RedisClusterException, OSError)
# Replies after which the slot map may be stale (a failover is under way or done).
_STALE_ERRORS = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError,
                 redis.exceptions.ClusterDownError, redis.exceptions.MovedError, OSError)

Command = Sequence[gen.Arg]


# ------------------------------------------------------------------------------ the URL


@dataclass(frozen=True)
class ClusterUrl:
    seeds: list[tuple[str, int]]
    username: str | None
    password: str | None


def is_cluster_url(url: str) -> bool:
    return url.startswith(SCHEME)


def _bad(rule: str) -> Exception:
    return invalid("redis_url", f"{rule} ({RULE})")


def _host_port(text: str, n: int) -> tuple[str, int]:
    if text.startswith("["):  # [v6]:port
        close = text.find("]")
        if close < 0:
            raise _bad(f"seed {n}: unterminated IPv6 address '['")
        host, after = text[1:close], text[close + 1 :]
        if after and not after.startswith(":"):
            raise _bad(f"seed {n}: expected ':port' after the IPv6 address")
        port_text = after[1:] if after else ""
    else:
        host, _, port_text = text.rpartition(":") if ":" in text else (text, "", "")
    if not host:
        raise _bad(f"seed {n}: missing host")
    if not port_text:
        return host, 6379
    if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise _bad(f"seed {n}: port must be 1..65535 (got {port_text!r})")
    return host, int(port_text)


def parse_url(url: str) -> ClusterUrl:
    """The seeds and credentials of a redis+cluster:// URL; InvalidArgumentError naming
    redis_url and the rule otherwise (the password is never echoed)."""
    rest = url[len(SCHEME) :]
    if "/" in rest or "?" in rest:
        raise _bad("takes no /db or ?options (a cluster has only db 0)")
    username = password = None
    if "@" in rest:
        userinfo, _, rest = rest.rpartition("@")
        user, colon, secret = userinfo.partition(":")
        username = urllib.parse.unquote(user) or None
        password = urllib.parse.unquote(secret) if colon else None
    if not rest:
        raise _bad("needs at least one seed node host:port")
    seeds = [_host_port(s, i + 1) for i, s in enumerate(rest.split(","))]
    return ClusterUrl(seeds, username, password)


def _credentials(parsed: ClusterUrl, kwargs: dict[str, Any]) -> dict[str, Any]:
    if int(redis.__version__.split(".")[0]) < 6:
        # Before redis-py 6 this count, not the retry object, bounds the cluster client's
        # retries after a connection error (6+ warns that it is deprecated).
        kwargs["cluster_error_retry_attempts"] = 0
    if parsed.username is not None:
        kwargs["username"] = parsed.username
    if parsed.password is not None:
        kwargs["password"] = parsed.password
    for name in ("db", "path", "unix_socket_path"):
        if kwargs.get(name):
            raise invalid("redis_options", f"{name} is not possible with a redis+cluster:// URL")
    kwargs.pop("db", None)
    return kwargs


# --------------------------------------------------------------------------- the clients


def sync_cluster(url: str, kwargs: dict[str, Any],
                 check_version: Any) -> redis.cluster.RedisCluster:
    """redis-py's RedisCluster; check_version runs on every new connection to every node after
    redis-py's own handshake (RedisCluster.on_connect calls redis_connect_func)."""
    parsed = parse_url(url)
    nodes = [redis.cluster.ClusterNode(h, p)  # type: ignore[no-untyped-call]
             for h, p in parsed.seeds]
    try:  # it connects here, to learn the slot map
        return redis.cluster.RedisCluster(startup_nodes=nodes, redis_connect_func=check_version,
                                          **_credentials(parsed, kwargs))
    except _ERRORS as e:
        raise translate(e) from e


def async_cluster(url: str, kwargs: dict[str, Any],
                  on_connect: Any) -> redis.asyncio.cluster.RedisCluster:
    """redis.asyncio's RedisCluster; on_connect (handshake + version check) runs on every new
    connection to every node. That client takes no redis_connect_func argument, so it is put in
    the connection arguments every node (also one discovered later) is made with."""
    parsed = parse_url(url)
    nodes = [redis.asyncio.cluster.ClusterNode(h, p) for h, p in parsed.seeds]
    client = redis.asyncio.cluster.RedisCluster(startup_nodes=nodes,
                                                **_credentials(parsed, kwargs))
    client.connection_kwargs["redis_connect_func"] = on_connect
    for node in client.nodes_manager.startup_nodes.values():
        node.connection_kwargs["redis_connect_func"] = on_connect
    if client.nodes_manager.connection_kwargs is not client.connection_kwargs:
        client.nodes_manager.connection_kwargs["redis_connect_func"] = on_connect
    return client


# ---------------------------------------------------------------------------- routing


def first_key(args: Command) -> gen.Arg | None:
    """The key a command is routed by: an FCALL's first key, XREAD's first stream, else the
    first argument (SADD, HGET, ...: the single-key commands the SDK sends). None: keyless."""
    name = str(args[0]).upper()
    if name in ("FCALL", "FCALL_RO"):
        return args[3] if int(args[2]) > 0 else None
    if name in ("XREAD", "XREADGROUP"):
        upper = [str(a).upper() if isinstance(a, str) else "" for a in args]
        return args[upper.index("STREAMS") + 1]
    return args[1] if len(args) > 1 else None


def _slot(key: gen.Arg) -> int:
    if isinstance(key, bytes):
        return key_slot(key)
    return key_slot(str(key).encode())


@dataclass
class _Pending:
    index: int
    node: Any  # a ClusterNode of the sync or the async client
    asking: bool = False


def _node_of(cluster: Any, args: Command) -> Any:
    key = first_key(args)
    if key is None:
        return random.choice(cluster.get_primaries())
    return cluster.nodes_manager.get_node_from_slot(_slot(key))


def _batch(commands: Sequence[Command], group: Sequence[_Pending],
           wait: Wait | None) -> list[Command]:
    out: list[Command] = []
    for p in group:
        if p.asking:
            out.append(("ASKING",))
        out.append(commands[p.index])
    if wait is not None:
        out.append(wait.command())
    return out


def _final(error: BaseException) -> BaseException:
    """A call's error as callers expect it: redis-py's RedisClusterException (not a RedisError)
    becomes the SDK's error."""
    return translate(error) if isinstance(error, redis.exceptions.RedisClusterException) \
        else error


def _settle(cluster: Any, commands: Sequence[Command], group: Sequence[_Pending],
            replies: Sequence[Any] | BaseException, wait: Wait | None,
            results: list[Any]) -> tuple[list[_Pending], bool]:
    """Stores the final replies of one node's batch in results; returns the calls to send
    again (redirected) and whether the slot map needs a refresh."""
    if isinstance(replies, BaseException):
        for p in group:
            results[p.index] = _final(replies)
        return [], isinstance(replies, _STALE_ERRORS)
    replies = list(replies)
    not_durable = wait.check(group[0].node.name, replies.pop()) if wait is not None else None
    again: list[_Pending] = []
    stale = False
    r = 0
    for p in group:
        r += 1 if p.asking else 0  # the ASKING reply
        reply = replies[r]
        r += 1
        if isinstance(reply, redis.exceptions.AskError):
            # An unknown node (None): routed by slot again, still with ASKING.
            again.append(_Pending(p.index, cluster.get_node(reply.host, reply.port), True))
        elif isinstance(reply, redis.exceptions.MovedError):
            again.append(_Pending(p.index, None))
            stale = True
        elif isinstance(reply, redis.exceptions.TryAgainError):
            again.append(_Pending(p.index, p.node))
        else:
            stale = stale or isinstance(reply, _STALE_ERRORS)
            results[p.index] = not_durable if not_durable and \
                not isinstance(reply, BaseException) else reply
    return again, stale


def _groups(pending: Sequence[_Pending]) -> dict[str, list[_Pending]]:
    groups: dict[str, list[_Pending]] = {}
    for p in pending:
        groups.setdefault(p.node.name, []).append(p)
    return groups


def _route(cluster: Any, commands: Sequence[Command], pending: list[_Pending],
           results: list[Any]) -> tuple[list[_Pending], bool]:
    """Gives every call without a node the primary of its slot; a call whose slot no node
    serves now fails with that error (and the slot map needs a refresh)."""
    out = []
    stale = False
    for p in pending:
        if p.node is None:
            try:
                p.node = _node_of(cluster, commands[p.index])
            except (*_ERRORS, IndexError) as e:
                results[p.index] = _final(e)
                stale = True
                continue
        out.append(p)
    return out, stale


def run(cluster: redis.cluster.RedisCluster, commands: Sequence[Command],
        wait: Wait | None = None) -> list[Any]:
    """Sends commands (each routed by its key), one pipeline per node; each reply or its
    exception, in order."""
    results: list[Any] = [None] * len(commands)
    pending = [_Pending(i, None) for i in range(len(commands))]
    for attempt in range(REDIRECTS):
        pending, stale = _route(cluster, commands, pending, results)
        again: list[_Pending] = []
        for group in _groups(pending).values():
            replies: list[Any] | BaseException
            try:
                client = cluster.get_redis_connection(group[0].node)
                with client.pipeline(transaction=False) as pipe:
                    for command in _batch(commands, group, wait):
                        pipe.execute_command(*command)  # type: ignore[no-untyped-call]
                    replies = pipe.execute(raise_on_error=False)
            except _ERRORS as e:
                replies = e
            redirected, refresh = _settle(cluster, commands, group, replies, wait, results)
            again += redirected
            stale = stale or refresh
        if stale:
            _refresh(cluster)
        if not again:
            return results
        if attempt > 0:  # a second redirection: the cluster is changing, give it time
            time.sleep(0.05)
        pending = again
    for p in pending:
        results[p.index] = UnavailableError(f"still redirected after {REDIRECTS} tries")
    return results


def _refresh(cluster: redis.cluster.RedisCluster) -> None:
    # No node answers now: the next call fails and tries again.
    with contextlib.suppress(*_ERRORS):
        cluster.nodes_manager.initialize()


async def arun(cluster: redis.asyncio.cluster.RedisCluster, commands: Sequence[Command],
               wait: Wait | None = None) -> list[Any]:
    """:func:`run` for redis.asyncio: the nodes' pipelines go out concurrently."""
    try:  # the first call learns the slot map
        await cluster.initialize()
    except _ERRORS as e:
        raise translate(e) from e
    results: list[Any] = [None] * len(commands)
    pending = [_Pending(i, None) for i in range(len(commands))]
    for attempt in range(REDIRECTS):
        pending, stale = _route(cluster, commands, pending, results)
        groups = list(_groups(pending).values())
        replies = await asyncio.gather(*(_anode(cluster, commands, g, wait) for g in groups),
                                       return_exceptions=True)
        again: list[_Pending] = []
        for group, reply in zip(groups, replies, strict=True):
            if isinstance(reply, BaseException) and not isinstance(reply, Exception):
                raise reply  # cancelled
            redirected, refresh = _settle(cluster, commands, group, reply, wait, results)
            again += redirected
            stale = stale or refresh
        if stale:
            with contextlib.suppress(*_ERRORS):
                await cluster.nodes_manager.initialize()
        if not again:
            return results
        if attempt > 0:
            await asyncio.sleep(0.05)
        pending = again
    for p in pending:
        results[p.index] = UnavailableError(f"still redirected after {REDIRECTS} tries")
    return results


async def _anode(cluster: redis.asyncio.cluster.RedisCluster, commands: Sequence[Command],
                 group: Sequence[_Pending], wait: Wait | None) -> list[Any]:
    """One node's batch on one connection: redis.asyncio's ClusterPipeline with every command
    aimed at the node and redirections left to us."""
    pipe = cluster.pipeline()
    for command in _batch(commands, group, wait):
        pipe.execute_command(*command, target_nodes=group[0].node)
    return list(await pipe.execute(raise_on_error=False, allow_redirections=False))
