"""Failover of a Redis Cluster primary mid-run (kill -9): every task acknowledged to its producer
still runs, and nothing is lost or half-written silently.

A 3-primary, 3-replica cluster (tests/harness/redis_cluster.py; started here, whatever
BATON_PROTOCOL_CLUSTER says) holds six namespaces, two on each primary. Producers enqueue one task
at a time into each namespace through the protocol client, each enqueue followed by WAIT 1 on the
same connection (Baton.enqueue_wait): a task is acknowledged only when the enqueue answered
'queued' AND at least one replica acknowledged it. Consumers dequeue and ack throughout through a
redis.cluster.RedisCluster; a reaper reclaims expired leases and promotes retries. Mid-run the
primary of one busy namespace is killed with SIGKILL; producing goes on (enqueues there fail until
a replica takes over: they are not acknowledged); then the consumers drain every namespace.

Checks, after the drain:
- every acknowledged task is done, and ran at least once;
- no task is left behind: no live record (tasks hash), no stream entry pending or unread, no
  scheduled retry, no dead-letter - so a task whose enqueue errored is either absent (not written,
  or written on the dead primary only) or fully there and done, never a record without its stream
  entry;
- duplicates (a task run more than once) are counted and reported; only tasks whose delivery was
  in flight around the kill may run twice.

Run twice: nodes without AOF, and with appendonly yes + appendfsync always. WAIT 1 is what makes an
acknowledged task survive a kill -9 followed by a failover (the promoted replica has it); AOF
covers the other case, a restart of the same node with no failover (not exercised here).
BATON_FAILOVER_SECONDS sets how long producers run before and after the kill (default 3).
"""

import collections
import logging
import os
import sys
import threading
import time
import unittest

import redis
import redis.cluster

import baton_protocol as bp
import redis_harness

TYPE = "job"
GROUP = "workers"
LEASE_MS = 1500
PHASE_S = float(os.environ.get("BATON_FAILOVER_SECONDS", "3"))
WAIT_MS = 500
PRODUCER_PAUSE_S = 0.01  # about 100 enqueues/s per namespace: the consumers keep up
DRAIN_TIMEOUT_S = float(os.environ.get("BATON_FAILOVER_DRAIN_S", "25"))


def namespaces_per_primary(cluster, per_primary=2):
    """Namespace names, per_primary of them served by each primary: {port: [ns, ...]}."""
    out = {n.port: [] for n in cluster.primaries()}
    i = 0
    while any(len(v) < per_primary for v in out.values()):
        ns = f"fo{i}"
        port = cluster.primary_for_slot(cluster.keyslot("{" + ns + "}")).port
        if len(out[port]) < per_primary:
            out[port].append(ns)
        i += 1
    return out


# What a call through the cluster client can raise (RedisClusterException is no RedisError).
CLUSTER_ERRORS = (redis.exceptions.RedisError, redis.exceptions.RedisClusterException, OSError)


def error_kind(who, e):
    """A counter name for an error: who, its class, and for an error reply its first word
    (CLUSTERDOWN, MOVED, ...)."""
    if isinstance(e, redis.exceptions.ResponseError):
        return f"{who} {str(e).split(' ', 1)[0]}"
    return f"{who} {type(e).__name__}"


class Run:
    """Shared bookkeeping of one failover run."""

    def __init__(self):
        self.lock = threading.Lock()
        self.acked = set()  # enqueue queued + WAIT >= 1
        self.unacked = set()  # enqueue errored, or WAIT < 1
        self.why = {}  # unacked task id -> the error or the reply
        self.runs = collections.Counter()  # task id -> deliveries handed to a consumer
        self.run_times = collections.defaultdict(list)
        self.errors = collections.Counter()
        self.stop_producing = threading.Event()
        self.stop_consuming = threading.Event()
        self.kill_time = None

    def count_error(self, who, e):
        with self.lock:
            self.errors[error_kind(who, e)] += 1


@unittest.skipIf(redis_harness.CLUSTER_MODE,
                 "starts its own cluster: it runs once, in the single-node run of the suite")
class FailoverTest(unittest.TestCase):

    def run_failover(self, appendonly):
        # redis-py logs every connection error of its cluster client with a traceback: here
        # they are expected (counted in run.errors instead).
        logging.getLogger("redis.cluster").setLevel(logging.CRITICAL)
        rc = redis_harness.redis_cluster_module()
        cluster = rc.RedisCluster(appendonly=appendonly)
        cluster.start()
        self.addCleanup(cluster.stop)
        cluster.load_library(bp.library_source())
        layout = namespaces_per_primary(cluster)
        all_ns = [ns for names in layout.values() for ns in names]
        run = Run()
        threads = [threading.Thread(target=self.produce, args=(cluster, ns, run), daemon=True)
                   for ns in all_ns]
        threads += [threading.Thread(target=self.consume, args=(cluster, all_ns, run, f"c{i}"),
                                     daemon=True) for i in range(2)]
        threads.append(threading.Thread(target=self.reap, args=(cluster, all_ns, run),
                                        daemon=True))
        for t in threads:
            t.start()

        time.sleep(PHASE_S)
        victim_port = next(iter(layout))  # the primary of layout's first two namespaces
        victim = cluster.node_by_port(victim_port)
        with run.lock:
            acked_before_kill = len(run.acked)
            run.kill_time = time.monotonic()
        cluster.kill9(victim)
        new_primary = cluster.wait_failover(victim_port, timeout=30)
        failover_s = time.monotonic() - run.kill_time
        time.sleep(PHASE_S / 2)
        # The promoted replica has no replica of its own: WAIT 1 there answers 0 until the old
        # primary comes back and rejoins as its replica.
        with run.lock:
            victim_ns = set(layout[victim_port])
            acked_alone = {t for t in run.acked if t.split("-", 1)[0] in victim_ns}
        cluster.restart(victim)
        self.assertEqual(victim.role, "replica")
        rejoined = time.monotonic()
        time.sleep(PHASE_S / 2)
        run.stop_producing.set()
        for t in threads[:len(all_ns)]:
            t.join(30)

        # Drain: every acknowledged task done, nothing live left in any namespace.
        client = cluster.client()
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        while True:
            left = self.leftovers(client, all_ns)
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        run.stop_consuming.set()
        for t in threads[len(all_ns):]:
            t.join(30)

        self.assertEqual(left, {}, "tasks left behind after the drain: "
                         + self.describe(client, left, run))
        missing = []
        for task_id in sorted(run.acked):
            ns = task_id.split("-", 1)[0]
            state = bp.Baton(client, ns, check_version=False).final_state(task_id)
            if state is None or state[0] != "done":
                missing.append((task_id, state))
        self.assertEqual(missing, [], "acknowledged tasks that are not done")
        never_ran = sorted(t for t in run.acked if run.runs[t] == 0)
        self.assertEqual(never_ran, [], "acknowledged tasks that no consumer ran")
        # An unacknowledged task that exists is done (checked by leftovers: nothing live) and ran.
        unacked_done = 0
        for task_id in sorted(run.unacked):
            ns = task_id.split("-", 1)[0]
            state = bp.Baton(client, ns, check_version=False).final_state(task_id)
            if state is not None:
                self.assertEqual(state[0], "done", task_id)
                unacked_done += 1
        duplicates = sorted(t for t, n in run.runs.items() if n > 1)
        # A duplicate is a delivery in flight around the kill: its runs are within the outage.
        far = [t for t in duplicates
               if not any(abs(ts - run.kill_time) < failover_s + LEASE_MS / 1000 + 3
                          for ts in run.run_times[t])]
        self.assertEqual(far, [], "tasks run twice away from the failover")
        client.close()
        # Enqueues to the killed shard were acknowledged again once it had a replica again.
        acked_after_rejoin = {t for t in run.acked if t.split("-", 1)[0] in victim_ns} - \
            acked_alone
        self.assertTrue(acked_after_rejoin, "no acknowledged enqueue after the rejoin")
        figures = (f"appendonly={'yes' if appendonly else 'no'}: {len(run.acked)} tasks "
                   f"acknowledged ({acked_before_kill} before the kill) in {len(all_ns)} "
                   f"namespaces on 3 primaries; failover of {victim_port} to "
                   f"{new_primary.port} in {failover_s:.2f} s; {len(run.unacked)} enqueues not "
                   f"acknowledged ({unacked_done} of them ran anyway); {len(duplicates)} "
                   f"duplicate runs; {len(acked_after_rejoin)} acknowledged in the killed "
                   f"shard after the old primary rejoined as a replica; errors "
                   f"{dict(run.errors)}")
        print("\nfailover: " + figures, file=sys.stderr)
        self.assertGreater(acked_before_kill, 0)
        self.assertGreater(len(run.acked), acked_before_kill, "nothing acknowledged after "
                           "the failover")
        self.assertGreater(len(run.unacked), 0, "no enqueue hit the outage: the kill proved "
                           "nothing")

    # Workers

    @staticmethod
    def produce(cluster, ns, run):
        """One task at a time into ns, each followed by WAIT 1 on the same connection; the
        node is looked up again after any error."""
        b, seq = None, 0
        while not run.stop_producing.is_set():
            task_id = f"{ns}-{seq}"
            seq += 1
            try:
                if b is None:
                    node = cluster.primary_for_key("{" + ns + "}")
                    b = bp.Baton(cluster.node_client(node, socket_timeout=2), ns,
                                 check_version=False)
                results, replicas = b.enqueue_wait(
                    TYPE, [bp.TaskSpec(id=task_id, payload=b'{"n":1}')], 1, WAIT_MS)
                ok = results == [("queued", results[0][1])] and replicas >= 1
                why = f"{results} WAIT {replicas}"
            except (redis.exceptions.RedisError, OSError, RuntimeError) as e:
                ok, b, why = False, None, repr(e)
                run.count_error("enqueue", e)
                time.sleep(0.05)
            with run.lock:
                (run.acked if ok else run.unacked).add(task_id)
                if not ok:
                    run.why[task_id] = why
            time.sleep(PRODUCER_PAUSE_S)

    @staticmethod
    def consume(cluster, all_ns, run, consumer):
        client, batons = None, {}
        while not run.stop_consuming.is_set():
            try:
                if client is None:
                    client = cluster.client(socket_timeout=2)
                    batons = {ns: bp.Baton(client, ns, check_version=False) for ns in all_ns}
                got = 0
                for ns, b in batons.items():
                    entries = b.dequeue(TYPE, GROUP, consumer, 10, LEASE_MS).entries
                    now = time.monotonic()
                    with run.lock:
                        for e in entries:
                            run.runs[e.id] += 1
                            run.run_times[e.id].append(now)
                    if entries:
                        FailoverTest.ack_until_answered(b, consumer, entries, run)
                    got += len(entries)
                if not got:
                    time.sleep(0.02)
            except CLUSTER_ERRORS as e:
                run.count_error("consume", e)
                if client is not None:
                    client.close()
                client = None
                time.sleep(0.1)

    @staticmethod
    def ack_until_answered(b, consumer, entries, run):
        """Acks until the cluster answers (the entries stay pending for this consumer on the
        promoted replica when their delivery reached it; otherwise they are delivered again)."""
        tasks = [(e.id, e.sid) for e in entries]
        deadline = time.monotonic() + 10
        while True:
            try:
                b.ack(TYPE, GROUP, consumer, tasks)
                return
            except CLUSTER_ERRORS as e:
                run.count_error("ack", e)
                if time.monotonic() > deadline or run.stop_consuming.is_set():
                    return  # the lease ends, the reaper reclaims them
                time.sleep(0.1)

    @staticmethod
    def reap(cluster, all_ns, run):
        client = None
        while not run.stop_consuming.is_set():
            try:
                if client is None:
                    client = cluster.client(socket_timeout=2)
                for ns in all_ns:
                    b = bp.Baton(client, ns, check_version=False)
                    b.reclaim(TYPE, 100, base_ms=10, max_ms=40)
                    b.promote(TYPE)
            except CLUSTER_ERRORS as e:
                run.count_error("reap", e)
                if client is not None:
                    client.close()
                client = None
            time.sleep(0.2)

    @staticmethod
    def describe(client, left, run):
        """What a failure message shows of the namespaces left: pending entries, records."""
        out = [f"errors {dict(run.errors)}"]
        for ns in left:
            b = bp.Baton(client, ns, check_version=False)
            stream = b.keys.stream(TYPE)
            try:
                pending = client.xpending_range(stream, GROUP, "-", "+", 5)
                groups = client.xinfo_groups(stream)
            except redis.exceptions.ResponseError as e:
                pending, groups = str(e), None
            records = list(client.hgetall(b.keys.tasks()).items())[:5]
            out.append(f"{ns}: groups {groups} pending {pending} records {records} "
                       f"reclaim {b.reclaim(TYPE, 0) if False else ''}")
        return "; ".join(out)

    @staticmethod
    def leftovers(client, all_ns):
        """{ns: what is still live} for every namespace with a live record (tasks hash), a
        stream entry (unread or pending), a scheduled retry or a dead-letter."""
        out = {}
        for ns in all_ns:
            k = bp.Keys(ns)
            live = client.hlen(k.tasks())
            entries = client.xlen(k.stream(TYPE))  # ack deletes the entry it finishes
            scheduled = client.zcard(k.scheduled(TYPE))
            dead = client.zcard(k.dead(TYPE))
            if live or entries or scheduled or dead:
                out[ns] = dict(live=live, stream_entries=entries, scheduled=scheduled,
                               dead=dead)
        return out

    def test_kill9_of_a_primary_without_aof(self):
        self.run_failover(appendonly=False)

    def test_kill9_of_a_primary_with_aof_fsync_always(self):
        self.run_failover(appendonly=True)


if __name__ == "__main__":
    unittest.main()
