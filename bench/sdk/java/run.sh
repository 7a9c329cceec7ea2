#!/usr/bin/env bash
# Enqueue and drain rates of the Java SDK beside the C++ worker and the bare Redis Streams floor,
# in one run on one private redis-server (default settings, no persistence, loopback, free port),
# same 200-byte payload and no-op handler:
#   1. bench/sdk/java/src/Bench.java: Java enqueue (one task per call from P threads, and
#      enqueueAll of 100), Java worker drain (concurrency C), a bare Jedis XREADGROUP loop;
#   2. build/release/bench/bench_throughput on the same server: bare hiredis streams and the C++
#      worker drain (it flushes the database itself; the functions library stays).
#   bench/sdk/java/run.sh [TASKS=100000] [PRODUCERS=8] [CONCURRENCY=64]
# BATON_BUILD_DIR (default build/release) must hold bench/bench_throughput. JAVA (default: java on
# PATH) picks the JVM that runs the Java phases, e.g. JAVA=/usr/lib/jvm/temurin-25-jdk-amd64/bin/java
# for virtual-thread handlers.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
tasks="${1:-100000}"; producers="${2:-8}"; concurrency="${3:-64}"
build="${BATON_BUILD_DIR:-$repo/build/release}"
out="$here/.build"
mkdir -p "$out"
(cd "$repo/sdk/java" &&
  mvn -B -q -Dstyle.color=never -DskipTests -Dmaven.javadoc.skip=true -Dmaven.source.skip=true package &&
  mvn -B -q -Dstyle.color=never dependency:build-classpath -Dmdep.includeScope=runtime \
    -Dmdep.outputFile="$out/deps.classpath") >"$out/mvn.log" 2>&1 || { cat "$out/mvn.log" >&2; exit 1; }
cp="$repo/sdk/java/target/classes:$(cat "$out/deps.classpath")"  # no jar name: no version to keep in step
javac --release 17 -d "$out/classes" -cp "$cp" "$here/src/Bench.java"

dir=$(mktemp -d)
port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
/usr/bin/redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" >"$dir/log" 2>&1 &
redis_pid=$!
trap 'kill $redis_pid 2>/dev/null || true; wait $redis_pid 2>/dev/null || true; rm -rf "$dir"' EXIT
for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
echo "redis $(/usr/bin/redis-server --version | sed 's/.* v=\([^ ]*\).*/\1/'), $(nproc) cores"
"${JAVA:-java}" -cp "$out/classes:$cp" Bench "redis://127.0.0.1:$port" "$repo" "$tasks" "$producers" "$concurrency" 2>"$dir/java.err" \
  || { cat "$dir/java.err" >&2; exit 1; }
echo "-- C++ (bench_throughput, same server):"
"$build/bench/bench_throughput" --redis "redis://127.0.0.1:$port" --tasks "$tasks" --concurrency "$concurrency" \
  --latency-tasks 200 | grep -E "^(tasks=|bare streams|baton  )"
