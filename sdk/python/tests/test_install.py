"""The package installs the way the README says, NOT editable:
``pip install './sdk/python[hiredis]'`` into a fresh venv, from PyPI with the versions of
requirements-dev.lock (``PIP_CONSTRAINT``, which also pins hatchling in pip's isolated build
environment), and the installed ``baton-worker`` entry point runs an application that processes
a task. Needs PyPI (or pip's cache), like scripts/venv.sh; about 15 s. Deselect with
``-m "not install"``."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest

import baton
from harness import SDK, State, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.install]

LOCK = SDK / "requirements-dev.lock"


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of the installed venv's processes: nothing of the test venv (no
    PYTHONPATH, no VIRTUAL_ENV), so only what pip installed is importable."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PIP_REQUIRE_VIRTUALENV")}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONUNBUFFERED="1", **extra)
    return env


def run(args: list[str], cwd: pathlib.Path, **extra: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, cwd=cwd, env=clean_env(**extra), capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, f"{args} exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[pathlib.Path]:
    """A fresh venv with the SDK installed as the README says (once for this module)."""
    work = tmp_path_factory.mktemp("install")
    # The base interpreter of the test venv (Python >= 3.10, as scripts/venv.sh chose it).
    # --without-pip: the test venv's pip (the same version ensurepip would put there) installs
    # into it through --python, which saves the ~10 s of ensurepip.
    base = getattr(sys, "_base_executable", sys.executable)
    run([base, "-m", "venv", "--without-pip", str(work / "venv")], work)
    # The README's command, from the repository root; the lock constrains every version.
    run([sys.executable, "-m", "pip", "--python", str(work / "venv" / "bin" / "python"),
         "install", "--quiet", "./sdk/python[hiredis]"],
        SDK.parents[1], PIP_CONSTRAINT=str(LOCK))
    yield work / "venv"


def test_installs_non_editable_with_the_locked_versions(venv: pathlib.Path) -> None:
    py = str(venv / "bin" / "python")
    where = run([py, "-c", "import baton, pathlib; print(pathlib.Path(baton.__file__).parent)"],
                venv.parent).stdout.strip()
    site = run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
               venv.parent).stdout.strip()
    assert where == str(pathlib.Path(site) / "baton")  # a copy in site-packages, not src/
    assert (pathlib.Path(where) / "py.typed").is_file()
    assert (pathlib.Path(where) / "_generated.py").is_file()
    assert not [p for p in pathlib.Path(site).glob("*.pth") if "sdk" in p.read_text()]
    pip = [sys.executable, "-m", "pip", "--python", py]
    frozen = run([*pip, "freeze", "--all"], venv.parent).stdout.splitlines()
    assert f"baton @ file://{SDK}" in frozen, frozen
    assert not [line for line in frozen if line.startswith("-e")]  # not editable
    locked = {line.split(";")[0].strip() for line in LOCK.read_text().splitlines()
              if line and not line.startswith("#")}
    for name in ("redis", "hiredis"):
        (pin,) = [line for line in frozen if line.lower().startswith(f"{name}==")]
        assert pin in locked  # the lock's version, not PyPI's newest
    run([*pip, "check"], venv.parent)


def test_installed_entry_point_runs(venv: pathlib.Path) -> None:
    done = run([str(venv / "bin" / "baton-worker"), "--help"], venv.parent)
    assert done.stdout.startswith("usage: baton-worker")
    assert "module:attribute" in done.stdout


def test_installed_baton_worker_processes_a_task(venv: pathlib.Path, tmp_path: pathlib.Path,
                                                 url: str, client: baton.Client, ns: str,
                                                 state: State) -> None:
    """A tiny app run by the installed ``baton-worker``: it handles one task (from the
    installed package, not the repository's src/) and stops with exit 0 on SIGTERM."""
    (tmp_path / "tinyapp.py").write_text(textwrap.dedent(f"""
        import pathlib
        import baton

        app = baton.Worker({url!r}, block_ms=200)

        @app.task({ns!r}, "hello")
        def hello(task):
            pathlib.Path("handled.txt").write_text(task.payload["name"] + " " + baton.__file__)
        """))
    worker = subprocess.Popen(
        [str(venv / "bin" / "baton-worker"), "tinyapp:app", "--log-level", "WARNING"],
        cwd=tmp_path, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        result = client.enqueue(ns, "hello", {"name": "ada"})
        assert wait_for(lambda: state.state(result.task_id) == "done", timeout=60), \
            state.state(result.task_id)
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=60) == 0
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    assert worker.stdout is not None
    output = worker.stdout.read().decode()
    name, module = (tmp_path / "handled.txt").read_text().split(" ", 1)
    assert name == "ada", output
    assert module.startswith(str(venv)) and "/site-packages/baton/" in module, output
