#!/usr/bin/env bash
# Sets everything up and runs every test: the release build (warnings as errors) with all CTest
# suites, the language-neutral protocol tests in Python, the Python, Node.js, Go and Java SDKs, the
# cross-language conformance matrix, the console's browser tests, then the ASan+UBSan build of the
# tests.
# Every test starts its own redis-server on a free loopback port.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --sdks
scripts/check_format.sh
/usr/bin/python3 scripts/check_layers.py                # module layering, hiredis only in src/broker
/usr/bin/python3 scripts/gen_protocol.py --check  # generated protocol constants are fresh
/usr/bin/python3 scripts/check_doc_snippets.py      # code in the docs equals the examples CI runs
scripts/build.sh release
(cd build/release && ctest --output-on-failure -j2 --timeout 600)
BATON_BUILD_DIR=build/release tests/install/check_install.sh
BATON_REQUIRE_BINARIES=1 /usr/bin/python3 -m unittest discover -s tests/protocol -p 'test_*.py' -v 2>&1 | tail -n 40
test "${PIPESTATUS[0]}" -eq 0
# The SDKs (each script installs its pinned dependencies, checks its generated protocol files, lints,
# type-checks and runs its tests against real redis-servers and the release binaries).
export BATON_BUILD_DIR="$PWD/build/release" BATON_REQUIRE_BINARIES=1
sdk/python/scripts/test.sh
sdk/node/scripts/test.sh
sdk/go/scripts/test.sh
sdk/java/scripts/test.sh
# The cross-language matrix: every producer against every consumer (tests/conformance/README.md),
# and its self-test (a broken driver must fail every case).
tests/conformance/run.sh
CONFORMANCE_SELFTEST=1 tests/conformance/run.sh
# The web console in a real browser: Playwright drives Debian's Chromium against real servers
# (screenshots in build/test-output/console/).
tests/console/browser/run.sh
scripts/build.sh asan
# Under the sanitizers the heavy crash-recovery run is skipped (it runs in the release suite above).
# tests/lsan.supp: a leak inside libpqxx/libpq when the PostgreSQL server dies (not ours).
lsan_suppressions="$PWD/tests/lsan.supp"
(cd build/asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  LSAN_OPTIONS=suppressions="$lsan_suppressions" \
  ctest --output-on-failure -j2 --timeout 900 -LE heavy)
