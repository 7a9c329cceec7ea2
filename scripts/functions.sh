#!/usr/bin/env bash
# Prints the Redis Functions library source: functions/*.lua concatenated in file-name order.
# Usage: scripts/functions.sh | redis-cli -x FUNCTION LOAD REPLACE
set -euo pipefail
cd "$(dirname "$0")/../functions"
cat $(ls *.lua | LC_ALL=C sort)
