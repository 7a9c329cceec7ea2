#!/usr/bin/env bash
# Drain rate of Baton on a Redis Cluster of 1, 2 and 3 primaries (no replicas), one run each:
# bench_cluster_drain against a cluster that tests/harness/redis_cluster.py starts on free
# loopback ports (default settings, no persistence). Extra arguments go to bench_cluster_drain:
#   bench/run_cluster.sh [--tasks 100000] [--namespaces-per-primary 2] [--concurrency 16]
#                        [--partitions P]   # one namespace of P partitions instead
# PRIMARIES (default "1 2 3") selects the cluster sizes. BUILD_DIR (default build/release)
# selects the build to use; without it the release build is made first.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib/build.sh  # BUILD_DIR, or set up and build release
echo "redis: $(redis-server --version | sed 's/.* v=\([^ ]*\).*/\1/'), $(nproc) cores shared by Redis and the bench"
for primaries in ${PRIMARIES:-1 2 3}; do
  # The harness prints one JSON line, then keeps the cluster until its stdin closes.
  coproc CLUSTER { exec /usr/bin/python3 tests/harness/redis_cluster.py --primaries "$primaries" --replicas 0; }
  cluster_pid=$CLUSTER_PID
  read -r line <&"${CLUSTER[0]}"
  url=$(/usr/bin/python3 -c 'import json, sys; print(json.loads(sys.argv[1])["url"])' "$line")
  "$BUILD_DIR/bench/bench_cluster_drain" --redis "$url" "$@"
  eval "exec ${CLUSTER[1]}>&-"
  wait "$cluster_pid" || true
done
