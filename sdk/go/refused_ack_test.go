package baton_test

import (
	"context"
	"testing"
	"time"

	baton "github.com/baton-dev/baton/sdk/go"
)

// An ack Redis refuses with an error reply (here "Function not found" while the library is
// reloaded) is kept and sent again until it is recorded, also when no dequeue shares its
// pipeline (the worker is stopping).
func TestRefusedAckIsSentAgain(t *testing.T) {
	ctx := context.Background()
	s, err := startServer(t)
	if err != nil {
		t.Fatal(err)
	}
	rdb := s.Client()
	defer rdb.Close()
	ns := newNS()
	w, err := baton.NewWorker(s.URL(), baton.WithConcurrency(1), baton.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	_ = w.HandleFunc(ns, "t", func(ctx context.Context, task *baton.Task) error {
		close(started)
		<-release
		return nil
	})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := baton.NewClient(ctx, s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.Enqueue(ctx, ns, "t", []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if err := rdb.FunctionDelete(ctx, "baton_v2").Err(); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() {
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		stopped <- w.Shutdown(sctx)
	}()
	time.Sleep(100 * time.Millisecond) // stopping: the fetcher sends acks without a dequeue
	close(release)
	time.Sleep(300 * time.Millisecond) // the ack is refused at least once
	select {
	case err := <-stopped:
		t.Fatalf("Shutdown returned (%v) before the ack was recorded", err)
	default:
	}
	if err := s.LoadFunctions(); err != nil {
		t.Fatal(err)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	// Done: out of the task index, in the done set.
	if rec := rdb.HGet(ctx, keyOf(ns, "tasks"), r.TaskID).Val(); rec != "" {
		t.Fatalf("task record %q, want none (done)", rec)
	}
	if _, err := rdb.ZScore(ctx, keyOf(ns, "done"), r.TaskID).Result(); err != nil {
		t.Fatalf("not in the done set: %v", err)
	}
	if st := w.Stats(); st.Succeeded != 1 {
		t.Fatalf("stats %+v", st)
	}
}
