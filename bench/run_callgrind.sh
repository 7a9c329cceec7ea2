#!/usr/bin/env bash
# Instructions Redis executes per task on the Lua path of protocol v2, counted by callgrind: a
# figure free of machine noise (CPU speed, other load), to compare changes of functions/*.lua.
#
# Runs redis-server (default settings, no persistence) under `valgrind --tool=callgrind` four
# times, each driven by bench/callgrind_driver.py (same connection work every time: one connection,
# FUNCTION LOAD, version check, configure read):
#   baseline: nothing more;
#   enqueue:  N tasks enqueued (baton_v2_enqueue, batches of 256);
#   dequeue:  N tasks enqueued, then dequeued (batches of 64), not acked;
#   full:     N tasks enqueued, then dequeued (batches of 64) and acked (batches of 64).
# "Dequeued" is the C++ worker's fast read path by default (XREADGROUP, then baton_v2_start with
# what was read); --read lua measures baton_v2_dequeue instead.
# Then two yardsticks (bench/callgrind_yardstick.py): the bare Streams pattern (XADD, XREADGROUP,
# XACK + XDEL) natively, and the same commands inside a minimal Functions library: the floor any
# Redis Functions design pays before its own bookkeeping.
# Instructions per task = (Ir of full - Ir of baseline) / N, split into enqueue (enqueue -
# baseline), dequeue (dequeue - enqueue) and ack (full - dequeue). Ir is the whole server's (event loop, parsing,
# replies, Lua, cron); the part inside `call` (command execution, Lua included) and inside
# fcallCommand (the functions) is printed too, from callgrind_annotate's inclusive costs. The
# server's time-driven work (serverCron at hz 10) grows with the run's wall time under valgrind:
# the `call` figure leaves it out.
#
#   bench/run_callgrind.sh [--tasks 5000] [--read native|lua] [--batch N]
# --batch N makes every call (enqueue, read, ack; the yardsticks too) carry N tasks: --batch 1 shows
# what one task per call costs, where a call's fixed cost is not shared (light load).
# Needs valgrind (installed here with apt-get when missing; scripts/setup.sh should list it),
# python3 and python3-redis.
set -euo pipefail
cd "$(dirname "$0")/.."
tasks=5000
read_path=native
batch=0
while [ $# -gt 0 ]; do
  case "$1" in
    --tasks) tasks=$2; shift 2 ;;
    --read) read_path=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    *) echo "usage: $0 [--tasks N] [--read native|lua] [--batch N]" >&2; exit 2 ;;
  esac
done
if ! command -v valgrind >/dev/null || ! command -v callgrind_annotate >/dev/null; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends valgrind >/dev/null
fi

dir=$(mktemp -d)
vg_pid=""
cleanup() {
  [ -n "$vg_pid" ] && kill "$vg_pid" 2>/dev/null && wait "$vg_pid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT

# One run of redis-server under callgrind: `run_phase NAME DRIVER ARGS...` drives it with
# `python3 DRIVER --port PORT ARGS...` and leaves $dir/NAME.out.
run_phase() {
  local name=$1 port
  shift
  port=$(/usr/bin/python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
  valgrind --tool=callgrind --callgrind-out-file="$dir/$name.out" \
    redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly no \
    --logfile "$dir/$name.redis.log" 2>"$dir/$name.valgrind.log" &
  vg_pid=$!
  for _ in $(seq 600); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  /usr/bin/python3 "$1" --port "$port" "${@:2}" --tasks "$tasks" --batch "$batch"
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  wait "$vg_pid" || true
  vg_pid=""
  [ -s "$dir/$name.out" ] || { cat "$dir/$name.valgrind.log" >&2; exit 1; }
}

# Total Ir of a run, then the inclusive Ir of each function named after it (0 when absent).
costs() {
  local out=$1
  shift
  sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$out"
  callgrind_annotate --inclusive=yes --auto=no --threshold=100 "$out" >"$out.txt" 2>/dev/null
  for fn in "$@"; do
    # Lines like "216,086,427 (83.11%)  ???:fcallCommand [/usr/bin/redis-server]".
    awk -v fn="$fn" '!found && $0 ~ ("%\\)  [^ ]*:" fn " ") { gsub(",", "", $1); print $1; found = 1 }
      END { if (!found) print 0 }' "$out.txt"
  done
}

start=$(date +%s)
for phase in baseline enqueue dequeue full; do
  run_phase "$phase" bench/callgrind_driver.py --phase "$phase" --read "$read_path"
done
for mode in native functions; do
  for phase in baseline full; do
    run_phase "ys_${mode}_$phase" bench/callgrind_yardstick.py --mode "$mode" --phase "$phase"
  done
done
mapfile -t base < <(costs "$dir/baseline.out" call fcallCommand)
mapfile -t enq < <(costs "$dir/enqueue.out" call fcallCommand)
mapfile -t deq < <(costs "$dir/dequeue.out" call fcallCommand)
mapfile -t full < <(costs "$dir/full.out" call fcallCommand)
batches="enqueue batches 256, dequeue/ack batches 64"
[ "$batch" -gt 0 ] && batches="batches of $batch"
echo "callgrind: redis $(redis-server --version | sed 's/.* v=\([^ ]*\).*/\1/'), $tasks tasks, payload 200 B," \
  "$batches, read path $read_path, events on" \
  "($(($(date +%s) - start)) s)"
awk -v n="$tasks" -v b="${base[*]}" -v e="${enq[*]}" -v d="${deq[*]}" -v f="${full[*]}" 'BEGIN {
  split(b, B); split(e, E); split(d, D); split(f, F)
  split("instructions per task|  in command execution (call)|  in the functions (fcallCommand)",
        what, "|")
  for (i = 1; i <= 3; ++i)
    printf "%s: %.0f  (enqueue %.0f + dequeue %.0f + ack %.0f)\n", what[i], (F[i] - B[i]) / n,
      (E[i] - B[i]) / n, (D[i] - E[i]) / n, (F[i] - D[i]) / n
}'
ys() { echo $(( ($(costs "$dir/ys_$1_full.out") - $(costs "$dir/ys_$1_baseline.out")) / tasks )); }
echo "yardsticks (bench/callgrind_yardstick.py, same batches): bare streams $(ys native)" \
  "instructions per task; the same commands inside Redis Functions $(ys functions)"
