"""Self-test of redis_cluster.py: a real 3-primary, 3-replica cluster starts, covers every slot,
routes keys, survives a kill -9 of a primary (WAIT 1 data included), and the subprocess mode prints
its JSON line and cleans up on stdin EOF."""

import json
import os
import pathlib
import subprocess
import sys
import time
import unittest

import redis

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import redis_cluster  # noqa: E402


class RedisClusterTest(unittest.TestCase):

    def test_start_route_kill_and_failover(self):
        with redis_cluster.RedisCluster() as cluster:
            self.assertEqual(len(cluster.primaries()), 3)
            self.assertEqual(len(cluster.replicas()), 3)
            self.assertTrue(cluster.url.startswith("redis+cluster://127.0.0.1:"))
            self.assertEqual(len(cluster.url.split(",")), 3)
            covered = sum(hi - lo + 1 for lo, hi in cluster.slot_map)
            self.assertEqual(covered, redis_cluster.SLOTS)

            r = cluster.client()
            r.set("{shop}:k", "v1")
            primary = cluster.primary_for_key("{shop}:k")
            self.assertEqual(primary.role, "primary")
            with cluster.node_client(primary) as node:
                self.assertEqual(node.get("{shop}:k"), b"v1")
            others = [n for n in cluster.primaries() if n is not primary]
            with cluster.node_client(others[0]) as node:
                with self.assertRaises(redis.exceptions.ResponseError):  # MOVED
                    node.get("{shop}:k")

            # Written with WAIT 1 on the primary: a replica holds it before the kill.
            with cluster.node_client(primary) as node:
                node.set("{shop}:durable", "yes")
                self.assertGreaterEqual(node.execute_command("WAIT", 1, 2000), 1)
            r.close()
            cluster.kill9(primary)
            started = time.monotonic()
            new = cluster.wait_failover(primary.port, timeout=20)
            took = time.monotonic() - started
            self.assertNotEqual(new.port, primary.port)
            self.assertEqual(new.role, "primary")
            self.assertEqual(cluster.primary_for_key("{shop}:k").port, new.port)
            r = cluster.client()
            self.assertEqual(r.get("{shop}:durable"), b"yes")
            self.assertEqual(r.get("{shop}:k"), b"v1")
            r.close()
            print(f"\nfailover of {primary.port} to {new.port} in {took:.2f} s",
                  file=sys.stderr)
            dirs = [n.dir for n in cluster.nodes]
            pids = [n.pid for n in cluster.nodes if n.alive()]
        for d in dirs:
            self.assertFalse(os.path.exists(d), d)
        for pid in pids:
            self.assertFalse(_running(pid), pid)

    def test_subprocess_mode_prints_json_and_cleans_up_on_eof(self):
        script = pathlib.Path(redis_cluster.__file__)
        proc = subprocess.Popen([sys.executable, str(script), "--load-library"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            line = proc.stdout.readline()
            info = json.loads(line)
            self.assertEqual(len(info["nodes"]), 6)
            roles = sorted(n["role"] for n in info["nodes"])
            self.assertEqual(roles, ["primary"] * 3 + ["replica"] * 3)
            seeds = info["url"][len("redis+cluster://"):].split(",")
            self.assertEqual(len(seeds), 3)
            # The library is on every primary, and replicated to every replica.
            for n in info["nodes"]:
                with redis.Redis(host="127.0.0.1", port=n["port"]) as r:
                    (lib,) = r.execute_command("FUNCTION", "LIST", "LIBRARYNAME", "baton_v2")
                    self.assertEqual(lib[1], b"baton_v2", n)
        finally:
            proc.stdin.close()  # EOF: the harness stops the cluster
            proc.wait(timeout=20)
        self.assertEqual(proc.returncode, 0)
        for n in info["nodes"]:
            self.assertFalse(_running(n["pid"]), n)


def _running(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is not running either.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


if __name__ == "__main__":
    unittest.main()
