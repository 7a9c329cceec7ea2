#!/usr/bin/env bash
# Throughput of Baton against the bare Redis Streams pattern and against BullMQ, in one run:
#   1. starts a private redis-server (default settings, loopback, free port) and runs
#      bench_throughput against it (bare streams, baton drain, memory, light-load latency);
#   2. stops it, starts another redis-server with the same settings, installs the BullMQ bench's
#      npm dependencies (npm ci, pinned by bench/bullmq/package-lock.json) and runs
#      bench/bullmq/bench.js with the same task count, payload (200 B) and a no-op handler at
#      concurrency 50;
#   3. prints the ratio of Baton's drain rate to BullMQ's.
# Extra arguments go to bench_throughput:
#   bench/run_throughput.sh [--tasks 200000]
# BULLMQ_TASKS (default: bench_throughput's task count) sets BullMQ's count; its rate is always
# its own count over its own time. BUILD_DIR (default build/release) selects the build to use;
# without it the release build is made first. Needs node >= 18 and npm.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib/build.sh  # BUILD_DIR, or set up and build release
command -v node >/dev/null && command -v npm >/dev/null || {
  echo "run_throughput: node and npm are needed for the BullMQ run" >&2
  exit 1
}

. bench/lib/redis.sh  # start_redis NAME / stop_redis, cleaned up on exit

start_redis baton
echo "redis: $(redis-server --version | sed 's/.* v=\([^ ]*\).*/\1/'), default settings, no persistence"
"$BUILD_DIR/bench/bench_throughput" --redis "redis://127.0.0.1:$port" "$@" | tee "$dir/baton.out"
stop_redis

if [ ! -f bench/bullmq/node_modules/.package-lock.json ] ||
  [ bench/bullmq/package-lock.json -nt bench/bullmq/node_modules/.package-lock.json ]; then
  (cd bench/bullmq && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
tasks=${BULLMQ_TASKS:-$(sed -n 's/^tasks=\([0-9]*\) .*/\1/p' "$dir/baton.out")}
start_redis bullmq
node bench/bullmq/bench.js --redis "redis://127.0.0.1:$port" --tasks "$tasks" --payload 200 \
  --concurrency 50 | tee "$dir/bullmq.out"
stop_redis

baton_rate=$(awk '/^baton +:/ {print $3}' "$dir/baton.out")
bullmq_rate=$(awk '/^bullmq +:/ {print $3}' "$dir/bullmq.out")
awk -v a="$baton_rate" -v b="$bullmq_rate" \
  'BEGIN { printf "baton/bullmq : %.2fx (drain rate, tasks/s)\n", a / b }'
