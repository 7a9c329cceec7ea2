module github.com/baton-dev/baton/tests/conformance/drivers/go

go 1.22.0

require github.com/baton-dev/baton/sdk/go v0.0.0

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	github.com/redis/go-redis/v9 v9.17.3 // indirect
	go.opentelemetry.io/otel v1.35.0 // indirect
	go.opentelemetry.io/otel/trace v1.35.0 // indirect
)

replace github.com/baton-dev/baton/sdk/go => ../../../../sdk/go
