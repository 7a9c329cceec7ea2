#!/usr/bin/env bash
# Enqueue and drain rates of Baton's Python SDK next to Dramatiq and arq, in the same run:
#   bench/sdk/python/run.sh [--tasks 20000] [--concurrency 64] [--only baton,dramatiq,arq]
# Makes its venvs from the pinned lock files (PyPI), starts its own redis-server on a free
# loopback port (no persistence) with the Baton functions library, runs bench.py, stops Redis.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
PYTHON=${PYTHON:-python3}

venv() {  # venv DIR LOCK: (re)made when the lock changes
  local dir="$here/$1" lock="$here/$2" want
  want=$(sha256sum "$lock" | cut -d' ' -f1)
  if [ ! -x "$dir/bin/python" ] || [ "$(cat "$dir/.lock-sha256" 2>/dev/null)" != "$want" ]; then
    rm -rf "$dir"
    "$PYTHON" -m venv "$dir"
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps -r "$lock"
    "$dir/bin/python" -m pip check >/dev/null
    echo "$want" > "$dir/.lock-sha256"
  fi
}
venv .venv-main requirements-main.lock
venv .venv-arq requirements-arq.lock

port=$("$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
dir=$(mktemp -d)
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
  --daemonize no >"$dir/redis.log" 2>&1 &
redis_pid=$!
trap 'kill $redis_pid 2>/dev/null; wait $redis_pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
"$repo/scripts/functions.sh" | redis-cli -p "$port" -x FUNCTION LOAD REPLACE >/dev/null
"$here/.venv-main/bin/python" "$here/bench.py" --redis "redis://127.0.0.1:$port" \
  --arq-python "$here/.venv-arq/bin/python" "$@"
