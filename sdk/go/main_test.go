package baton_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	baton "github.com/baton-dev/baton/sdk/go"
	"github.com/baton-dev/baton/sdk/go/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// srv is the redis-server shared by the tests of this package; each test works in a namespace
// of its own. Tests that restart Redis start their own.
var srv *redistest.Server

func TestMain(m *testing.M) {
	if os.Getenv(crashWorkerEnv) != "" { // this binary re-executed as a worker process
		os.Exit(crashWorkerMain())
	}
	// go-redis logs failed dials to stderr through its own global logger; the tests that stop
	// Redis on purpose would fill the output with them.
	redis.SetLogger(quietRedisLog{})
	var err error
	srv, err = redistest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "redistest:", err)
		os.Exit(1)
	}
	os.Setenv("BATON_REDIS_URL", srv.URL()) // for the Example functions
	code := m.Run()
	srv.Stop()
	os.Exit(code)
}

var nsCounter atomic.Int64

// newNS returns a namespace no other test uses.
func newNS() string { return "gotest" + strconv.FormatInt(nsCounter.Add(1), 10) }

func newClient(t *testing.T, opts ...baton.ClientOption) *baton.Client {
	t.Helper()
	c, err := baton.NewClient(context.Background(), srv.URL(), opts...)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func rawClient(t *testing.T) *redis.Client {
	t.Helper()
	c := srv.Client()
	t.Cleanup(func() { c.Close() })
	return c
}

// startWorker starts w and shuts it down at the end of the test.
func startWorker(t *testing.T, w *baton.Worker) {
	t.Helper()
	if err := w.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = w.Shutdown(ctx)
	})
}

// waitFor polls cond until it holds or the (generous) timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// keyOf builds a key of namespace ns like docs/keyspace.md says (for reading state in tests).
func keyOf(ns, kind string) string { return "baton:v2:{" + ns + "}:" + kind }

// startServer starts a redis-server of the test's own (stopped at the end of the test).
func startServer(t *testing.T) (*redistest.Server, error) {
	s, err := redistest.Start()
	if err != nil {
		return nil, err
	}
	t.Cleanup(s.Stop)
	return s, nil
}

// testLogger is a slog.Logger writing to t.Log until the test's cleanups end.
func testLogger(t *testing.T) *slog.Logger {
	w := &testLogWriter{t: t}
	t.Cleanup(w.stop) // registered before the worker's shutdown: runs after it
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testLogWriter struct {
	mu      sync.Mutex
	t       *testing.T
	stopped bool
}

func (w *testLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.t.Log(strings.TrimSpace(string(p)))
	}
	return len(p), nil
}

func (w *testLogWriter) stop() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
}

// quietRedisLog drops go-redis' own log lines.
type quietRedisLog struct{}

func (quietRedisLog) Printf(context.Context, string, ...interface{}) {}
