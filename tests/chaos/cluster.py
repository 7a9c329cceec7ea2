"""The processes of the chaos run: the queue Redis (AOF, appendfsync always), the ledger Redis
(never killed), two batond, the collector and the workers. Each is a ManagedProcess the chaos can
kill -9 and start again; a supervisor thread restarts workers that exit by themselves (counted:
an exit we did not cause is reported, not hidden)."""
import os
import subprocess
import threading
import time

import redis
from redis_harness import free_port

FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"


def now_ms():
    return int(time.time() * 1000)


class ManagedProcess:
    """One long-running program: argv, env, a log file; start(), kill9(), stop()."""

    def __init__(self, label, argv, log_dir, env=None, skew=None):
        self.label = label
        self.argv = argv
        self.env = dict(os.environ, **(env or {}))
        # skew, e.g. "+90s": run under libfaketime (LD_PRELOAD, so the pid is the program's own).
        # Only the wall clock is moved: a host whose clock is off still has a steady monotonic
        # clock, and faking that too would only test libfaketime's timed waits.
        self.skew = skew
        if skew:
            self.env.update(LD_PRELOAD=FAKETIME_LIB, FAKETIME=skew,
                            FAKETIME_DONT_FAKE_MONOTONIC="1")
        self.log_path = os.path.join(log_dir, f"{label}.log")
        self.proc = None
        self.pids = []  # every pid this slot had, in order
        self.expected_down = False  # True between our kill and our restart
        self.unexpected_exits = []  # (ms, pid, exit status)
        self.lock = threading.Lock()

    def start(self):
        with self.lock:
            log = open(self.log_path, "ab")
            log.write(f"--- start {now_ms()} {' '.join(self.argv)}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(self.argv, env=self.env, stdout=log,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            log.close()
            self.pids.append(self.proc.pid)
            self.expected_down = False
            return self.proc.pid

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill9(self):
        """SIGKILL; returns (pid, ms) of the kill."""
        with self.lock:
            self.expected_down = True
            pid = self.proc.pid
            self.proc.kill()
            at = now_ms()
            self.proc.wait()
            return pid, at

    def stop(self, timeout=10):
        """SIGTERM, then SIGKILL after timeout."""
        with self.lock:
            self.expected_down = True
            if self.proc is None or self.proc.poll() is not None:
                return
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def check_exit(self):
        """Records an exit we did not cause; True when the slot needs a restart."""
        with self.lock:
            if self.expected_down or self.proc is None or self.proc.poll() is None:
                return False
            self.unexpected_exits.append((now_ms(), self.proc.pid, self.proc.returncode))
            self.expected_down = True
            return True


class RedisServer:
    """A redis-server on a free loopback port in its own directory. With aof, every write is
    fsynced before the reply (appendfsync always), so what a client was told is on disk."""

    def __init__(self, label, work_dir, log_dir, aof):
        self.port = free_port()
        self.dir = os.path.join(work_dir, label)
        os.makedirs(self.dir, exist_ok=True)
        persistence = (["--appendonly", "yes", "--appendfsync", "always"] if aof
                       else ["--appendonly", "no"])
        argv = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                "--dir", self.dir, "--save", "", "--daemonize", "no", *persistence]
        self.process = ManagedProcess(label, argv, log_dir)
        self.url = f"redis://127.0.0.1:{self.port}"

    def start(self, timeout=20):
        self.process.start()
        self.wait_ready(timeout)

    def wait_ready(self, timeout=20):
        r = redis.Redis(port=self.port, socket_timeout=1)
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                if r.ping():
                    return
            except redis.exceptions.BusyLoadingError:
                pass
            except redis.exceptions.ConnectionError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"{self.process.label}: redis-server not ready after {timeout}s")

    def client(self):
        return redis.Redis(port=self.port, socket_timeout=5)


class Supervisor(threading.Thread):
    """Restarts a worker slot that died without our kill (after 1 s), so the run goes on; each such
    exit is kept for the report."""

    def __init__(self, slots):
        super().__init__(daemon=True, name="supervisor")
        self.slots = slots
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.wait(0.5):
            for slot in self.slots:
                if slot.check_exit():
                    time.sleep(1)
                    slot.start()
