"""Starts a real redis-server for the protocol tests.

The server listens on a free 127.0.0.1 port, keeps its files in its own temporary directory,
never persists (--save '' --appendonly no), and is killed and its directory removed by stop().
"""

import os
import shutil
import socket
import subprocess
import tempfile
import time

import redis

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """One redis-server process. Use as a context manager, or call start() / stop()."""

    def __init__(self, extra_args=()):
        self.extra_args = list(extra_args)
        self.port = None
        self.dir = None
        self.process = None

    def start(self, timeout_s=10.0):
        self.dir = tempfile.mkdtemp(prefix="baton-redis-")
        last_error = None
        for _ in range(5):  # another process may grab the port between the probe and the bind
            self.port = free_port()
            log = open(os.path.join(self.dir, "redis.log"), "wb")
            self.process = subprocess.Popen(
                [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1",
                 "--save", "", "--appendonly", "no", "--dir", self.dir,
                 "--daemonize", "no"] + self.extra_args,
                stdout=log, stderr=subprocess.STDOUT)
            log.close()
            try:
                self._wait_ready(timeout_s)
                return self
            except RuntimeError as e:
                last_error = e
                self._kill()
        self.stop()
        raise RuntimeError(f"redis-server did not start: {last_error}")

    def _wait_ready(self, timeout_s):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"exited with {self.process.returncode}")
            try:
                if redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=1).ping():
                    return
            except redis.exceptions.ConnectionError:
                pass
            time.sleep(0.02)
        raise RuntimeError(f"no PING reply within {timeout_s} s")

    def client(self, **kwargs):
        """A new connection to the server (bytes replies unless decode_responses is given)."""
        return redis.Redis(host="127.0.0.1", port=self.port, **kwargs)

    def _kill(self):
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.process = None

    def stop(self):
        self._kill()
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False
