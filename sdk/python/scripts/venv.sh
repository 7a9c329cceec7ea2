#!/usr/bin/env bash
# Makes sure sdk/python/.venv exists with exactly the packages of requirements-dev.lock (from
# PyPI) and the SDK installed in it (editable); rebuilt when the lock file changes. Prints the
# venv's python. Used by scripts/test.sh and the conformance driver's prepare.
# Exit 3 when no Python >= 3.10 is available (PYTHON overrides python3).
set -euo pipefail
cd "$(dirname "$0")/.."
SDK=$(pwd)
VENV="${BATON_SDK_VENV:-$SDK/.venv}"  # override: test another Python in another venv
PYTHON=${PYTHON:-python3}

if ! command -v "$PYTHON" >/dev/null 2>&1; then
  echo "sdk/python: $PYTHON not found (Python >= 3.10 with venv needed)" >&2
  exit 3
fi
if ! "$PYTHON" -c 'import sys, venv; sys.exit(0 if sys.version_info >= (3, 10) else 1)'; then
  echo "sdk/python: needs Python >= 3.10 with the venv module (got $("$PYTHON" -V 2>&1))" >&2
  exit 3
fi

want=$(sha256sum requirements-dev.lock | cut -d' ' -f1)
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$VENV/.lock-sha256" 2>/dev/null)" != "$want" ]; then
  echo "sdk/python: creating $VENV from requirements-dev.lock" >&2
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  # --no-deps: exactly the pinned set, nothing resolved on the fly; pip check proves it whole.
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
    -r requirements-dev.lock >&2
  "$VENV/bin/python" -m pip check >&2
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
    --no-build-isolation -e . >&2
  echo "$want" > "$VENV/.lock-sha256"
fi
echo "$VENV/bin/python"
