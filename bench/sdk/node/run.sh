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

dir=$(mktemp -d)
redis_pid=""
stop_redis() {
  if [ -n "$redis_pid" ]; then
    kill "$redis_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$redis_pid" 2>/dev/null || break; sleep 0.1; done
    redis_pid=""
  fi
}
trap 'stop_redis; rm -rf "$dir"' EXIT
start_redis() {
  mkdir -p "$dir/$1"
  port=$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
  redis-server --port "$port" --bind 127.0.0.1 --dir "$dir/$1" --save '' --appendonly no \
    --daemonize yes --logfile "$dir/$1/redis.log" --pidfile "$dir/$1/redis.pid"
  for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  redis_pid=$(cat "$dir/$1/redis.pid")
}

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
