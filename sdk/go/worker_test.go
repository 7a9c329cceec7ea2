package baton_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	baton "github.com/baton-dev/baton/sdk/go"
)

// newWorker makes a worker whose log goes to the test's log.
func newWorker(t *testing.T, opts ...baton.WorkerOption) *baton.Worker {
	t.Helper()
	opts = append([]baton.WorkerOption{baton.WithLogger(testLogger(t))}, opts...)
	w, err := baton.NewWorker(srv.URL(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// The default consumer name is "<service>:<host>:<pid>:<6 hex>:go", different per worker.
func TestConsumerNameHasServiceHostPidRandomSuffixAndLanguage(t *testing.T) {
	host, _ := os.Hostname()
	prefix := "billing:" + host + ":" + strconv.Itoa(os.Getpid()) + ":"
	name := newWorker(t, baton.WithService("billing")).Consumer()
	if !strings.HasPrefix(name, prefix) || !regexp.MustCompile(`^[0-9a-f]{6}:go$`).MatchString(name[len(prefix):]) {
		t.Fatalf("consumer name %q, want %s<6 hex>:go", name, prefix)
	}
	if other := newWorker(t, baton.WithService("billing")).Consumer(); other == name {
		t.Fatalf("two workers share the consumer name %q", name)
	}
}

// The handler gets the task exactly as produced: payload bytes, envelope, unknown fields.
func TestWorkerReceivesTheTaskExactly(t *testing.T) {
	ctx := context.Background()
	ns := newNS()
	c := newClient(t)
	payload := []byte(`{"big": 12345678901234567890, "huge": 123456789012345678901234567890, "price": 1.10, "s": "二 🚀"}`)
	r, err := c.Enqueue(ctx, ns, "echo", payload, baton.MaxRetry(7), baton.ExecutionTimeout(30*time.Second),
		baton.Extra("x_unknown", json.RawMessage(`{"a": 1, "list": [1, "二", null]}`)),
		baton.Headers(map[string]string{"producer": "go-test"}))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *baton.Task, 1)
	w := newWorker(t)
	if err := w.HandleFunc(ns, "echo", func(ctx context.Context, task *baton.Task) error {
		got <- task
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	startWorker(t, w)
	var task *baton.Task
	select {
	case task = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("the task never ran")
	}
	if string(task.Payload) != string(payload) {
		t.Fatalf("payload bytes changed: %s", task.Payload)
	}
	if task.ID != r.TaskID || task.Namespace != ns || task.Type != "echo" || task.MaxRetry != 7 ||
		task.DelaySeconds != 0 || task.ExecutionTimeout != 30 || task.Attempt != 1 || task.StreamID != r.StreamID {
		t.Fatalf("envelope: %+v", task)
	}
	if time.Since(task.Created()) > time.Minute || task.CreatedAt > time.Now().Unix() {
		t.Fatalf("created_at %d", task.CreatedAt)
	}
	if string(task.Extra["x_unknown"]) != `{"a": 1, "list": [1, "二", null]}` || task.Headers()["producer"] != "go-test" {
		t.Fatalf("extra: %s", task.Extra)
	}
	var p struct {
		Big   json.Number `json:"big"`
		Huge  json.Number `json:"huge"`
		Price json.Number `json:"price"`
	}
	if err := task.Decode(&p); err != nil || p.Huge.String() != "123456789012345678901234567890" || p.Price.String() != "1.10" {
		t.Fatalf("decode: %+v %v", p, err)
	}
	waitFor(t, 10*time.Second, "the ack", func() bool { return w.Stats().Succeeded == 1 })
	if _, err := rawClient(t).ZScore(ctx, keyOf(ns, "done"), r.TaskID).Result(); err != nil {
		t.Fatalf("not done: %v", err)
	}
}

// Many tasks, several types: every task runs once and is acked (batched acks and dequeues).
func TestWorkerDrainsManyTasks(t *testing.T) {
	ctx := context.Background()
	ns := newNS()
	c := newClient(t)
	const perType = 500
	types := []string{"a", "b", "c"}
	var reqs []baton.Request
	for i := 0; i < perType; i++ {
		for _, typ := range types {
			reqs = append(reqs, baton.Request{Namespace: ns, Type: typ, Payload: map[string]int{"i": i}})
		}
	}
	if _, err := c.EnqueueMany(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	w := newWorker(t, baton.WithConcurrency(16))
	for _, typ := range types {
		_ = w.HandleFunc(ns, typ, func(ctx context.Context, task *baton.Task) error {
			mu.Lock()
			seen[task.ID]++
			mu.Unlock()
			return nil
		})
	}
	startWorker(t, w)
	waitFor(t, 60*time.Second, "every ack", func() bool { return w.Stats().Succeeded == uint64(len(reqs)) })
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != len(reqs) {
		t.Fatalf("%d distinct tasks ran, want %d", len(seen), len(reqs))
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("task %s ran %d times", id, n)
		}
	}
}

// One slow type never blocks another: each type has its own pool and fetcher.
func TestSlowTypeDoesNotBlockAnother(t *testing.T) {
	ctx := context.Background()
	ns := newNS()
	c := newClient(t)
	release := make(chan struct{})
	var slowStarted, fastDone atomic.Int64
	w := newWorker(t)
	_ = w.HandleFunc(ns, "slow", func(ctx context.Context, task *baton.Task) error {
		slowStarted.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}, baton.Concurrency(2))
	_ = w.HandleFunc(ns, "fast", func(ctx context.Context, task *baton.Task) error {
		fastDone.Add(1)
		return nil
	}, baton.Concurrency(2))
	startWorker(t, w)
	defer close(release)
	for i := 0; i < 10; i++ {
		if _, err := c.Enqueue(ctx, ns, "slow", []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 20*time.Second, "the slow pool to be busy", func() bool { return slowStarted.Load() == 2 })
	for i := 0; i < 50; i++ {
		if _, err := c.Enqueue(ctx, ns, "fast", []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 20*time.Second, "the fast tasks", func() bool { return fastDone.Load() == 50 })
	if n := slowStarted.Load(); n != 2 {
		t.Fatalf("the slow pool of 2 ran %d tasks at once", n)
	}
}

func TestWorkerRegistrationErrors(t *testing.T) {
	w := newWorker(t)
	noop := func(context.Context, *baton.Task) error { return nil }
	if err := w.HandleFunc("bad ns", "t", noop); !errors.Is(err, baton.ErrInvalidArgument) {
		t.Fatalf("bad namespace: %v", err)
	}
	if err := w.HandleFunc(newNS(), "t", noop, baton.Lease(10*time.Millisecond)); !errors.Is(err, baton.ErrInvalidArgument) {
		t.Fatalf("bad lease: %v", err)
	}
	ns := newNS()
	if err := w.HandleFunc(ns, "t", noop); err != nil {
		t.Fatal(err)
	}
	if err := w.HandleFunc(ns, "t", noop); !errors.Is(err, baton.ErrAlreadyExists) {
		t.Fatalf("twice: %v", err)
	}
	empty := newWorker(t)
	if err := empty.Start(context.Background()); !errors.Is(err, baton.ErrInvalidArgument) {
		t.Fatalf("start without handlers: %v", err)
	}
	if _, err := baton.NewWorker("http://x"); !errors.Is(err, baton.ErrInvalidArgument) {
		t.Fatalf("bad url: %v", err)
	}
}
