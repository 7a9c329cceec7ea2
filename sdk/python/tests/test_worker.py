"""The worker against a real Redis: sync and async handlers, the Task it builds, retries,
non-retryable errors, malformed entries, execution_timeout, lease heartbeats, process slots."""

from __future__ import annotations

import asyncio
import copy
import os
import re
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import redis

import baton
import proc_handlers
from baton import _generated as gen
from baton import _redis
from baton.keys import Keyspace
from harness import State, running, wait_for

FAST_RETRY = baton.RetryPolicy(base_ms=50, max_ms=200)




def make_worker(url: str, **kwargs: Any) -> baton.Worker:
    kwargs.setdefault("block_ms", 500)
    return baton.Worker(url, **kwargs)


def test_consumer_name_has_service_host_pid_random_suffix_and_language(url: str) -> None:
    name = make_worker(url, service="billing").consumer_name
    prefix = f"billing:{socket.gethostname()}:{os.getpid()}:"
    assert name.startswith(prefix), name
    assert re.fullmatch(r"[0-9a-f]{6}:python", name[len(prefix):]), name
    assert make_worker(url, service="billing").consumer_name != name


def test_sync_and_async_handlers_get_the_task(url: str, client: baton.Client, ns: str,
                                              state: State) -> None:
    seen: dict[str, baton.Task] = {}
    lock = threading.Lock()
    app = make_worker(url)

    @app.task(ns, "sync_type", concurrency=3)
    def on_sync(task: baton.Task) -> None:
        assert threading.current_thread() is not threading.main_thread()
        with lock:
            seen[task.id] = task

    @app.task(ns, "async_type", concurrency=8)
    async def on_async(task: baton.Task) -> None:
        await asyncio.sleep(0)
        seen[task.id] = task

    assert on_sync.__name__ == "on_sync"  # the decorator returns the function unchanged
    assert [r.executor for r in app.registrations] == ["thread", "async"]
    payload = b'{"big":12345678901234567890,"price":1.10,"list":[1,"x",null]}'
    ids = []
    for task_type in ("sync_type", "async_type"):
        for i in range(25):
            ids.append(client.enqueue(ns, task_type, payload if i == 0 else {"i": i},
                                      max_retry=5, execution_timeout=60,
                                      extra={"x_unknown": {"a": 1}, "headers": {"h": "v"}}
                                      ).task_id)
    with running(app):
        assert wait_for(lambda: all(state.state(t) == "done" for t in ids)), \
            [state.state(t) for t in ids]
    assert set(seen) == set(ids)
    assert app.stats.succeeded == 50 and app.stats.failed == 0
    first = seen[ids[0]]
    assert (first.namespace, first.task_type, first.attempt) == (ns, "sync_type", 1)
    assert first.payload_bytes == payload
    assert first.payload == {"big": 12345678901234567890, "price": 1.1, "list": [1, "x", None]}
    assert (first.max_retry, first.delay_seconds, first.execution_timeout) == (5, 0, 60)
    assert abs(first.created_at - time.time()) < 30  # Unix seconds, not ms
    # (trace is added when a test before this one installed an OpenTelemetry provider)
    assert {k: v for k, v in first.extra.items() if k != "trace"} == {
        "x_unknown": {"a": 1}, "headers": {"h": "v"}}
    assert first.headers == {"h": "v"}
    assert first.stream_id and first.deadline is not None
    # The handler's Task turns back into a valid contract document, payload bytes intact.
    doc = baton.parse_task_document(first.to_document())
    assert (doc.task_id, doc.namespace, doc.payload) == (ids[0], ns, payload)
    assert doc.extra == first.extra


def test_a_handler_cannot_corrupt_the_payload_for_a_retry(url: str, client: baton.Client,
                                                          ns: str, state: State) -> None:
    seen: list[dict[str, Any]] = []
    app = make_worker(url, maintenance=True)

    @app.task(ns, "mutate", retry=FAST_RETRY)
    def mutate(task: baton.Task) -> None:
        seen.append(copy.deepcopy(task.payload))
        task.payload["items"].append(f"added by attempt {task.attempt}")
        task.payload.clear()
        if task.attempt == 1:
            raise RuntimeError("first attempt fails after scribbling on its payload")

    task_id = client.enqueue(ns, "mutate", {"items": ["a"]}).task_id
    with running(app):
        assert wait_for(lambda: state.state(task_id) == "done")
    assert seen == [{"items": ["a"]}, {"items": ["a"]}]


def test_failures_retry_then_dead_letter_with_traceback(url: str, client: baton.Client,
                                                         ns: str, state: State) -> None:
    attempts: list[int] = []
    app = make_worker(url, maintenance=True)

    @app.task(ns, "flaky", retry=FAST_RETRY)
    def always_fails(task: baton.Task) -> None:
        attempts.append(task.attempt)
        raise ValueError(f"boom on attempt {task.attempt}")

    task_id = client.enqueue(ns, "flaky", {}, max_retry=2).task_id
    with running(app):
        assert wait_for(lambda: state.state(task_id) == "dead")
    assert attempts == [1, 2, 3]  # 1 + max_retry runs
    errors = state.errors(task_id)
    assert [e["attempt"] for e in errors] == [1, 2, 3]
    assert {e["kind"] for e in errors} == {"error"}
    assert errors[0]["error"] == "ValueError: boom on attempt 1"
    assert errors[0]["worker"] == app.consumer_name
    stack = errors[2]["stack"]
    assert stack.startswith("Traceback (most recent call last):")
    assert "in always_fails" in stack and "test_worker.py" in stack
    assert task_id in state.dead("flaky")
    assert app.stats.failed == 3 and app.stats.dead == 1


def test_non_retryable_errors_dead_letter_at_once(url: str, client: baton.Client, ns: str,
                                                  state: State) -> None:
    app = make_worker(url)

    @app.task(ns, "strict", non_retryable=[KeyError])
    def strict(task: baton.Task) -> None:
        if task.payload.get("missing"):
            raise KeyError("customer_id")
        raise baton.NonRetryableError("the input is wrong")

    one = client.enqueue(ns, "strict", {}, max_retry=5).task_id
    two = client.enqueue(ns, "strict", {"missing": True}, max_retry=5).task_id
    with running(app):
        assert wait_for(lambda: state.state(one) == state.state(two) == "dead")
    (e1,), (e2,) = state.errors(one), state.errors(two)
    assert (e1["kind"], e1["error"]) == ("non_retryable",
                                         "baton.errors.NonRetryableError: the input is wrong")
    assert (e2["kind"], e2["error"]) == ("non_retryable", "KeyError: 'customer_id'")


def test_malformed_entry_is_dead_lettered_not_dropped(url: str, client: baton.Client, ns: str,
                                                      state: State, r: redis.Redis) -> None:
    # baton_v2_enqueue only checks the braces; a worker must refuse what it cannot parse.
    keys = Keyspace(ns).for_type("mixed")
    now = int(time.time())
    bad = ("bad-1", b'{"a":}', 3, 0, now, "", "", 0, "", 0)
    r.execute_command(*_redis.fcall_args(gen.enqueue(keys, 1, [bad])))
    good = client.enqueue(ns, "mixed", {"ok": True}).task_id
    ran: list[str] = []
    app = make_worker(url)

    @app.task(ns, "mixed")
    def handler(task: baton.Task) -> None:
        ran.append(task.id)

    with running(app):
        assert wait_for(lambda: state.state("bad-1") == "dead" and state.state(good) == "done")
    assert ran == [good]
    (error,) = state.errors("bad-1")
    assert error["kind"] == "malformed"
    assert error["error"].startswith("payload: not valid JSON")
    assert app.stats.malformed == 1


def test_async_timeout_cancels_the_handler(url: str, client: baton.Client, ns: str,
                                           state: State) -> None:
    observed: list[str] = []
    app = make_worker(url)

    @app.task(ns, "slow_async")
    async def slow(task: baton.Task) -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            observed.append("cancelled")
            raise

    task_id = client.enqueue(ns, "slow_async", {}, max_retry=0, execution_timeout=1).task_id
    with running(app):
        assert wait_for(lambda: state.state(task_id) == "dead")
        assert wait_for(lambda: observed == ["cancelled"], timeout=10)
    (error,) = state.errors(task_id)
    assert (error["kind"], error["error"]) == ("timeout", "execution_timeout of 1s exceeded")
    assert "slow" in error["stack"]


def test_a_timed_out_async_handler_that_ignores_cancellation_keeps_its_slot(
        url: str, client: baton.Client, ns: str, state: State) -> None:
    """The attempt is failed as a timeout at once, but the handler goes on after catching
    CancelledError: the type must not start another task beyond its concurrency meanwhile."""
    running_now = 0
    most = 0
    app = make_worker(url)

    @app.task(ns, "stubborn", concurrency=1)
    async def stubborn(task: baton.Task) -> None:
        nonlocal running_now, most
        running_now += 1
        most = max(most, running_now)
        try:
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                await asyncio.sleep(2)  # swallows the cancellation and keeps working
        finally:
            running_now -= 1

    ids = [client.enqueue(ns, "stubborn", {}, max_retry=0, execution_timeout=1).task_id
           for _ in range(2)]
    with running(app):
        assert wait_for(lambda: all(state.state(t) == "dead" for t in ids), timeout=60)
    assert most == 1
    assert all(state.errors(t)[0]["kind"] == "timeout" for t in ids)


def test_sync_timeout_abandons_the_thread(url: str, client: baton.Client, ns: str,
                                          state: State) -> None:
    release = threading.Event()
    saw_cancel: list[bool] = []
    finished: list[str] = []
    app = make_worker(url)

    @app.task(ns, "slow_sync", concurrency=1)
    def slow(task: baton.Task) -> None:
        if task.payload.get("stuck"):
            release.wait(120)  # ignores the timeout, like a blocking library call would
            saw_cancel.append(task.cancelled)
        finished.append(task.id)

    stuck = client.enqueue(ns, "slow_sync", {"stuck": True}, max_retry=0,
                           execution_timeout=1).task_id
    after = client.enqueue(ns, "slow_sync", {}).task_id
    try:
        with running(app):
            # Failed as a timeout while its handler still runs, and a replacement thread
            # runs the next task although the concurrency is 1.
            assert wait_for(lambda: state.state(stuck) == "dead" and state.state(after) == "done")
            assert finished == [after]
            (error,) = state.errors(stuck)
            assert error["kind"] == "timeout"
            assert "abandoned" in error["stack"] and "release.wait" in error["stack"]
            release.set()
            assert wait_for(lambda: len(finished) == 2, timeout=10)
    finally:
        release.set()
    assert saw_cancel == [True]
    assert state.state(stuck) == "dead"  # the late return changed nothing


def test_lease_is_heartbeated_while_the_handler_runs(url: str, client: baton.Client, ns: str,
                                                     state: State) -> None:
    """A task running 3x longer than its lease is not taken back while the worker lives, even
    with a reaper (this worker's maintenance) checking every lease."""
    runs: list[int] = []
    app = make_worker(url, maintenance=True)

    @app.task(ns, "long", lease_ms=1000)
    def long_task(task: baton.Task) -> None:
        runs.append(task.attempt)
        time.sleep(3.5)

    task_id = client.enqueue(ns, "long", {}, max_retry=3).task_id
    with running(app):
        assert wait_for(lambda: state.state(task_id) == "done")
    assert runs == [1]
    assert state.errors(task_id) == []


def test_process_slots_run_cpu_bound_handlers(url: str, client: baton.Client, ns: str,
                                              state: State, tmp_path: Any) -> None:
    out = tmp_path / "squares.txt"
    spin = tmp_path / "spin.txt"
    app = make_worker(url)
    app.register(ns, "square", proc_handlers.cpu_square, executor="process", concurrency=2)
    app.register(ns, "spin", proc_handlers.spin_forever, executor="process", concurrency=1)
    app.register(ns, "refuse", proc_handlers.refuse, executor="process", concurrency=1)
    ids = [client.enqueue(ns, "square", {"n": n, "out": str(out)}).task_id for n in range(6)]
    spinner = client.enqueue(ns, "spin", {"out": str(spin)}, max_retry=0,
                             execution_timeout=1).task_id
    refused = client.enqueue(ns, "refuse", {"x": 1}).task_id
    with running(app):
        assert wait_for(lambda: all(state.state(t) == "done" for t in ids), timeout=60)
        assert wait_for(lambda: state.state(spinner) == "dead", timeout=60)
        assert wait_for(lambda: state.state(refused) == "dead", timeout=60)
    lines = out.read_text().split()
    assert sorted(int(v) for v in lines[1::3]) == [n * n for n in range(6)]
    assert all(int(pid) != 0 for pid in lines[2::3])
    (error,) = state.errors(spinner)
    assert (error["kind"], error["stack"]) == ("timeout", "the handler's process was killed")
    (refusal,) = state.errors(refused)
    assert refusal["kind"] == "non_retryable" and "bad input" in refusal["error"]
    pid = int(spin.read_text().split()[1])
    assert wait_for(lambda: not _alive(pid), timeout=10), "the timed-out child still runs"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_process_slot_is_killed_when_its_lease_is_lost(url: str, client: baton.Client,
                                                       ns: str, state: State, r: redis.Redis,
                                                       tmp_path: Any) -> None:
    """Another consumer takes the entry over (as a reclaim after an expired lease would): the
    next heartbeat finds it gone, and the child running it is killed, so the task does not run
    on two workers at once."""
    spin = tmp_path / "spin.txt"
    app = make_worker(url)
    app.register(ns, "spin", proc_handlers.spin_forever, executor="process", concurrency=1,
                 lease_ms=1000)
    task_id = client.enqueue(ns, "spin", {"out": str(spin)}, max_retry=0).task_id
    with running(app):
        assert wait_for(lambda: spin.exists() and spin.read_text().startswith("started"),
                        timeout=60)
        pid = int(spin.read_text().split()[1])
        record = state.record(task_id)
        assert record is not None
        stream = Keyspace(ns).for_type("spin")["stream"]
        r.xclaim(stream, "baton", "another-worker", 0, [record[3]], justid=True)

        def gone() -> bool:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
            return False

        assert wait_for(gone, timeout=10), "the child still runs the lost task"


def test_stop_returns_promptly_when_idle(url: str, ns: str) -> None:
    app = baton.Worker(url, block_ms=30000)
    app.register(ns, "idle", lambda task: None)
    app.start()
    time.sleep(0.5)  # let it block in XREAD
    started = time.monotonic()
    app.stop()
    assert app.join(20)
    assert time.monotonic() - started < 20


def test_registration_rules(url: str) -> None:
    app = baton.Worker(url)

    async def async_handler(task: baton.Task) -> None:
        return None

    def sync_handler(task: baton.Task) -> None:
        return None

    checks: list[tuple[Callable[[], object], str]] = [
        (lambda: app.register("bad ns", "t", sync_handler), "namespace: "),
        (lambda: app.register("ns", "t", sync_handler, lease_ms=10), "lease_ms: "),
        (lambda: app.register("ns", "t", sync_handler, concurrency=0), "concurrency: "),
        (lambda: app.register("ns", "t", async_handler, executor="thread"), "executor: "),
        (lambda: app.register("ns", "t", sync_handler, executor="async"), "executor: "),
        (lambda: app.register("ns", "t", sync_handler, executor="fork"), "executor: "),  # type: ignore[arg-type]
        (lambda: baton.RetryPolicy(base_ms=0), "retry: "),
    ]
    for check, prefix in checks:
        with pytest.raises(baton.InvalidArgumentError) as e:
            check()
        assert str(e.value).startswith(prefix)
    app.register("ns", "t", sync_handler)
    with pytest.raises(baton.AlreadyExistsError):
        app.register("ns", "t", sync_handler)
    with pytest.raises(baton.InvalidArgumentError, match=r"^handlers: "):
        asyncio.run(baton.Worker(url).serve())


def test_worker_refuses_to_start_without_the_library(server: Any, r: redis.Redis,
                                                     ns: str) -> None:
    r.execute_command("FUNCTION", "DELETE", "baton_v2")
    try:
        app = baton.Worker(server.url)
        app.register(ns, "t", lambda task: None)
        with pytest.raises(baton.VersionMismatchError, match="run 'baton init'"):
            app.start()
    finally:
        server.load_functions()


def test_a_runner_that_cannot_start_fails_start_at_once(url: str, ns: str) -> None:
    # A start method multiprocessing does not know: the process slots of the second type cannot
    # be made. start() raises that (not its timeout), after undoing the first type's runner.
    app = baton.Worker(url, block_ms=200, process_start_method="bogus")
    app.register(ns, "fine", lambda task: None)
    app.register(ns, "cpu", proc_handlers.cpu_square, executor="process")
    began = time.monotonic()
    with pytest.raises(baton.InternalError,
                       match=f"^worker {ns}/cpu could not start: ValueError: .*bogus"):
        app.start(timeout=20)
    assert time.monotonic() - began < 10
    assert app.join(10)
    assert wait_for(lambda: not any(t.name.startswith(f"baton-{ns}/fine-")
                                    for t in threading.enumerate()), timeout=5)
