package baton_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	baton "github.com/baton-dev/baton/sdk/go"
)

// The crash-recovery test re-executes this test binary as a worker process (TestMain sees
// crashWorkerEnv), kills it with SIGKILL while it runs tasks, and checks that every task still
// finishes: the dead worker's leases expire and a reaper (batond when built, else the SDK's
// own maintenance in a second worker) hands its tasks to the next worker.
const crashWorkerEnv = "BATON_GO_CRASH_WORKER"

// crashWorkerMain runs a worker for (BATON_NS, "crash") that appends "<task id>\n" to
// BATON_REPORT as each task starts and takes 400 ms per task, until killed.
func crashWorkerMain() int {
	report, err := os.OpenFile(os.Getenv("BATON_REPORT"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var mu sync.Mutex
	w, err := baton.NewWorker(os.Getenv("BATON_REDIS_URL"), baton.WithService("crash-victim"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	_ = w.HandleFunc(os.Getenv("BATON_NS"), "crash", func(ctx context.Context, t *baton.Task) error {
		mu.Lock()
		fmt.Fprintln(report, t.ID)
		mu.Unlock()
		select {
		case <-time.After(400 * time.Millisecond):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}, baton.Concurrency(4), baton.Lease(time.Second))
	if err := w.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func countLines(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	for s := bufio.NewScanner(f); s.Scan(); {
		n++
	}
	return n
}

// TestCrashRecoveryKill9 runs twice: the dead worker's tasks are reclaimed by the SDK's own
// maintenance in the next worker, and by batond (from BATON_BUILD_DIR).
func TestCrashRecoveryKill9(t *testing.T) {
	t.Run("maintenance", func(t *testing.T) { crashRecovery(t, "") })
	t.Run("batond", func(t *testing.T) { crashRecovery(t, cppBinary(t, "daemon/batond")) })
}

func crashRecovery(t *testing.T, batond string) {
	ctx := context.Background()
	ns := newNS()
	c := newClient(t)
	const n = 40
	ids := make([]string, n)
	reqs := make([]baton.Request, n)
	for i := range reqs {
		reqs[i] = baton.Request{Namespace: ns, Type: "crash", Payload: map[string]int{"i": i},
			Options: []baton.EnqueueOption{baton.MaxRetry(5)}}
	}
	res, err := c.EnqueueMany(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		ids[i] = r.TaskID
	}

	report := t.TempDir() + "/started"
	victim := exec.Command(os.Args[0], "-test.run=^$")
	victim.Env = append(os.Environ(), crashWorkerEnv+"=1", "BATON_NS="+ns, "BATON_REPORT="+report,
		"BATON_REDIS_URL="+srv.URL())
	victim.Stderr = os.Stderr
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the victim to start tasks", func() bool { return countLines(report) >= 6 })
	if err := victim.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = victim.Wait()
	rdb := rawClient(t)
	held, err := rdb.XPending(ctx, keyOf(ns, "stream:crash"), "baton").Result()
	if err != nil || held.Count == 0 {
		t.Fatalf("the killed worker should hold delivered tasks (%+v, %v)", held, err)
	}

	// The rescuer: reclaim by batond, or by the SDK's own maintenance.
	opts := []baton.WorkerOption{baton.WithService("rescuer"), baton.WithLogger(testLogger(t))}
	if batond != "" {
		d := exec.Command(batond, "--redis-url", srv.URL(), "--namespaces", ns, "--log-level", "warn")
		d.Stderr = os.Stderr
		if err := d.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.Process.Signal(syscall.SIGTERM); _ = d.Wait() })
		t.Logf("reclaiming with %s", batond)
	} else {
		opts = append(opts, baton.WithMaintenance(true))
		t.Logf("reclaiming with the SDK's maintenance")
	}
	var mu sync.Mutex
	ran := map[string]int{}
	w, err := baton.NewWorker(srv.URL(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	_ = w.HandleFunc(ns, "crash", func(ctx context.Context, task *baton.Task) error {
		mu.Lock()
		ran[task.ID]++
		mu.Unlock()
		return nil
	}, baton.Concurrency(8), baton.Lease(time.Second))
	startWorker(t, w)

	done := func() int {
		finished := 0
		for _, id := range ids {
			if _, err := rdb.ZScore(ctx, keyOf(ns, "done"), id).Result(); err == nil {
				finished++
			}
		}
		return finished
	}
	waitFor(t, 90*time.Second, "every task to finish", func() bool { return done() == n })
	errs, err := rdb.HGetAll(ctx, keyOf(ns, "errors")).Result()
	if err != nil {
		t.Fatal(err)
	}
	if dead, _ := rdb.ZCard(ctx, keyOf(ns, "dead:crash")).Result(); dead != 0 {
		t.Fatalf("%d tasks dead-lettered", dead)
	}
	// The reclaimed tasks' error history was deleted by their ack; the events say what
	// happened: the killed worker's tasks went active -> retry with lease_expired.
	events, err := rdb.XRange(ctx, keyOf(ns, "events"), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	reclaimed := 0
	for _, e := range events {
		if e.Values["to"] == "retry" && strings.Contains(fmt.Sprint(e.Values["error"]), "lease expired") {
			reclaimed++
		}
	}
	if reclaimed == 0 {
		t.Fatalf("no lease_expired reclaim among %d events (errors left: %v)", len(events), errs)
	}
	t.Logf("%d tasks started by the killed worker, %d reclaimed after kill -9, all %d done", countLines(report), reclaimed, n)
}
