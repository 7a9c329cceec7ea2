package baton

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"
)

// Handler runs tasks of one type. ProcessTask returns nil for success; an error (or a panic) is
// a failed attempt, retried with backoff until the task has run 1 + MaxRetry times, then
// dead-lettered with the error and a stack. Errors matching ErrNonRetryable dead-letter at once.
// ctx ends at the task's execution_timeout (context.Cause: ErrExecutionTimeout), when the lease
// was lost (ErrLeaseLost) or when Shutdown's grace ended (ErrWorkerStopping): long handlers
// watch ctx.Done() and return. Handlers run concurrently on the type's goroutine pool.
//
// Cleanup belongs in defer statements: they run on every way out of a handler, a return, a
// panic the worker recovers, and runtime.Goexit. A handler the worker stopped waiting for (past
// its deadline or Shutdown's grace) keeps running until it returns, so its defers still run.
type Handler interface {
	ProcessTask(ctx context.Context, t *Task) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, t *Task) error

// ProcessTask calls f(ctx, t).
func (f HandlerFunc) ProcessTask(ctx context.Context, t *Task) error { return f(ctx, t) }

// Stats counts outcomes since Start, as Redis confirmed them.
type Stats struct {
	// Succeeded counts acks recorded (done, or stale_done after a lost lease).
	Succeeded uint64
	// Failed counts failures recorded (went to retry or dead), malformed included.
	Failed uint64
	// Dead counts the failures that went to the dead-letter queue.
	Dead uint64
	// Malformed counts delivered entries this worker could not decode.
	Malformed uint64
}

// Worker runs handlers for (namespace, task type) pairs: register them with Handle or
// HandleFunc, then Start (or Run). Each type has its own fetcher goroutine, goroutine pool and
// blocking connection, so a slow or backlogged type never delays another. In a namespace spread
// over P partitions (docs/cluster.md, "Partitions") each type has all that in every partition
// (so at most P x concurrency tasks of the type at once); the worker reads P again every 5 s and
// serves new partitions without a restart. At-least-once: a task
// is acked only after its handler returned nil; every task the worker takes is leased to it in
// Redis and the lease is extended while the handler runs.
//
// Register before Start; Stats, Consumer and Shutdown are safe from any goroutine.
type Worker struct {
	url      string
	cfg      workerConfig
	consumer string
	regs     []*registration
	byQueue  map[[2]string]bool

	runMu   sync.Mutex // guards runners, which the partition watcher extends
	runners []*runner  // one per (registration, partition served)
	watch   *partitionWatcher

	mu       sync.Mutex
	started  bool
	stopped  bool
	stopDone chan struct{}
	stopErr  error

	rdb     redis.UniversalClient // *redis.Client, or *redis.ClusterClient (redis+cluster://)
	baseCtx context.Context
	tracer  trace.Tracer
	keeper  *leaseKeeper
	maint   *maintenance
	stats   struct{ succeeded, failed, dead, malformed atomic.Uint64 }
}

// NewWorker prepares a worker for redisURL (see NewClient for the forms). It does not connect:
// Start does. Errors: invalid_argument for a bad URL or option.
func NewWorker(redisURL string, opts ...WorkerOption) (*Worker, error) {
	cfg := defaultWorkerConfig()
	for _, o := range opts {
		o.applyWorker(&cfg)
	}
	if strings.HasPrefix(redisURL, clusterScheme) {
		if _, err := parseClusterURL(redisURL); err != nil {
			err.Op = "worker"
			return nil, err
		}
	} else if _, err := redis.ParseURL(redisURL); err != nil {
		return nil, &Error{Op: "worker", Code: CodeInvalidArgument, Field: "redis_url", Message: err.Error(), Err: err}
	}
	switch {
	case cfg.concurrency < 1:
		return nil, workerInvalid("concurrency", "must be at least 1 (got "+strconv.Itoa(cfg.concurrency)+")")
	case cfg.fetchBatch < 1 || cfg.fetchBatch > 1000:
		return nil, workerInvalid("fetch_batch", "must be 1..1000 (got "+strconv.Itoa(cfg.fetchBatch)+")")
	case cfg.block < time.Millisecond:
		return nil, workerInvalid("block", "must be at least 1ms (got "+cfg.block.String()+")")
	case cfg.shutdownGrace < 0:
		return nil, workerInvalid("shutdown_grace", "must not be negative (got "+cfg.shutdownGrace.String()+")")
	}
	if err := checkWorkerName("group", cfg.group); err != nil {
		return nil, err
	}
	if err := checkWorkerName("service", cfg.service); err != nil {
		return nil, err
	}
	if err := checkRetry(cfg.retry); err != nil {
		return nil, err
	}
	if err := checkLease(cfg.lease); err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	var suffix [3]byte
	_, _ = rand.Read(suffix[:])
	return &Worker{
		url:      redisURL,
		cfg:      cfg,
		consumer: cfg.service + ":" + host + ":" + strconv.Itoa(os.Getpid()) + ":" + hex.EncodeToString(suffix[:]) + ":go",
		byQueue:  map[[2]string]bool{},
	}, nil
}

func workerInvalid(field, rule string) *Error {
	return &Error{Op: "worker", Code: CodeInvalidArgument, Field: field, Message: rule}
}

// checkWorkerName refuses an empty group or service name, or one with spaces or control characters
// (they would garble the consumer name in `baton pending` and the error records).
func checkWorkerName(field, name string) *Error {
	if name == "" {
		return workerInvalid(field, "must not be empty")
	}
	for _, c := range name {
		if unicode.IsSpace(c) || unicode.IsControl(c) {
			return workerInvalid(field, "must not contain spaces or control characters (got "+strconv.Quote(name)+")")
		}
	}
	return nil
}

func checkRetry(p RetryPolicy) *Error {
	if p.Base < time.Millisecond || p.Max < p.Base {
		return workerInvalid("retry", "base must be at least 1ms and max at least base (got "+
			p.Base.String()+", "+p.Max.String()+")")
	}
	return nil
}

func checkLease(d time.Duration) *Error {
	if d != 0 && (d < time.Second || d > 24*time.Hour) {
		return workerInvalid("lease", "must be 0 (the namespace's lease_ms) or 1s..24h (got "+d.String()+")")
	}
	return nil
}

// Consumer is this worker's consumer name, "<service>:<host>:<pid>:<6 hex>:go".
func (w *Worker) Consumer() string { return w.consumer }

// HandleFunc registers f for tasks of (ns, taskType); see Handle.
func (w *Worker) HandleFunc(ns, taskType string, f func(ctx context.Context, t *Task) error, opts ...TypeOption) error {
	if f == nil {
		return workerInvalid("handler", "must not be nil")
	}
	return w.Handle(ns, taskType, HandlerFunc(f), opts...)
}

// Handle registers h for tasks of (ns, taskType), with its own goroutine pool. Errors:
// invalid_argument (a bad name or option), already_exists (the pair is registered), conflict
// (the worker already started).
func (w *Worker) Handle(ns, taskType string, h Handler, opts ...TypeOption) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return &Error{Op: "handle", Code: CodeConflict, Message: "the worker already started"}
	}
	if err := checkName("namespace", ns); err != nil {
		err.Op = "handle"
		return err
	}
	if err := checkName("task_type", taskType); err != nil {
		err.Op = "handle"
		return err
	}
	if h == nil {
		return workerInvalid("handler", "must not be nil")
	}
	tc := typeConfig{concurrency: w.cfg.concurrency, retry: w.cfg.retry, lease: w.cfg.lease}
	for _, o := range opts {
		o(&tc)
	}
	if tc.concurrency < 1 {
		return workerInvalid("concurrency", "must be at least 1 (got "+strconv.Itoa(tc.concurrency)+")")
	}
	if err := checkRetry(tc.retry); err != nil {
		return err
	}
	if err := checkLease(tc.lease); err != nil {
		return err
	}
	q := [2]string{ns, taskType}
	if w.byQueue[q] {
		return &Error{Op: "handle", Code: CodeAlreadyExists, Message: "a handler for (" + ns + ", " + taskType + ") is registered"}
	}
	w.byQueue[q] = true
	w.regs = append(w.regs, &registration{ns: ns, typ: taskType, handler: h, tc: tc})
	return nil
}

// registration is one Handle call.
type registration struct {
	ns, typ string
	handler Handler
	tc      typeConfig
}

// allRunners is a snapshot of the runners.
func (w *Worker) allRunners() []*runner {
	w.runMu.Lock()
	defer w.runMu.Unlock()
	return append([]*runner(nil), w.runners...)
}

// Start connects, checks the functions library version, adds the namespaces to
// baton:v2:namespaces (a convenience for tools), reads the namespace lease_ms for types without
// a Lease, and starts the goroutines; it returns at once. Handler contexts carry ctx's values but
// not its cancellation (stop with Shutdown). Errors: version_mismatch, unavailable,
// invalid_argument (no handler), conflict (started twice). Once started, the worker reconnects by
// itself (100 ms doubling to 5 s), checking the version again, and keeps unsent acks until they
// are sent.
func (w *Worker) Start(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return &Error{Op: "start", Code: CodeConflict, Message: "the worker already started"}
	}
	if len(w.regs) == 0 {
		return workerInvalid("handlers", "register at least one handler before Start")
	}
	// Each runner holds up to two connections (its blocking XREAD's and its fetcher's round
	// trips); the pool opens them on demand, so room for every partition a namespace may grow to
	// costs nothing until it is used.
	rdb, err := newRedis(w.url, w.cfg.redisOptions, 2*len(w.regs)*MaxPartitions+2)
	if err != nil {
		return err
	}
	if err := pingAll(ctx, rdb); err != nil {
		_ = rdb.Close()
		return fromRedis("start", err)
	}
	w.rdb = rdb
	w.watch = newPartitionWatcher(w)
	counts, err := readPartitionCounts(ctx, rdb, w.watch.bad, w.watch.namespaces)
	if err != nil {
		_ = rdb.Close()
		return fromRedis("start", err)
	}
	runners, err := w.newRunners(ctx, w.watch.unserved(counts))
	if err != nil {
		_ = rdb.Close()
		return withOp("start", err)
	}
	w.watch.served(counts)
	w.runners = runners
	namespaces := map[string]bool{}
	for _, r := range w.regs {
		if !namespaces[r.ns] {
			namespaces[r.ns] = true
			_ = rdb.SAdd(ctx, globalKeyNamespaces, r.ns).Err()
		}
	}
	w.baseCtx = context.WithoutCancel(ctx)
	if w.cfg.tracerProvider != nil {
		w.tracer = w.cfg.tracerProvider.Tracer(instrumentationName)
	}
	if w.cfg.maintenance {
		w.maint = startMaintenance(w)
	}
	for _, r := range w.runners {
		r.start()
	}
	w.keeper = startLeaseKeeper(w)
	go w.watch.loop()
	w.started = true
	return nil
}

// Run starts the worker, blocks until ctx ends, then shuts down gracefully, giving running
// handlers WithShutdownGrace (10 s by default) to finish. It returns Start's error, or
// Shutdown's.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	grace, cancel := context.WithTimeout(context.Background(), w.cfg.shutdownGrace)
	defer cancel()
	return w.Shutdown(grace)
}

// Shutdown stops gracefully: no new tasks are fetched, running handlers may finish until ctx
// ends, and their outcomes are recorded. Handlers still running then are cancelled
// (ErrWorkerStopping) and left to the lease: another worker takes their tasks once it expires.
// It returns ctx.Err() in that case, nil otherwise. With Redis unreachable it may return a few
// seconds after ctx ends: it waits for the calls in flight, which end at go-redis' dial and read
// timeouts. Safe to call more than once and from any goroutine; a second call waits for the
// first.
func (w *Worker) Shutdown(ctx context.Context) error {
	w.mu.Lock()
	if !w.started {
		w.mu.Unlock()
		return nil
	}
	if w.stopped {
		done := w.stopDone
		w.mu.Unlock()
		<-done
		return w.stopErr
	}
	w.stopped = true
	w.stopDone = make(chan struct{})
	w.mu.Unlock()

	w.watch.close() // no runner is added from here on
	runners := w.allRunners()
	for _, r := range runners {
		r.beginStop()
	}
	var err error
	if !waitFetchers(runners, ctx.Done()) {
		err = ctx.Err()
		for _, r := range runners {
			r.abandon()
		}
		waitFetchers(runners, nil)
	}
	w.keeper.close()
	if w.maint != nil {
		w.maint.close()
	}
	for _, r := range runners {
		<-r.waiter.done // its connection goes back to the pool before the pool closes
	}
	_ = w.rdb.Close()
	w.stopErr = err
	close(w.stopDone)
	return err
}

// waitFetchers waits for every fetcher to exit; false when cancel closed first.
func waitFetchers(runners []*runner, cancel <-chan struct{}) bool {
	for _, r := range runners {
		select {
		case <-r.fetcherDone:
		case <-cancel:
			return false
		}
	}
	return true
}

// Stats returns the outcome counters.
func (w *Worker) Stats() Stats {
	return Stats{
		Succeeded: w.stats.succeeded.Load(),
		Failed:    w.stats.failed.Load(),
		Dead:      w.stats.dead.Load(),
		Malformed: w.stats.malformed.Load(),
	}
}
