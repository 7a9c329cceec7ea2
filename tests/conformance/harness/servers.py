"""The processes every cell shares: one redis-server on a free loopback port and one batond.

redis-server runs without persistence (--save '' --appendonly no) in the run's work directory;
the functions library is `scripts/functions.sh` (functions/*.lua in file-name order), loaded with
FUNCTION LOAD REPLACE. batond promotes delayed tasks and retries and reclaims expired leases for
every namespace, exactly as in production: the drivers' workers run without maintenance.
"""

import os
import shutil
import signal
import socket
import subprocess
import time

import redis

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
# Environment variables batond would read instead of its flags: a developer's settings must not
# leak into the run.
BATOND_ENV_DROP = ("BATON_CONFIG", "BATON_REDIS_URL", "BATON_NAMESPACES", "BATON_HEALTH",
                   "BATON_LOAD_FUNCTIONS", "BATON_INSTANCE")


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_process(process, timeout_s=10.0):
    """SIGTERM, then SIGKILL of the process group after `timeout_s`. Returns the exit status."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            pass
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            process.kill()
        process.wait()
    return process.returncode


class RedisServer:
    def __init__(self, work_dir):
        self.dir = os.path.join(work_dir, "redis")
        os.makedirs(self.dir, exist_ok=True)
        self.port = None
        self.process = None

    @property
    def url(self):
        return "redis://127.0.0.1:%d" % self.port

    def client(self):
        return redis.Redis(host="127.0.0.1", port=self.port, decode_responses=True)

    def start(self, timeout_s=15.0):
        last = None
        for _ in range(5):  # another process may take the port between the probe and the bind
            self.port = free_port()
            with open(os.path.join(self.dir, "redis.log"), "ab") as log:
                self.process = subprocess.Popen(
                    [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1",
                     "--save", "", "--appendonly", "no", "--dir", self.dir,
                     "--daemonize", "no"],
                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline and self.process.poll() is None:
                try:
                    if redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=1).ping():
                        return
                except redis.exceptions.ConnectionError as e:
                    last = e
                time.sleep(0.05)
            stop_process(self.process)
        raise RuntimeError("redis-server did not start: %s" % last)

    def load_functions(self, repo):
        source = subprocess.run([os.path.join(repo, "scripts", "functions.sh")],
                                check=True, capture_output=True).stdout.decode()
        self.client().function_load(source, replace=True)

    def stop(self):
        if self.process is not None:
            stop_process(self.process)


class Batond:
    def __init__(self, binary, redis_url, work_dir):
        self.binary = binary
        self.redis_url = redis_url
        self.log_path = os.path.join(work_dir, "batond.log")
        self.process = None

    def start(self, timeout_s=30.0):
        env = {k: v for k, v in os.environ.items() if k not in BATOND_ENV_DROP}
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [self.binary, "--redis-url", self.redis_url, "--instance", "conformance-batond"],
                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("batond exited with %d (log: %s)"
                                   % (self.process.returncode, self.log_path))
            with open(self.log_path, "rb") as log:
                if b"batond running" in log.read():
                    return
            time.sleep(0.05)
        raise RuntimeError("batond did not log 'batond running' within %d s (log: %s)"
                           % (timeout_s, self.log_path))

    def alive(self):
        return self.process is not None and self.process.poll() is None

    def stop(self):
        if self.process is not None:
            stop_process(self.process)
