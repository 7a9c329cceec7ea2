"""Partitions (docs/cluster.md, "Partitions"): the id -> partition rule and the reading of a
stored count against every case and count of contract/fixtures/partitions.json, and producers
and workers on a real redis-server with a namespace of several partitions (the count set with a
plain HSET baton:v2:partitions NS P, the settings of partition 0 being the defaults). The
cluster case is in test_cluster.py."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import threading
import time
from typing import Any

import pytest
import redis

import baton
from baton import _generated as gen
from baton import _partitions, _redis, _threads
from baton._partitions import PartitionCounts, fnv1a32, partition_of, storage_namespace
from baton.keys import Keyspace
from harness import FIXTURES, running, wait_for

FAST_RETRY = baton.RetryPolicy(base_ms=50, max_ms=200)


def record(r: Any, ns: str, partition: int, task_id: str) -> str | None:
    """The state of a live task in one partition (None: not there)."""
    rec = r.hget(Keyspace(ns, partition).of("tasks"), task_id)
    return None if rec is None else rec.decode().split("|", 1)[0]


def done_in(r: Any, ns: str, partition: int, task_id: str) -> bool:
    return r.zscore(Keyspace(ns, partition).of("done"), task_id) is not None


def where(r: Any, ns: str, count: int, task_id: str) -> list[int]:
    """The partitions holding a task (live or done): exactly one when all is well."""
    return [p for p in range(count)
            if record(r, ns, p, task_id) is not None or done_in(r, ns, p, task_id)]


def settings_of(r: Any, ns: str, partition: int) -> dict[str, int]:
    """A partition's namespace settings, read with baton_v2_configure."""
    reply = r.execute_command(*_redis.fcall_args(
        gen.configure({"config": Keyspace(ns, partition).of("config")})))
    return {k.decode(): int(v) for k, v in zip(reply[::2], reply[1::2], strict=True)}


def recorder(worker: baton.Worker, ns: str, types: list[str]) -> list[tuple[str, str]]:
    """Registers handlers that note (task.namespace, task.id) of every run."""
    ran: list[tuple[str, str]] = []
    lock = threading.Lock()

    def handler(task: baton.Task) -> None:
        with lock:
            ran.append((task.namespace, task.id))

    for task_type in types:
        worker.register(ns, task_type, handler, retry=FAST_RETRY)
    return ran


# --------------------------------------------------------------------------- the rule


def test_partition_rule_follows_every_fixture_case() -> None:
    fixture = json.loads((FIXTURES / "partitions.json").read_text(encoding="utf-8"))
    assert fixture["cases"]
    checked = 0
    for case in fixture["cases"]:
        task_id = case["task_id"]
        assert fnv1a32(task_id.encode("utf-8")) == case["fnv1a32"], task_id
        for count, partition in case["partition"].items():
            assert partition_of(task_id, int(count)) == partition, (task_id, count)
            checked += 1
    assert checked >= len(fixture["cases"])


def test_storage_namespaces_and_their_keys() -> None:
    assert storage_namespace("shop", 0) == "shop"
    assert storage_namespace("shop", 3) == "shop:3"
    assert Keyspace("shop", 0).of("tasks") == "baton:v2:{shop}:tasks"
    assert Keyspace("shop", 3).for_type("email")["stream"] == "baton:v2:{shop:3}:stream:email"
    assert Keyspace("shop", 3).unique("k") == "baton:v2:{shop:3}:unique:k"
    with pytest.raises(ValueError, match=r"partition must be 0\.\.1023"):
        Keyspace("shop", 1024)


def test_stored_counts_are_read_leniently(caplog: pytest.LogCaptureFixture) -> None:
    assert _partitions.parse_count("ns", None) == 1
    assert _partitions.parse_count("ns", b"4") == 4
    assert _partitions.parse_count("ns", b"1024") == 1024
    assert _partitions.parse_count("ns", b"5000") == 1024
    # Beyond Python's 4300-digit limit of int(): read without converting the whole text.
    assert _partitions.parse_count("ns", b"9" * 5000) == 1024
    assert _partitions.parse_count("ns", b"0" * 5000 + b"7") == 7
    assert caplog.records == []
    for bad in (b"0", b"-2", b"four", b"4.0", b" 4", b"", b"four", b"0" * 5000):
        assert _partitions.parse_count("lenient", bad) == 1, bad
    assert len(caplog.records) == 7  # once per value
    assert "baton:v2:partitions lenient: b'four' is not a partition count" in caplog.text


def test_stored_counts_follow_every_fixture_count(caplog: pytest.LogCaptureFixture) -> None:
    fixture = json.loads((FIXTURES / "partitions.json").read_text(encoding="utf-8"))
    assert len(fixture["counts"]) >= 10
    for case in fixture["counts"]:
        stored = case["stored"]
        raw = None if stored is None else stored.encode("utf-8")
        assert _partitions.parse_count("fixture-counts", raw) == case["count"], stored
        # As a client with decode_responses would give it: the same answer, no new warning.
        assert _partitions.parse_count("fixture-counts", stored) == case["count"], stored
    bad = [c["stored"] for c in fixture["counts"]
           if c["stored"] is not None and c["count"] == 1 and c["stored"] != "1"]
    warned = [rec for rec in caplog.records if "fixture-counts" in rec.getMessage()]
    assert len(warned) == len(bad) >= 5, [rec.getMessage() for rec in warned]


def test_counts_are_read_again_after_the_refresh_period() -> None:
    counts = PartitionCounts(refresh_seconds=5)
    assert counts.count("a") == 1
    assert counts.stale(["a", "b", "a"], now=100.0) == ["a", "b"]
    counts.update(["a", "b"], [b"3", None], now=100.0)
    assert (counts.count("a"), counts.count("b")) == (3, 1)
    assert counts.stale(["a", "b"], now=104.9) == []
    assert counts.stale(["a", "b", "c"], now=105.0) == ["a", "b", "c"]
    with pytest.raises(baton.InternalError, match="HMGET baton:v2:partitions: unexpected reply"):
        counts.update(["a"], [b"1", b"2"])
    with pytest.raises(baton.InternalError, match="unexpected reply"):
        counts.update(["a"], b"OK")
    assert counts.count("a") == 3


# --------------------------------------------------------------------- a single Redis


def test_four_partitions_every_producer_path_and_a_worker(
        url: str, r: redis.Redis, ns: str) -> None:
    r.hset(gen.PARTITIONS_KEY, ns, 4)
    ids: list[str] = []
    with baton.Client(url) as client:
        for i in range(60):
            res = client.enqueue(ns, "a" if i % 2 else "b", {"i": i})
            assert res.status == "queued"
            ids.append(res.task_id)
        for start in range(0, 80, 40):  # batches split per (partition, type)
            batch = client.enqueue_many(
                [baton.TaskRequest(ns, "a" if i % 3 else "b", {"i": i})
                 for i in range(start, start + 40)])
            assert {res.status for res in batch} == {baton.EnqueueStatus.QUEUED}
            ids += [res.task_id for res in batch]
        for i in range(20):
            doc = {"task_id": baton.uuid7(), "namespace": ns, "task_type": "a",
                   "payload": {"doc": i}, "max_retry": 3, "delay_seconds": 0,
                   "created_at": int(time.time())}
            assert client.enqueue_document(json.dumps(doc)).status == "queued"
            ids.append(doc["task_id"])
        # Delayed: promoted by the worker's maintenance, in each task's partition.
        delayed = [client.enqueue(ns, "a", {}, delay=1).task_id for _ in range(8)]
        assert [record(r, ns, partition_of(t, 4), t) for t in delayed] == ["scheduled"] * 8

    async def async_producer() -> list[str]:
        async with baton.AsyncClient(url) as aclient:
            one = await asyncio.gather(*(aclient.enqueue(ns, "b", {}) for _ in range(20)))
            many = await aclient.enqueue_many([baton.TaskRequest(ns, "a", {})
                                               for _ in range(20)])
            return [res.task_id for res in [*one, *many] if res.status == "queued"]

    ids += asyncio.run(async_producer())
    assert len(set(ids)) == 200
    # Every task is in its id's partition and nowhere else; all four partitions got tasks,
    # each in its own stream and tasks hash.
    for task_id in ids:
        assert where(r, ns, 4, task_id) == [partition_of(task_id, 4)], task_id
    per_partition = [r.hlen(Keyspace(ns, p).of("tasks")) for p in range(4)]
    assert sum(per_partition) == 208 and min(per_partition) >= 20, per_partition
    streams = [r.xlen(Keyspace(ns, p).of("stream", t)) for p in range(4) for t in "ab"]
    assert sum(streams) == 200 and all(streams), streams

    worker = baton.Worker(url, block_ms=200, concurrency=4, maintenance=True)
    ran = recorder(worker, ns, ["a", "b"])
    with running(worker):
        assert wait_for(lambda: len(ran) >= 208, timeout=30), len(ran)
        time.sleep(0.3)  # nothing runs twice
    assert len(ran) == 208
    assert {n for n, _ in ran} == {ns}  # handlers see NS, never NS:p
    assert sorted(t for _, t in ran) == sorted(ids + delayed)
    assert all(done_in(r, ns, partition_of(t, 4), t) for t in ids + delayed)
    assert worker.stats.succeeded == 208


def test_an_id_enqueued_twice_is_a_duplicate_also_across_a_refresh(
        url: str, r: redis.Redis, ns: str) -> None:
    r.hset(gen.PARTITIONS_KEY, ns, 4)
    ids = [f"dup-{i}" for i in range(8)]
    assert {partition_of(t, 4) for t in ids} == {0, 1, 2, 3}
    with baton.Client(url) as client:
        first = client.enqueue_many([baton.TaskRequest(ns, "t", {}, task_id=t) for t in ids])
        assert {res.status for res in first} == {baton.EnqueueStatus.QUEUED}
        again = client.enqueue(ns, "t", {}, task_id=ids[1])
        assert (again.status, again.state) == (baton.EnqueueStatus.DUPLICATE, "queued")

        def hmgets_of_duplicates() -> int:
            # The functions call HMGET too (counted in commandstats): compare two passes.
            r.config_resetstat()
            for t in ids:
                assert client.enqueue(ns, "t", {}, task_id=t).status == "duplicate", t
            return int(r.info("commandstats")["cmdstat_hmget"]["calls"])

        cached = hmgets_of_duplicates()
        # Read the count again before every call: the refresh keeps each id where it was.
        client._partitions = PartitionCounts(refresh_seconds=0)
        assert hmgets_of_duplicates() == cached + len(ids)
    for t in ids:
        assert where(r, ns, 4, t) == [partition_of(t, 4)]


def test_a_worker_serves_partitions_added_while_it_runs(
        url: str, r: redis.Redis, ns: str) -> None:
    worker = baton.Worker(url, block_ms=200, concurrency=2)
    ran = recorder(worker, ns, ["grow"])
    with running(worker), baton.Client(url) as client:
        before = [client.enqueue(ns, "grow", {}).task_id for _ in range(5)]
        assert wait_for(lambda: len(ran) == 5, timeout=10)
        r.hset(gen.PARTITIONS_KEY, ns, 3)
        grown = time.monotonic()
        with baton.Client(url) as fresh:  # a new producer sees P=3 at once
            after = [fresh.enqueue(ns, "grow", {}).task_id for _ in range(60)]
        assert {partition_of(t, 3) for t in after} == {0, 1, 2}
        assert all(where(r, ns, 3, t) == [partition_of(t, 3)] for t in after)
        assert wait_for(lambda: len(ran) == 65, timeout=15), len(ran)
        took = time.monotonic() - grown
    # The worker re-reads P every 5 s: the new partitions are served within about 6 s.
    assert took < 7.0, took
    assert sorted(t for _, t in ran) == sorted(before + after)
    assert {n for n, _ in ran} == {ns}
    assert all(done_in(r, ns, partition_of(t, 3), t) for t in after)


def test_cancel_looks_in_every_partition_and_configure_writes_them_all(
        url: str, r: redis.Redis, ns: str) -> None:
    # An id enqueued while the namespace had 1 partition, then grown to 4: its id now maps to
    # another partition, and cancel still finds it in partition 0.
    old = next(f"old-{i}" for i in range(100) if partition_of(f"old-{i}", 4) != 0)
    with baton.Client(url) as client:
        assert client.enqueue(ns, "c", {}, task_id=old, delay=60).status == "scheduled"
    r.hset(gen.PARTITIONS_KEY, ns, 4)
    with baton.Client(url) as client:
        new = client.enqueue(ns, "c", {}, delay=60).task_id
        client.cancel(ns, old)
        client.cancel(ns, new)
        assert record(r, ns, 0, old) is None and done_in(r, ns, 0, old)
        p = partition_of(new, 4)
        assert record(r, ns, p, new) is None and done_in(r, ns, p, new)
        with pytest.raises(baton.NotFoundError, match=f"no live task nope in namespace {ns}"):
            client.cancel(ns, "nope")

        settings = client.configure(ns, lease_ms=7000, dlq_max=77)
        assert (settings["lease_ms"], settings["dlq_max"]) == (7000, 77)
        for partition in range(4):
            got = settings_of(r, ns, partition)
            assert (got["lease_ms"], got["dlq_max"]) == (7000, 77), partition
        with pytest.raises(baton.InvalidArgumentError, match="lease_ms"):
            client.configure(ns, lease_ms=1)
        assert client.configure(ns)["lease_ms"] == 7000

    async def async_side() -> dict[str, int]:
        async with baton.AsyncClient(url) as aclient:
            task_id = (await aclient.enqueue(ns, "c", {}, delay=60)).task_id
            await aclient.cancel(ns, task_id)
            assert done_in(r, ns, partition_of(task_id, 4), task_id)
            with pytest.raises(baton.NotFoundError):
                await aclient.cancel(ns, "nope")
            return await aclient.configure(ns, dlq_max=78)

    assert asyncio.run(async_side())["dlq_max"] == 78
    assert [settings_of(r, ns, p)["dlq_max"] for p in range(4)] == [78] * 4


def test_cancel_and_configure_read_a_count_grown_a_moment_ago(
        url: str, r: redis.Redis, ns: str) -> None:
    # A producer whose copy of the count (1, read by its first enqueue, kept 5 s) is older than
    # a growth to 4 still writes every partition's settings and finds a task in partition 3.
    grown = next(t for t in (f"grown-{i}" for i in itertools.count()) if partition_of(t, 4) == 3)
    with baton.Client(url) as stale, baton.Client(url) as fresh:
        assert stale.enqueue(ns, "g", {}).status == "queued"
        r.hset(gen.PARTITIONS_KEY, ns, 4)
        assert stale.configure(ns, lease_ms=6000)["lease_ms"] == 6000
        assert [settings_of(r, ns, p)["lease_ms"] for p in range(4)] == [6000] * 4
        assert fresh.enqueue(ns, "g", {}, task_id=grown, delay=3600).status == "scheduled"
        assert record(r, ns, 3, grown) == "scheduled"
        stale.cancel(ns, grown)
        assert record(r, ns, 3, grown) is None and done_in(r, ns, 3, grown)

    other = f"{ns}a"

    async def async_side() -> None:
        async with baton.AsyncClient(url) as astale:
            assert (await astale.enqueue(other, "g", {})).status == "queued"
            r.hset(gen.PARTITIONS_KEY, other, 4)
            assert (await astale.configure(other, dlq_max=55))["dlq_max"] == 55
            assert [settings_of(r, other, p)["dlq_max"] for p in range(4)] == [55] * 4
            with baton.Client(url) as fresh:
                assert fresh.enqueue(other, "g", {}, task_id=grown, delay=3600).status == \
                    "scheduled"
            await astale.cancel(other, grown)
        assert record(r, other, 3, grown) is None and done_in(r, other, 3, grown)

    asyncio.run(async_side())


def test_a_partition_whose_runner_cannot_start_is_served_at_the_next_watch(
        url: str, r: redis.Redis, ns: str, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    # Injected fault: the second handler thread of partition 1's first runner cannot start, as
    # threading.Thread.start fails when the process is out of threads. The watch logs it, the
    # thread that did start leaves, and the next pass (0.5 s here) serves partitions 1 and 2.
    monkeypatch.setattr(gen, "PARTITIONS_REFRESH_SECONDS", 0.5)
    spawn = _threads.ThreadSlots._spawn
    failed: list[str] = []

    def spawn_or_fail(slots: Any) -> None:
        if slots._name == f"{ns}:1/grow" and slots._threads == 1 and not failed:
            failed.append(slots._name)
            raise RuntimeError("can't start new thread")
        spawn(slots)

    monkeypatch.setattr(_threads.ThreadSlots, "_spawn", spawn_or_fail)
    worker = baton.Worker(url, block_ms=200, concurrency=2)
    ran = recorder(worker, ns, ["grow"])
    with running(worker):
        r.hset(gen.PARTITIONS_KEY, ns, 3)
        with baton.Client(url) as client:
            ids = [client.enqueue(ns, "grow", {}).task_id for _ in range(30)]
        assert {partition_of(t, 3) for t in ids} == {0, 1, 2}
        assert wait_for(lambda: len(ran) == 30, timeout=10), len(ran)
        threads = [t.name for t in threading.enumerate()
                   if t.name.startswith(f"baton-{ns}:1/grow-")]
    assert failed == [f"{ns}:1/grow"]
    assert sorted(threads) == [f"baton-{ns}:1/grow-1", f"baton-{ns}:1/grow-2"]
    assert sorted(t for _, t in ran) == sorted(ids)
    assert "worker partition watch (new runners) failed, retrying: worker " \
           f"{ns}:1/grow could not start: RuntimeError: can't start new thread" in caplog.text
    assert "worker partition watch (new runners) recovered" in caplog.text
    assert f"baton worker serves new partitions: {ns}:1/grow, {ns}:2/grow" in caplog.text


def test_an_unparsable_count_is_one_partition(url: str, r: redis.Redis, ns: str,
                                              caplog: pytest.LogCaptureFixture) -> None:
    r.hset(gen.PARTITIONS_KEY, ns, "many")
    caplog.set_level(logging.WARNING, logger="baton.partitions")
    worker = baton.Worker(url, block_ms=200)
    ran = recorder(worker, ns, ["u"])
    with baton.Client(url) as client, running(worker):
        ids = [client.enqueue(ns, "u", {}).task_id for _ in range(10)]
        assert all(record(r, ns, 0, t) is not None or done_in(r, ns, 0, t) for t in ids)
        assert wait_for(lambda: len(ran) == 10, timeout=10)
    assert f"baton:v2:partitions {ns}: b'many' is not a partition count" in caplog.text
