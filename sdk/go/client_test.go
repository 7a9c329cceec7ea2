package baton_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	baton "github.com/baton-dev/baton/sdk/go"
)

func TestEnqueueOutcomes(t *testing.T) {
	ctx := context.Background()
	c := newClient(t)
	rdb := rawClient(t)
	ns := newNS()

	// Queued: the payload bytes reach the stream untouched, created_at is Unix seconds.
	payload := []byte(`{"n": 12345678901234567890, "price": 1.10, "s": "é"}`)
	before := time.Now().Unix()
	r, err := c.Enqueue(ctx, ns, "email", payload, baton.MaxRetry(5), baton.ExecutionTimeout(30*time.Second),
		baton.Extra("x_origin", json.RawMessage(`{"region": "eu"}`)), baton.Headers(map[string]string{"producer": "go"}))
	if err != nil {
		t.Fatal(err)
	}
	if r.Outcome != baton.Queued || r.StreamID == "" || !baton.IsValidTaskID(r.TaskID) {
		t.Fatalf("got %+v", r)
	}
	// The task record (docs/keyspace.md) points at the entry; the bytes are checked on the
	// consumer side (TestWorkerReceivesTheTaskExactly).
	if rec, err := rdb.HGet(ctx, keyOf(ns, "tasks"), r.TaskID).Result(); err != nil || rec != "queued|email|0|"+r.StreamID {
		t.Fatalf("record %q %v", rec, err)
	}
	if ms, _ := strconv.ParseInt(r.TaskID[:8]+r.TaskID[9:13], 16, 64); ms/1000 < before || ms/1000 > time.Now().Unix() {
		t.Fatalf("UUIDv7 %s carries no timestamp of now", r.TaskID)
	}

	// Scheduled: delay and at.
	r, err = c.Enqueue(ctx, ns, "email", map[string]string{"to": "a@example.com"}, baton.Delay(90*time.Second))
	if err != nil || r.Outcome != baton.Scheduled || time.Until(r.Due) < 80*time.Second {
		t.Fatalf("delay: %+v %v", r, err)
	}
	at := time.Now().Add(time.Hour)
	r, err = c.Enqueue(ctx, ns, "email", map[string]int{}, baton.At(at))
	if err != nil || r.Outcome != baton.Scheduled || r.Due.UnixMilli() != at.UnixMilli() {
		t.Fatalf("at: %+v %v", r, err)
	}

	// Duplicate: the same id twice (live), also within one EnqueueMany.
	r, err = c.Enqueue(ctx, ns, "email", []byte(`{}`), baton.TaskID("order:42"))
	if err != nil || r.Outcome != baton.Queued || r.TaskID != "order:42" {
		t.Fatalf("first: %+v %v", r, err)
	}
	r, err = c.Enqueue(ctx, ns, "email", []byte(`{}`), baton.TaskID("order:42"))
	if err != nil || r.Outcome != baton.Duplicate || r.State != "queued" {
		t.Fatalf("duplicate: %+v %v", r, err)
	}

	// Unique key: a second task with the key conflicts and names the holder.
	first, err := c.Enqueue(ctx, ns, "report", []byte(`{}`), baton.Unique("daily", time.Minute))
	if err != nil || first.Outcome != baton.Queued {
		t.Fatalf("unique first: %+v %v", first, err)
	}
	r, err = c.Enqueue(ctx, ns, "report", []byte(`{}`), baton.Unique("daily", time.Minute))
	if err != nil || r.Outcome != baton.UniqueConflict || r.Holder != first.TaskID {
		t.Fatalf("unique conflict: %+v %v", r, err)
	}
	if ttl, _ := rdb.TTL(ctx, keyOf(ns, "unique:daily")).Result(); ttl <= 0 || ttl > time.Minute {
		t.Fatalf("unique key TTL %v", ttl)
	}
}

func TestEnqueueManyKeepsOrderAcrossQueues(t *testing.T) {
	ctx := context.Background()
	c := newClient(t)
	ns := newNS()
	var reqs []baton.Request
	for i := 0; i < 600; i++ { // more than one call's worth per type
		typ := []string{"a", "b", "c"}[i%3]
		reqs = append(reqs, baton.Request{Namespace: ns, Type: typ, Payload: map[string]int{"i": i}})
	}
	reqs = append(reqs, baton.Request{Namespace: ns, Type: "a", Payload: []byte(`{}`),
		Options: []baton.EnqueueOption{baton.TaskID("twice")}})
	reqs = append(reqs, baton.Request{Namespace: ns, Type: "a", Payload: []byte(`{}`),
		Options: []baton.EnqueueOption{baton.TaskID("twice")}})
	res, err := c.EnqueueMany(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(reqs) {
		t.Fatalf("%d results for %d requests", len(res), len(reqs))
	}
	rdb := rawClient(t)
	for i, r := range res[:600] {
		if r.Outcome != baton.Queued {
			t.Fatalf("request %d: %+v", i, r)
		}
		rec, _ := rdb.HGet(ctx, keyOf(ns, "tasks"), r.TaskID).Result()
		if rec != "queued|"+reqs[i].Type+"|0|"+r.StreamID {
			t.Fatalf("request %d: result %+v, record %q", i, r, rec)
		}
	}
	if res[600].Outcome != baton.Queued || res[601].Outcome != baton.Duplicate {
		t.Fatalf("same id twice in one call: %+v %+v", res[600], res[601])
	}
}

// Invalid input is refused before anything is written, with the field and the rule, and
// errors.Is(err, baton.ErrInvalidArgument).
func TestEnqueueValidation(t *testing.T) {
	ctx := context.Background()
	c := newClient(t)
	ns := newNS()
	cases := []struct {
		name    string
		ns, typ string
		payload any
		opts    []baton.EnqueueOption
		field   string
	}{
		{"bad namespace", "a{b}", "t", []byte(`{}`), nil, "namespace"},
		{"bad type", ns, "send|email", []byte(`{}`), nil, "task_type"},
		{"bad id", ns, "t", []byte(`{}`), []baton.EnqueueOption{baton.TaskID("-x")}, "task_id"},
		{"payload array", ns, "t", []byte(`[1]`), nil, "payload"},
		{"payload string value", ns, "t", "hello", nil, "payload"},
		{"payload not JSON", ns, "t", []byte(`{"a":`), nil, "payload"},
		{"payload too large", ns, "t", []byte(`{"x":"` + strings.Repeat("x", baton.MaxPayloadBytes) + `"}`), nil, "payload"},
		{"max_retry", ns, "t", []byte(`{}`), []baton.EnqueueOption{baton.MaxRetry(26)}, "max_retry"},
		{"negative delay", ns, "t", []byte(`{}`), []baton.EnqueueOption{baton.Delay(-time.Second)}, "delay_seconds"},
		{"timeout too long", ns, "t", []byte(`{}`), []baton.EnqueueOption{baton.ExecutionTimeout(25 * time.Hour)}, "execution_timeout"},
		{"trace", ns, "t", []byte(`{}`), []baton.EnqueueOption{baton.Extra("trace", "x")}, "trace"},
		{"header value", ns, "t", []byte(`{}`), []baton.EnqueueOption{baton.Extra("headers", map[string]int{"n": 1})}, "headers.n"},
		{"contract field as extra", ns, "t", []byte(`{}`), []baton.EnqueueOption{baton.Extra("max_retry", 3)}, "extra"},
		{"unique ttl", ns, "t", []byte(`{}`), []baton.EnqueueOption{baton.Unique("k", 0)}, "unique_ttl"},
	}
	for _, tc := range cases {
		_, err := c.Enqueue(ctx, tc.ns, tc.typ, tc.payload, tc.opts...)
		var e *baton.Error
		if !errors.Is(err, baton.ErrInvalidArgument) || !errors.As(err, &e) || e.Field != tc.field {
			t.Errorf("%s: got %v, want invalid_argument on %s", tc.name, err, tc.field)
			continue
		}
		if !strings.HasPrefix(err.Error(), "enqueue: invalid_argument: "+tc.field+": ") {
			t.Errorf("%s: message %q", tc.name, err)
		}
	}
	// EnqueueMany names the request and writes nothing.
	_, err := c.EnqueueMany(ctx, []baton.Request{
		{Namespace: ns, Type: "t", Payload: []byte(`{}`)},
		{Namespace: ns, Type: "t", Payload: []byte(`{}`), Options: []baton.EnqueueOption{baton.MaxRetry(-1)}},
	})
	if err == nil || !strings.HasPrefix(err.Error(), "enqueue requests[1]: invalid_argument: max_retry: ") {
		t.Fatalf("got %v", err)
	}
	if n, _ := rawClient(t).XLen(ctx, keyOf(ns, "stream:t")).Result(); n != 0 {
		t.Fatalf("%d entries written by refused calls", n)
	}
}

func TestCancel(t *testing.T) {
	ctx := context.Background()
	c := newClient(t)
	ns := newNS()
	r, err := c.Enqueue(ctx, ns, "t", []byte(`{}`), baton.Delay(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Cancel(ctx, ns, r.TaskID); err != nil {
		t.Fatal(err)
	}
	if err := c.Cancel(ctx, ns, r.TaskID); !errors.Is(err, baton.ErrNotFound) {
		t.Fatalf("second cancel: %v", err)
	}
	// A cancelled id is final: enqueueing it again is a duplicate.
	again, err := c.Enqueue(ctx, ns, "t", []byte(`{}`), baton.TaskID(r.TaskID))
	if err != nil || again.Outcome != baton.Duplicate || again.State != "cancelled" {
		t.Fatalf("re-enqueue: %+v %v", again, err)
	}
}

// Every (re)connect checks the library version: without the library NewClient refuses with
// version_mismatch and the hint to run 'baton init'.
func TestVersionMismatch(t *testing.T) {
	ctx := context.Background()
	// Without any library (a FUNCTION FLUSH, or a restart without persistence). A server of
	// the test's own, so that the other tests keep theirs.
	s, err := startServer(t)
	if err != nil {
		t.Fatal(err)
	}
	own := s.Client()
	defer own.Close()
	if err := own.FunctionFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	_, err = baton.NewClient(ctx, s.URL())
	if !errors.Is(err, baton.ErrVersionMismatch) || !strings.Contains(err.Error(), "run 'baton init'") {
		t.Fatalf("got %v", err)
	}
}

func TestNamespaceSettings(t *testing.T) {
	ctx := context.Background()
	c := newClient(t)
	ns := newNS()
	got, err := c.Configure(ctx, ns, map[string]int64{"lease_ms": 5000})
	if err != nil || got["lease_ms"] != 5000 || got["dlq_max"] != 100000 {
		t.Fatalf("%v %v", got, err)
	}
	_, err = c.Configure(ctx, ns, map[string]int64{"lease_ms": 10})
	var e *baton.Error
	if !errors.As(err, &e) || e.Code != baton.CodeInvalidArgument || e.Field != "lease_ms" {
		t.Fatalf("out of range: %v", err)
	}
	got, err = c.Configure(ctx, ns, map[string]int64{"lease_ms": -1})
	if err != nil || got["lease_ms"] != 30000 {
		t.Fatalf("back to default: %v %v", got, err)
	}
}

// Concurrent single Enqueue calls share baton_v2_enqueue calls; every caller still gets its own
// result, in order of its own task, and a refused task fails only its own caller.
func TestConcurrentEnqueueSharesCalls(t *testing.T) {
	ctx := context.Background()
	c := newClient(t)
	ns := newNS()
	const n = 400
	type out struct {
		r   *baton.EnqueueResult
		err error
	}
	results := make([]out, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			opts := []baton.EnqueueOption{baton.TaskID(fmt.Sprintf("task-%d", i%(n/2)))}
			if i%50 == 7 { // the functions refuse an empty unique key's TTL; the client catches it first
				opts = append(opts, baton.Unique("k", 0))
			}
			r, err := c.Enqueue(ctx, ns, "t", map[string]int{"i": i}, opts...)
			results[i] = out{r, err}
		}(i)
	}
	wg.Wait()
	queuedPerID := map[string]int{}
	for i, o := range results {
		id := fmt.Sprintf("task-%d", i%(n/2))
		if i%50 == 7 {
			if !errors.Is(o.err, baton.ErrInvalidArgument) {
				t.Fatalf("request %d: %v, want invalid_argument", i, o.err)
			}
			continue
		}
		if o.err != nil || o.r.TaskID != id {
			t.Fatalf("request %d: %+v %v", i, o.r, o.err)
		}
		switch o.r.Outcome {
		case baton.Queued:
			queuedPerID[id]++
		case baton.Duplicate:
		default:
			t.Fatalf("request %d: %+v", i, o.r)
		}
	}
	for i := 0; i < n/2; i++ {
		id := fmt.Sprintf("task-%d", i)
		both := i%50 == 7 && (i+n/2)%50 == 7
		if want := map[bool]int{true: 0, false: 1}[both]; queuedPerID[id] != want {
			t.Fatalf("%s queued %d times", id, queuedPerID[id])
		}
	}
}
