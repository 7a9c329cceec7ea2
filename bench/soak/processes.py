"""The processes of a soak run: batond and the workers, each started with its log in the run's
directory, watched for an early exit and stopped with SIGTERM at the end; and what they cost
(VmRSS from /proc/<pid>/status)."""

import os
import signal
import subprocess
import time


def rss_kib(pid):
    """Resident set size of pid in KiB (VmRSS), or None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None


class Process:
    """One child process under a short name (batond, cpp-1, py-1, redis)."""

    def __init__(self, name, argv, log_dir, ready_text=None, env=None):
        self.name = name
        self.log_path = os.path.join(log_dir, f"{name}.log")
        with open(self.log_path, "wb") as log:
            self.popen = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
        self.pid = self.popen.pid
        if ready_text:
            self._wait_for(ready_text)

    def _wait_for(self, text, timeout_s=15.0):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.log_tail().find(text) >= 0:
                return
            if self.popen.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f"{self.name} did not log {text!r}:\n{self.log_tail()}")

    def log_tail(self, chars=2000):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")[-chars:]

    def alive(self):
        return self.popen.poll() is None

    def stop(self, timeout_s=15.0):
        """SIGTERM, wait; SIGKILL after timeout_s. Returns the exit status (negative: signal)."""
        if self.alive():
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        return self.popen.returncode
