package baton

// zz_generated.go comes from contract/protocol.json, contract/errors.json and
// contract/task.schema.json; `go run ./internal/gen -check` fails when it is stale.
//go:generate go run ./internal/gen -contract ../../contract -out zz_generated.go
