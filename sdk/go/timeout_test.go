package baton_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	baton "github.com/baton-dev/baton/sdk/go"
	"github.com/redis/go-redis/v9"
)

// execution_timeout is the handler's context deadline; the attempt fails with kind timeout.
func TestExecutionTimeoutIsTheContextDeadline(t *testing.T) {
	ns := newNS()
	type seen struct {
		deadline time.Time
		cause    error
		started  time.Time
	}
	got := make(chan seen, 1)
	failingWorker(t, ns, "sleep", func(ctx context.Context, task *baton.Task) error {
		started := time.Now()
		deadline, _ := ctx.Deadline()
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Second):
		}
		got <- seen{deadline, context.Cause(ctx), started}
		return ctx.Err()
	})
	r, err := newClient(t).Enqueue(context.Background(), ns, "sleep", []byte(`{"sleep_ms":20000}`),
		baton.ExecutionTimeout(time.Second), baton.MaxRetry(0))
	if err != nil {
		t.Fatal(err)
	}
	var s seen
	select {
	case s = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("the handler was not stopped")
	}
	if s.deadline.IsZero() || s.deadline.Sub(s.started) > 1100*time.Millisecond {
		t.Fatalf("deadline %v, handler started %v: want at most 1 s after the start", s.deadline, s.started)
	}
	if !errors.Is(s.cause, baton.ErrExecutionTimeout) {
		t.Fatalf("cause %v", s.cause)
	}
	waitFor(t, 30*time.Second, "the dead-letter queue", func() bool { return isDead(t, ns, "sleep", r.TaskID) })
	e := errorsOf(t, ns, r.TaskID)
	if len(e) != 1 || e[0].Kind != "timeout" || e[0].Error != "execution_timeout of 1s exceeded" {
		t.Fatalf("%+v", e)
	}
}

// A handler that ignores its context is still failed at the deadline (kind timeout, with the
// stack where it was stuck); its pool slot stays taken until it returns.
func TestTimeoutOfAHandlerThatIgnoresItsContext(t *testing.T) {
	ns := newNS()
	release := make(chan struct{})
	var running atomic.Int64
	w := newWorker(t, baton.WithRetry(baton.RetryPolicy{Base: 50 * time.Millisecond, Max: 100 * time.Millisecond}))
	_ = w.HandleFunc(ns, "stuck", func(ctx context.Context, task *baton.Task) error {
		running.Add(1)
		defer running.Add(-1)
		<-release // ignores ctx
		return nil
	}, baton.Concurrency(1))
	startWorker(t, w)
	c := newClient(t)
	r, _ := c.Enqueue(context.Background(), ns, "stuck", []byte(`{}`), baton.ExecutionTimeout(time.Second), baton.MaxRetry(0))
	second, _ := c.Enqueue(context.Background(), ns, "stuck", []byte(`{}`))
	started := time.Now()
	waitFor(t, 30*time.Second, "the timeout", func() bool { return isDead(t, ns, "stuck", r.TaskID) })
	if took := time.Since(started); took > 20*time.Second {
		t.Fatalf("recorded after %v", took)
	}
	e := errorsOf(t, ns, r.TaskID)
	if len(e) != 1 || e[0].Kind != "timeout" || !strings.Contains(e[0].Stack, "TestTimeoutOfAHandlerThatIgnoresItsContext") {
		t.Fatalf("%+v", e)
	}
	// The pool of 1 is still taken by the stuck handler: the second task waits for it.
	time.Sleep(300 * time.Millisecond)
	if w.Stats().Succeeded != 0 || running.Load() != 1 {
		t.Fatalf("the second task ran beside the stuck handler (succeeded %d, running %d)", w.Stats().Succeeded, running.Load())
	}
	close(release)
	waitFor(t, 30*time.Second, "the second task", func() bool { return w.Stats().Succeeded == 1 })
	if _, err := rawClient(t).ZScore(context.Background(), keyOf(ns, "done"), second.TaskID).Result(); err != nil {
		t.Fatal(err)
	}
}

// Heartbeats: a task that runs much longer than its lease is not taken back while its worker
// lives, even with a reaper (this worker's maintenance) running all along.
func TestLeaseHeartbeatKeepsALongTask(t *testing.T) {
	ns := newNS()
	var cause atomic.Value
	w := newWorker(t, baton.WithMaintenance(true))
	_ = w.HandleFunc(ns, "long", func(ctx context.Context, task *baton.Task) error {
		select {
		case <-time.After(5 * time.Second): // two and a half leases
			return nil
		case <-ctx.Done():
			cause.Store(context.Cause(ctx))
			return ctx.Err()
		}
	}, baton.Lease(2*time.Second))
	startWorker(t, w)
	r, _ := newClient(t).Enqueue(context.Background(), ns, "long", []byte(`{}`))
	waitFor(t, 30*time.Second, "the task", func() bool { return w.Stats().Succeeded+w.Stats().Failed > 0 })
	if c := cause.Load(); c != nil {
		t.Fatalf("the handler was cancelled: %v", c)
	}
	if w.Stats().Succeeded != 1 || w.Stats().Failed != 0 {
		t.Fatalf("stats %+v", w.Stats())
	}
	if _, err := rawClient(t).ZScore(context.Background(), keyOf(ns, "done"), r.TaskID).Result(); err != nil {
		t.Fatalf("not done: %v", err)
	}
	// No reclaim happened.
	events, _ := rawClient(t).XRange(context.Background(), keyOf(ns, "events"), "-", "+").Result()
	for _, e := range events {
		if strings.Contains(e.Values["error"].(string), "lease expired") {
			t.Fatalf("reclaimed: %v", e.Values)
		}
	}
}

// When the worker learns from a heartbeat that it no longer holds a task (here another consumer
// claimed the entry), the handler's context ends with ErrLeaseLost.
func TestLeaseLostCancelsTheHandler(t *testing.T) {
	ns := newNS()
	causes := make(chan error, 1)
	started := make(chan string, 1)
	w := newWorker(t)
	_ = w.HandleFunc(ns, "t", func(ctx context.Context, task *baton.Task) error {
		started <- task.StreamID
		select {
		case <-ctx.Done():
			causes <- context.Cause(ctx)
		case <-time.After(30 * time.Second):
			causes <- nil
		}
		return ctx.Err()
	}, baton.Lease(time.Second))
	startWorker(t, w)
	if _, err := newClient(t).Enqueue(context.Background(), ns, "t", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	var sid string
	select {
	case sid = <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the task never ran")
	}
	rdb := rawClient(t)
	if err := rdb.XClaimJustID(context.Background(), &redis.XClaimArgs{Stream: keyOf(ns, "stream:t"), Group: "baton",
		Consumer: "thief", MinIdle: 0, Messages: []string{sid}}).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case cause := <-causes:
		if !errors.Is(cause, baton.ErrLeaseLost) {
			t.Fatalf("cause %v", cause)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the handler was not told")
	}
}
