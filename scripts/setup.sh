#!/usr/bin/env bash
# Installs every Debian package Baton's build, demo, tests and benchmarks need, and with --sdks
# checks the SDKs' toolchains. Idempotent; run as root (CI and the developer machines are root) or
# with sudo available.
set -euo pipefail
PACKAGES=(
  build-essential cmake pkg-config git clang-format
  redis-server redis-tools
  libhiredis-dev nlohmann-json3-dev libcli11-dev libspdlog-dev libfmt-dev
  libhowardhinnant-date-dev tzdata libcpp-httplib-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libpqxx-dev libsqlite3-dev postgresql libsodium-dev
  chromium
  python3 python3-redis python3-croniter python3-venv python3-hypothesis
  clang libclang-rt-14-dev faketime
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# With --sdks (scripts/test.sh), the SDKs' toolchains too. Java and Maven come from Debian when
# missing; Debian 12's Node.js (18) and Go (1.19) are older than the SDKs need, so those must be on
# the machine already (the polyglot machines have them): say which one is missing or too old,
# rather than fail deep in a test.
version_at_least() {  # version_at_least HAVE WANT: dotted numeric versions
  [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]
}
if [ "${1:-}" != "--sdks" ]; then
  echo "setup: all packages present"
  exit 0
fi
if ! command -v java >/dev/null || ! command -v mvn >/dev/null; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    openjdk-17-jdk-headless maven >/dev/null
fi
problems=()
node_v=$(node --version 2>/dev/null | sed 's/^v//') || true
[ -n "$node_v" ] && version_at_least "$node_v" 20 && command -v npm >/dev/null ||
  problems+=("Node.js >= 20 with npm (found: ${node_v:-none}; Debian 12 ships 18)")
go_v=$(go env GOVERSION 2>/dev/null | sed 's/^go//') || true
[ -n "$go_v" ] && version_at_least "$go_v" 1.26 ||
  problems+=("Go >= 1.26 (found: ${go_v:-none}; the Go SDK's pinned staticcheck needs it)")
java_v=$(java -XshowSettings:properties -version 2>&1 |
  sed -n 's/^ *java.specification.version = //p')
[ -n "$java_v" ] && version_at_least "$java_v" 17 ||
  problems+=("Java >= 17 (found: ${java_v:-none})")
if [ ${#problems[@]} -gt 0 ]; then
  printf 'setup: missing toolchain: %s\n' "${problems[@]}" >&2
  exit 1
fi
# The Debian package starts a system redis on 6379; Baton never uses it (tests and the demo start
# their own servers on free loopback ports), so leave it alone. The same for postgresql: the
# collector's *_pgtest programs start their own PostgreSQL server (tests/harness/postgres_server.h,
# initdb into a temporary directory); the Debian service is never used.
echo "setup: all packages and toolchains present (node $node_v, go $go_v, java $java_v)"
