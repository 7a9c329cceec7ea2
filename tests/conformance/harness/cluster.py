"""The cluster run of the matrix (`run.sh --cluster`): a real Redis Cluster instead of one
redis-server, and cell namespaces spread evenly over its primaries.

The cluster is tests/harness/redis_cluster.py (3 primaries on free loopback ports, replicas 0 by
default: the cells check routing and cross-language behaviour, not failover, which the cluster
tests of each SDK and tests/integration/cluster_e2etest.cpp cover). The library is loaded with
the build's `baton init` (on every primary), everything the harness reads from Redis goes through
redis-py's cluster client, and every driver gets the `redis+cluster://` URL.
"""

import os
import subprocess
import sys

import redis.cluster

_HARNESS_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "harness"))
if _HARNESS_DIR not in sys.path:
    sys.path.insert(0, _HARNESS_DIR)
import redis_cluster  # noqa: E402  (tests/harness/redis_cluster.py)

PRIMARIES = 3
START_TIMEOUT_S = 60


class ClusterRedis:
    """The cluster seen as the matrix' Redis: url, client(), start(), stop()."""

    def __init__(self, replicas=0):
        self.cluster = redis_cluster.RedisCluster(PRIMARIES, replicas)
        self.replicas = replicas

    @property
    def url(self):
        return self.cluster.url

    def client(self):
        """A redis.cluster.RedisCluster: every read of the harness is routed by slot."""
        return self.cluster.client(decode_responses=True)

    def start(self):
        try:
            self.cluster.start(timeout_s=START_TIMEOUT_S)
        except Exception as e:  # redis-cli or a node failed: the run cannot start (exit 2)
            raise RuntimeError("the Redis Cluster did not start: %s" % e) from e

    def load_functions(self, baton_bin, env):
        """`baton init` on the cluster URL (it loads the library on every primary), then a
        FUNCTION LIST on each primary to see that every one really has it."""
        try:
            run = subprocess.run([baton_bin, "--redis", self.url, "init"], capture_output=True,
                                 env=env, timeout=60)
        except subprocess.TimeoutExpired:
            raise RuntimeError("baton init on the cluster %s did not finish in 60 s" % self.url)
        out = (run.stdout + run.stderr).decode(errors="replace").strip()
        if run.returncode != 0:
            raise RuntimeError("baton init on the cluster exited %d: %s" % (run.returncode, out))
        missing = []
        for node in self.cluster.primaries():
            with self.cluster.node_client(node, decode_responses=True) as r:
                if not r.function_list(library="baton_v2"):
                    missing.append(node.port)
        if missing:
            raise RuntimeError("after `baton init` (%s) the primaries on ports %s have no "
                               "library baton_v2" % (out, missing))
        return out

    def primaries(self):
        """The primaries in slot order, as [(node, [(lo, hi), ...])]."""
        self.cluster.refresh_roles()
        ranges = {}
        for (lo, hi), port in sorted(self.cluster.slot_map.items()):
            ranges.setdefault(port, []).append((lo, hi))
        return [(self.cluster.node_by_port(port), r) for port, r in ranges.items()]

    def primary_of(self, ns):
        """The port of the primary serving namespace ns (every key of ns carries {ns})."""
        slot = redis.cluster.key_slot(ns.encode())
        for (lo, hi), port in self.cluster.slot_map.items():
            if lo <= slot <= hi:
                return port
        raise RuntimeError("slot %d of namespace %s is not covered" % (slot, ns))

    def spread(self, cells, base_name):
        """{(producer, consumer): namespace} with the cells dealt round-robin to the primaries:
        base_name(p, c) plus the first suffix "-<k>" whose slot is on that cell's primary."""
        ports = [node.port for node, _ in self.primaries()]
        out = {}
        for i, (p, c) in enumerate(cells):
            want = ports[i % len(ports)]
            for k in range(100000):
                ns = "%s-%d" % (base_name(p, c), k)
                if self.primary_of(ns) == want:
                    out[(p, c)] = ns
                    break
            else:
                raise RuntimeError("no namespace for %s -> %s lands on port %d" % (p, c, want))
        return out

    def describe_spread(self, namespaces):
        """Lines "port slots lo-hi: N cells" for every primary."""
        lines = []
        for node, ranges in self.primaries():
            count = sum(1 for ns in namespaces.values() if self.primary_of(ns) == node.port)
            lines.append("  primary 127.0.0.1:%d (slots %s): %d cells"
                         % (node.port, ",".join("%d-%d" % r for r in ranges), count))
        return lines

    def keys_by_primary(self, namespaces):
        """Lines saying, per primary, how many of its cells' namespaces have keys on it (a SCAN
        of that node alone): where the cells' tasks really were written."""
        lines = []
        for node, _ in self.primaries():
            with self.cluster.node_client(node, decode_responses=True) as r:
                found = {key.split("{", 1)[1].split("}", 1)[0]
                         for key in r.scan_iter(match="baton:v2:{conf-*", count=1000)}
            mine = {ns for ns in namespaces.values() if self.primary_of(ns) == node.port}
            lines.append("  primary 127.0.0.1:%d: keys of %d of its %d cell namespaces"
                         % (node.port, len(found & mine), len(mine)))
        return lines

    def stop(self):
        self.cluster.stop()
