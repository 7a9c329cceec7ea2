package baton

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// A lease lost right after the task was handed to a pool goroutine, while its delivery is still
// being decoded, reaches the handler: its context ends with ErrLeaseLost.
func TestLeaseLostBeforeTheHandlerStartsCancelsIt(t *testing.T) {
	w := &Worker{cfg: defaultWorkerConfig(), baseCtx: context.Background()}
	cause := make(chan error, 1)
	h := HandlerFunc(func(ctx context.Context, _ *Task) error {
		select {
		case <-ctx.Done():
			cause <- context.Cause(ctx)
		case <-time.After(5 * time.Second):
			cause <- nil
		}
		return nil
	})
	r := newRunner(w, "ns", 0, "t", h, typeConfig{concurrency: 1, retry: DefaultRetryPolicy})
	// A payload near the size limit, so that decoding it keeps the attempt between its
	// registration and the handler's start for a while.
	payload := `{"n":[1` + strings.Repeat(",1", MaxPayloadBytes/2-16) + `]}`
	d := &delivery{sid: "1-1", id: "lost-early", payload: payload, maxRetry: "0", delay: "0",
		created: strconv.FormatInt(time.Now().Unix(), 10), attempt: "1"}
	r.inFlight = 1
	done := make(chan struct{})
	go func() { defer close(done); r.runOne(d) }()
	for registered := false; !registered; {
		r.mu.Lock()
		registered = r.running[d.sid] != nil
		r.mu.Unlock()
		runtime.Gosched()
	}
	r.leaseLost([]extendItem{{ID: d.id, SID: d.sid}}, nil)
	if got := <-cause; !errors.Is(got, ErrLeaseLost) {
		t.Fatalf("the handler's context cause is %v, want ErrLeaseLost", got)
	}
	<-done
}

// The stack of a timed-out handler is found also when the dump of all goroutines is larger
// than the first buffer (1 MiB).
func TestGoroutineStackWithManyGoroutines(t *testing.T) {
	stop := make(chan struct{})
	var parked sync.WaitGroup
	for i := 0; i < 20000; i++ { // about 3 MiB of stack dump, created before the target
		parked.Add(1)
		go func() { defer parked.Done(); <-stop }()
	}
	defer func() { close(stop); parked.Wait() }()
	gid := make(chan uint64)
	release := make(chan struct{})
	defer close(release)
	go func() {
		gid <- goroutineID()
		<-release
	}()
	id := <-gid
	got := goroutineStack(id)
	if !strings.Contains(got, "goroutine "+strconv.FormatUint(id, 10)+" [") ||
		!strings.Contains(got, "TestGoroutineStackWithManyGoroutines") {
		t.Fatalf("stack of goroutine %d not found (got %q)", id, got)
	}
}
