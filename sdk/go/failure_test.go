package baton_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	baton "github.com/baton-dev/baton/sdk/go"
	"github.com/baton-dev/baton/sdk/go/internal/redistest"
)

// attemptError is one failure of the errors hash (docs/keyspace.md, "Error history").
type attemptError struct {
	Attempt int    `json:"attempt"`
	Kind    string `json:"kind"`
	Error   string `json:"error"`
	Stack   string `json:"stack"`
	Worker  string `json:"worker"`
	AtMs    int64  `json:"at_ms"`
}

func errorsOf(t *testing.T, ns, id string) []attemptError {
	t.Helper()
	history, err := redistest.ErrorHistory(context.Background(), rawClient(t), keyOf(ns, "errors"), id)
	if err != nil {
		t.Fatalf("errors of %s: %v", id, err)
	}
	if len(history) == 0 {
		t.Fatalf("no error recorded for %s", id)
	}
	out := make([]attemptError, len(history))
	for i, raw := range history {
		if err := json.Unmarshal(raw, &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func isDead(t *testing.T, ns, typ, id string) bool {
	_, err := rawClient(t).ZScore(context.Background(), keyOf(ns, "dead:"+typ), id).Result()
	return err == nil
}

// failingWorker runs handler for (ns, typ) with a short backoff and its own maintenance
// (promotes the retries).
func failingWorker(t *testing.T, ns, typ string, h func(context.Context, *baton.Task) error) *baton.Worker {
	t.Helper()
	w := newWorker(t, baton.WithMaintenance(true), baton.WithService("failtest"),
		baton.WithRetry(baton.RetryPolicy{Base: 50 * time.Millisecond, Max: 200 * time.Millisecond}))
	if err := w.HandleFunc(ns, typ, h); err != nil {
		t.Fatal(err)
	}
	startWorker(t, w)
	return w
}

func failingHandlerForTest(ctx context.Context, task *baton.Task) error {
	return fmt.Errorf("smtp: mailbox unavailable (attempt %d)", task.Attempt)
}

// An error is retried with backoff until 1 + max_retry runs, then dead-lettered with each
// attempt's error and a Go stack naming the handler.
func TestRetriesThenDeadLetterWithStack(t *testing.T) {
	ns := newNS()
	var mu sync.Mutex
	var attempts []int
	failingWorker(t, ns, "mail", func(ctx context.Context, task *baton.Task) error {
		mu.Lock()
		attempts = append(attempts, task.Attempt)
		mu.Unlock()
		return failingHandlerForTest(ctx, task)
	})
	r, err := newClient(t).Enqueue(context.Background(), ns, "mail", []byte(`{}`), baton.MaxRetry(2))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the dead-letter queue", func() bool { return isDead(t, ns, "mail", r.TaskID) })
	errs := errorsOf(t, ns, r.TaskID)
	if len(errs) != 3 {
		t.Fatalf("%d attempts recorded: %+v", len(errs), errs)
	}
	for i, e := range errs {
		if e.Attempt != i+1 || e.Kind != "error" || e.Error != fmt.Sprintf("smtp: mailbox unavailable (attempt %d)", i+1) ||
			!strings.HasPrefix(e.Worker, "failtest:") {
			t.Fatalf("attempt %d: %+v", i+1, e)
		}
		if !strings.Contains(e.Stack, "TestRetriesThenDeadLetterWithStack") || !strings.Contains(e.Stack, ".go:") {
			t.Fatalf("attempt %d: the stack does not name the handler:\n%s", i+1, e.Stack)
		}
		if i > 0 && e.AtMs-errs[i-1].AtMs < 50<<(i-1) {
			t.Fatalf("attempt %d came %d ms after the previous: no backoff", i+1, e.AtMs-errs[i-1].AtMs)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(attempts) != "[1 2 3]" {
		t.Fatalf("the handler saw attempts %v", attempts)
	}
}

// baton.WithStack records where the error was made.
func TestWithStackRecordsTheCreationSite(t *testing.T) {
	ns := newNS()
	failingWorker(t, ns, "t", func(ctx context.Context, task *baton.Task) error {
		return baton.NonRetryable(baton.WithStack(errors.New("made here")))
	})
	r, _ := newClient(t).Enqueue(context.Background(), ns, "t", []byte(`{}`))
	waitFor(t, 30*time.Second, "the dead-letter queue", func() bool { return isDead(t, ns, "t", r.TaskID) })
	e := errorsOf(t, ns, r.TaskID)[0]
	if !strings.Contains(e.Stack, "created at") || !strings.Contains(e.Stack, "TestWithStackRecordsTheCreationSite.func1") {
		t.Fatalf("stack:\n%s", e.Stack)
	}
}

// A non-retryable error (errors.Is(err, baton.ErrNonRetryable)) dead-letters at once.
func TestNonRetryableGoesStraightToTheDLQ(t *testing.T) {
	ns := newNS()
	var runs sync.Map
	failingWorker(t, ns, "t", func(ctx context.Context, task *baton.Task) error {
		n, _ := runs.LoadOrStore(task.ID, new(int))
		*(n.(*int))++
		switch task.Headers()["wrap"] {
		case "fmt":
			return fmt.Errorf("order %s does not exist: %w", task.ID, baton.ErrNonRetryable)
		case "panic": // a panic with a non-retryable error counts as that error returned
			panic(baton.NonRetryable(errors.New("bad input")))
		}
		return baton.NonRetryable(errors.New("bad input"))
	})
	c := newClient(t)
	a, _ := c.Enqueue(context.Background(), ns, "t", []byte(`{}`), baton.MaxRetry(5))
	b, _ := c.Enqueue(context.Background(), ns, "t", []byte(`{}`), baton.MaxRetry(5), baton.Headers(map[string]string{"wrap": "fmt"}))
	p, _ := c.Enqueue(context.Background(), ns, "t", []byte(`{}`), baton.MaxRetry(5), baton.Headers(map[string]string{"wrap": "panic"}))
	for _, id := range []string{a.TaskID, b.TaskID, p.TaskID} {
		waitFor(t, 30*time.Second, "the dead-letter queue", func() bool { return isDead(t, ns, "t", id) })
		errs := errorsOf(t, ns, id)
		if len(errs) != 1 || errs[0].Kind != "non_retryable" {
			t.Fatalf("%+v", errs)
		}
		if n, _ := runs.Load(id); *(n.(*int)) != 1 {
			t.Fatalf("ran %d times", *(n.(*int)))
		}
	}
}

// A panic is recovered, recorded with its stack as a failed attempt, and the worker goes on.
func TestPanicIsAFailedAttempt(t *testing.T) {
	ns := newNS()
	cleaned := make(chan string, 10)
	w := failingWorker(t, ns, "t", func(ctx context.Context, task *baton.Task) error {
		defer func() { cleaned <- task.ID }() // defer-based cleanup runs on a panic too
		if task.Headers()["panic"] == "yes" {
			var empty []int
			_ = empty[task.Attempt] // a runtime panic: index out of range
		}
		return nil
	})
	c := newClient(t)
	p, _ := c.Enqueue(context.Background(), ns, "t", []byte(`{}`), baton.MaxRetry(1), baton.Headers(map[string]string{"panic": "yes"}))
	waitFor(t, 30*time.Second, "the dead-letter queue", func() bool { return isDead(t, ns, "t", p.TaskID) })
	errs := errorsOf(t, ns, p.TaskID)
	if len(errs) != 2 {
		t.Fatalf("%+v", errs)
	}
	for _, e := range errs {
		if e.Kind != "error" || !strings.Contains(e.Error, "panic: runtime error: index out of range") ||
			!strings.Contains(e.Stack, "TestPanicIsAFailedAttempt.func1") || !strings.Contains(e.Stack, "failure_test.go:") {
			t.Fatalf("%+v", e)
		}
	}
	// The process lives on and the same pool runs the next task.
	ok, _ := c.Enqueue(context.Background(), ns, "t", []byte(`{}`))
	waitFor(t, 30*time.Second, "the next task", func() bool { return w.Stats().Succeeded == 1 })
	got := map[string]int{}
	for len(got) < 2 || got[p.TaskID] < 2 {
		select {
		case id := <-cleaned:
			got[id]++
		case <-time.After(10 * time.Second):
			t.Fatalf("deferred cleanup ran for %v", got)
		}
	}
	if got[ok.TaskID] != 1 {
		t.Fatalf("cleanup: %v", got)
	}
}

// A handler that ends its goroutine with runtime.Goexit fails its attempt; the pool keeps its
// size.
func TestGoexitIsAFailedAttempt(t *testing.T) {
	ns := newNS()
	w := newWorker(t)
	_ = w.HandleFunc(ns, "t", func(ctx context.Context, task *baton.Task) error {
		if task.Headers()["exit"] == "yes" {
			defer func() {}()
			runtimeGoexit()
		}
		return nil
	}, baton.Concurrency(1))
	startWorker(t, w)
	c := newClient(t)
	x, _ := c.Enqueue(context.Background(), ns, "t", []byte(`{}`), baton.MaxRetry(0), baton.Headers(map[string]string{"exit": "yes"}))
	waitFor(t, 30*time.Second, "the dead-letter queue", func() bool { return isDead(t, ns, "t", x.TaskID) })
	if e := errorsOf(t, ns, x.TaskID); !strings.Contains(e[0].Error, "runtime.Goexit") {
		t.Fatalf("%+v", e)
	}
	for i := 0; i < 3; i++ {
		_, _ = c.Enqueue(context.Background(), ns, "t", []byte(`{}`))
	}
	waitFor(t, 30*time.Second, "the pool to go on", func() bool { return w.Stats().Succeeded == 3 })
}
