#!/usr/bin/env bash
# Proves the installed CMake package: configures and builds Baton, installs it into a temporary
# prefix, then configures, builds and runs tests/install/consumer against it
# (find_package(baton CONFIG REQUIRED) + target_link_libraries(app baton::baton)).
#   tests/install/check_install.sh                      library, headers and CMake package only
#                                                       (component baton_development)
#   BATON_INSTALL_ALL=1 tests/install/check_install.sh  everything, as `cmake --install` does
#   BATON_BUILD_DIR=build/release tests/install/check_install.sh
#                                                       installs everything from that finished build
#                                                       instead of building again (scripts/test.sh)
# Exits non-zero on any failure. BATON_JOBS sets the build parallelism (default 2).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/baton-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
jobs=${BATON_JOBS:-2}

if [ -n "${BATON_BUILD_DIR:-}" ]; then
  echo "check_install: installing $BATON_BUILD_DIR into $work/prefix"
  cmake --install "$BATON_BUILD_DIR" --prefix "$work/prefix" >/dev/null
  BATON_INSTALL_ALL=1
else
echo "check_install: building Baton in $work/build"
cmake -S "$root" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DBATON_BUILD_TESTS=OFF \
  -DBATON_BUILD_BENCH=OFF -DCMAKE_INSTALL_PREFIX="$work/prefix" >"$work/configure.log" ||
  { cat "$work/configure.log"; exit 1; }
if [ "${BATON_INSTALL_ALL:-0}" = 1 ]; then
  cmake --build "$work/build" -j"$jobs"
  cmake --install "$work/build" >/dev/null
else
  cmake --build "$work/build" -j"$jobs" --target baton
  cmake --install "$work/build" --component baton_development >/dev/null
fi
fi
test -f "$work/prefix/include/baton/client.h"
test -f "$work/prefix/include/baton/cron.h"
test -f "$work/prefix/lib/cmake/baton/batonConfig.cmake" ||
  test -f "$work/prefix/lib64/cmake/baton/batonConfig.cmake" ||
  ls "$work"/prefix/lib/*/cmake/baton/batonConfig.cmake >/dev/null

echo "check_install: building the consumer project against $work/prefix"
cmake -S "$root/tests/install/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" \
  >"$work/consumer-configure.log" || { cat "$work/consumer-configure.log"; exit 1; }
cmake --build "$work/consumer" -j"$jobs"
if [ "${BATON_INSTALL_ALL:-0}" = 1 ]; then
  test -x "$work/prefix/bin/batond"
  test -x "$work/prefix/bin/baton"
  test -x "$work/prefix/bin/baton-collector"
  test -x "$work/prefix/bin/baton-console"
  test -f "$work/prefix/share/baton/console-web/index.html"
fi
out=$("$work/consumer/baton_consumer")
echo "$out"
grep -q '^ok ' <<<"$out"
echo "check_install: OK"
