"""Cluster mode (redis+cluster://) against a real Redis Cluster: 3 primaries, 3 replicas of
redis-server started by tests/harness/redis_cluster.py. Namespaces on different primaries,
the worker's whole loop, per-node library checks, wait_replicas, a primary's failover."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import pathlib
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

import baton
from baton import _generated as gen
from baton._partitions import partition_of
from baton.keys import Keyspace
from harness import ROOT, RedisServer, State, library_source, require_binary, running, wait_for

FAST_RETRY = baton.RetryPolicy(base_ms=50, max_ms=200)


def _load_harness() -> Any:
    path = ROOT / "tests" / "harness" / "redis_cluster.py"
    spec = importlib.util.spec_from_file_location("baton_redis_cluster", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    c = _load_harness().RedisCluster(primaries=3, replicas_per_primary=1)
    c.start()
    try:
        c.load_library(library_source())
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="module")
def spread(cluster: Any) -> dict[int, str]:
    """One namespace per primary: {primary port: namespace} (3 different primaries)."""
    out: dict[int, str] = {}
    for i in range(1000):
        ns = f"c{i}"
        out.setdefault(cluster.primary_for_key(Keyspace(ns).of("tasks")).port, ns)
        if len(out) == 3:
            return out
    raise AssertionError("no namespaces on 3 primaries")


@pytest.fixture
def rc(cluster: Any) -> Iterator[redis.cluster.RedisCluster]:
    """A plain redis-py cluster client to check what the SDK did."""
    r = cluster.client()
    yield r
    r.close()




def _node_stats(cluster: Any) -> dict[int, dict[str, int]]:
    out = {}
    for node in cluster.live_nodes():
        with cluster.node_client(node) as r:
            out[node.port] = {k: v["calls"] for k, v in r.info("commandstats").items()}
    return out


# -------------------------------------------------------------------------------- the URL


@pytest.mark.parametrize(("url", "rule"), [
    ("redis+cluster://", "needs at least one seed node"),
    ("redis+cluster://127.0.0.1:7000/0", "takes no /db"),
    ("redis+cluster://127.0.0.1:7000?db=1", "takes no /db"),
    ("redis+cluster://127.0.0.1:port", "seed 1: port must be 1..65535 (got 'port')"),
    ("redis+cluster://127.0.0.1:7000,127.0.0.1:0", "seed 2: port must be 1..65535 (got '0')"),
    ("redis+cluster://127.0.0.1:7000,:7001", "seed 2: missing host"),
    ("redis+cluster://user:s3cret@127.0.0.1:99999", "seed 1: port must be 1..65535"),
])
def test_a_bad_cluster_url_names_redis_url_and_the_rule(url: str, rule: str) -> None:
    want = "redis+cluster://[user:password@]host:port[,host:port...]"
    for make in (lambda: baton.Client(url), lambda: baton.AsyncClient(url)):
        with pytest.raises(baton.InvalidArgumentError) as info:
            make()
        assert info.value.field == "redis_url"
        assert str(info.value).startswith(f"redis_url: {rule}"), str(info.value)
        assert str(info.value).endswith(f"({want})"), str(info.value)
        assert "s3cret" not in str(info.value)
    worker = baton.Worker(url)
    worker.register("ns", "t", lambda task: None)
    with pytest.raises(baton.InvalidArgumentError, match="redis_url: "):
        worker.start()


def test_an_unreachable_cluster_is_unavailable() -> None:
    from harness import free_port

    with pytest.raises(baton.UnavailableError, match="Redis Cluster unavailable"):
        baton.Client(f"redis+cluster://127.0.0.1:{free_port()}", socket_timeout=2)


# ------------------------------------------------------------------------- tasks and routing


def test_namespaces_on_three_primaries_enqueue_and_run(cluster: Any, spread: dict[int, str],
                                                       rc: redis.cluster.RedisCluster) -> None:
    for node in cluster.live_nodes():
        with cluster.node_client(node) as r:
            r.config_resetstat()
    seeds = ",".join(f"127.0.0.1:{p}" for p in list(spread)[:1])  # one seed is enough
    url = f"redis+cluster://{seeds}"
    ran: list[tuple[str, int]] = []
    lock = threading.Lock()
    app = baton.Worker(url, block_ms=300, concurrency=2)
    for ns in spread.values():
        @app.task(ns, "job")
        def job(task: baton.Task) -> None:
            with lock:
                ran.append((task.namespace, task.payload["n"]))

    with baton.Client(url) as client:
        ids = {ns: [client.enqueue(ns, "job", {"n": 0}).task_id] for ns in spread.values()}
        batch = client.enqueue_many([baton.TaskRequest(ns, "job", {"n": n})
                                     for n in range(1, 4) for ns in spread.values()])
        for result in batch:
            assert result.status is baton.EnqueueStatus.QUEUED
        for port, ns in spread.items():  # each namespace's tasks are on its own primary
            with cluster.node_client(cluster.node_by_port(port)) as r:
                assert r.hexists(Keyspace(ns).of("tasks"), ids[ns][0])
        with running(app):
            assert wait_for(lambda: len(ran) == 12, timeout=20), ran
            # The worker blocks in XREAD on each namespace's primary and wakes for new tasks.
            late = {ns: client.enqueue(ns, "job", {"n": 9}).task_id for ns in spread.values()}
            assert wait_for(lambda: len(ran) == 15, timeout=20), ran
    assert sorted(ran) == sorted([(ns, n) for ns in spread.values() for n in (0, 1, 2, 3, 9)])
    for ns in spread.values():
        state = State(rc, ns)
        assert all(state.state(i) == "done" for i in [*ids[ns], late[ns]])
    assert app.stats.succeeded == 15
    # Every FCALL / XREAD was routed by its key: no COMMAND GETKEYS round trip anywhere, and
    # each primary served its own namespace.
    stats = _node_stats(cluster)
    assert not any("cmdstat_command|getkeys" in s for s in stats.values()), stats
    for port in spread:
        assert stats[port].get("cmdstat_fcall", 0) >= 3, stats[port]


def test_async_client_enqueues_to_every_primary(cluster: Any, spread: dict[int, str],
                                                rc: redis.cluster.RedisCluster) -> None:
    async def main() -> list[baton.EnqueueResult]:
        async with baton.AsyncClient(cluster.url) as client:
            one = await asyncio.gather(*(client.enqueue(ns, "async", {}) for ns in
                                         spread.values()))
            many = await client.enqueue_many([baton.TaskRequest(ns, "async", {})
                                              for ns in spread.values()])
            return [*one, *many]

    results = asyncio.run(main())
    assert [r.status for r in results] == [baton.EnqueueStatus.QUEUED] * 6
    for i, ns in enumerate(spread.values()):
        state = State(rc, ns)
        assert state.state(results[i].task_id) == "queued"
        assert state.state(results[3 + i].task_id) == "queued"


def test_retries_dead_letters_delays_cancel_configure_with_worker_maintenance(
        cluster: Any, spread: dict[int, str], rc: redis.cluster.RedisCluster) -> None:
    attempts: dict[str, list[int]] = {}
    started: dict[str, float] = {}
    app = baton.Worker(cluster.url, block_ms=300, maintenance=True)
    for ns in spread.values():
        @app.task(ns, "flaky", retry=FAST_RETRY)
        def flaky(task: baton.Task) -> None:
            attempts.setdefault(task.id, []).append(task.attempt)
            raise ValueError(f"boom {task.attempt}")

        @app.task(ns, "later")
        def later(task: baton.Task) -> None:
            started[task.id] = time.time()

    with baton.Client(cluster.url) as client:
        dead = {ns: client.enqueue(ns, "flaky", {}, max_retry=2).task_id
                for ns in spread.values()}
        due = time.time() + 1.0
        delayed = {ns: client.enqueue(ns, "later", {}, delay=1).task_id
                   for ns in spread.values()}
        cancelled = {ns: client.enqueue(ns, "later", {}, delay=60).task_id
                     for ns in spread.values()}
        for ns, task_id in cancelled.items():
            client.cancel(ns, task_id)
            assert State(rc, ns).state(task_id) == "cancelled"
            assert client.configure(ns, lease_ms=20_000)["lease_ms"] == 20_000
        with running(app):
            assert wait_for(lambda: all(State(rc, ns).state(t) == "dead"
                                        for ns, t in dead.items()), timeout=20)
            assert wait_for(lambda: len(started) == 3, timeout=20)
    for ns, task_id in dead.items():
        assert attempts[task_id] == [1, 2, 3]
        assert task_id in State(rc, ns).dead("flaky")
        assert [e["error"] for e in State(rc, ns).errors(task_id)] == \
            ["ValueError: boom 1", "ValueError: boom 2", "ValueError: boom 3"]
    for ns, task_id in delayed.items():
        assert started[task_id] >= due - 0.05  # not before its delay (server clock ~ ours)
        assert State(rc, ns).state(task_id) == "done"
    assert app.stats.dead == 3


def test_delayed_tasks_with_batond(cluster: Any, spread: dict[int, str],
                                   rc: redis.cluster.RedisCluster,
                                   tmp_path: pathlib.Path) -> None:
    batond = require_binary("daemon/batond")
    log_path = tmp_path / "batond.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen([str(batond), "--redis-url", cluster.url,
                                    "--discovery-interval-ms", "500"],
                                   stdout=log, stderr=subprocess.STDOUT)
    try:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=1.0)
            out = log_path.read_text(errors="replace")
            if "must start with redis:// or unix://" in out:
                pytest.skip("this batond has no Redis Cluster support yet (it refuses "
                            "redis+cluster:// URLs)")
            raise AssertionError(f"batond exited {process.returncode}: {out}")
        ran: set[str] = set()
        app = baton.Worker(cluster.url, block_ms=300)  # no maintenance: batond promotes
        for ns in spread.values():
            app.register(ns, "viabatond", lambda task: ran.add(task.id))
        with baton.Client(cluster.url) as client:
            ids = {client.enqueue(ns, "viabatond", {}, delay=1).task_id
                   for ns in spread.values()}
            with running(app):
                assert wait_for(lambda: ran == ids, timeout=20), \
                    (ran, ids, log_path.read_text(errors="replace")[-2000:])
        for ns in spread.values():
            assert all(State(rc, ns).state(t) in ("done", None) for t in ids)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# ------------------------------------------------------------------- the library on each node


def test_a_primary_without_the_library_is_a_version_mismatch(
        cluster: Any, spread: dict[int, str]) -> None:
    # Not the primary of the global partitions key: every producer reads it (HMGET) before
    # its first enqueue to a namespace, so without the library there every enqueue would be
    # a version mismatch (as it should: the cluster is not initialised).
    partitions_port = cluster.primary_for_key(gen.PARTITIONS_KEY).port
    bare_port, bare_ns = next((p, ns) for p, ns in spread.items() if p != partitions_port)
    other_ns = next(ns for p, ns in spread.items() if p != bare_port)
    with cluster.node_client(cluster.node_by_port(bare_port)) as r:
        r.execute_command("FUNCTION", "DELETE", "baton_v2")
    try:
        others = ",".join(f"127.0.0.1:{n.port}" for n in cluster.primaries()
                          if n.port != bare_port)
        want = "functions library version none loaded in Redis, this client needs 2: " \
               "run 'baton init'"
        with baton.Client(f"redis+cluster://{others}") as client:
            assert client.enqueue(other_ns, "t", {}).status is baton.EnqueueStatus.QUEUED
            with pytest.raises(baton.VersionMismatchError, match=want):
                client.enqueue(bare_ns, "t", {})

        async def main() -> None:
            async with baton.AsyncClient(f"redis+cluster://{others}") as client:
                assert (await client.enqueue(other_ns, "t", {})).status == "queued"
                with pytest.raises(baton.VersionMismatchError, match=want):
                    await client.enqueue(bare_ns, "t", {})

        asyncio.run(main())
        # The only seed lacks it: the first connection (learning the slot map) says so.
        with pytest.raises(baton.VersionMismatchError, match=want):
            baton.Client(f"redis+cluster://127.0.0.1:{bare_port}")
        app = baton.Worker(f"redis+cluster://{others}")
        app.register(bare_ns, "t", lambda task: None)
        with pytest.raises(baton.VersionMismatchError, match=want):
            app.start()
    finally:
        cluster.load_library(library_source())


# --------------------------------------------------------------------------- wait_replicas


def test_wait_replicas_on_a_single_redis_with_a_replica() -> None:
    primary = RedisServer().start()
    replica = RedisServer().start(load=False)
    try:
        primary.client().config_set("repl-diskless-sync-delay", 0)  # sync now, not in 5 s
        replica.client().replicaof("127.0.0.1", primary.port)
        assert wait_for(lambda: replica.client().info("replication")["master_link_status"]
                        == "up", timeout=20)
        # A generous wait while the replica is up (a loaded machine can take more than 500 ms to
        # acknowledge), a short one once it is gone.
        with baton.Client(primary.url, wait_replicas=1, wait_timeout=10) as client:
            assert client.enqueue("solo", "t", {}).status is baton.EnqueueStatus.QUEUED
            assert len(client.enqueue_many([baton.TaskRequest("solo", "t", {})] * 3)) == 3
        replica.kill()
        with baton.Client(primary.url, wait_replicas=1, wait_timeout=0.5) as client, \
                pytest.raises(baton.UnavailableError) as info:
            client.enqueue("solo", "t", {}, task_id="01a24000-0000-7000-8000-000000000001")
        assert f"written on the primary 127.0.0.1:{primary.port} but acknowledged by only 0 " \
               f"of 1 replica(s) within 500 ms" in str(info.value)
        # Written all the same (it may still run): enqueueing it again is a duplicate.
        with baton.Client(primary.url) as plain:
            again = plain.enqueue("solo", "t", {}, task_id="01a24000-0000-7000-8000-000000000001")
            assert again.status is baton.EnqueueStatus.DUPLICATE
    finally:
        replica.stop()
        primary.stop()


def test_wait_replicas_settings_are_checked() -> None:
    with pytest.raises(baton.InvalidArgumentError, match="wait_replicas: must be an integer"):
        baton.Client("redis://127.0.0.1:1", wait_replicas=-1)
    with pytest.raises(baton.InvalidArgumentError, match="wait_timeout: must be seconds"):
        baton.AsyncClient("redis://127.0.0.1:1", wait_replicas=1, wait_timeout=0)


def test_wait_replicas_on_the_cluster(cluster: Any, spread: dict[int, str],
                                      rc: redis.cluster.RedisCluster) -> None:
    url = cluster.url
    with baton.Client(url, wait_replicas=1, wait_timeout=2) as client:
        assert client.enqueue(spread[next(iter(spread))], "w", {}).status == "queued"
        batch = client.enqueue_many([baton.TaskRequest(ns, "w", {}) for ns in spread.values()])
        assert [r.status for r in batch] == ["queued"] * 3

    async def durable() -> list[baton.EnqueueResult]:
        async with baton.AsyncClient(url, wait_replicas=1, wait_timeout=2) as client:
            return await client.enqueue_many([baton.TaskRequest(ns, "w", {})
                                              for ns in spread.values()])

    assert [r.status for r in asyncio.run(durable())] == ["queued"] * 3
    # Two replicas asked, each primary has one: WAIT times out with 1 of 2.
    with baton.Client(url, wait_replicas=2, wait_timeout=0.2) as client:
        ns = next(iter(spread.values()))
        with pytest.raises(baton.UnavailableError,
                           match=r"acknowledged by only 1 of 2 replica\(s\) within 200 ms"):
            client.enqueue(ns, "w", {}, task_id="01a24000-0000-7000-8000-000000000002")
        assert State(rc, ns).state("01a24000-0000-7000-8000-000000000002") == "queued"


def test_a_namespace_in_six_partitions_spreads_over_primaries_and_runs(
        cluster: Any, rc: redis.cluster.RedisCluster) -> None:
    """docs/cluster.md, "Partitions": P=6 puts one namespace's tasks on several primaries; a
    producer with wait_replicas=1 sends WAIT to each primary it wrote on, and one worker serves
    every partition (its handlers see the namespace, never NS:p)."""
    ns = "part6"
    owners = {p: cluster.primary_for_key(Keyspace(ns, p).of("tasks")).port for p in range(6)}
    assert len(set(owners.values())) >= 2, owners  # from the slot map
    rc.hset(gen.PARTITIONS_KEY, ns, 6)
    for node in cluster.live_nodes():
        with cluster.node_client(node) as r:
            r.config_resetstat()
    ran: list[tuple[str, str]] = []
    lock = threading.Lock()
    app = baton.Worker(cluster.url, block_ms=300, concurrency=2)

    @app.task(ns, "spread")
    def spread_job(task: baton.Task) -> None:
        with lock:
            ran.append((task.namespace, task.id))

    with baton.Client(cluster.url, wait_replicas=1, wait_timeout=2) as client:
        ids = [client.enqueue(ns, "spread", {}).task_id for _ in range(30)]
        batch = client.enqueue_many([baton.TaskRequest(ns, "spread", {}) for _ in range(90)])
        assert {r.status for r in batch} == {baton.EnqueueStatus.QUEUED}
        ids += [r.task_id for r in batch]
    used = {partition_of(t, 6) for t in ids}
    assert used == set(range(6))
    for task_id in ids:  # each task in its partition, on that partition's primary
        p = partition_of(task_id, 6)
        with cluster.node_client(cluster.node_by_port(owners[p])) as r:
            assert r.hexists(Keyspace(ns, p).of("tasks"), task_id), (task_id, p)
    waits = {port: stats.get("cmdstat_wait", 0) for port, stats in _node_stats(cluster).items()}
    assert all(waits[port] >= 1 for port in set(owners.values())), waits
    with running(app):
        assert wait_for(lambda: len(ran) == 120, timeout=30), len(ran)
    assert sorted(t for _, t in ran) == sorted(ids)
    assert {n for n, _ in ran} == {ns}
    for task_id in ids:
        p = partition_of(task_id, 6)
        assert rc.zscore(Keyspace(ns, p).of("done"), task_id) is not None, task_id


def test_failover_with_wait_replicas_loses_no_acknowledged_task(
        cluster: Any, spread: dict[int, str], rc: redis.cluster.RedisCluster) -> None:
    """kill -9 of a primary while tasks acknowledged with wait_replicas=1 wait or run: after
    the replica took over, every one of them has run and is done; the same Client and Worker
    carry on (acks of attempts that ended during the outage are sent again; slot map
    refreshed)."""
    victim_port, ns = next(iter(spread.items()))
    gate = threading.Event()
    started: set[str] = set()
    ran: set[str] = set()

    def handler(task: baton.Task) -> None:
        started.add(task.id)
        gate.wait(30)
        ran.add(task.id)

    app = baton.Worker(cluster.url, block_ms=300, concurrency=4)
    app.register(ns, "survive", handler)
    with baton.Client(cluster.url, wait_replicas=1, wait_timeout=2, socket_timeout=2) as client, \
            running(app):
        acked = {r.task_id for r in client.enqueue_many(
            [baton.TaskRequest(ns, "survive", {"n": n}) for n in range(20)])}
        assert wait_for(lambda: len(started) == 4, timeout=20)
        cluster.kill9(cluster.node_by_port(victim_port))
        gate.set()  # 4 attempts end while their primary is gone: their acks must wait
        new_primary = cluster.wait_failover(victim_port, timeout=30)

        # The new primary has no replica (its old primary is dead): the same Client reaches
        # it once the slot map is refreshed, writes, and says the write is not replicated.
        after = "01a24000-0000-7000-8000-000000000003"

        def enqueue() -> str | None:
            try:
                client.enqueue(ns, "survive", {"after": True}, task_id=after)
            except baton.UnavailableError as e:
                return str(e) if "acknowledged by only" in str(e) else None
            return "acknowledged"

        outcome = wait_for(enqueue, timeout=20, interval=0.2)
        assert outcome == f"the task was written on the primary 127.0.0.1:{new_primary.port} " \
                          f"but acknowledged by only 0 of 1 replica(s) within 2000 ms " \
                          f"(wait_replicas): it may still run, but it is not known to be durable"
        state = State(rc, ns)
        assert wait_for(lambda: all(state.state(t) == "done" for t in acked | {after}),
                        timeout=30), {t: state.state(t) for t in acked | {after}}
    assert acked | {after} <= ran
    assert new_primary.port != victim_port
