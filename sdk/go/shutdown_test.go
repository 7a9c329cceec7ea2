package baton_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	baton "github.com/baton-dev/baton/sdk/go"
)

// Shutdown lets running handlers finish and records their outcomes.
func TestGracefulShutdown(t *testing.T) {
	ns := newNS()
	c := newClient(t)
	var started atomic.Int64
	w := newWorker(t)
	_ = w.HandleFunc(ns, "t", func(ctx context.Context, task *baton.Task) error {
		started.Add(1)
		time.Sleep(500 * time.Millisecond)
		return nil
	}, baton.Concurrency(4))
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		_, _ = c.Enqueue(context.Background(), ns, "t", []byte(`{}`))
	}
	waitFor(t, 20*time.Second, "4 running handlers", func() bool { return started.Load() == 4 })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := w.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if s := w.Stats(); s.Succeeded != 4 || started.Load() != 4 {
		t.Fatalf("stats %+v, started %d: the running tasks must finish and no new one start", s, started.Load())
	}
	n, _ := rawClient(t).ZCard(context.Background(), keyOf(ns, "done")).Result()
	if n != 4 {
		t.Fatalf("%d tasks done", n)
	}
	if err := w.Shutdown(ctx); err != nil { // idempotent
		t.Fatal(err)
	}
}

// Past Shutdown's grace, running handlers are cancelled (ErrWorkerStopping) and their tasks are
// left to the lease: another worker runs them once it expires.
func TestShutdownGraceExceededLeavesTasksToTheLease(t *testing.T) {
	ns := newNS()
	c := newClient(t)
	causes := make(chan error, 1)
	w := newWorker(t)
	_ = w.HandleFunc(ns, "t", func(ctx context.Context, task *baton.Task) error {
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	}, baton.Lease(time.Second))
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	r, _ := c.Enqueue(context.Background(), ns, "t", []byte(`{}`))
	waitFor(t, 20*time.Second, "the task to start", func() bool {
		n, _ := rawClient(t).XPending(context.Background(), keyOf(ns, "stream:t"), "baton").Result()
		return n != nil && n.Count == 1
	})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := w.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v", err)
	}
	select {
	case cause := <-causes:
		if !errors.Is(cause, baton.ErrWorkerStopping) {
			t.Fatalf("cause %v", cause)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler was not cancelled")
	}
	if s := w.Stats(); s.Succeeded+s.Failed != 0 {
		t.Fatalf("an abandoned attempt was recorded: %+v", s)
	}
	// A second worker with maintenance takes the task back after the lease and runs it.
	var ran atomic.Int64
	w2 := newWorker(t, baton.WithMaintenance(true), baton.WithRetry(baton.RetryPolicy{Base: 50 * time.Millisecond, Max: 100 * time.Millisecond}))
	_ = w2.HandleFunc(ns, "t", func(ctx context.Context, task *baton.Task) error {
		ran.Add(1)
		if task.Attempt != 2 {
			return baton.NonRetryable(errors.New("expected the second attempt"))
		}
		return nil
	})
	startWorker(t, w2)
	waitFor(t, 30*time.Second, "the task to run again", func() bool { return w2.Stats().Succeeded == 1 })
	if _, err := rawClient(t).ZScore(context.Background(), keyOf(ns, "done"), r.TaskID).Result(); err != nil || ran.Load() != 1 {
		t.Fatalf("not done (%v), ran %d", err, ran.Load())
	}
}

// Run stops gracefully when its context ends.
func TestRunStopsWithItsContext(t *testing.T) {
	ns := newNS()
	w := newWorker(t, baton.WithShutdownGrace(5*time.Second))
	_ = w.HandleFunc(ns, "t", func(ctx context.Context, task *baton.Task) error { return nil })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	_, _ = newClient(t).Enqueue(context.Background(), ns, "t", []byte(`{}`))
	waitFor(t, 20*time.Second, "the task", func() bool { return w.Stats().Succeeded == 1 })
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
}
