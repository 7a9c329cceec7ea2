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


# Cluster mode (BATON_PROTOCOL_CLUSTER=1): the protocol suite runs on one shared Redis Cluster
# (3 primaries, 3 replicas; tests/harness/redis_cluster.py), started on first use and stopped when
# the process exits.

CLUSTER_MODE = os.environ.get("BATON_PROTOCOL_CLUSTER", "") not in ("", "0")
_HARNESS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness")
_shared_cluster = None


def redis_cluster_module():
    """tests/harness/redis_cluster.py, imported."""
    import sys
    if _HARNESS_DIR not in sys.path:
        sys.path.insert(0, _HARNESS_DIR)
    import redis_cluster
    return redis_cluster


def shared_cluster():
    """The process's cluster (DEBUG enabled), started on first use; the harness's atexit stops
    it."""
    global _shared_cluster
    if _shared_cluster is None:
        rc = redis_cluster_module()
        _shared_cluster = rc.RedisCluster(extra_args=["--enable-debug-command", "yes"]).start()
    return _shared_cluster


class ClusterServer:
    """What the tests use of a RedisServer, over the shared cluster: client() is a
    redis.cluster.RedisCluster, port the primary that serves the namespace `home_ns` (a plain
    redis.Redis there sees that namespace's keys), process that node's process; stop() leaves the
    shared cluster running."""

    def __init__(self, home_ns):
        self.cluster = shared_cluster()
        self.home_ns = home_ns

    def home_node(self):
        return self.cluster.primary_for_key("{" + self.home_ns + "}")

    @property
    def port(self):
        return self.home_node().port

    @property
    def process(self):
        return self.home_node().process

    def client(self, **kwargs):
        return self.cluster.client(**kwargs)

    def node_clients(self, **kwargs):
        """A plain redis.Redis per primary."""
        return [self.cluster.node_client(n, **kwargs) for n in self.cluster.primaries()]

    def start(self):
        return self

    def stop(self):
        pass


def protocol_server(extra_args=(), home_ns="shop"):
    """The server of a protocol test: a started RedisServer, or in cluster mode the shared
    cluster (a ClusterServer whose port is home_ns's primary)."""
    if CLUSTER_MODE:
        return ClusterServer(home_ns)
    return RedisServer(extra_args).start()
