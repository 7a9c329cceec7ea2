package baton

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-dev/baton/sdk/go/internal/redistest"
)

// A delivered task that is not a valid task (here a payload that passes the functions' cheap
// check but is not JSON, as a foreign producer could write it) is failed as malformed: the
// dead-letter queue gets it with the reason; the handler never sees it, the worker goes on.
func TestMalformedTaskIsDeadLettered(t *testing.T) {
	ctx := context.Background()
	s, err := redistest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	rdb := s.Client()
	defer rdb.Close()
	keys := newKeySet("foreign", "t")
	items := []enqueueItem{
		{ID: "bad-1", Payload: "{not json}", MaxRetry: 3, DelaySeconds: 0, CreatedAt: time.Now().Unix(),
			ExecutionTimeout: "", Extra: "", RunAtMs: 0, UniqueKey: "", UniqueTTLS: 0},
		{ID: "good-1", Payload: "{}", MaxRetry: 3, DelaySeconds: 0, CreatedAt: time.Now().Unix(),
			ExecutionTimeout: "", Extra: "", RunAtMs: 0, UniqueKey: "", UniqueTTLS: 0},
	}
	if err := fcallEnqueue(ctx, rdb, keys, nil, len(items), items).Err(); err != nil {
		t.Fatal(err)
	}
	var handled atomic.Int64
	w, err := NewWorker(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	_ = w.HandleFunc("foreign", "t", func(ctx context.Context, task *Task) error {
		if task.ID != "good-1" {
			t.Errorf("the handler got %s", task.ID)
		}
		handled.Add(1)
		return nil
	})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Shutdown(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for w.Stats().Malformed+w.Stats().Succeeded < 2 || w.Stats().Dead < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v", w.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := rdb.ZScore(ctx, keys.dead, "bad-1").Result(); err != nil {
		t.Fatalf("not dead-lettered: %v", err)
	}
	history, err := redistest.ErrorHistory(ctx, rdb, keys.errors, "bad-1")
	if err != nil || len(history) != 1 {
		t.Fatalf("errors %s (%v)", history, err)
	}
	var e struct{ Kind, Error string }
	if err := json.Unmarshal(history[0], &e); err != nil || e.Kind != "malformed" ||
		!strings.HasPrefix(e.Error, "malformed task: payload: not valid JSON: ") {
		t.Fatalf("errors %s", history[0])
	}
	if handled.Load() != 1 || w.Stats().Malformed != 1 {
		t.Fatalf("handled %d, stats %+v", handled.Load(), w.Stats())
	}
}
