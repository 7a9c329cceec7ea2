#!/usr/bin/env bash
# baton-console's page and API latency (the aim: p95 < 100 ms for every page with 10 million
# events stored), on private servers (loopback, free ports, a temp dir removed on exit):
#   1. collector_ingest --fill N (--events, default 1,000,000; the README figure is
#      --events 10000000, whose fill takes several minutes) loads a day of realistic events into a
#      fresh SQLite store and writes 1000 stored task ids (--ids-out);
#   2. a private redis-server gets `baton init` and a live state in the store's namespaces: queued
#      tasks (emails/digest, media/thumbnail, reports/export), delayed ones (billing/invoice), 200
#      dead ones (enqueued with --max-retry 0 and failed by `baton work --exec` with an error
#      message: 120 emails/send, 80 billing/charge) and a cron job; baton-collector follows that
#      Redis into the same store (as deployed next to the console), so the dead tasks also have
#      their stored timeline, the workers and queue samples are there too; it keeps running;
#   3. baton-console serves the store and that Redis (a users file with one admin, its hash from
#      `baton-console hash-password`), and bench/console_latency.py logs in and times each API
#      endpoint, then each page as a browser loads it (index.html, app.css + app.js, /api/session,
#      the page's own calls, up to 6 at once): p50/p95/p99/max per endpoint and per page, and the
#      verdict.
#
#   bench/run_console.sh [--events N] [--requests N]
# BUILD_DIR (default build/release) selects the build; without it build/release is configured
# when missing (as scripts/build.sh release does). The targets needed are built in either case.
set -euo pipefail
cd "$(dirname "$0")/.."
events=1000000
requests=200
while [ $# -gt 0 ]; do
  case "$1" in
    --events) events=$2; shift 2 ;;
    --requests) requests=$2; shift 2 ;;
    *)
      echo "usage: $0 [--events N] [--requests N]" >&2
      exit 2
      ;;
  esac
done
if [ -z "${BUILD_DIR:-}" ]; then
  scripts/setup.sh >/dev/null
  BUILD_DIR=build/release
  if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
    cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBATON_WERROR=ON >/dev/null
  fi
fi
cmake --build "$BUILD_DIR" -j"$(nproc)" --target collector_ingest baton_console console_web \
  baton_cli baton_collector >/dev/null
ingest=$BUILD_DIR/bench/collector_ingest
console=$BUILD_DIR/console/baton-console
collector=$BUILD_DIR/collector/baton-collector
baton=$BUILD_DIR/cli/baton
web_dir=$BUILD_DIR/console-web

. bench/lib/redis.sh # start_redis NAME / stop_redis; $dir, removed on exit
console_pid=""
collector_pid=""
worker_pid=""
stop_pid() { # stop_pid PID: SIGTERM, then wait for it
  if [ -n "$1" ]; then
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
  fi
}
cleanup() {
  stop_pid "$worker_pid"
  stop_pid "$console_pid"
  stop_pid "$collector_pid"
  stop_redis
  rm -rf "$dir"
}
trap cleanup EXIT
free_port() {
  /usr/bin/python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'
}
# wait_http URL PID LOG: until URL answers 200, or fail (with the log) when PID dies or 10 s pass.
wait_http() {
  for _ in $(seq 100); do
    /usr/bin/python3 -c "import urllib.request as u; u.urlopen('$1', timeout=1)" 2>/dev/null &&
      return 0
    kill -0 "$2" 2>/dev/null || break
    sleep 0.1
  done
  echo "run_console: $1 did not answer" >&2
  cat "$3" >&2
  exit 1
}
# Prints the command, then runs it.
run() {
  echo "\$ $*"
  "$@"
}
start=$(date +%s)
echo "machine: $(nproc) cores, $(uname -r); sqlite $(pkg-config --modversion sqlite3)," \
  "redis $(redis-server --version | sed 's/.* v=\([^ ]*\).*/\1/')"

echo "== store: a day of $events events in SQLite"
mkdir -p "$dir/store"
store=$dir/store/stats.db
run "$ingest" --store "sqlite://$store" --fill "$events" --ids-out "$dir/store/ids.txt"
echo "fill: $(($(date +%s) - start)) s, $(du -m "$store" | cut -f1) MB"

echo "== live state in a private redis-server, baton-collector following it into the store"
start_redis live
url="redis://127.0.0.1:$port"
"$baton" --redis "$url" init >/dev/null
collector_port=$(free_port)
"$collector" --redis "$url" --store "sqlite://$store" --listen "127.0.0.1:$collector_port" \
  --name bench-collector >"$dir/collector.log" 2>&1 &
collector_pid=$!
wait_http "http://127.0.0.1:$collector_port/healthz" "$collector_pid" "$dir/collector.log"
# enqueue NS TYPE COUNT [baton enqueue options...]
enqueue() {
  local ns=$1 type=$2 count=$3 i
  shift 3
  for i in $(seq "$count"); do
    "$baton" --redis "$url" enqueue --ns "$ns" --type "$type" "$@" \
      --payload "{\"n\":$i,\"customer_email\":\"user$i@example.com\",\"note\":\"bench\"}" >/dev/null
  done
}
# kill_tasks NS TYPE COUNT ERROR: COUNT tasks enqueued with --max-retry 0, failed by a worker
# whose command prints ERROR on stderr and exits 1: COUNT dead tasks.
kill_tasks() {
  local ns=$1 type=$2 count=$3 error=$4 dead=0
  enqueue "$ns" "$type" "$count" --max-retry 0
  "$baton" --redis "$url" work --ns "$ns" --type "$type" --concurrency 8 \
    --exec "echo '$error' >&2; exit 1" >/dev/null 2>"$dir/work-$ns-$type.log" &
  worker_pid=$!
  for _ in $(seq 600); do
    dead=$("$baton" --redis "$url" --json queues --ns "$ns" | /usr/bin/python3 -c \
      "import json,sys; print(sum(q['dead'] for q in json.load(sys.stdin)['queues'] if q['type'] == '$type'))")
    [ "$dead" -ge "$count" ] && break
    sleep 0.1
  done
  stop_pid "$worker_pid"
  worker_pid=""
  if [ "$dead" -lt "$count" ]; then
    echo "run_console: only $dead of $count $ns/$type tasks died" >&2
    tail -n 5 "$dir/work-$ns-$type.log" >&2
    exit 1
  fi
}
kill_tasks emails send 120 "TimeoutError: upstream did not answer within 30s"
kill_tasks billing charge 80 "HTTPError 503: Service Unavailable from partner API"
enqueue emails digest 25
enqueue media thumbnail 150
enqueue reports export 40
enqueue billing invoice 30 --delay 3600
"$baton" --redis "$url" cron add nightly-report --schedule "30 2 * * *" --tz Europe/Berlin \
  --ns reports --type daily --payload '{"format":"pdf"}' >/dev/null
"$baton" --redis "$url" queues
"$baton" --redis "$url" cron list
# Until the collector has stored every dead task's death.
"$baton" --redis "$url" --json dlq list --ns emails --limit 1000 >"$dir/dead-emails.json"
"$baton" --redis "$url" --json dlq list --ns billing --limit 1000 >"$dir/dead-billing.json"
/usr/bin/python3 - "http://127.0.0.1:$collector_port" "$dir/dead-emails.json" \
  "$dir/dead-billing.json" <<'EOF'
import json, sys, time, urllib.error, urllib.request
base, files = sys.argv[1], sys.argv[2:]
ids = [t["task_id"] for f in files for t in json.load(open(f))["dead"]]
deadline = time.time() + 60
for task_id in ids:
    while True:
        try:
            with urllib.request.urlopen(f"{base}/api/tasks/{task_id}", timeout=5) as r:
                if json.load(r).get("state") == "dead":
                    break
        except urllib.error.HTTPError as e:
            if e.code != 404:
                raise
        if time.time() > deadline:
            sys.exit(f"run_console: the collector has not stored the death of {task_id} in 60 s")
        time.sleep(0.1)
print(f"baton-collector stored the {len(ids)} dead tasks")
EOF

echo "== baton-console on that store and Redis"
password=bench-$$-$RANDOM
hash=$(echo "$password" | "$console" hash-password)
printf '{"users": [{"name": "bench", "role": "admin", "password_hash": "%s"}]}\n' "$hash" \
  >"$dir/users.json"
console_port=$(free_port)
echo "\$ $console --redis $url --store sqlite://$store --users $dir/users.json" \
  "--listen 127.0.0.1:$console_port --web-dir $web_dir &"
"$console" --redis "$url" --store "sqlite://$store" --users "$dir/users.json" \
  --listen "127.0.0.1:$console_port" --web-dir "$web_dir" >"$dir/console.log" 2>&1 &
console_pid=$!
wait_http "http://127.0.0.1:$console_port/healthz" "$console_pid" "$dir/console.log"
status=0
run /usr/bin/python3 bench/console_latency.py --url "http://127.0.0.1:$console_port" \
  --user bench --password "$password" --ids "$dir/store/ids.txt" --requests "$requests" \
  --events "$events" || status=$?
if grep -q ' error \| critical ' "$dir/console.log"; then
  echo "run_console: baton-console logged errors:" >&2
  grep ' error \| critical ' "$dir/console.log" | tail -n 20 >&2
  status=1
fi
echo "run_console: $(($(date +%s) - start)) s"
exit "$status"
