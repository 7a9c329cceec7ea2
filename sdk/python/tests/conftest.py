"""Fixtures: one redis-server for the session (functions loaded), flushed before each test; a
namespace per test; clients."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator

import pytest
import redis

import baton
from harness import RedisServer, State

_counter = itertools.count()


@pytest.fixture(scope="session")
def server() -> Iterator[RedisServer]:
    s = RedisServer().start()
    yield s
    s.stop()


@pytest.fixture
def r(server: RedisServer) -> Iterator[redis.Redis]:
    """A raw connection to the session's Redis, flushed (the library stays loaded)."""
    conn = server.client()
    conn.flushall()
    if conn.execute_command("FUNCTION", "LIST", "LIBRARYNAME", "baton_v2") == []:
        server.load_functions()
    yield conn
    conn.close()


@pytest.fixture
def url(server: RedisServer, r: redis.Redis) -> str:
    return server.url


@pytest.fixture
def ns() -> str:
    return f"t{next(_counter)}"


@pytest.fixture
def client(url: str) -> Iterator[baton.Client]:
    with baton.Client(url) as c:
        yield c


@pytest.fixture
def state(r: redis.Redis, ns: str) -> State:
    return State(r, ns)


@pytest.fixture(autouse=True)
def _quiet_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="baton")
