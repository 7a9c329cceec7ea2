package baton

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// runner is everything a Worker runs for one (namespace, task type) in one partition of the
// namespace (docs/cluster.md, "Partitions"; partition 0 is the namespace itself): a fetcher goroutine, a
// fixed pool of handler goroutines and a blockWaiter. The fetcher asks baton_v2_dequeue for at
// most as many tasks as the pool has idle goroutines (a fetched task is leased to this consumer,
// so it never fetches ahead), and sends the finished tasks' baton_v2_ack (batched) and
// baton_v2_fail calls in the same pipeline as its next dequeue: one round trip carries both.
// Types never share goroutines, so one type's backlog or slowness cannot delay another.
type runner struct {
	w           *Worker
	ns, typ     string  // the registered namespace (what handlers see) and type
	storage     string  // the partition's storage namespace: ns, or "ns:p"
	keys        *keySet // of storage
	handler     Handler
	name        string // the handler, for error records
	concurrency int
	retry       RetryPolicy
	lease       time.Duration // as configured (0 = namespace setting)
	leaseMs     int64         // resolved by Start
	waiter      *blockWaiter
	rng         *rand.Rand // fetcher goroutine only (jitter)

	mu          sync.Mutex
	inFlight    int // delivered and not yet released (queued in jobs or running)
	completions []completion
	running     map[string]*attemptState // by stream id
	stopping    bool
	abandoned   bool

	wake        chan struct{} // cap 1: "state changed", for the fetcher
	abandonCh   chan struct{} // closed by abandon()
	jobs        chan *delivery
	fetcherDone chan struct{}
}

// attemptState is one running attempt, guarded by runner.mu.
type attemptState struct {
	id, sid     string
	deadline    time.Time // zero: no execution_timeout
	heartbeat   bool      // the lease keeper extends it
	reported    bool      // its outcome was handed to the fetcher (or dropped)
	abandoned   bool      // Shutdown gave up on it: its outcome is not sent, the lease decides
	cancelCause context.CancelCauseFunc
}

// completion is a finished attempt waiting for its baton_v2_ack (kind "") or baton_v2_fail.
type completion struct {
	id, sid              string
	kind, message, stack string
}

// acksPerCall is the most tasks one baton_v2_ack call carries.
const acksPerCall = 256

func newRunner(w *Worker, ns string, partition int, typ string, h Handler, tc typeConfig) *runner {
	storage := StorageNamespace(ns, partition)
	return &runner{
		w: w, ns: ns, typ: typ, storage: storage, keys: newKeySet(storage, typ), handler: h, name: handlerName(h),
		concurrency: tc.concurrency, retry: tc.retry, lease: tc.lease,
		rng:       rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
		running:   map[string]*attemptState{},
		wake:      make(chan struct{}, 1),
		abandonCh: make(chan struct{}),
		jobs:      make(chan *delivery, tc.concurrency),
	}
}

// start launches the goroutines; rdb is connected and leaseMs resolved.
func (r *runner) start() {
	r.waiter = newBlockWaiter(r.w.rdb, r.keys.stream, r.w.cfg.block)
	r.fetcherDone = make(chan struct{})
	go r.waiter.loop()
	for i := 0; i < r.concurrency; i++ {
		go r.poolLoop()
	}
	go r.fetchLoop()
}

func (r *runner) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// beginStop stops fetching; finished tasks are still acked, running ones may finish.
func (r *runner) beginStop() {
	r.mu.Lock()
	r.stopping = true
	r.mu.Unlock()
	r.signal()
}

// abandon tells every running handler to stop (ErrWorkerStopping) and leaves their tasks to
// the lease; the fetcher sends what has finished and exits.
func (r *runner) abandon() {
	r.mu.Lock()
	if r.abandoned {
		r.mu.Unlock()
		return
	}
	r.stopping, r.abandoned = true, true
	for _, st := range r.running {
		st.abandoned = true
		st.heartbeat = false
		st.cancelCause(ErrWorkerStopping)
	}
	close(r.abandonCh)
	r.mu.Unlock()
	r.signal()
}

// sleep waits d, or less when the runner is abandoned.
func (r *runner) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.abandonCh:
	}
}

func (r *runner) logError(msg string, err error) {
	if r.storage != r.ns {
		r.w.cfg.logger.Warn("baton worker: "+msg, "namespace", r.ns, "partition", r.storage, "type", r.typ, "error", err)
		return
	}
	r.w.cfg.logger.Warn("baton worker: "+msg, "namespace", r.ns, "type", r.typ, "error", err)
}

// poolLoop is one handler goroutine. If a handler ends it with runtime.Goexit, a replacement
// starts, so the pool keeps its size.
func (r *runner) poolLoop() {
	clean := false
	defer func() {
		if !clean {
			go r.poolLoop()
		}
	}()
	for d := range r.jobs {
		r.runOne(d)
	}
	clean = true
}

// runOne runs one delivered task and hands its outcome to the fetcher.
func (r *runner) runOne(d *delivery) {
	// The context exists before the attempt is registered, so that a lease lost (or an
	// abandon) from then on reaches the handler.
	ctx, cancel := context.WithCancelCause(r.w.baseCtx)
	defer cancel(nil)
	st := &attemptState{id: d.id, sid: d.sid, heartbeat: true, cancelCause: cancel}
	r.mu.Lock()
	if r.abandoned { // delivered but never started: left to the lease
		r.inFlight--
		r.mu.Unlock()
		r.signal()
		return
	}
	r.running[d.sid] = st
	r.mu.Unlock()
	defer r.release(st)

	t, derr := d.task(r.ns, r.typ)
	if derr != nil {
		// Not a valid task (e.g. the payload is not a JSON object): dead-letter it as malformed,
		// never crash and never drop it.
		r.w.stats.malformed.Add(1)
		r.report(st, outcome{kind: kindMalformed, message: "malformed task: " + derr.Error()})
		return
	}
	hctx := ctx
	var deadline time.Time
	if t.ExecutionTimeout > 0 {
		deadline = time.Now().Add(t.Timeout())
		var cancelT context.CancelFunc
		hctx, cancelT = context.WithDeadlineCause(ctx, deadline, ErrExecutionTimeout)
		defer cancelT()
	}
	r.mu.Lock() // the lease keeper reads the attempt's state
	st.deadline = deadline
	r.mu.Unlock()
	hctx, endSpan := handlerContext(hctx, r.w.tracer, t)
	report := func(out outcome) {
		endSpan(out.err)
		r.report(st, out)
	}
	if deadline.IsZero() {
		invoke(hctx, r.handler, r.name, t, report)
		return
	}
	runWithDeadline(hctx, r.handler, r.name, t, deadline, r.abandonCh, report)
}

// report hands an attempt's outcome to the fetcher (once; not at all when abandoned).
func (r *runner) report(st *attemptState, out outcome) {
	r.mu.Lock()
	if st.reported {
		r.mu.Unlock()
		return
	}
	st.reported = true
	st.heartbeat = false
	if !st.abandoned {
		c := completion{id: st.id, sid: st.sid, kind: out.kind}
		if out.kind != "" {
			c.message = clip(out.message, maxErrorBytes)
			c.stack = clip(out.stack, maxStackBytes)
		}
		r.completions = append(r.completions, c)
	}
	r.mu.Unlock()
	r.signal()
}

// release frees the attempt's pool slot.
func (r *runner) release(st *attemptState) {
	r.mu.Lock()
	delete(r.running, st.sid)
	r.inFlight--
	r.mu.Unlock()
	r.signal()
}

// fetchLoop is the runner's only user of the dequeue/ack/fail calls.
func (r *runner) fetchLoop() {
	defer r.exitFetcher()
	lastID := ""
	needFetch := true // the stream may have entries: dequeue before blocking
	waiting := false  // the blockWaiter has a request out
	bo := newBackoff(100*time.Millisecond, 5*time.Second)
	for {
		r.mu.Lock()
		batch := r.completions
		r.completions = nil
		stopping, abandoned, inFlight := r.stopping, r.abandoned, r.inFlight
		r.mu.Unlock()
		if len(batch) == 0 && (abandoned || (stopping && inFlight == 0)) {
			if waiting {
				r.drainWaiter()
			}
			return
		}
		count := 0
		if !stopping && needFetch && inFlight < r.concurrency {
			count = min(r.concurrency-inFlight, r.w.cfg.fetchBatch)
		}
		if len(batch) == 0 && count == 0 {
			if !stopping && !needFetch && !waiting && inFlight < r.concurrency {
				r.waiter.req <- lastID
				waiting = true
			}
			var waiterRes chan error
			if waiting {
				waiterRes = r.waiter.res
			}
			select {
			case <-r.wake:
			case err := <-waiterRes:
				waiting, needFetch = false, true
				if err != nil {
					r.logError("XREAD", err)
					r.sleep(bo.Next())
				}
			}
			continue
		}
		delivered, last, redo, err := r.exchange(batch, count)
		if err != nil {
			r.logError("round trip", err)
			if abandoned { // Redis is unreachable and the worker gave up: the leases decide
				if waiting {
					r.drainWaiter()
				}
				return
			}
			// Sent again after the reconnect (or once Redis serves them): an ack or fail that
			// did run answers gone / stale.
			r.mu.Lock()
			r.completions = append(redo, r.completions...)
			r.mu.Unlock()
			r.sleep(bo.Next())
			continue
		}
		bo.Reset()
		if count > 0 && len(delivered) == 0 {
			needFetch, lastID = false, last
		}
		if len(delivered) > 0 {
			r.mu.Lock()
			r.inFlight += len(delivered)
			r.mu.Unlock()
			for _, d := range delivered {
				r.jobs <- d
			}
		}
	}
}

// drainWaiter ends the blockWaiter's outstanding XREAD (CLIENT UNBLOCK) and takes its answer.
func (r *runner) drainWaiter() {
	for {
		r.waiter.unblock()
		select {
		case <-r.waiter.res:
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (r *runner) exitFetcher() {
	close(r.waiter.req)
	close(r.jobs)
	close(r.fetcherDone)
}

// exchange sends the completions (acks batched, then one fail each) and, when count > 0, a
// dequeue, in one pipeline. It returns the delivered tasks and, when none came, the id to block
// after. On an error, redo is what the caller sends again: every completion when the connection
// failed (or the version check on reconnecting), nothing of the answer being known; else those
// whose ack or fail Redis refused with an error reply (e.g. "Function not found" while
// 'baton init' reloads the library).
func (r *runner) exchange(batch []completion, count int) (delivered []*delivery, last string, redo []completion, err error) {
	ctx := context.Background()
	cfg := &r.w.cfg
	consumer := r.w.consumer
	pipe := r.w.rdb.Pipeline()
	var ackCmds []*redis.Cmd
	var acked [][]completion // the completions of each ack call
	var failCmds []*redis.Cmd
	var failed []completion
	var acks []ackItem
	var ackedNow []completion
	flushAcks := func() {
		if len(acks) > 0 {
			ackCmds = append(ackCmds, fcallAck(ctx, pipe, r.keys, cfg.group, consumer, len(acks), acks))
			acked = append(acked, ackedNow)
			acks, ackedNow = nil, nil
		}
	}
	for _, c := range batch {
		if c.kind != "" {
			continue
		}
		acks = append(acks, ackItem{ID: c.id, SID: c.sid})
		ackedNow = append(ackedNow, c)
		if len(acks) == acksPerCall {
			flushAcks()
		}
	}
	flushAcks()
	for _, c := range batch {
		if c.kind == "" {
			continue
		}
		jitter := strconv.FormatFloat(r.rng.Float64(), 'f', 6, 64)
		if jitter == "1.000000" {
			jitter = "0.999999"
		}
		failCmds = append(failCmds, fcallFail(ctx, pipe, r.keys, cfg.group, consumer, c.id, c.sid,
			c.kind, c.message, c.stack, r.retry.Base.Milliseconds(), r.retry.Max.Milliseconds(), jitter))
		failed = append(failed, c)
	}
	var deq *redis.Cmd
	if count > 0 {
		deq = fcallDequeue(ctx, pipe, r.keys, cfg.group, consumer, count, r.leaseMs)
	}
	if err := execPipeline(ctx, pipe); err != nil {
		return nil, "", batch, err
	}
	redo, err = r.countAcks(ackCmds, acked)
	redoFails, failErr := r.countFails(failCmds, failed)
	redo = append(redo, redoFails...)
	if err == nil {
		err = failErr
	}
	if deq != nil {
		if derr := deq.Err(); derr != nil && err == nil {
			err = fromRedis("dequeue", derr)
		}
	}
	if err != nil {
		// E.g. the library is being reloaded: wait with a growing backoff, do not spin.
		return nil, "", redo, err
	}
	if deq == nil {
		return nil, "", nil, nil
	}
	delivered, last, err = parseDequeue(deq.Val())
	return delivered, last, nil, err
}

// countAcks counts the confirmed acks; an ack call refused with an error reply returns its
// completions, to be sent again, and the error.
func (r *runner) countAcks(cmds []*redis.Cmd, acked [][]completion) (redo []completion, err error) {
	for i, cmd := range cmds {
		statuses, cerr := cmd.StringSlice()
		if cerr != nil {
			if again(cmd.Err()) {
				redo = append(redo, acked[i]...)
				err = fromRedis("ack", cerr)
				continue
			}
			r.logError("baton_v2_ack", cerr)
			continue
		}
		for _, s := range statuses {
			if s == "done" || s == "stale_done" {
				r.w.stats.succeeded.Add(1)
			}
		}
	}
	return redo, err
}

// countFails counts the recorded failures; a fail refused with an error reply is returned, to
// be sent again, with the error.
func (r *runner) countFails(cmds []*redis.Cmd, failed []completion) (redo []completion, err error) {
	for i, cmd := range cmds {
		if again(cmd.Err()) {
			redo = append(redo, failed[i])
			err = fromRedis("fail", cmd.Err())
			continue
		}
		v, cerr := cmd.Slice()
		if cerr != nil || len(v) < 2 {
			r.logError("baton_v2_fail "+failed[i].id, cerr)
			continue
		}
		switch v[0] {
		case "retry":
			r.w.stats.failed.Add(1)
			if due, ok := v[1].(int64); ok && r.w.maint != nil {
				r.w.maint.retryScheduled(r, due)
			}
		case "dead":
			r.w.stats.failed.Add(1)
			r.w.stats.dead.Add(1)
		}
	}
	return redo, err
}

// again reports whether an ack or fail refused with err is worth sending again: Redis could not
// serve it now (the library is missing or being reloaded, LOADING, BUSY, OOM, ...). A contract
// refusal (invalid_argument) or an unknown reply (internal) would be refused again: logged.
func again(err error) bool {
	if err == nil {
		return false
	}
	var e *Error
	return !errors.As(fromRedis("", err), &e) || e.Code != CodeInvalidArgument && e.Code != CodeInternal
}

// heldTasks lists the attempts to heartbeat: running, not past their deadline, lease not lost,
// not abandoned.
func (r *runner) heldTasks(now time.Time) []extendItem {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []extendItem
	for _, st := range r.running {
		if !st.heartbeat {
			continue
		}
		if !st.deadline.IsZero() && !now.Before(st.deadline) {
			// Past its execution_timeout: stop extending, so that if the handler ignores its
			// context the lease ends and the task is reclaimed.
			st.heartbeat = false
			continue
		}
		out = append(out, extendItem{ID: st.id, SID: st.sid})
	}
	return out
}

// leaseLost cancels the attempts whose SID baton_v2_extend did not return: their lease ended
// and the task was taken back; another worker may run it now.
func (r *runner) leaseLost(sent []extendItem, held []string) {
	still := make(map[string]bool, len(held))
	for _, sid := range held {
		still[sid] = true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, it := range sent {
		sid := it.SID.(string)
		if still[sid] {
			continue
		}
		if st := r.running[sid]; st != nil && st.heartbeat {
			st.heartbeat = false
			st.cancelCause(ErrLeaseLost)
		}
	}
}
