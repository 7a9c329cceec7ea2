#!/usr/bin/env bash
# Starts a private redis-server (loopback, free port), loads the functions library, starts one
# batond, runs bench_delay_precision against them (with batond's pid for its CPU figures) and stops
# everything. Extra arguments go to the benchmark.
#   bench/run_delay_precision.sh [--tasks 10000] [--spread-ms 5000]
# BUILD_DIR (default build/release) selects the build to use; without it the release build is
# made first.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib/build.sh  # BUILD_DIR, or set up and build release
dir=$(mktemp -d)
port=$(/usr/bin/python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly no --daemonize yes \
  --logfile "$dir/redis.log" --pidfile "$dir/redis.pid"
batond_pid=""
cleanup() {
  [ -n "$batond_pid" ] && kill "$batond_pid" 2>/dev/null && wait "$batond_pid" 2>/dev/null
  kill "$(cat "$dir/redis.pid")" 2>/dev/null
  sleep 0.2
  rm -rf "$dir"
}
trap cleanup EXIT
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
url="redis://127.0.0.1:$port"
"$BUILD_DIR/daemon/batond" --redis-url "$url" --load-functions --no-cron --instance bench \
  >"$dir/batond.log" 2>&1 &
batond_pid=$!
for _ in $(seq 100); do grep -q 'batond running' "$dir/batond.log" && break; sleep 0.1; done
grep -q 'batond running' "$dir/batond.log" || { cat "$dir/batond.log"; exit 1; }
"$BUILD_DIR/bench/bench_delay_precision" --redis "$url" --batond-pid "$batond_pid" "$@"
