#!/usr/bin/env bash
# The demo: sets everything up, starts a private Redis (AOF on), batond and baton-collector
# (events into an SQLite store, stats API on a loopback port), workers in three languages (C++,
# Python through its SDK, a shell script through `baton work --exec`), a cron job, and a producer;
# then shows the queues, the dead-letter queue, a task's timeline and the collector's overview, and
# starts the web console (baton-console) on a loopback port with a demo login.
#   scripts/demo.sh            runs about 15 seconds, then stops everything it started
#   DEMO_KEEP=1 scripts/demo.sh  leaves Redis, batond, the collector, the console and the workers
#                                running (open the console URL it prints)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
scripts/setup.sh
scripts/build.sh release >/dev/null
bin=$root/build/release

data=$root/demo-data
rm -rf "$data"
mkdir -p "$data/redis" "$data/audit"
port=$(/usr/bin/python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
url="redis://127.0.0.1:$port"
api_port=$(/usr/bin/python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
api="http://127.0.0.1:$api_port"
console_port=$(/usr/bin/python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
console="http://127.0.0.1:$console_port"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
}
trap cleanup EXIT

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
baton() { "$bin/cli/baton" --redis "$url" "$@"; }
# Background processes are started as binaries (not through the function) so that $! is their pid.

step "redis-server on 127.0.0.1:$port (AOF on, data in demo-data/redis)"
redis-server --port "$port" --bind 127.0.0.1 --dir "$data/redis" --appendonly yes --save '' \
  --daemonize yes --logfile "$data/redis/redis.log"
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done

step "baton init: load the functions library"
baton init

step "batond (promoter, lease reaper, cron), log in demo-data/batond.log"
"$bin/daemon/batond" --redis "$url" --health 127.0.0.1:0 >"$data/batond.log" 2>&1 &
pids+=($!)

step "baton-collector: events into demo-data/stats.db, API and /metrics on $api"
"$bin/collector/baton-collector" --redis "$url" --store "sqlite://$data/stats.db" \
  --listen "127.0.0.1:$api_port" --sample-interval-ms 1000 >"$data/collector.log" 2>&1 &
pids+=($!)

step "baton-console: the web console on $console (users in demo-data/console-users.json)"
# Demo logins: admin / baton-demo (every action) and viewer / baton-demo (read only).
demo_hash=$(echo baton-demo | "$bin/console/baton-console" hash-password)
cat >"$data/console-users.json" <<JSON
{"users": [
  {"name": "admin", "role": "admin", "password_hash": "$demo_hash"},
  {"name": "viewer", "role": "viewer", "password_hash": "$demo_hash"}
]}
JSON
"$bin/console/baton-console" --redis "$url" --store "sqlite://$data/stats.db" \
  --users "$data/console-users.json" --listen "127.0.0.1:$console_port" >"$data/console.log" 2>&1 &
pids+=($!)

step "workers: C++ (examples/worker.cpp), Python (sdk/python/examples/demo_worker.py), shell (baton work --exec)"
"$bin/examples/baton_example_worker" "$url" &
pids+=($!)
sdk_python=$(sdk/python/scripts/venv.sh)  # the Python SDK's venv, pinned packages from PyPI
"$sdk_python" sdk/python/examples/demo_worker.py "$url" &
pids+=($!)
"$bin/cli/baton" --redis "$url" work --ns order --type audit_log \
  --exec 'cat > "'"$data"'/audit/$BATON_TASK_ID.json"; echo "[shell worker] audit_log $BATON_TASK_ID attempt $BATON_ATTEMPT: $(cat "'"$data"'/audit/$BATON_TASK_ID.json")"' &
pids+=($!)

step "cron: an audit_log task every 2 seconds, defined in Redis"
baton cron add audit --schedule '*/2 * * * * *' --ns order --type audit_log --payload '{"source":"cron"}'

step "producer (C++): immediate, delayed, flaky, failing, duplicate, invalid"
"$bin/examples/baton_example_producer" "$url"
step "producer (CLI): two invoices for the Python worker, which chains a notification to C++"
baton enqueue --ns order --type generate_invoice --payload '{"order_id": 777}'
baton enqueue --ns order --type generate_invoice --payload '{"order_id": 778}'

sleep 8

step "baton queues"
baton queues --ns order
step "baton dlq list: the card charge that exhausted its retries"
baton dlq list --ns order
dead_id=$(baton --json dlq list --ns order | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["dead"][0]["task_id"] if d["dead"] else "")')
if [ -n "$dead_id" ]; then
  step "baton task show $dead_id: every attempt and its error"
  baton task show "$dead_id" --ns order
  step "baton doctor $dead_id"
  baton doctor "$dead_id" --ns order
fi
step "baton cron next audit"
baton cron next audit -n 3

step "summary"
baton --json queues --ns order > "$data/queues.json"
/usr/bin/python3 - "$data/queues.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
queues = doc["queues"] if isinstance(doc, dict) else doc
for q in queues:
    cells = "  ".join(f"{k} {q.get(k)}" for k in ("ready", "in_flight", "delayed", "retrying", "dead"))
    print(f"  {q.get('type', '?'):<18} {cells}")
PY
echo "  audit_log tasks run by the shell worker: $(ls "$data/audit" | wc -l)"
echo "  overview read back from the collector's store ($api/api/overview):"
/usr/bin/python3 - "$api" <<'PY'
import json, sys, time, urllib.request
doc = None
for _ in range(50):  # the collector may still be starting on a slow machine
    try:
        doc = json.load(urllib.request.urlopen(sys.argv[1] + "/api/overview", timeout=5))
        if doc["namespaces"]:
            break
    except OSError:
        pass
    time.sleep(0.2)
if not doc or not doc["namespaces"]:
    sys.exit("  the collector's overview is empty: see demo-data/collector.log")
for ns in doc["namespaces"]:
    t = ns["today"]
    rate = "-" if t["success_rate"] is None else f"{100 * t['success_rate']:.0f}%"
    mean = "-" if t["mean_run_ms"] is None else f"{t['mean_run_ms']:.1f} ms"
    print(f"  namespace {ns['namespace']}: today {t['enqueued']} enqueued, {t['succeeded']} succeeded, "
          f"{t['failed']} failed attempts, {t['dead']} dead; success rate {rate}; mean run time {mean}"
          + ("" if ns["complete"] else f"; {ns['events_lost']} events lost"))
    for name, ty in sorted(ns["types"].items()):
        h = ty.get("last_hour", {})
        q = ty.get("queue", {})
        print(f"    {name:<18} runs {h.get('runs', 0):<4} p95 {h.get('p95_run_ms') or 0:7.1f} ms"
              f"   ready {q.get('ready', '-')}  dead {q.get('dead', '-')}")
PY
echo "  redis: $url   stats API: $api/api/overview   metrics: $api/metrics"
/usr/bin/python3 - "$console" <<'PY'
import sys, time, urllib.request
for _ in range(100):  # the console hashes a password and opens the store at start
    try:
        urllib.request.urlopen(sys.argv[1] + "/healthz", timeout=5)
        break
    except OSError:
        time.sleep(0.2)
else:
    sys.exit("  the console did not start: see demo-data/console.log")
PY
echo
echo "  web console: $console   login: admin / baton-demo   (viewer / baton-demo: read only)"
[ "${DEMO_KEEP:-0}" = 1 ] || echo "  (it stops with the demo: DEMO_KEEP=1 scripts/demo.sh keeps everything running)"
if [ "${DEMO_KEEP:-0}" = 1 ]; then
  step "running; Ctrl-C to stop"
  wait
fi
