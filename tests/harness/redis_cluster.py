"""A real Redis Cluster for tests in any language: 3 primaries and 3 replicas (by default) of
redis-server on free 127.0.0.1 ports, each node in its own temporary directory.

As a library (stdlib + redis-py):

    with RedisCluster() as cluster:
        r = cluster.client()            # a redis.cluster.RedisCluster
        cluster.load_library(source)    # FUNCTION LOAD REPLACE on every primary
        node = cluster.primary_for_key("baton:v2:{shop}:tasks")
        cluster.kill9(node)
        cluster.wait_failover(node.port, timeout=15)

As a subprocess (for tests written in another language):

    python3 tests/harness/redis_cluster.py [--appendonly] [--load-library]

prints one JSON line {"url": "redis+cluster://127.0.0.1:p1,...", "nodes": [{"port", "role",
"pid"}, ...]} once the cluster is ready, then keeps it up until its stdin reaches EOF (so a parent
that dies takes the cluster with it) or it gets SIGTERM / SIGINT, and then kills every node and
removes their directories.

The cluster node timeout is small (1 s) so that a replica takes over within a few seconds after a
kill -9 of its primary. With appendonly the nodes write an AOF with appendfsync always.
"""

import argparse
import atexit
import ctypes
import json
import os
import pathlib
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import redis
import redis.cluster

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
REDIS_CLI = shutil.which("redis-cli") or "/usr/bin/redis-cli"
HOST = "127.0.0.1"
SLOTS = 16384
NODE_TIMEOUT_MS = 1000
FUNCTIONS_DIR = pathlib.Path(__file__).resolve().parents[2] / "functions"

_PR_SET_PDEATHSIG = 1
_live_clusters = set()  # started and not stopped: atexit stops them


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def library_source():
    """The Baton functions library: functions/*.lua concatenated in byte order of file name."""
    files = sorted(FUNCTIONS_DIR.glob("*.lua"), key=lambda p: p.name.encode())
    return "".join(p.read_text(encoding="utf-8") for p in files)


def _die_with_parent():
    """preexec_fn: the node gets SIGKILL when the process that started it dies (Linux), so not
    even a kill -9 of the harness leaves a redis-server behind."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass


class Node:
    """One redis-server of the cluster. role is 'primary' or 'replica' as last seen by the
    harness (refresh_roles() updates it); process is None once the node was killed."""

    def __init__(self, port, bus_port, directory, process):
        self.port = port
        self.bus_port = bus_port
        self.dir = directory
        self.process = process
        self.role = None
        self.id = None  # cluster node id

    @property
    def pid(self):
        return self.process.pid if self.process is not None else None

    def alive(self):
        return self.process is not None and self.process.poll() is None

    def __repr__(self):
        return f"Node({self.port}, {self.role}, {'alive' if self.alive() else 'dead'})"


class RedisCluster:
    """primaries x (1 + replicas_per_primary) redis-server nodes in cluster mode. Use as a context
    manager, or call start() / stop()."""

    def __init__(self, primaries=3, replicas_per_primary=1, extra_args=(), appendonly=False):
        if primaries < 1 or (primaries < 3 and replicas_per_primary != 0):
            raise ValueError("primaries: at least 1, and at least 3 when they have replicas "
                             "(redis-cli --cluster create needs 3)")
        self.primary_count = primaries
        self.replicas_per_primary = replicas_per_primary
        self.extra_args = list(extra_args)
        self.appendonly = appendonly
        self.nodes = []
        self.slot_map = {}  # {(lo, hi): primary port}, as of the last refresh_roles()
        self._lock = threading.Lock()

    # Start and stop

    def start(self, timeout_s=30):
        deadline = time.monotonic() + timeout_s
        _live_clusters.add(self)
        try:
            for _ in range(self.primary_count * (1 + self.replicas_per_primary)):
                self.nodes.append(self._start_node(deadline))
            self._create(deadline)
            self.wait_ready(max(1.0, deadline - time.monotonic()))
        except BaseException:
            self.stop()
            raise
        return self

    def _node_args(self, port, bus_port, directory):
        args = [REDIS_SERVER, "--port", str(port), "--bind", HOST, "--daemonize", "no",
                "--dir", directory, "--save", "",
                "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                "--cluster-port", str(bus_port),
                "--cluster-node-timeout", str(NODE_TIMEOUT_MS),
                # A replica always stands for election, however long its link was down.
                "--cluster-replica-validity-factor", "0"]
        if self.appendonly:
            args += ["--appendonly", "yes", "--appendfsync", "always"]
        else:
            args += ["--appendonly", "no"]
        return args + self.extra_args

    def _start_node(self, deadline):
        directory = tempfile.mkdtemp(prefix="baton-cluster-")
        last_error = None
        for _ in range(8):  # another process may take a probed port before the node binds it
            port, bus_port = free_port(), free_port()
            if port == bus_port:
                continue
            log = open(os.path.join(directory, "redis.log"), "ab")
            process = subprocess.Popen(self._node_args(port, bus_port, directory), stdout=log,
                                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       preexec_fn=_die_with_parent)
            log.close()
            node = Node(port, bus_port, directory, process)
            try:
                self._wait_ping(node, min(10.0, max(1.0, deadline - time.monotonic())))
                return node
            except RuntimeError as e:
                last_error = e
                self._kill_process(node)
                try:  # a fresh node on the next ports
                    os.remove(os.path.join(directory, "nodes.conf"))
                except OSError:
                    pass
        shutil.rmtree(directory, ignore_errors=True)
        raise RuntimeError(f"redis-server did not start: {last_error}")

    @staticmethod
    def _wait_ping(node, timeout_s):
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if node.process.poll() is not None:
                raise RuntimeError(f"port {node.port}: exited with {node.process.returncode}")
            try:
                with redis.Redis(host=HOST, port=node.port, socket_timeout=1) as r:
                    if r.ping():
                        return
            except redis.exceptions.ConnectionError:
                pass
            time.sleep(0.02)
        raise RuntimeError(f"port {node.port}: no PING reply within {timeout_s:.1f} s")

    def _create(self, deadline):
        if self.primary_count < 3:
            self._create_small()
            return
        addresses = [f"{HOST}:{n.port}" for n in self.nodes]
        cmd = [REDIS_CLI, "--cluster", "create", *addresses,
               "--cluster-replicas", str(self.replicas_per_primary), "--cluster-yes"]
        result = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True,
                                timeout=max(5.0, deadline - time.monotonic()))
        if result.returncode != 0:
            raise RuntimeError(f"redis-cli --cluster create failed ({result.returncode}): "
                               f"{result.stdout.decode(errors='replace')[-2000:]}"
                               f"{result.stderr.decode(errors='replace')[-2000:]}")

    def _create_small(self):
        """One or two primaries without replicas, which redis-cli --cluster create refuses: each
        node takes an equal share of the slots, then they meet."""
        share = 16384 // self.primary_count
        for i, node in enumerate(self.nodes):
            first = i * share
            last = 16383 if i == len(self.nodes) - 1 else first + share - 1
            with self.node_client(node, socket_timeout=5) as r:
                r.execute_command("CLUSTER", "ADDSLOTSRANGE", first, last)
                if i > 0:
                    r.execute_command("CLUSTER", "MEET", HOST, self.nodes[0].port,
                                      self.nodes[0].bus_port)

    def stop(self):
        with self._lock:
            for node in self.nodes:
                self._kill_process(node)
            for node in self.nodes:
                if node.dir is not None:
                    shutil.rmtree(node.dir, ignore_errors=True)
                    node.dir = None
            _live_clusters.discard(self)

    @staticmethod
    def _kill_process(node):
        if node.process is not None:
            if node.process.poll() is None:
                node.process.kill()
            node.process.wait()
            node.process = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    # Topology

    def _cluster_nodes(self, node):
        """CLUSTER NODES of node as {port: (id, role, [slot ranges], flags)} for every node it
        does not consider failed or gone."""
        with self.node_client(node, decode_responses=True) as r:
            text = r.execute_command("CLUSTER", "NODES")  # raw text: no reply parser
        out = {}
        for line in text.splitlines():
            parts = line.split()
            node_id, address, flags = parts[0], parts[1], parts[2].split(",")
            port = int(address.split("@", 1)[0].rsplit(":", 1)[1])
            ranges = []
            for s in parts[8:]:
                if s.startswith("["):
                    continue  # a slot being migrated
                lo, _, hi = s.partition("-")
                ranges.append((int(lo), int(hi or lo)))
            role = "primary" if "master" in flags else "replica"
            out[port] = (node_id, role, sorted(ranges), flags)
        return out

    def _slot_map(self, node):
        """{(lo, hi): primary port} from node's CLUSTER SLOTS."""
        with self.node_client(node) as r:
            slots = r.execute_command("CLUSTER", "SLOTS")
        return {(lo, hi): int(primary[1]) for lo, hi, primary, *_ in slots}

    def live_nodes(self):
        return [n for n in self.nodes if n.alive()]

    def refresh_roles(self):
        """Sets each live node's role and id, and slot_map, as the first live node that answers
        sees them."""
        for node in self.live_nodes():
            try:
                view = self._cluster_nodes(node)
                self.slot_map = self._slot_map(node)
            except redis.exceptions.RedisError:
                continue
            for n in self.nodes:
                if n.port in view:
                    n.id, n.role = view[n.port][0], view[n.port][1]
            return
        raise RuntimeError("no live node answers CLUSTER NODES")

    def _check_ready(self):
        """None when every live node reports cluster_state:ok, every live node has the same slot
        map covering all slots, no live primary is marked failed and every live replica's link to
        its primary is up; otherwise a str saying what is not yet so."""
        live = self.live_nodes()
        maps = []
        for node in live:
            try:
                with self.node_client(node, decode_responses=True) as r:
                    info = r.execute_command("CLUSTER INFO")  # redis-py parses it to a dict
                    if info.get("cluster_state") != "ok":
                        return f"{node.port}: cluster_state {info.get('cluster_state')}"
                    if int(info.get("cluster_slots_assigned", 0)) != SLOTS:
                        return f"{node.port}: {info.get('cluster_slots_assigned')} slots assigned"
                    replication = r.info("replication")
                maps.append(self._slot_map(node))
                view = self._cluster_nodes(node)
            except redis.exceptions.RedisError as e:
                return f"{node.port}: {e}"
            if replication.get("role") == "slave" and \
                    replication.get("master_link_status") != "up":
                return f"{node.port}: master_link_status {replication.get('master_link_status')}"
            for other in live:
                if other.port not in view:
                    return f"{node.port} does not know {other.port} yet"
                if {"fail", "fail?", "handshake", "noaddr"} & set(view[other.port][3]):
                    return f"{node.port} sees {other.port} as {view[other.port][3]}"
        if any(m != maps[0] for m in maps):
            return "nodes disagree on the slot map"
        covered = sum(hi - lo + 1 for lo, hi in maps[0])
        if covered != SLOTS:
            return f"{covered} slots covered"
        owners = {port for port in maps[0].values()}
        if not owners <= {n.port for n in live}:
            return f"slots owned by a dead node ({owners})"
        return None

    def wait_ready(self, timeout_s=30):
        deadline = time.monotonic() + timeout_s
        while True:
            problem = self._check_ready()
            if problem is None:
                self.refresh_roles()
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"cluster not ready within {timeout_s:.1f} s: {problem}")
            time.sleep(0.05)

    def primaries(self):
        return [n for n in self.nodes if n.alive() and n.role == "primary"]

    def replicas(self):
        return [n for n in self.nodes if n.alive() and n.role == "replica"]

    def node_by_port(self, port):
        for n in self.nodes:
            if n.port == port:
                return n
        raise KeyError(port)

    def keyslot(self, key):
        return redis.cluster.key_slot(key.encode() if isinstance(key, str) else key)

    def primary_for_slot(self, slot):
        node = self.live_nodes()[0]
        for (lo, hi), port in self._slot_map(node).items():
            if lo <= slot <= hi:
                return self.node_by_port(port)
        raise RuntimeError(f"slot {slot} is not covered")

    def primary_for_key(self, key):
        """The node that serves key's slot (CLUSTER KEYSLOT + the current slot map)."""
        with self.node_client(self.live_nodes()[0]) as r:
            slot = r.execute_command("CLUSTER KEYSLOT", key)
        return self.primary_for_slot(slot)

    @property
    def url(self):
        """redis+cluster://127.0.0.1:p1,... with the live primaries as seed nodes."""
        return "redis+cluster://" + ",".join(f"{HOST}:{n.port}" for n in self.primaries())

    # Failures

    def kill9(self, node):
        """SIGKILL of node (no shutdown, no last write); its directory stays until stop()."""
        if node.process is not None and node.process.poll() is None:
            os.kill(node.process.pid, signal.SIGKILL)
        if node.process is not None:
            node.process.wait()
        node.process = None

    def restart(self, node, timeout_s=20):
        """Starts a killed node again on its ports and directory (its nodes.conf, and its AOF
        when appendonly): it rejoins the cluster - as a replica of whoever took its slots - and
        this returns once the cluster is ready again (its replication link up)."""
        if node.alive():
            raise ValueError(f"{node.port} is running")
        log = open(os.path.join(node.dir, "redis.log"), "ab")
        node.process = subprocess.Popen(self._node_args(node.port, node.bus_port, node.dir),
                                        stdout=log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        log.close()
        self._wait_ping(node, timeout_s)
        self.wait_ready(timeout_s)
        return node

    def wait_failover(self, old_primary_port, timeout=20):
        """Waits until the slots old_primary_port served (as last seen by wait_ready) belong to a
        live node and the cluster is ready again on every live node. Returns the new primary."""
        old_ranges = [r for r, port in self.slot_map.items() if port == old_primary_port]
        if not old_ranges:
            raise ValueError(f"{old_primary_port} served no slot")
        deadline = time.monotonic() + timeout
        while True:
            problem = self._check_ready()
            if problem is None:
                self.refresh_roles()
                new = self.primary_for_slot(old_ranges[0][0])
                if new.port != old_primary_port:
                    return new
                problem = f"{old_primary_port} still serves its slots"
            if time.monotonic() > deadline:
                raise RuntimeError(f"no failover of {old_primary_port} within {timeout} s: "
                                   f"{problem}")
            time.sleep(0.05)

    # Clients

    def client(self, **kwargs):
        """A redis.cluster.RedisCluster seeded with every live node."""
        seeds = [redis.cluster.ClusterNode(HOST, n.port) for n in self.live_nodes()]
        return redis.cluster.RedisCluster(startup_nodes=seeds, **kwargs)

    def node_client(self, node, **kwargs):
        """A plain redis.Redis connected to one node."""
        kwargs.setdefault("socket_timeout", 5)
        return redis.Redis(host=HOST, port=node.port, **kwargs)

    def load_library(self, source=None):
        """FUNCTION LOAD REPLACE of source (default: the Baton library) on every primary; replicas
        get it through replication, and it returns once they have it (WAIT)."""
        source = library_source() if source is None else source
        for node in self.primaries():
            with self.node_client(node) as r:
                r.execute_command("FUNCTION", "LOAD", "REPLACE", source)
                if self.replicas_per_primary > 0:
                    r.execute_command("WAIT", self.replicas_per_primary, 5000)

    def describe(self):
        return {"url": self.url,
                "nodes": [{"port": n.port, "role": n.role, "pid": n.pid}
                          for n in self.live_nodes()]}


def _stop_all():
    for cluster in list(_live_clusters):
        cluster.stop()


atexit.register(_stop_all)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--appendonly", action="store_true",
                        help="nodes write an AOF with appendfsync always")
    parser.add_argument("--load-library", action="store_true",
                        help="FUNCTION LOAD REPLACE the Baton library on every primary")
    parser.add_argument("--primaries", type=int, default=3)
    parser.add_argument("--replicas", type=int, default=1, help="replicas per primary")
    parser.add_argument("--timeout", type=float, default=30, help="start timeout (s)")
    args = parser.parse_args(argv)

    stopping = threading.Event()

    def on_signal(signum, _frame):
        stopping.set()

    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, on_signal)

    cluster = RedisCluster(args.primaries, args.replicas, appendonly=args.appendonly)
    try:
        cluster.start(timeout_s=args.timeout)
        if args.load_library:
            cluster.load_library()
        sys.stdout.write(json.dumps(cluster.describe()) + "\n")
        sys.stdout.flush()

        # Until stdin reaches EOF (the parent closed it, or died) or a signal came.
        while not stopping.is_set():
            try:
                readable, _, _ = select.select([sys.stdin.fileno()], [], [], 0.2)
                if readable and not os.read(sys.stdin.fileno(), 65536):
                    break
            except InterruptedError:
                continue
            except (OSError, ValueError):
                break  # no usable stdin: stop as on EOF
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
