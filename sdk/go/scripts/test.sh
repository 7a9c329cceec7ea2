#!/usr/bin/env bash
# The Go SDK's whole test suite, runnable on a clean machine with Go 1.26 (the SDK needs 1.22;
# the pinned staticcheck needs 1.26) and Debian's redis-server (modules come from the Go module proxy, pinned by go.mod/go.sum):
#   1. zz_generated.go is fresh (internal/gen -check against contract/),
#   2. go vet (also of tests/conformance/drivers/go, and with Go 1.22), 3. staticcheck (pinned),
#   4. go test -race (real redis-servers on free loopback
#   ports; the C++ interop and batond cases use BATON_BUILD_DIR, default build/release; the Redis
#   Cluster test runs tests/harness/redis_cluster.py with /usr/bin/python3 + python3-redis and
#   redis-cli, about 20 s).
# Usage: sdk/go/scripts/test.sh [extra go test flags, e.g. -run Crash -v]
set -euo pipefail
cd "$(dirname "$0")/.."
STATICCHECK=honnef.co/go/tools/cmd/staticcheck@v0.8.2
MIN_GO=go1.22.12
export GOFLAGS="${GOFLAGS:-} -mod=readonly"
started=$(date +%s)

echo "== generated code is fresh"
go run ./internal/gen -check
echo "== go vet (SDK and its conformance driver)"
go vet ./...
(cd ../../tests/conformance/drivers/go && go vet ./...)
# The module promises Go 1.22: build it, tests included, with that toolchain (fetched from the Go
# module proxy as golang.org/toolchain, cached after the first run).
echo "== go vet with the oldest supported Go ($MIN_GO)"
GOTOOLCHAIN=$MIN_GO go vet ./...
echo "== staticcheck ($STATICCHECK)"
go run "$STATICCHECK" ./...
echo "== go test -race"
go test -race -count=1 -timeout 600s "$@" ./...
echo "sdk/go: all checks passed in $(( $(date +%s) - started )) s"
