#!/usr/bin/env bash
# baton-collector's figures, in one run (each part on its own private servers, loopback, free ports):
#   (a) ingest into SQLite: bench/collector_ingest writes --events N (default 1,000,000) realistic
#       task events through StoreWriter::Ingest (the collector's write path) in batches of ~1000
#       rows into a fresh file: events/s, batches/s, batch latency (the aim: >= 50,000 events/s);
#   (b) ingest into PostgreSQL 15: the same into a private server (initdb in the temp dir, run as
#       user postgres since initdb and postgres refuse root; default settings, so fsync on, unless
#       --pg-fsync off); --no-postgres skips it;
#   (c) API latency: collector_ingest --fill N (--api-events, default 1,000,000; the README figure
#       is --api-events 10000000, which takes a while) loads a day of events into SQLite,
#       baton-collector serves that store (with a private, empty redis-server), and
#       bench/collector_api.py times sequential GETs of each endpoint: p50/p95/p99 (the aim:
#       p95 < 50 ms for overview and timeline with 10 million events stored);
#   (d) Redis CPU: bench/collector_drive drives --tasks N (default 20,000) tasks through Baton
#       (batches of 100, one no-op worker) with no collector running; then baton-collector reads the
#       events they left in the stream (a window holding the collector's work only: its own
#       commands, exactly); then, on a fresh redis-server, the same drive with baton-collector
#       following live (the window ends once it has caught up). Redis CPU per task each time, less
#       Redis's idle rate over the window (bench/collector_drive.cpp); the live difference is within
#       the run-to-run noise of a drain (several us/task here), the catch-up window is exact.
# The default run takes about 5 minutes.
#
#   bench/run_collector.sh [--events N] [--api-events N] [--tasks N] [--requests N]
#                          [--no-postgres] [--pg-fsync on|off] [--parts abcd]
# BUILD_DIR (default build/release) selects the build; without it build/release is configured
# when missing (as scripts/build.sh release does). The targets needed are built in either case.
set -euo pipefail
cd "$(dirname "$0")/.."
events=1000000
api_events=1000000
tasks=20000
requests=200
postgres=1
pg_fsync=on
parts=abcd
while [ $# -gt 0 ]; do
  case "$1" in
    --events) events=$2; shift 2 ;;
    --api-events) api_events=$2; shift 2 ;;
    --tasks) tasks=$2; shift 2 ;;
    --requests) requests=$2; shift 2 ;;
    --no-postgres) postgres=0; shift ;;
    --pg-fsync) pg_fsync=$2; shift 2 ;;
    --parts) parts=$2; shift 2 ;;
    *)
      echo "usage: $0 [--events N] [--api-events N] [--tasks N] [--requests N] [--no-postgres]" \
        "[--pg-fsync on|off] [--parts abcd]" >&2
      exit 2
      ;;
  esac
done
case "$pg_fsync" in on | off) ;; *) echo "--pg-fsync: on or off" >&2; exit 2 ;; esac
if [ -z "${BUILD_DIR:-}" ]; then
  scripts/setup.sh >/dev/null
  BUILD_DIR=build/release
  if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
    cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBATON_WERROR=ON >/dev/null
  fi
fi
cmake --build "$BUILD_DIR" -j"$(nproc)" --target collector_ingest collector_drive baton_collector \
  baton_cli >/dev/null
ingest=$BUILD_DIR/bench/collector_ingest
drive=$BUILD_DIR/bench/collector_drive
collector=$BUILD_DIR/collector/baton-collector
pgbin=/usr/lib/postgresql/15/bin

. bench/lib/redis.sh # start_redis NAME / stop_redis; $dir, removed on exit
collector_pid=""
pg_data=""
failed=()
stop_collector() {
  if [ -n "$collector_pid" ]; then
    kill "$collector_pid" 2>/dev/null || true
    wait "$collector_pid" 2>/dev/null || true
    collector_pid=""
  fi
}
stop_postgres() {
  if [ -n "$pg_data" ]; then
    runuser -u postgres -- "$pgbin/pg_ctl" -D "$pg_data" -m fast -w stop >/dev/null 2>&1 || true
    pg_data=""
  fi
}
trap 'stop_collector; stop_redis; stop_postgres; rm -rf "$dir"' EXIT
free_port() {
  /usr/bin/python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'
}
# Prints the command, then runs it.
run() {
  echo "\$ $*"
  "$@"
}
# start_collector STORE_URL LOG: baton-collector on the running redis-server; sets $api_port.
start_collector() {
  api_port=$(free_port)
  "$collector" --redis "redis://127.0.0.1:$port" --store "$1" --listen "127.0.0.1:$api_port" \
    --name bench-collector >"$2" 2>&1 &
  collector_pid=$!
  for _ in $(seq 100); do
    /usr/bin/python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$api_port/healthz', timeout=1)" \
      2>/dev/null && return 0
    kill -0 "$collector_pid" 2>/dev/null || break
    sleep 0.1
  done
  cat "$2" >&2
  exit 1
}
start=$(date +%s)
echo "machine: $(nproc) cores, $(uname -r); sqlite $(pkg-config --modversion sqlite3)," \
  "redis $(redis-server --version | sed 's/.* v=\([^ ]*\).*/\1/')"

if [[ $parts == *a* ]]; then
  echo "== (a) ingest into SQLite (fresh file; WAL, synchronous=FULL: the collector's settings)"
  mkdir -p "$dir/sqlite"
  run "$ingest" --store "sqlite://$dir/sqlite/stats.db" --events "$events" || failed+=(a)
  rm -rf "$dir/sqlite"
fi

if [[ $parts == *b* ]]; then
  echo "== (b) ingest into PostgreSQL"
  if [ "$postgres" = 0 ]; then
    echo "skipped (--no-postgres)"
  elif [ ! -x "$pgbin/postgres" ]; then
    echo "skipped: no PostgreSQL 15 in $pgbin (apt-get install postgresql-15)"
    failed+=(b)
  else
    chmod 755 "$dir"
    mkdir -p "$dir/pg"
    chown postgres:postgres "$dir/pg"
    runuser -u postgres -- "$pgbin/initdb" -D "$dir/pg/data" -U postgres -A trust -E UTF8 \
      --no-sync >"$dir/pg/initdb.log" 2>&1 || { cat "$dir/pg/initdb.log" >&2; exit 1; }
    pg_port=$(free_port)
    pg_data=$dir/pg/data
    runuser -u postgres -- "$pgbin/pg_ctl" -D "$pg_data" -l "$dir/pg/server.log" -w \
      -o "-p $pg_port -k $dir/pg -c listen_addresses=127.0.0.1 -c fsync=$pg_fsync" start \
      >/dev/null || { cat "$dir/pg/server.log" >&2; exit 1; }
    runuser -u postgres -- "$pgbin/createdb" -h "$dir/pg" -p "$pg_port" baton_stats
    echo "postgresql: $("$pgbin/postgres" --version | sed 's/.*) //'), private server, fsync" \
      "$pg_fsync, otherwise default settings (synchronous_commit on, shared_buffers 128MB)"
    run "$ingest" --store "postgresql://postgres@127.0.0.1:$pg_port/baton_stats" \
      --events "$events" || failed+=(b)
    stop_postgres
    rm -rf "$dir/pg"
  fi
fi

if [[ $parts == *c* ]]; then
  echo "== (c) API latency, SQLite store of $api_events events (a day of them, ending now)"
  mkdir -p "$dir/api"
  run "$ingest" --store "sqlite://$dir/api/stats.db" --fill "$api_events" \
    --ids-out "$dir/api/ids.txt"
  start_redis api
  start_collector "sqlite://$dir/api/stats.db" "$dir/api/collector.log"
  echo "\$ $collector --redis redis://127.0.0.1:$port --store sqlite://$dir/api/stats.db" \
    "--listen 127.0.0.1:$api_port --name bench-collector &"
  run /usr/bin/python3 bench/collector_api.py --url "http://127.0.0.1:$api_port" \
    --ids "$dir/api/ids.txt" --requests "$requests" --events "$api_events" || failed+=(c)
  stop_collector
  stop_redis
  rm -rf "$dir/api"
fi

if [[ $parts == *d* ]]; then
  echo "== (d) Redis CPU per task without and with baton-collector ($tasks tasks, payload 200 B)"
  mkdir -p "$dir/drive"
  start_redis drive1
  url="redis://127.0.0.1:$port"
  BATON_REDIS_URL=$url "$BUILD_DIR/cli/baton" init >/dev/null
  echo "\$ $drive --redis $url --tasks $tasks"
  "$drive" --redis "$url" --tasks "$tasks" >"$dir/drive/none.out"
  head -n1 "$dir/drive/none.out"
  # The same Redis, the events of those tasks (and of the 100 warm-up ones) still in the stream:
  # baton-collector started once the window is open reads them all.
  echo "\$ $drive --redis $url --catch-up $((tasks + 100)) & (then baton-collector)"
  "$drive" --redis "$url" --catch-up $((tasks + 100)) >"$dir/drive/catchup.out" &
  drive_pid=$!
  for _ in $(seq 200); do grep -q '^ready' "$dir/drive/catchup.out" && break; sleep 0.05; done
  start_collector "sqlite://$dir/drive/catchup.db" "$dir/drive/catchup.log"
  wait "$drive_pid"
  stop_collector
  stop_redis
  grep -v '^ready' "$dir/drive/catchup.out"
  start_redis drive2
  url="redis://127.0.0.1:$port"
  BATON_REDIS_URL=$url "$BUILD_DIR/cli/baton" init >/dev/null
  start_collector "sqlite://$dir/drive/live.db" "$dir/drive/live.log"
  echo "\$ $drive --redis $url --tasks $tasks --wait-collector  (baton-collector running)"
  "$drive" --redis "$url" --tasks "$tasks" --wait-collector >"$dir/drive/live.out"
  stop_collector
  stop_redis
  head -n2 "$dir/drive/live.out"
  # The collector's commands: those of the catch-up window, per task, and in the live run the
  # difference of the same commands' calls with and without the collector (the worker's own reads
  # vary from run to run: an estimate).
  awk '
    FNR == 1 { file++ }
    $1 == "cmd" { calls[file, $2] = $3; usec[file, $2] = $5; if (file == 2) names[++count] = $2 }
    / redis cpu / {
      for (i = 1; i <= NF; i++) {
        if ($i == "cpu" && $(i - 1) == "redis") cpu[file] = $(i + 1)
        if ($i == "commands") cmd[file] = $(i + 1)
      }
    }
    END {
      printf "redis cpu per task: %.2f us without the collector, %.2f us with it (%+.2f us, %+.0f%%)\n",
        cpu[1], cpu[3], cpu[3] - cpu[1], 100 * (cpu[3] - cpu[1]) / cpu[1]
      printf "collector alone (catch-up window): %.2f us per task, in commands %.2f us\n", cpu[2],
        cmd[2]
      printf "collector commands per task:  catch-up calls     us   live calls (with - without)\n"
      for (i = 1; i <= count; i++) {
        n = names[i]
        printf "  %-24s %12.5f %8.3f %12.5f\n", n, calls[2, n], usec[2, n], calls[3, n] - calls[1, n]
      }
    }' "$dir/drive/none.out" "$dir/drive/catchup.out" "$dir/drive/live.out"
  rm -rf "$dir/drive"
fi

echo "run_collector: $(($(date +%s) - start)) s"
if [ ${#failed[@]} -gt 0 ]; then
  echo "run_collector: failed: ${failed[*]}" >&2
  exit 1
fi
