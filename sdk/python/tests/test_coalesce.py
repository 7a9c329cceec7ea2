"""Group commit of enqueue: concurrent callers share calls, a lone caller never waits, a refused
shared call is retried task by task so only the culprit fails."""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from collections.abc import Sequence

import pytest
import redis

import baton
from baton import _enqueue, _tracing
from baton._coalesce import AsyncCoalescer, SyncCoalescer
from baton._enqueue import EnqueueResult, EnqueueStatus, Prepared
from harness import State, wait_for


def prepared(task_id: str) -> Prepared:
    return Prepared("ns", "t", task_id, (task_id,), None)


class FakeSend:
    """Records each call's task ids; the first call blocks until released; a task id starting
    with "bad" makes any call carrying it fail as Redis' BATON_INVALID would."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.release = threading.Event()

    def result(self, items: Sequence[Prepared]) -> list[EnqueueResult]:
        self.calls.append([p.task_id for p in items])
        if any(p.task_id.startswith("bad") for p in items):
            raise baton.InvalidArgumentError("max_retry (task 2): must be an integer 0..25")
        return [EnqueueResult(p.task_id, EnqueueStatus.QUEUED, stream_id="1-0") for p in items]

    def __call__(self, items: list[Prepared]) -> list[EnqueueResult]:
        if not self.calls:
            self.release.wait(30)
        return self.result(items)


def test_sync_callers_arriving_during_a_call_share_the_next() -> None:
    send = FakeSend()
    coalescer = SyncCoalescer(send)
    results: dict[str, object] = {}

    def call(task_id: str) -> None:
        try:
            results[task_id] = coalescer.submit(prepared(task_id)).task_id
        except baton.BatonError as e:
            results[task_id] = e

    first = threading.Thread(target=call, args=("a",))
    first.start()
    assert wait_for(lambda: send.calls == [] and coalescer._busy, timeout=10)
    others = [threading.Thread(target=call, args=(x,)) for x in ("b", "bad", "c")]
    for t in others:
        t.start()
    assert wait_for(lambda: len(coalescer._pending) == 3, timeout=10)
    send.release.set()
    for t in [first, *others]:
        t.join(30)
    assert send.calls[0] == ["a"]
    assert sorted(send.calls[1]) == ["b", "bad", "c"]  # one shared call, refused...
    assert sorted(map(tuple, send.calls[2:])) == [("b",), ("bad",), ("c",)]  # ...then alone
    assert results["a"] == "a" and results["b"] == "b" and results["c"] == "c"
    assert isinstance(results["bad"], baton.InvalidArgumentError)
    assert not coalescer._busy


def test_a_lone_caller_sends_at_once() -> None:
    send = FakeSend()
    send.release.set()
    coalescer = SyncCoalescer(send)
    for x in "xyz":
        assert coalescer.submit(prepared(x)).task_id == x
    assert send.calls == [["x"], ["y"], ["z"]]


def test_async_callers_share_calls_and_cancelled_waiters_are_dropped() -> None:
    async def main() -> None:
        gate = asyncio.Event()
        calls: list[list[str]] = []

        async def send(items: list[Prepared]) -> list[EnqueueResult]:
            calls.append([p.task_id for p in items])
            if len(calls) == 1:
                await gate.wait()
            return [EnqueueResult(p.task_id, EnqueueStatus.QUEUED) for p in items]

        coalescer = AsyncCoalescer(send)
        first = asyncio.ensure_future(coalescer.submit(prepared("a")))
        await asyncio.sleep(0)
        waiters = [asyncio.ensure_future(coalescer.submit(prepared(x))) for x in "bcd"]
        await asyncio.sleep(0)
        waiters[1].cancel()  # "c" gives up before its call is sent
        await asyncio.sleep(0)
        gate.set()
        assert (await first).task_id == "a"
        assert [(await w).task_id for w in (waiters[0], waiters[2])] == ["b", "d"]
        with pytest.raises(asyncio.CancelledError):
            await waiters[1]
        assert calls == [["a"], ["b", "d"]]
        assert (await coalescer.submit(prepared("e"))).task_id == "e"  # still usable

    asyncio.run(main())


def test_concurrent_producers_against_redis(client: baton.Client, ns: str,
                                            state: State) -> None:
    results: list[baton.EnqueueResult] = []
    lock = threading.Lock()

    def produce(k: int) -> None:
        for i in range(40):
            r = client.enqueue(ns, "t", {"k": k, "i": i})
            with lock:
                results.append(r)

    threads = [threading.Thread(target=produce, args=(k,)) for k in range(12)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert time.monotonic() - started < 120
    assert len(results) == 480 and {r.status for r in results} == {"queued"}
    assert len({r.task_id for r in results}) == 480
    delivered = state.delivered("t")
    assert set(delivered) == {r.task_id for r in results}
    assert {r.stream_id for r in results} == {d["sid"].decode() for d in delivered.values()}


def test_a_sync_waiter_interrupted_while_waiting_leaves_the_client_usable() -> None:
    """A caller waiting for the call in flight leaves through an exception raised in its thread
    (here a signal handler's, as Ctrl-C's KeyboardInterrupt would): it is not sent, and the
    Client's next enqueue must not wait forever for it."""
    send = FakeSend()
    coalescer = SyncCoalescer(send)
    first = threading.Thread(target=coalescer.submit, args=(prepared("a"),), daemon=True)
    first.start()
    assert wait_for(lambda: coalescer._busy, timeout=10)

    class Interrupted(Exception):
        pass

    def interrupt(signum: int, frame: object) -> None:
        raise Interrupted

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        with pytest.raises(Interrupted):
            coalescer.submit(prepared("b"))  # waits behind "a" in the main thread
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    send.release.set()
    first.join(30)
    later: list[str] = []
    third = threading.Thread(target=lambda: later.append(coalescer.submit(prepared("c")).task_id),
                             daemon=True)
    third.start()
    third.join(10)
    assert later == ["c"]
    assert send.calls == [["a"], ["c"]]  # "b" was never sent
    assert not coalescer._busy


def test_a_refused_call_keeps_the_results_of_its_round_trip(client: baton.Client, ns: str,
                                                            r: redis.Redis, state: State) -> None:
    """A shared round trip carries one call per (namespace, type). When Redis refuses one of
    them, the others were written: their callers get queued, not duplicate."""

    def prepare(task_type: str) -> Prepared:
        return _enqueue.prepare(baton.TaskRequest(ns, task_type, {}),
                                _tracing.ProducerSpans())

    bad = prepare("t2")
    bad.item = (bad.item[0], bad.item[1], 99, *bad.item[3:])  # max_retry: only Redis checks it
    outcomes: dict[str, object] = {}

    def submit(name: str, p: Prepared) -> None:
        try:
            outcomes[name] = client._coalescer.submit(p)
        except baton.BatonError as e:
            outcomes[name] = e

    client.library_version()  # connected before Redis is paused
    r.execute_command("CLIENT", "PAUSE", 10_000, "WRITE")
    try:
        threads = [threading.Thread(target=submit, args=("first", prepare("t0")))]
        threads[0].start()  # in flight until the pause ends
        assert wait_for(lambda: client._coalescer._busy, timeout=10)
        good = prepare("t1")
        threads += [threading.Thread(target=submit, args=("good", good)),
                    threading.Thread(target=submit, args=("bad", bad))]
        for t in threads[1:]:
            t.start()
        assert wait_for(lambda: len(client._coalescer._pending) == 2, timeout=10)
    finally:
        r.execute_command("CLIENT", "UNPAUSE")
    for t in threads:
        t.join(30)
    assert isinstance(outcomes["bad"], baton.InvalidArgumentError), outcomes
    assert "max_retry" in str(outcomes["bad"])
    good_result = outcomes["good"]
    assert isinstance(good_result, baton.EnqueueResult) and good_result.status == "queued", \
        outcomes
    assert state.state(good.task_id) == "queued"
    assert state.record(bad.task_id) is None
