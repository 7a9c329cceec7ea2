#!/usr/bin/env bash
# Soak run: Baton at a steady rate for a long time; reports Redis memory, latency percentiles and
# the memory of batond and the workers (bench/soak/soak.py says what it checks).
#   bench/soak/run.sh                       # CI: 60 s at 500 tasks/s, generous bounds
#   SOAK_SECONDS=1800 bench/soak/run.sh     # on demand: 30 min, tighter bounds
#   bench/soak/run.sh --rate 1000 --window 10   # any soak.py flag
# SOAK_RATE sets the rate. SOAK_PYTHON=0 leaves the Python SDK worker out (otherwise its venv is
# made by sdk/python/scripts/venv.sh, which needs PyPI the first time). BUILD_DIR (default
# build/release) selects the build; without it the release build is made first.
# Report: build/test-output/soak/report.json, process logs next to it in logs/.
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/lib/build.sh  # BUILD_DIR, or set up and build release
python_flag=()
if [ "${SOAK_PYTHON:-1}" != 0 ]; then
  python_flag=(--python "$(sdk/python/scripts/venv.sh)")
fi
exec /usr/bin/python3 bench/soak/soak.py --build-dir "$BUILD_DIR" "${python_flag[@]}" "$@"
