"""Interop with the C++ side through its binaries (built on baton::Client, baton::Worker and
baton::Inspector): a task the Python SDK produces runs in the C++ worker (`baton work --exec`)
with its payload bytes and unknown fields intact, and a task the C++ client produces
(`baton enqueue`) runs in the Python worker, whose failures `baton task show` then reports with
the Python traceback."""

from __future__ import annotations

import json
import pathlib
import subprocess
from typing import Any

import baton
from harness import State, require_binary, wait_for


def baton_cli(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    exe = require_binary("cli/baton")
    return subprocess.run([str(exe), "--redis", url, *args], capture_output=True, text=True,
                          timeout=60, check=True)


def test_python_produces_cpp_worker_runs(url: str, client: baton.Client, ns: str, state: State,
                                         tmp_path: pathlib.Path) -> None:
    exe = require_binary("cli/baton")
    payloads = {}
    for i in range(10):
        payload = (f'{{"n":12345678901234567890,"f":1.10,"i":{i},'
                   '"s":"caf\\u00e9 \\"q\\" 漢字"}').encode()
        result = client.enqueue(ns, "py2cpp", payload, max_retry=1, execution_timeout=30,
                                extra={"headers": {"from": "python"}, "x_new": {"k": [1]}})
        payloads[result.task_id] = payload
    worker = subprocess.Popen(
        [str(exe), "--redis", url, "work", "--ns", ns, "--type", "py2cpp", "--exec",
         f'cat > "{tmp_path}/$BATON_TASK_ID.json"; '
         f'printf %s "$BATON_TASK" > "{tmp_path}/$BATON_TASK_ID.task"'],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_for(lambda: all(state.state(t) == "done" for t in payloads))
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    for task_id, payload in payloads.items():
        assert (tmp_path / f"{task_id}.json").read_bytes() == payload  # byte for byte
        document = json.loads((tmp_path / f"{task_id}.task").read_text())
        assert document["task_id"] == task_id
        assert (document["namespace"], document["task_type"]) == (ns, "py2cpp")
        assert (document["max_retry"], document["execution_timeout"]) == (1, 30)
        assert document["headers"] == {"from": "python"}
        assert document["x_new"] == {"k": [1]}  # a field neither side knows travels
        assert baton.Task(id=task_id, namespace=ns, task_type="py2cpp", payload={},
                          payload_bytes=payload).payload_bytes == payload


def test_cpp_produces_python_worker_runs_and_fails(url: str, ns: str, state: State) -> None:
    ok = json.loads(baton_cli(url, "--json", "enqueue", "--ns", ns, "--type", "cpp2py",
                              "--payload", '{"big":123456789012345678901234567890}',
                              "--max-retry", "0", "--timeout", "20",
                              "--extra", '{"headers":{"from":"cpp"},"x_unknown":1}'
                              ).stdout)["task_id"]
    bad = json.loads(baton_cli(url, "--json", "enqueue", "--ns", ns, "--type", "cpp2py",
                               "--payload", '{"fail":true}', "--max-retry", "0").stdout)["task_id"]
    seen: dict[str, baton.Task] = {}
    app = baton.Worker(url, block_ms=500)

    @app.task(ns, "cpp2py")
    def handler(task: baton.Task) -> None:
        seen[task.id] = task
        if task.payload.get("fail"):
            raise RuntimeError("python says no")

    app.start()
    try:
        assert wait_for(lambda: state.state(ok) == "done" and state.state(bad) == "dead")
    finally:
        app.stop()
        app.join(60)
    task = seen[ok]
    assert task.payload_bytes == b'{"big":123456789012345678901234567890}'
    assert task.payload == {"big": 123456789012345678901234567890}
    assert (task.max_retry, task.execution_timeout, task.attempt) == (0, 20, 1)
    assert task.extra == {"headers": {"from": "cpp"}, "x_unknown": 1}
    shown: dict[str, Any] = json.loads(baton_cli(url, "--json", "task", "show", bad, "--ns",
                                                 ns).stdout)
    assert shown["state"] == "dead"
    (error,) = shown["errors"]
    assert (error["kind"], error["error"]) == ("error", "RuntimeError: python says no")
    assert error["worker"] == app.consumer_name
    assert error["stack"].startswith("Traceback (most recent call last):")
    assert "in handler" in error["stack"]
