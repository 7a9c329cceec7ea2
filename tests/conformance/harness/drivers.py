"""Finds the language drivers (tests/conformance/drivers/<lang>/) and runs their `prepare`.

prepare exits 0 (ready), 3 (absent: that language's SDK is not built yet; one line on stderr says
why) or anything else (broken: the language is there but cannot run, which fails its cells).
"""

import os
import subprocess
import time

# Matrix order; any other directory under drivers/ follows in name order.
KNOWN = ("cpp", "cli", "python", "node", "go", "java")
ABSENT_EXIT = 3
PREPARE_TIMEOUT_S = 900  # a first prepare may download a toolchain's packages


class Driver:
    def __init__(self, name, directory):
        self.name = name
        self.dir = directory
        self.driver = os.path.join(directory, "driver")
        self.state = "absent"  # ready | absent | broken
        self.reason = ""
        self.prepare_seconds = 0.0


def discover(drivers_dir, only=None):
    names = list(KNOWN)
    if os.path.isdir(drivers_dir):
        names += sorted(n for n in os.listdir(drivers_dir)
                        if n not in KNOWN and not n.startswith((".", "_"))
                        and os.path.isdir(os.path.join(drivers_dir, n)))
    if only:
        names = [n for n in names if n in only]
    return [Driver(n, os.path.join(drivers_dir, n)) for n in names]


def prepare(driver, env, log_dir):
    """Runs the driver's prepare and sets driver.state / driver.reason."""
    prepare_path = os.path.join(driver.dir, "prepare")
    if not os.path.isdir(driver.dir):
        driver.state, driver.reason = "absent", "no driver directory"
        return driver
    if not (os.access(prepare_path, os.X_OK) and os.access(driver.driver, os.X_OK)):
        driver.state, driver.reason = "absent", "no executable prepare and driver"
        return driver
    started = time.monotonic()
    log_path = os.path.join(log_dir, "prepare-%s.log" % driver.name)
    try:
        run = subprocess.run([prepare_path], cwd=driver.dir, env=env, capture_output=True,
                             timeout=PREPARE_TIMEOUT_S)
        code, out, err = run.returncode, run.stdout, run.stderr
    except subprocess.TimeoutExpired as e:
        code, out, err = "timeout", e.stdout or b"", (e.stderr or b"") + b"\nprepare timed out"
    driver.prepare_seconds = time.monotonic() - started
    with open(log_path, "wb") as log:
        log.write(out + b"\n--- stderr ---\n" + err)
    lines = [line for line in err.decode(errors="replace").splitlines() if line.strip()]
    if code == 0:
        driver.state = "ready"
    elif code == ABSENT_EXIT:
        driver.state, driver.reason = "absent", (lines[-1] if lines else "prepare exited 3")
    else:
        driver.state = "broken"
        driver.reason = "prepare exited %s: %s (log: %s)" % (
            code, lines[-1] if lines else "", log_path)
    return driver
