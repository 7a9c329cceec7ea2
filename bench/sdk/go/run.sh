#!/usr/bin/env bash
# Enqueue and drain rates of the Go SDK beside Asynq (github.com/hibiken/asynq, pinned by go.sum),
# in one run, same 200-byte payload, no-op handler, same concurrency; each system on a fresh
# private redis-server (default settings, loopback, free port). Figures go to sdk/go/README.md.
#   bench/sdk/go/run.sh [-tasks 100000] [-concurrency 64] [-producers 8]
set -euo pipefail
cd "$(dirname "$0")"
GOFLAGS="${GOFLAGS:-} -mod=readonly" go build -o "${TMPDIR:-/tmp}/baton-go-bench" .
echo "go: $(go version | cut -d' ' -f3), redis: $(/usr/bin/redis-server --version | sed 's/.* v=\([^ ]*\).*/\1/'), $(nproc) cores"
exec "${TMPDIR:-/tmp}/baton-go-bench" -repo ../../.. "$@"
