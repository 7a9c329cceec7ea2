package baton_test

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	baton "github.com/baton-dev/baton/sdk/go"
	"github.com/redis/go-redis/v9"
)

// busyScript keeps Redis busy for ARGV[1] microseconds: every other client waits meanwhile.
const busyScript = `local t0 = redis.call('TIME')
repeat local t = redis.call('TIME') until (t[1] - t0[1]) * 1000000 + (t[2] - t0[2]) > tonumber(ARGV[1])`

// keepBusy runs busyScript for d on a connection of its own; the returned function waits for it.
func keepBusy(t *testing.T, rdb *redis.Client, d time.Duration) (wait func()) {
	t.Helper()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := rdb.Eval(context.Background(), busyScript, nil, d.Microseconds()).Err(); err != nil && err != redis.Nil {
			t.Errorf("busy script: %v", err)
		}
	}()
	time.Sleep(50 * time.Millisecond) // the script has started
	return wg.Wait
}

// fcallCalls is how many FCALLs Redis has run (INFO commandstats).
func fcallCalls(t *testing.T, rdb *redis.Client) int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^cmdstat_fcall:calls=(\d+)`).FindStringSubmatch(info)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// An Enqueue or EnqueueMany whose context already ended writes nothing and returns the context
// error, which is not the retryable unavailable.
func TestEnqueueWithEndedContextWritesNothing(t *testing.T) {
	c := newClient(t)
	rdb := rawClient(t)
	ns := newNS()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	for _, tc := range []struct {
		ctx  context.Context
		want error
	}{{cancelled, context.Canceled}, {expired, context.DeadlineExceeded}} {
		_, err := c.Enqueue(tc.ctx, ns, "t", []byte(`{}`))
		if !errors.Is(err, tc.want) || errors.Is(err, baton.ErrUnavailable) {
			t.Fatalf("Enqueue: %v, want %v", err, tc.want)
		}
		_, err = c.EnqueueMany(tc.ctx, []baton.Request{{Namespace: ns, Type: "t", Payload: []byte(`{}`)}})
		if !errors.Is(err, tc.want) || errors.Is(err, baton.ErrUnavailable) {
			t.Fatalf("EnqueueMany: %v, want %v", err, tc.want)
		}
	}
	if n, err := rdb.HLen(context.Background(), keyOf(ns, "tasks")).Result(); err != nil || n != 0 {
		t.Fatalf("%d tasks written (%v)", n, err)
	}
}

// A context deadline bounds the call itself, not only the wait for a connection: with Redis
// busy, Enqueue returns at its deadline instead of after go-redis' read timeout (3 s).
func TestEnqueueDeadlineBoundsTheCall(t *testing.T) {
	s, err := startServer(t)
	if err != nil {
		t.Fatal(err)
	}
	c, err := baton.NewClient(context.Background(), s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rdb := s.Client()
	defer rdb.Close()
	wait := keepBusy(t, rdb, 1500*time.Millisecond)
	defer wait()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = c.Enqueue(ctx, newNS(), "t", []byte(`{}`))
	if err == nil || time.Since(start) > time.Second {
		t.Fatalf("Enqueue returned %v after %v, want an error at its 200ms deadline", err, time.Since(start))
	}

	// A caller waiting behind another caller's call gives up at its deadline, with the context
	// error (not unavailable: retrying cannot help it), and its task is not sent.
	ns := newNS()
	lead := make(chan error, 1)
	go func() {
		_, err := c.Enqueue(context.Background(), ns, "t", []byte(`{}`))
		lead <- err
	}()
	time.Sleep(50 * time.Millisecond) // the lead's call is in flight
	ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = c.Enqueue(ctx, ns, "t", []byte(`{}`), baton.TaskID("waiter"))
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, baton.ErrUnavailable) {
		t.Fatalf("waiting Enqueue: %v, want context.DeadlineExceeded", err)
	}
	wait()
	if err := <-lead; err != nil {
		t.Fatalf("lead Enqueue: %v", err)
	}
	if rdb.HExists(context.Background(), keyOf(ns, "tasks"), "waiter").Val() {
		t.Fatal("the withdrawn task was written")
	}
}

// go-redis does not send a baton_v2_enqueue again after a read timeout: the first one may have
// run (here it did, once Redis was free again), and a second would answer Duplicate for the
// caller's own new task.
func TestEnqueueIsNotResentAfterReadTimeout(t *testing.T) {
	s, err := startServer(t)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := baton.NewClient(ctx, s.URL(), baton.WithRedisOptions(func(o *redis.Options) {
		o.ReadTimeout = 100 * time.Millisecond
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Idle connections in the pool, so that a resent command needs no new connection.
	var warm sync.WaitGroup
	for i := 0; i < 4; i++ {
		warm.Add(1)
		go func() { defer warm.Done(); _ = c.Redis().Ping(ctx).Err() }()
	}
	warm.Wait()
	rdb := s.Client()
	defer rdb.Close()
	ns := newNS()
	// The namespace's partition count is read at its first enqueue (then kept 5 s): read it now,
	// so that the Enqueue below sends only its baton_v2_enqueue.
	if _, err := c.Enqueue(ctx, ns, "t", []byte(`{}`), baton.TaskID("warm")); err != nil {
		t.Fatal(err)
	}
	before := fcallCalls(t, rdb)
	wait := keepBusy(t, rdb, 350*time.Millisecond)
	r, err := c.Enqueue(ctx, ns, "t", []byte(`{}`), baton.TaskID("once"))
	wait()
	if err == nil {
		t.Fatalf("Enqueue answered %+v while Redis was busy past the read timeout", r)
	}
	if !errors.Is(err, baton.ErrUnavailable) {
		t.Fatalf("err %v, want unavailable", err)
	}
	// Redis reads the command of the abandoned connection once the script ends.
	waitFor(t, 5*time.Second, "the task record", func() bool {
		return rdb.HExists(ctx, keyOf(ns, "tasks"), "once").Val()
	})
	time.Sleep(100 * time.Millisecond) // and any command sent after it
	if calls := fcallCalls(t, rdb) - before; calls != 1 {
		t.Fatalf("Redis ran %d FCALLs for one Enqueue", calls)
	}
	// It did run: the same id again is a Duplicate (a retry with the same TaskID is safe).
	r, err = c.Enqueue(ctx, ns, "t", []byte(`{}`), baton.TaskID("once"))
	if err != nil || r.Outcome != baton.Duplicate {
		t.Fatalf("retry: %+v %v", r, err)
	}
}
