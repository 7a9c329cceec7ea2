#!/usr/bin/env bash
# Fails when a tracked C++ file differs from clang-format's output (.clang-format: Google, 100 cols).
set -euo pipefail
cd "$(dirname "$0")/.."
# *_gen.h files are generated (scripts/gen_protocol.py) and checked for staleness instead.
bad=$(git ls-files '*.cpp' '*.h' | grep -v '_gen\.h$' | xargs clang-format --dry-run 2>&1 | grep -oE '^[^:]+\.(cpp|h)' | sort -u || true)
if [ -n "$bad" ]; then
  echo "clang-format: these files need 'clang-format -i':" >&2
  echo "$bad" >&2
  exit 1
fi
echo "clang-format: all C++ files formatted"
