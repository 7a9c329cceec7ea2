"""Test harness: a real redis-server on a free loopback port, the functions library, the C++
binaries, and small helpers. Never a mock of Redis."""

from __future__ import annotations

import contextlib
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

import redis

ROOT = pathlib.Path(__file__).resolve().parents[3]
SDK = ROOT / "sdk" / "python"
FUNCTIONS = ROOT / "functions"
FIXTURES = ROOT / "contract" / "fixtures"
REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
BUILD_DIR = pathlib.Path(os.environ.get("BATON_BUILD_DIR", ROOT / "build" / "release"))
# Failures kept per task in the errors hash, the newest (ERRORS_KEPT in functions/00-header.lua).
ERRORS_KEPT = 50


def library_source() -> str:
    """functions/*.lua concatenated in file-name order (what scripts/functions.sh prints)."""
    files = sorted(FUNCTIONS.glob("*.lua"), key=lambda p: p.name.encode())
    return "".join(p.read_text(encoding="utf-8") for p in files)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    """One redis-server process (no persistence) with its own directory."""

    def __init__(self) -> None:
        self.port = 0
        self.dir = tempfile.mkdtemp(prefix="baton-py-redis-")
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def start(self, port: int | None = None, load: bool = True) -> RedisServer:
        for _ in range(5):  # another process may take the port between probe and bind
            self.port = port or free_port()
            log = open(os.path.join(self.dir, "redis.log"), "ab")  # noqa: SIM115
            self.process = subprocess.Popen(
                [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", self.dir, "--daemonize", "no"],
                stdout=log, stderr=subprocess.STDOUT)
            log.close()
            if self._wait_ready():
                if load:
                    self.load_functions()
                return self
            self.kill()
            if port:
                time.sleep(0.5)  # the same port: wait for the old socket to go
        raise RuntimeError(f"redis-server did not start; see {self.dir}/redis.log")

    def _wait_ready(self, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                return False
            try:
                if redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=1).ping():
                    return True
            except redis.exceptions.ConnectionError:
                pass
            time.sleep(0.02)
        return False

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=10)

    def load_functions(self) -> None:
        r = self.client()
        r.execute_command("FUNCTION", "LOAD", "REPLACE", library_source())
        r.close()

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.process = None

    def restart(self) -> None:
        """Kills and restarts on the same port (the data and the library are gone)."""
        port = self.port
        self.kill()
        self.start(port=port, load=False)

    def stop(self) -> None:
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def wait_for(condition: Callable[[], Any], timeout: float = 30.0, interval: float = 0.05) -> Any:
    """Polls condition until it returns something truthy (returned) or the timeout passes (the
    last value is returned). Generous timeouts: the test machine may be loaded."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


def binary(relative: str) -> pathlib.Path | None:
    """A C++ binary of the build dir, or None when it is not built."""
    path = BUILD_DIR / relative
    return path if path.exists() else None


def require_binary(relative: str) -> pathlib.Path:
    """The binary, or skip the test (fail instead when BATON_REQUIRE_BINARIES is set)."""
    import pytest

    path = binary(relative)
    if path is not None:
        return path
    message = f"{BUILD_DIR / relative} is not built (set BATON_BUILD_DIR or build it)"
    if os.environ.get("BATON_REQUIRE_BINARIES"):
        pytest.fail(message)
    pytest.skip(message)


def python_subprocess(code: str, *args: str, **kwargs: Any) -> subprocess.Popen[bytes]:
    """A child Python (this venv) running code, with the SDK importable."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.Popen([sys.executable, "-c", code, *args], env=env, **kwargs)


class State:
    """Reads task state straight from Redis (docs/keyspace.md), to check what the SDK did."""

    def __init__(self, r: redis.Redis, namespace: str):
        from baton.keys import Keyspace

        self.r = r
        self.ks = Keyspace(namespace)

    def record(self, task_id: str) -> tuple[str, str, int, str] | None:
        rec = self.r.hget(self.ks.of("tasks"), task_id)
        if rec is None:
            return None
        state, task_type, attempt, sid = rec.decode().split("|", 3)
        return state, task_type, int(attempt), sid

    def state(self, task_id: str) -> str | None:
        rec = self.record(task_id)
        if rec is not None:
            return rec[0]
        if self.r.zscore(self.ks.of("done"), task_id) is None:
            return None
        ended = self.r.hget(self.ks.of("ended"), task_id)
        return "done" if ended is None else ended.decode().split("|", 1)[0]

    def errors(self, task_id: str) -> list[dict[str, Any]]:
        """The failed attempts recorded for a task, oldest first ([] when none). The errors hash
        has one field per failure (docs/keyspace.md, "Error history"): ID -> N, the sequence
        number of the newest, and ID|K -> failure K, the newest ERRORS_KEPT kept. So: HGET ID ->
        N, then HMGET ID|max(1, N-ERRORS_KEPT+1) .. ID|N."""
        import json

        key = self.ks.of("errors")
        n = self.r.hget(key, task_id)
        if n is None:
            return []
        last = int(n)
        fields = [f"{task_id}|{k}" for k in range(max(1, last - ERRORS_KEPT + 1), last + 1)]
        if not fields:
            return []
        return [json.loads(v) for v in self.r.hmget(key, fields) if v is not None]

    def delivered(self, task_type: str) -> dict[str, dict[str, bytes]]:
        """Every queued task of a type as baton_v2_dequeue delivers it (to a consumer of a
        test group), by task id: the fields the protocol returns, never the stream's internal
        layout."""
        from baton import _generated as gen
        from baton import _redis

        call = gen.dequeue(self.ks.for_type(task_type), "peek", "peek", 1000, 0)
        entries = self.r.execute_command(*_redis.fcall_args(call))[0]
        names = ("sid", "id", "payload", "max_retry", "delay_seconds", "created_at",
                 "execution_timeout", "extra", "attempt")
        out = {}
        for i in range(0, len(entries), len(names)):
            values = dict(zip(names, entries[i : i + len(names)], strict=True))
            out[values["id"].decode()] = values
        return out

    def events(self, task_id: str) -> list[dict[str, str]]:
        """The events entries that name task_id (fields type, from, to, worker, ids, attempts,
        error), oldest first."""
        out = []
        for _, fields in self.r.xrange(self.ks.of("events")):
            event = {k.decode(): v.decode() for k, v in fields.items()}
            if task_id in event.get("ids", "").split(" "):
                out.append(event)
        return out

    def dead(self, task_type: str) -> list[str]:
        return [m.decode() for m in self.r.zrange(self.ks.of("dead", task_type), 0, -1)]


@contextlib.contextmanager
def running(worker: Any) -> Iterator[Any]:
    """A started baton.Worker, stopped (and joined) when the block ends."""
    worker.start()
    try:
        yield worker
    finally:
        worker.stop()
        assert worker.join(60), "the worker did not stop"
