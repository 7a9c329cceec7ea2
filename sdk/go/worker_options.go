package baton

import (
	"context"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"
)

// RetryPolicy is the backoff of failed attempts: after the n-th failure the task waits
// min(Base * 2^(n-1), Max) plus up to 25% jitter (computed by baton_v2_fail on the server).
type RetryPolicy struct {
	// Base is the wait after the first failure (at least 1 ms).
	Base time.Duration
	// Max caps the wait (at least Base).
	Max time.Duration
}

// DefaultRetryPolicy is Baton's: base 2 s, max 10 min (contract/task.schema.json).
var DefaultRetryPolicy = RetryPolicy{Base: defaultRetryBaseMs * time.Millisecond, Max: defaultRetryMaxMs * time.Millisecond}

// workerConfig is what NewWorker builds from its options.
type workerConfig struct {
	redisOptions   []func(*redis.Options)
	tracerProvider trace.TracerProvider
	group          string
	service        string
	concurrency    int
	fetchBatch     int
	block          time.Duration
	shutdownGrace  time.Duration
	maintenance    bool
	logger         *slog.Logger
	retry          RetryPolicy
	lease          time.Duration
}

func defaultWorkerConfig() workerConfig {
	return workerConfig{
		group:         "baton",
		service:       "worker",
		concurrency:   8,
		fetchBatch:    64,
		block:         5 * time.Second,
		shutdownGrace: 10 * time.Second,
		logger:        slog.New(discardHandler{}),
		retry:         DefaultRetryPolicy,
	}
}

type workerOption func(*workerConfig)

func (o workerOption) applyWorker(c *workerConfig) { o(c) }

// WithGroup sets the consumer group (default "baton"; not empty, no spaces or control
// characters). Every worker of a (namespace, type), in every language, shares one group: a task
// is one unit of work, acked once.
func WithGroup(group string) WorkerOption {
	return workerOption(func(c *workerConfig) { c.group = group })
}

// WithService sets the first part of the consumer name "<service>:<host>:<pid>:<random>:go"
// (default "worker"; not empty, no spaces or control characters); it shows in `baton pending`
// and in every error record.
func WithService(service string) WorkerOption {
	return workerOption(func(c *workerConfig) { c.service = service })
}

// WithConcurrency sets the default goroutine pool size of a task type: the most tasks of the
// type this worker runs (and holds leased) at once (default 8). Concurrency overrides it per type.
func WithConcurrency(n int) WorkerOption {
	return workerOption(func(c *workerConfig) { c.concurrency = n })
}

// WithFetchBatch sets the most tasks one dequeue call takes (1..1000, default 64).
func WithFetchBatch(n int) WorkerOption {
	return workerOption(func(c *workerConfig) { c.fetchBatch = n })
}

// WithBlock sets how long an idle type waits in XREAD BLOCK between dequeue calls (default 5 s):
// an idle type costs Redis two commands per block. It must be at least 1 ms.
func WithBlock(d time.Duration) WorkerOption {
	return workerOption(func(c *workerConfig) { c.block = d })
}

// WithShutdownGrace sets how long Run lets running handlers finish after its context ends
// (default 10 s; 0 cancels them at once, a negative grace is refused). Shutdown takes its grace
// from its own context instead.
func WithShutdownGrace(d time.Duration) WorkerOption {
	return workerOption(func(c *workerConfig) { c.shutdownGrace = d })
}

// WithMaintenance makes the worker also promote due delayed and retrying tasks and reclaim
// expired leases of its own task types (what batond does for every namespace). Off by default;
// turn it on where no batond runs. It sleeps until the next due time or lease deadline Redis
// reports (at most 1 s); several maintenance loops and batond may run at once safely.
func WithMaintenance(on bool) WorkerOption {
	return workerOption(func(c *workerConfig) { c.maintenance = on })
}

// WithLogger sets where the worker reports what it cannot return (a lost connection, a refused
// ack), and where a Client and a Worker report a partition count in baton:v2:partitions that is
// not an integer (they use 1). Default: nowhere (a library does not write to stderr on its own).
func WithLogger(l *slog.Logger) Option {
	return sharedOption{
		client: func(c *clientConfig) {
			if l != nil {
				c.logger = l
			}
		},
		worker: func(c *workerConfig) {
			if l != nil {
				c.logger = l
			}
		},
	}
}

// WithRetry sets the default retry backoff of every task type (default DefaultRetryPolicy).
func WithRetry(p RetryPolicy) WorkerOption {
	return workerOption(func(c *workerConfig) { c.retry = p })
}

// WithLease sets the default lease of every task type; see Lease.
func WithLease(d time.Duration) WorkerOption {
	return workerOption(func(c *workerConfig) { c.lease = d })
}

// TypeOption configures one task type of a Worker (HandleFunc's options).
type TypeOption func(*typeConfig)

type typeConfig struct {
	concurrency int
	retry       RetryPolicy
	lease       time.Duration
}

// Concurrency sets the size of this type's goroutine pool (overrides WithConcurrency).
func Concurrency(n int) TypeOption { return func(c *typeConfig) { c.concurrency = n } }

// Retry sets this type's retry backoff (overrides WithRetry).
func Retry(p RetryPolicy) TypeOption { return func(c *typeConfig) { c.retry = p } }

// Lease sets the lease of every task of this type the worker takes (1 s..24 h; 0 = the
// namespace's lease_ms setting, 30 s unless changed, read at Start). The worker extends it every
// lease/3 while the handler runs; once it ends without an extension (the process died, hung, or
// lost Redis) a reaper hands the task to another worker. Make it a few times longer than the
// longest stall a healthy worker may see: a shorter lease only brings a dead worker's tasks back
// sooner.
func Lease(d time.Duration) TypeOption { return func(c *typeConfig) { c.lease = d } }

// discardHandler is a slog handler that drops everything (slog.DiscardHandler needs Go 1.24).
type discardHandler struct{}

func (discardHandler) Enabled(context.Context, slog.Level) bool  { return false }
func (discardHandler) Handle(context.Context, slog.Record) error { return nil }
func (d discardHandler) WithAttrs([]slog.Attr) slog.Handler      { return d }
func (d discardHandler) WithGroup(string) slog.Handler           { return d }
