#!/usr/bin/env bash
# The chaos run (tests/chaos/README.md). Short by default (75 s of chaos, for CI); longer with
# CHAOS_SECONDS=600; replay a schedule with CHAOS_SEED=N. Needs the release build
# (build/release), redis-server, faketime and /usr/bin/python3 with python3-redis.
# Exit status: 0 all invariants hold, 1 one failed (details in the output and
# build/test-output/chaos/report.json), 2 the run could not be set up.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
BUILD=${BATON_BUILD_DIR:-$ROOT/build/release}
OUT=${CHAOS_OUT:-$ROOT/build/test-output/chaos}
mkdir -p "$OUT"

for bin in cli/baton daemon/batond collector/baton-collector src/libbaton.a; do
  if [ ! -e "$BUILD/$bin" ]; then
    echo "chaos: $BUILD/$bin missing: build first (cmake --build build/release)" >&2
    exit 2
  fi
done
if [ ! -e /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 ]; then
  echo "chaos: libfaketime missing (Debian package faketime, scripts/setup.sh)" >&2
  exit 2
fi

# The C++ chaos worker: a target of the normal build (tests/chaos/CMakeLists.txt).
worker="$BUILD/tests/chaos/chaos_worker"
if [ ! -x "$worker" ]; then
  echo "chaos: $worker missing: build first (cmake --build build/release)" >&2
  exit 2
fi

# The accounting must be able to fail: hand-made lost, unknown and unexplained re-run tasks.
/usr/bin/python3 "$ROOT/tests/chaos/accounting_selftest.py"

# The Python SDK's venv (made from requirements-dev.lock); its path is the last line printed.
sdk_python=$("$ROOT/sdk/python/scripts/venv.sh" | tail -n1)

export CHAOS_CPP_WORKER="$worker" CHAOS_SDK_PYTHON="$sdk_python" BATON_BUILD_DIR="$BUILD" \
  CHAOS_OUT="$OUT"
exec /usr/bin/python3 "$ROOT/tests/chaos/chaos_run.py"
