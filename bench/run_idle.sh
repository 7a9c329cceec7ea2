#!/usr/bin/env bash
# What an idle deployment costs Redis: starts a private redis-server (default settings, loopback,
# free port), `baton init`, one batond (default settings) and 8 `baton work --exec /bin/true`
# workers (4 task types x 2 workers, one namespace), runs one task of each type through them (so
# that every type exists, as after real traffic), lets everything settle, then counts the commands
# Redis processes per second over a window (bench/idle_stats.py: INFO total_commands_processed and
# commandstats deltas, and the clients' round trips seen by MONITOR).
#   bench/run_idle.sh [--seconds 20] [--settle 5] [-- extra `baton work` flags...]
# e.g. `bench/run_idle.sh -- --maintenance` measures workers that also promote and reclaim.
# BUILD_DIR (default build/release) selects the build to use; without it the release build is
# made first.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=20
settle=5
work_flags=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --settle) settle=$2; shift 2 ;;
    --) shift; work_flags=("$@"); break ;;
    *) echo "usage: $0 [--seconds N] [--settle N] [-- baton work flags]" >&2; exit 2 ;;
  esac
done
. bench/lib/build.sh  # BUILD_DIR, or set up and build release
baton=$BUILD_DIR/cli/baton
ns=idle
types=(t1 t2 t3 t4)

dir=$(mktemp -d)
port=$(/usr/bin/python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly no --daemonize yes \
  --logfile "$dir/redis.log" --pidfile "$dir/redis.pid"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  kill "$(cat "$dir/redis.pid")" 2>/dev/null || true
  sleep 0.2
  rm -rf "$dir"
}
trap cleanup EXIT
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
url="redis://127.0.0.1:$port"

"$baton" --redis "$url" init >"$dir/init.log" 2>&1 || { cat "$dir/init.log"; exit 1; }
"$BUILD_DIR/daemon/batond" --redis-url "$url" --instance idle >"$dir/batond.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q 'batond running' "$dir/batond.log" && break; sleep 0.1; done
grep -q 'batond running' "$dir/batond.log" || { cat "$dir/batond.log"; exit 1; }
for t in "${types[@]}"; do
  for w in 1 2; do
    "$baton" --redis "$url" work --ns "$ns" --type "$t" --exec /bin/true "${work_flags[@]}" \
      >"$dir/work-$t-$w.log" 2>&1 &
    pids+=($!)
  done
done
sleep 1
for t in "${types[@]}"; do
  "$baton" --redis "$url" enqueue --ns "$ns" --type "$t" --payload '{}' >/dev/null
done
sleep "$settle"
finished=$(redis-cli -p "$port" zcard "baton:v2:{$ns}:done")
if [ "$finished" != "${#types[@]}" ]; then
  echo "run_idle: $finished of ${#types[@]} warm-up tasks finished" >&2
  tail -n 5 "$dir"/*.log >&2
  exit 1
fi
for p in "${pids[@]}"; do
  kill -0 "$p" 2>/dev/null || { echo "run_idle: a process exited early" >&2; tail -n 5 "$dir"/*.log >&2; exit 1; }
done
label="8 workers on 4 types + 1 batond"
[ ${#work_flags[@]} -gt 0 ] && label="$label; baton work ${work_flags[*]}"
/usr/bin/python3 bench/idle_stats.py --port "$port" --seconds "$seconds" --label "$label"
