// Package baton is the Go SDK of Baton, a polyglot task queue on Redis Streams: a producer
// (Client) and a worker (Worker) that speak the shared protocol v2 (the Redis Functions library
// baton_v2, docs/protocol.md), so that tasks move between Go, C++, Python, Node.js and Java.
//
// Producer:
//
//	client, err := baton.NewClient(ctx, "redis://127.0.0.1:6379")
//	res, err := client.Enqueue(ctx, "shop", "send_email", map[string]string{"to": "ada@example.com"},
//		baton.MaxRetry(5), baton.Delay(time.Minute))
//
// Worker (a goroutine pool per task type; panics are recovered as failed attempts):
//
//	worker, err := baton.NewWorker("redis://127.0.0.1:6379")
//	err = worker.HandleFunc("shop", "send_email", func(ctx context.Context, t *baton.Task) error {
//		defer cleanup() // runs on return, panic and Goexit alike
//		return send(ctx, t.Payload)
//	})
//	err = worker.Run(ctx) // until ctx ends, then a graceful shutdown
//
// A Redis Cluster is named by its seed nodes; WaitReplicas makes an enqueue wait for replicas:
//
//	client, err := baton.NewClient(ctx, "redis+cluster://10.0.0.1:7000,10.0.0.2:7000", baton.WaitReplicas(1))
//
// Tasks follow contract/task.schema.json: the payload is a JSON object delivered byte for byte,
// ids are UUIDv7, created_at is Unix seconds, unknown top-level fields travel in Task.Extra. The
// Redis calls are generated from contract/protocol.json (zz_generated.go, `go generate`).
package baton
