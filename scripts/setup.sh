#!/usr/bin/env bash
# Installs every Debian package Baton's build, demo, tests and benchmarks need. Idempotent; run as
# root (CI and the developer machines are root) or with sudo available.
set -euo pipefail
PACKAGES=(
  build-essential cmake pkg-config git clang-format
  redis-server redis-tools
  libhiredis-dev nlohmann-json3-dev libcli11-dev libspdlog-dev libfmt-dev
  libhowardhinnant-date-dev tzdata libcpp-httplib-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-redis python3-croniter python3-venv
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
# The Debian package starts a system redis on 6379; Baton never uses it (tests and the demo start
# their own servers on free loopback ports), so leave it alone.
echo "setup: all packages present"
