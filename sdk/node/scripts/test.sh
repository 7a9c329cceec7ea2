#!/usr/bin/env bash
# The Node.js SDK's whole test suite, from a clean checkout (CI: Debian 12 with node >= 20, npm
# and /usr/bin/redis-server):
#   1. npm ci (pinned by package-lock.json; skipped when node_modules matches the lock);
#   2. generated files fresh (scripts/gen-protocol.mjs --check against contract/);
#   3. tsc --noEmit (sources, tests, examples), eslint, TypeDoc (API docs build without warnings);
#   4. build (dist/esm + dist/cjs) and the tests (node:test) against real redis-servers.
# BATON_BUILD_DIR (default build/release) gives the C++ build for the interop tests; without it
# they are reported as skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
step() { printf '== %s\n' "$*"; }

step "npm ci"
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
step "generated files"
node scripts/gen-protocol.mjs --check
step "typecheck"
npx tsc -p tsconfig.json --noEmit
npx tsc -p tsconfig.test.json --noEmit
step "lint"
npx eslint .
step "api docs"
npx typedoc --logLevel Warn
step "build"
node scripts/build.mjs
rm -rf build-test
npx tsc -p tsconfig.test.json
step "tests"
# Test files run two at a time (each starts its own redis-server; most of their time is waiting).
# --test-force-exit: a file whose tests all finished ends even if a handle is left open (once in
# CI, cluster.test.js stayed alive after its last test; its after() hook now names what is open).
node --test --test-concurrency=2 --test-force-exit build-test/test/*.test.js
echo "sdk/node tests took $(( $(date +%s) - start )) s"
