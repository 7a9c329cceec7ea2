"""The README's quick start is the body of examples/quickstart_*.py, and those run end to end."""

from __future__ import annotations

import ast
import os
import re
import signal
import subprocess
import sys

import baton
from harness import SDK, State, wait_for

EXAMPLES = SDK / "examples"


def snippet(name: str) -> str:
    text = (EXAMPLES / name).read_text()
    return text.split("# snippet-start\n", 1)[1].split("# snippet-end\n", 1)[0]


def test_readme_shows_the_examples() -> None:
    readme = (SDK / "README.md").read_text()
    for name in ("quickstart_producer.py", "quickstart_worker.py"):
        marker = f"<!-- snippet: examples/{name} -->\n```python\n"
        assert marker in readme, f"README.md lacks the snippet of {name}"
        shown = readme.split(marker, 1)[1].split("```\n", 1)[0]
        assert shown == snippet(name), f"README.md and examples/{name} differ"
        # Copy-paste runnable: outside the snippet the example has only its docstring, so the
        # runs below run exactly what the page shows (imports and url included).
        text = (EXAMPLES / name).read_text()
        before, after = text.split("# snippet-start\n")[0], text.split("# snippet-end\n")[1]
        assert after == "" and ast.get_docstring(ast.parse(before)) is not None
        assert len(ast.parse(before).body) == 1, before


def test_quickstart_runs(url: str, r: object) -> None:
    env = dict(os.environ, BATON_REDIS_URL=url)
    worker = subprocess.Popen([sys.executable, str(EXAMPLES / "quickstart_worker.py")], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        produced = subprocess.run([sys.executable, str(EXAMPLES / "quickstart_producer.py")],
                                  env=env, capture_output=True, text=True, timeout=60,
                                  check=True)
        lines = produced.stdout.splitlines()
        assert re.fullmatch(r"queued [0-9a-f-]{36}", lines[0]), lines
        assert lines[1] == "scheduled queued"
        task_id = lines[0].split()[1]
        state = State(baton.Client(url).redis, "shop")
        assert wait_for(lambda: state.state(task_id) == "done")
        assert wait_for(lambda: state.state("welcome-42") == "dead")  # no recipient
    finally:
        worker.send_signal(signal.SIGTERM)
        output, _ = worker.communicate(timeout=60)
    assert worker.returncode == 0, output.decode()
    assert b"sending to ada@example.com (attempt 1)" in output
