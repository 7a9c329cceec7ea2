#!/usr/bin/env bash
# Builds the benchmark, starts a private redis-server (default settings, loopback, free port) and
# runs bench_throughput against it. Extra arguments go to the benchmark.
#   bench/run_throughput.sh [--tasks 200000]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
scripts/build.sh release >/dev/null
dir=$(mktemp -d)
port=$(/usr/bin/python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly no --daemonize yes \
  --logfile "$dir/redis.log" --pidfile "$dir/redis.pid"
trap 'kill $(cat "$dir/redis.pid") 2>/dev/null; sleep 0.2; rm -rf "$dir"' EXIT
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
build/release/bench/bench_throughput --redis "redis://127.0.0.1:$port" "$@"
