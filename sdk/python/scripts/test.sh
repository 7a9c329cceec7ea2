#!/usr/bin/env bash
# The Python SDK's whole test suite, from a clean checkout (Debian 12 + python3-venv):
#   1. sdk/python/.venv with the pinned packages of requirements-dev.lock (scripts/venv.sh);
#   2. generated files fresh (scripts/gen_protocol.py --check, scripts/gen_api_doc.py --check);
#   3. ruff and mypy --strict;
#   4. pytest: real redis-server on free loopback ports; the C++ binaries of $BATON_BUILD_DIR
#      (default build/release) for the interop and batond tests (skipped when missing, unless
#      BATON_REQUIRE_BINARIES is set).
# Arguments go to pytest (e.g. scripts/test.sh -k worker -x).
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
py=$(scripts/venv.sh)
bin=$(dirname "$py")

echo "== generated files"
"$py" scripts/gen_protocol.py --check
"$py" scripts/gen_api_doc.py --check
echo "== ruff"
"$bin/ruff" check src tests scripts examples ../../bench/sdk/python ../../tests/conformance/drivers/python
echo "== mypy --strict"
"$bin/mypy"
echo "== pytest"
status=0
"$py" -m pytest "$@" || status=$?
echo "== sdk/python/scripts/test.sh: exit $status after $(( $(date +%s) - started )) s"
exit $status
