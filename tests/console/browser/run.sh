#!/usr/bin/env bash
# Real-browser tests of baton-console (docs/console.md): Playwright (playwright-core, pinned in
# package-lock.json) drives Debian's Chromium headless against real servers the test starts
# (redis-server, batond, baton-collector, baton-console, a Python worker).
#
#   tests/console/browser/run.sh            # BATON_BUILD_DIR defaults to <repo>/build/release
#
# Screenshots and server logs go to $BATON_TEST_OUTPUT/console (default
# <repo>/build/test-output/console). BATON_CONSOLE_WEB_DIR overrides the built front end
# (default $BATON_BUILD_DIR/console-web).
set -euo pipefail
cd "$(dirname "$0")"
REPO=$(cd ../../.. && pwd)

export BATON_BUILD_DIR="${BATON_BUILD_DIR:-$REPO/build/release}"
export BATON_TEST_OUTPUT="${BATON_TEST_OUTPUT:-$REPO/build/test-output}"
CHROMIUM="${BATON_CHROMIUM:-/usr/bin/chromium}"

if [ ! -x "$CHROMIUM" ]; then
  echo "tests/console/browser: $CHROMIUM not found; install Debian's Chromium: apt-get install -y chromium" >&2
  exit 3
fi
if ! command -v node >/dev/null 2>&1; then
  echo "tests/console/browser: node not found (Node.js >= 20 needed)" >&2
  exit 3
fi
for bin in cli/baton daemon/batond collector/baton-collector console/baton-console; do
  if [ ! -x "$BATON_BUILD_DIR/$bin" ]; then
    echo "tests/console/browser: $BATON_BUILD_DIR/$bin not found; build first (BATON_BUILD_DIR)" >&2
    exit 3
  fi
done
if ! command -v redis-server >/dev/null 2>&1; then
  echo "tests/console/browser: redis-server not found (scripts/setup.sh installs it)" >&2
  exit 3
fi

if [ ! -d node_modules ]; then
  npm ci --no-audit --no-fund
fi

rm -rf "$BATON_TEST_OUTPUT/console"
mkdir -p "$BATON_TEST_OUTPUT/console"
exec node --test --test-concurrency=1 console.test.mjs
