package baton_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	baton "github.com/baton-dev/baton/sdk/go"
)

// syncBuffer is a log sink a test can read while the worker writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The worker survives a Redis restart: it reconnects by itself, checks the library version on
// the new connections (refusing to run while the library is missing), and carries on once the
// library is back.
func TestReconnectAfterRedisRestart(t *testing.T) {
	ctx := context.Background()
	s, err := startServer(t)
	if err != nil {
		t.Fatal(err)
	}
	ns := newNS()
	logs := &syncBuffer{}
	w, err := baton.NewWorker(s.URL(), baton.WithBlock(300*time.Millisecond),
		baton.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	_ = w.HandleFunc(ns, "t", func(ctx context.Context, task *baton.Task) error { return nil })
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		_ = w.Shutdown(sctx)
	}()
	enqueue := func(n int) {
		c, err := baton.NewClient(ctx, s.URL())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for i := 0; i < n; i++ {
			if _, err := c.Enqueue(ctx, ns, "t", []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
		}
	}
	enqueue(3)
	waitFor(t, 20*time.Second, "the first tasks", func() bool { return w.Stats().Succeeded == 3 })

	if err := s.Restart(); err != nil { // everything lost, the functions library too
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	}()
	waitFor(t, 30*time.Second, "the version check to refuse the library-less Redis", func() bool {
		return strings.Contains(logs.String(), "run 'baton init'")
	})
	if err := s.LoadFunctions(); err != nil {
		t.Fatal(err)
	}
	enqueue(3)
	waitFor(t, 30*time.Second, "the tasks after the restart", func() bool { return w.Stats().Succeeded == 6 })
}

// Shutdown does not hang when Redis is gone: past its grace it returns, leaving the running
// task to its lease.
func TestShutdownWithRedisGone(t *testing.T) {
	ctx := context.Background()
	s, err := startServer(t)
	if err != nil {
		t.Fatal(err)
	}
	ns := newNS()
	started := make(chan struct{}, 1)
	w, err := baton.NewWorker(s.URL(), baton.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	_ = w.HandleFunc(ns, "t", func(ctx context.Context, task *baton.Task) error {
		started <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := baton.NewClient(ctx, s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Enqueue(ctx, ns, "t", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the task never ran")
	}
	s.Kill()
	sctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	begin := time.Now()
	if err := w.Shutdown(sctx); err == nil {
		t.Fatal("Shutdown reported a clean stop with the handler still running")
	}
	if took := time.Since(begin); took > 20*time.Second {
		t.Fatalf("Shutdown took %v", took)
	}
}
