#!/usr/bin/env bash
# Configures and builds one flavour into build/<flavour>. Incremental.
#   scripts/build.sh release    warnings as errors (what CI and the demo use)
#   scripts/build.sh asan       ASan + UBSan, warnings as errors
set -euo pipefail
cd "$(dirname "$0")/.."
flavour=${1:-release}
case "$flavour" in
  release) flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DBATON_WERROR=ON) ;;
  asan) flags=(-DCMAKE_BUILD_TYPE=Debug -DBATON_WERROR=ON -DBATON_SANITIZE=ON -DBATON_BUILD_BENCH=OFF) ;;
  *) echo "usage: $0 [release|asan]" >&2; exit 2 ;;
esac
if [ ! -f "build/$flavour/CMakeCache.txt" ]; then
  cmake -S . -B "build/$flavour" "${flags[@]}" >/dev/null
fi
cmake --build "build/$flavour" -j"$(nproc)"
