#!/usr/bin/env bash
# Sets everything up and runs every test: the release build (warnings as errors) with all CTest
# suites, the language-neutral protocol tests in Python (with the model-based test and the Lua
# input fuzzing), the Python, Node.js, Go and Java SDKs, the cross-language conformance matrix, a
# short chaos run and a short soak, the console's browser tests, the ASan+UBSan build of the
# tests, then the parsers' fuzzers (docs/testing.md).
# Every test starts its own redis-server on a free loopback port.
set -euo pipefail
cd "$(dirname "$0")/.."
# Prints the time since the start before each part, so a slow part shows in the log.
step() { printf '== [%dm%02ds] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$1"; }
step "setup"
scripts/setup.sh --sdks
step "checks"
scripts/check_format.sh
/usr/bin/python3 scripts/check_layers.py                # module layering, hiredis only in src/broker
/usr/bin/python3 scripts/gen_protocol.py --check  # generated protocol constants are fresh
/usr/bin/python3 scripts/check_doc_snippets.py      # code in the docs equals the examples CI runs
step "release build and ctest"
scripts/build.sh release
(cd build/release && ctest --output-on-failure -j2 --timeout 600)
BATON_BUILD_DIR=build/release tests/install/check_install.sh
# The protocol tests, including the model-based test (BATON_MODEL_SECONDS, default 60) and the
# Lua input fuzzing (BATON_FUZZ_SECONDS, default 40): docs/testing.md.
step "protocol tests"
BATON_REQUIRE_BINARIES=1 /usr/bin/python3 -m unittest discover -s tests/protocol -p 'test_*.py' -v 2>&1 | tail -n 40
test "${PIPESTATUS[0]}" -eq 0
# Redis Cluster (docs/cluster.md): the cluster harness' self-test, then the protocol suite again on
# a 3-primary/3-replica cluster (the model test there for 10 s: it ran 60 s on one Redis above).
step "cluster harness and protocol tests on a cluster"
/usr/bin/python3 -m unittest discover -s tests/harness -p 'test_*.py' 2>&1 | tail -n 5
test "${PIPESTATUS[0]}" -eq 0
BATON_PROTOCOL_CLUSTER=1 BATON_REQUIRE_BINARIES=1 BATON_MODEL_SECONDS=10 \
  /usr/bin/python3 -m unittest discover -s tests/protocol -p 'test_*.py' 2>&1 | tail -n 5
test "${PIPESTATUS[0]}" -eq 0
# The SDKs (each script installs its pinned dependencies, checks its generated protocol files, lints,
# type-checks and runs its tests against real redis-servers and the release binaries).
export BATON_BUILD_DIR="$PWD/build/release" BATON_REQUIRE_BINARIES=1
step "Python SDK"
sdk/python/scripts/test.sh
step "Node.js SDK"
sdk/node/scripts/test.sh
step "Go SDK"
sdk/go/scripts/test.sh
step "Java SDK"
sdk/java/scripts/test.sh
# The cross-language matrix: every producer against every consumer (tests/conformance/README.md),
# and its self-test (a broken driver must fail every case).
step "conformance"
tests/conformance/run.sh
CONFORMANCE_SELFTEST=1 tests/conformance/run.sh
# The same matrix on a 3-primary Redis Cluster: namespaces spread over the primaries, drivers get
# redis+cluster:// URLs (tests/conformance/README.md, "The cluster run").
step "conformance on a cluster"
tests/conformance/run.sh --cluster
# Soak: 60 s at 500 tasks/s with leak, latency and accounting checks (SOAK_SECONDS=1800 for the
# long run; report in build/test-output/soak/).
step "soak"
BUILD_DIR=build/release bench/soak/run.sh
# The web console in a real browser: Playwright drives Debian's Chromium against real servers
# (screenshots in build/test-output/console/).
step "browser"
tests/console/browser/run.sh
# The chaos run (tests/chaos/README.md): 75 s of kill -9s, Redis restarts, network cuts and clock
# skew, then every task accounted for; CHAOS_SECONDS=600 tests/chaos/run.sh for the long run.
step "chaos"
tests/chaos/run.sh
step "ASan build and ctest"
scripts/build.sh asan
# Under the sanitizers the heavy crash-recovery run is skipped (it runs in the release suite above).
# tests/lsan.supp: a leak inside libpqxx/libpq when the PostgreSQL server dies (not ours).
lsan_suppressions="$PWD/tests/lsan.supp"
(cd build/asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  LSAN_OPTIONS=suppressions="$lsan_suppressions" \
  ctest --output-on-failure -j2 --timeout 900 -LE heavy)
# Fuzzers on every parser of untrusted input (tests/fuzz/README.md): clang, ASan+UBSan, 15 s per
# target (FUZZ_SECONDS=600 for a long run). Their saved crash inputs replay in ctest above.
step "fuzzers"
scripts/fuzz.sh "${FUZZ_SECONDS:-15}"
step "all passed"
