"""Group commit of enqueue: concurrent callers share calls, a lone caller never waits, a refused
shared call is retried task by task so only the culprit fails."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence

import pytest

import baton
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
