#!/usr/bin/env bash
# The cross-language conformance matrix (/work/shared/CONFORMANCE.md, DRIVERS.md, README.md here).
#   tests/conformance/run.sh [--langs cpp,cli] [--jobs 2] [--keep]
#   tests/conformance/run.sh --cluster [--cluster-replicas 0|1] ...   # on a 3-primary Redis Cluster
#   CONFORMANCE_SELFTEST=1 tests/conformance/run.sh [--cluster]     # proves the checks can fail
# Starts its own redis-server (free loopback port) and batond from BATON_BUILD_DIR (default
# build/release), prepares every driver, runs every producer x consumer cell and prints the matrix;
# the last line is "N passed, N failed". Needs Debian's /usr/bin/python3 with python3-redis
# (scripts/setup.sh installs both).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="${BATON_BUILD_DIR:-$repo/build/release}"
case "$build" in /*) ;; *) build="$repo/$build" ;; esac
# batond and baton embed the functions library: rebuild them so that they match functions/*.lua,
# which the harness loads (a no-op when the build is current; CONFORMANCE_NO_BUILD=1 skips it).
if [ "${CONFORMANCE_NO_BUILD:-0}" != "1" ] && [ -f "$build/CMakeCache.txt" ]; then
  if ! flock /tmp/baton-build.lock cmake --build "$build" --target batond baton_cli -j2 >"$build/conformance-build.log" 2>&1; then
    tail -n 30 "$build/conformance-build.log" >&2
    echo "conformance: building batond and baton failed (log: $build/conformance-build.log)" >&2
    exit 2
  fi
fi
# The payload corpus must be exactly what its generator writes (no editor newline, no normalization).
/usr/bin/python3 "$repo/contract/fixtures/payloads/generate.py" --check
cd "$here"
if [ "${CONFORMANCE_SELFTEST:-0}" = "1" ]; then
  exec /usr/bin/python3 -c 'import sys; from harness import selftest; sys.exit(selftest.main(sys.argv[1:]))' "$@"
fi
exec /usr/bin/python3 -c 'import sys; from harness import matrix; sys.exit(matrix.main(sys.argv[1:]))' "$@"
