"""Workers as processes: `baton-worker module:app`, graceful SIGTERM, crash recovery after
kill -9 (in-process maintenance or batond reclaims; nothing is lost), reconnect after a Redis
restart."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator

import pytest
import redis

import baton
from harness import RedisServer, State, require_binary, wait_for

BATON_WORKER = pathlib.Path(sys.executable).parent / "baton-worker"

APP = textwrap.dedent('''
    import os, time
    import baton

    env = os.environ
    app = baton.Worker(env["T_URL"], block_ms=500, shutdown_grace=float(env.get("T_GRACE", "30")))

    @app.task(env["T_NS"], "work", concurrency=int(env["T_CONC"]) if "T_CONC" in env else None,
              lease_ms=int(env.get("T_LEASE", "0")))
    def work(task):
        with open(env["T_OUT"], "a") as f:
            f.write(f"start {task.id} {task.attempt} {os.getpid()}\\n")
        time.sleep(float(task.payload.get("sleep", 0)))
        with open(env["T_OUT"], "a") as f:
            f.write(f"end {task.id} {task.attempt} {os.getpid()}\\n")
''')


def start_app(tmp_path: pathlib.Path, url: str, ns: str, **env: str) -> subprocess.Popen[bytes]:
    (tmp_path / "lifecycle_app.py").write_text(APP)
    environ = dict(os.environ, T_URL=url, T_NS=ns, T_OUT=str(tmp_path / "runs.txt"),
                   **{f"T_{k.upper()}": v for k, v in env.items()})
    return subprocess.Popen([str(BATON_WORKER), "lifecycle_app:app", "--log-level", "INFO"],
                            cwd=tmp_path, env=environ, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)


def runs(tmp_path: pathlib.Path) -> list[tuple[str, str, int, int]]:
    path = tmp_path / "runs.txt"
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        what, task_id, attempt, pid = line.split()
        out.append((what, task_id, int(attempt), int(pid)))
    return out


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_stops_gracefully(tmp_path: pathlib.Path, url: str, client: baton.Client,
                                 ns: str, state: State, sig: signal.Signals) -> None:
    running = client.enqueue(ns, "work", {"sleep": 2}).task_id
    waiting = client.enqueue(ns, "work", {}).task_id
    worker = start_app(tmp_path, url, ns, conc="1")
    try:
        assert wait_for(lambda: ("start", running, 1, worker.pid) in runs(tmp_path))
        worker.send_signal(sig)
        output, _ = worker.communicate(timeout=60)
    finally:
        worker.kill()
    assert worker.returncode == 0, output.decode()
    assert b"stopping gracefully" in output
    # The running task finished and was acked; the waiting one was never taken.
    assert ("end", running, 1, worker.pid) in runs(tmp_path)
    assert state.state(running) == "done"
    assert state.record(waiting) is not None and state.record(waiting)[0] == "queued"
    assert all(task_id != waiting for _, task_id, _, _ in runs(tmp_path))


def test_second_signal_stops_at_once(tmp_path: pathlib.Path, url: str, client: baton.Client,
                                    ns: str, state: State) -> None:
    """The first signal waits up to shutdown_grace (30 s here) for the running task; a second
    one ends that wait: the task is left to its lease and the worker exits now."""
    running = client.enqueue(ns, "work", {"sleep": 60}).task_id
    worker = start_app(tmp_path, url, ns, conc="1", grace="30")
    try:
        assert wait_for(lambda: ("start", running, 1, worker.pid) in runs(tmp_path))
        worker.send_signal(signal.SIGTERM)
        time.sleep(1)  # the worker is now inside its grace period
        started = time.monotonic()
        worker.send_signal(signal.SIGINT)
        output, _ = worker.communicate(timeout=20)
        elapsed = time.monotonic() - started
    finally:
        worker.kill()
    assert worker.returncode == 0, output.decode()
    assert b"again: stopping without waiting" in output, output.decode()
    assert elapsed < 15, elapsed
    assert ("end", running, 1, worker.pid) not in runs(tmp_path)
    assert state.state(running) not in ("done", None)  # not acked: left to its lease


def test_crashed_fetch_loop_exits_nonzero(tmp_path: pathlib.Path, url: str,
                                          client: baton.Client, ns: str) -> None:
    """A fetch loop dying of an unexpected exception stops the worker; baton-worker must then
    exit 1 (not 0 as after a requested stop) so that a supervisor restarts it."""
    (tmp_path / "crash_app.py").write_text(textwrap.dedent('''
        import os
        import baton
        import baton._runner

        def broken_start(self, reply, last_id):
            raise RuntimeError("injected fault in the fetch loop")

        baton._runner.TypeRunner._start = broken_start
        app = baton.Worker(os.environ["T_URL"], block_ms=500)

        @app.task(os.environ["T_NS"], "work")
        def work(task):
            pass
    '''))
    client.enqueue(ns, "work", {})
    env = dict(os.environ, T_URL=url, T_NS=ns)
    done = subprocess.run([str(BATON_WORKER), "crash_app:app"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1, done.stderr
    assert "injected fault in the fetch loop" in done.stderr


def test_cli_flags_override_the_app(tmp_path: pathlib.Path, url: str, client: baton.Client,
                                    ns: str, state: State) -> None:
    """--redis replaces the app's URL (here one where nothing listens), --concurrency the
    default slots, --maintenance promotes a delayed task without batond."""
    delayed = client.enqueue(ns, "work", {}, delay=1).task_id
    (tmp_path / "lifecycle_app.py").write_text(APP)
    environ = dict(os.environ, T_URL="redis://127.0.0.1:1", T_NS=ns,
                   T_OUT=str(tmp_path / "runs.txt"))
    worker = subprocess.Popen([str(BATON_WORKER), "lifecycle_app:app", "--redis", url,
                               "--concurrency", "3", "--maintenance", "--log-level", "INFO"],
                              cwd=tmp_path, env=environ, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT)
    try:
        assert wait_for(lambda: state.state(delayed) == "done", timeout=60)
        worker.send_signal(signal.SIGTERM)
        output, _ = worker.communicate(timeout=60)
    finally:
        worker.kill()
    assert worker.returncode == 0, output.decode()
    assert f"{ns}/work (thread x3)".encode() in output, output.decode()


@pytest.fixture(params=["maintenance", "batond"])
def reclaimer(request: pytest.FixtureRequest, url: str) -> Iterator[str]:
    """Who takes back the dead worker's tasks: a worker's in-process maintenance, or batond."""
    if request.param == "maintenance":
        yield "maintenance"
        return
    batond = require_binary("daemon/batond")
    process = subprocess.Popen([str(batond), "--redis-url", url, "--retry-base-ms", "100",
                                "--discovery-interval-ms", "1000"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield "batond"
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_kill_9_loses_nothing(tmp_path: pathlib.Path, url: str, client: baton.Client, ns: str,
                              state: State, reclaimer: str) -> None:
    ids = [client.enqueue(ns, "work", {"sleep": 1}).task_id for _ in range(12)]
    victim = start_app(tmp_path, url, ns, conc="4", lease="1000")
    try:
        assert wait_for(lambda: sum(1 for r in runs(tmp_path) if r[0] == "start") >= 4)
    finally:
        victim.kill()  # SIGKILL: no cleanup, no acks, no goodbye
        victim.wait()
    killed_mid_run = {t for what, t, _, pid in runs(tmp_path) if what == "start"} - \
        {t for what, t, _, pid in runs(tmp_path) if what == "end"}
    assert killed_mid_run

    rescuer = baton.Worker(url, block_ms=500, maintenance=reclaimer == "maintenance")
    out = tmp_path / "runs.txt"
    lock = threading.Lock()

    @rescuer.task(ns, "work", concurrency=4, lease_ms=1000,
                  retry=baton.RetryPolicy(base_ms=100, max_ms=500))
    def work(task: baton.Task) -> None:
        with lock, open(out, "a") as f:
            f.write(f"start {task.id} {task.attempt} 0\nend {task.id} {task.attempt} 0\n")

    rescuer.start()
    try:
        assert wait_for(lambda: all(state.state(t) == "done" for t in ids), timeout=90), \
            {t: state.state(t) for t in ids}
    finally:
        rescuer.stop()
        rescuer.join(60)
    ended = {t for what, t, _, _ in runs(tmp_path) if what == "end"}
    assert ended == set(ids)  # every task ran to the end at least once
    for task_id in killed_mid_run:
        # The reaper failed the lost attempt as lease_expired (a done task keeps no errors; the
        # events stream has the transition).
        lost = [e for e in state.events(task_id) if e["to"] == "retry"]
        assert len(lost) == 1 and lost[0]["error"].startswith("lease expired"), lost
        assert any(t == task_id and attempt >= 2 for what, t, attempt, _ in runs(tmp_path)
                   if what == "end"), task_id


def test_worker_reconnects_after_redis_restart(caplog: pytest.LogCaptureFixture) -> None:
    """Redis restarts empty: the worker's connections break, and until `baton init` runs again
    every reconnect finds no library; the worker keeps retrying with backoff and resumes."""
    server = RedisServer().start()
    try:
        ns = "restart"
        done: list[str] = []
        app = baton.Worker(server.url, block_ms=500)

        @app.task(ns, "t")
        def handler(task: baton.Task) -> None:
            done.append(task.id)

        app.start()
        try:
            with baton.Client(server.url) as client:
                first = client.enqueue(ns, "t", {}).task_id
                assert wait_for(lambda: done == [first])
                server.restart()  # all data and the library are gone, connections broken
                assert wait_for(lambda: "version none loaded" in caplog.text, timeout=30)
                server.load_functions()  # what `baton init` does
                second = client.enqueue(ns, "t", {}).task_id
                assert wait_for(lambda: done == [first, second], timeout=60)
                state = State(server.client(), ns)
                assert wait_for(lambda: state.state(second) == "done")
                assert "recovered after" in caplog.text
        finally:
            app.stop()
            assert app.join(60)
    finally:
        server.stop()


def test_cli_exit_codes(tmp_path: pathlib.Path, r: redis.Redis) -> None:
    bad = subprocess.run([str(BATON_WORKER), "no_such_module:app"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60, check=False)
    assert bad.returncode == 2
    assert "cannot load no_such_module:app" in bad.stderr
    empty = RedisServer().start(load=False)  # no functions library
    try:
        (tmp_path / "lifecycle_app.py").write_text(APP)
        env = dict(os.environ, T_URL=empty.url, T_NS="x", T_OUT=str(tmp_path / "o"))
        missing = subprocess.run([str(BATON_WORKER), "lifecycle_app:app"], cwd=tmp_path,
                                 env=env, capture_output=True, text=True, timeout=60,
                                 check=False)
    finally:
        empty.stop()
    assert missing.returncode == 3, missing.stderr
    assert "run 'baton init'" in missing.stderr
