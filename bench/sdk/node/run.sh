#!/usr/bin/env bash
# Node.js SDK throughput against BullMQ in one run (figures in sdk/node/README.md):
#   1. builds the SDK (sdk/node: npm ci when its lock changed, then the build) and installs this
#      bench's pinned dependencies (npm ci: bullmq 6.7.0, ioredis, the SDK from ../../../sdk/node);
#   2. for Baton, then BullMQ: a fresh redis-server (default settings, no persistence, loopback,
#      free port), with the functions library loaded for Baton, and bench.mjs with the same task
#      count, 200-byte payload, no-op handler, concurrency 50, producer and worker at once;
#   3. prints the Baton/BullMQ ratios.
#   bench/sdk/node/run.sh [--tasks 100000]
set -euo pipefail
cd "$(dirname "$0")"
root=$(cd ../../.. && pwd)
(cd "$root/sdk/node" && { [ -f node_modules/.package-lock.json ] && [ ! package-lock.json -nt node_modules/.package-lock.json ] ||
  npm ci --no-audit --no-fund --loglevel=error >/dev/null; } && node scripts/build.mjs >/dev/null)
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error >/dev/null
fi

. "$root/bench/lib/redis.sh"  # start_redis NAME / stop_redis, cleaned up on exit

echo "redis $(redis-server --version | sed 's/.* v=\([^ ]*\).*/\1/'), node $(node --version), $(nproc) cores"
start_redis baton
cat "$root"/functions/*.lua | redis-cli -p "$port" -x FUNCTION LOAD REPLACE >/dev/null
node bench.mjs --system baton --redis "redis://127.0.0.1:$port" --payload 200 --concurrency 50 "$@" | tee "$dir/baton.out"
stop_redis
start_redis bullmq
node bench.mjs --system bullmq --redis "redis://127.0.0.1:$port" --payload 200 --concurrency 50 "$@" | tee "$dir/bullmq.out"
stop_redis

awk '/ enqueue:/ { e[$1] = $3; d[$1] = $6 }
  END { printf "baton/bullmq : enqueue %.2fx, drain %.2fx\n", e["baton"] / e["bullmq"], d["baton"] / d["bullmq"] }' \
  "$dir/baton.out" "$dir/bullmq.out"
