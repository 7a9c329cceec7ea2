package baton_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	baton "github.com/baton-dev/baton/sdk/go"
	"github.com/redis/go-redis/v9"
)

const partitionsKey = "baton:v2:partitions" // docs/cluster.md, "Partitions"

// ranTasks records the tasks handlers ran: how often each id, and the namespace they saw.
type ranTasks struct {
	mu    sync.Mutex
	count map[string]int
	nsBad []string // task.Namespace values other than the registered namespace
}

func newRanTasks() *ranTasks { return &ranTasks{count: map[string]int{}} }

func (r *ranTasks) handler(ns string) func(context.Context, *baton.Task) error {
	return func(_ context.Context, task *baton.Task) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.count[task.ID]++
		if task.Namespace != ns {
			r.nsBad = append(r.nsBad, task.Namespace)
		}
		return nil
	}
}

// check asserts every id in want ran exactly once, nothing else ran, and handlers saw ns.
func (r *ranTasks) check(t *testing.T, want map[string]bool) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for id := range want {
		if r.count[id] != 1 {
			t.Errorf("task %s ran %d times", id, r.count[id])
		}
	}
	if len(r.count) != len(want) {
		t.Errorf("%d tasks ran, %d enqueued", len(r.count), len(want))
	}
	if len(r.nsBad) > 0 {
		t.Errorf("handlers saw namespaces %v", r.nsBad[:min(len(r.nsBad), 5)])
	}
}

// doneIn reports whether task id ended done in the done set of storage namespace storage.
func doneIn(rdb redis.Cmdable, storage, id string) bool {
	return rdb.ZScore(context.Background(), keyOf(storage, "done"), id).Err() == nil
}

// P=4 on a single Redis: tasks enqueued one by one and in batches (two types) land in the
// partition of their id, every partition gets some, each runs once with task.Namespace = NS, and
// an id enqueued again is a duplicate, before and after the producer's count was read again.
func TestPartitionsSpreadTasksAndRunThemOnce(t *testing.T) {
	t.Parallel() // mostly waits for the refresh period, as the next test does
	ctx := context.Background()
	ns := newNS()
	rdb := rawClient(t)
	const P = 4
	rdb.HSet(ctx, partitionsKey, ns, P)
	c := newClient(t)
	started := time.Now()

	want := map[string]bool{}
	typeOf := map[string]string{}
	for i := 0; i < 100; i++ {
		id := "single-" + strconv.Itoa(i)
		typ := []string{"a", "b"}[i%2]
		r, err := c.Enqueue(ctx, ns, typ, map[string]int{"i": i}, baton.TaskID(id))
		if err != nil || r.Outcome != baton.Queued {
			t.Fatalf("Enqueue %s: %+v, %v", id, r, err)
		}
		want[id], typeOf[id] = true, typ
	}
	for b := 0; b < 4; b++ {
		var reqs []baton.Request
		for i := 0; i < 25; i++ {
			id := "batch-" + strconv.Itoa(b*25+i)
			typ := []string{"a", "b"}[i%2]
			reqs = append(reqs, baton.Request{Namespace: ns, Type: typ, Payload: map[string]int{"i": i}, Options: []baton.EnqueueOption{baton.TaskID(id)}})
			want[id], typeOf[id] = true, typ
		}
		results, err := c.EnqueueMany(ctx, reqs)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range results {
			if r.Outcome != baton.Queued {
				t.Fatalf("EnqueueMany result %d: %+v", i, r)
			}
		}
	}

	// Where they are: each task in its partition's tasks hash and stream, in no other partition.
	perPartition := make([]int, P)
	for id := range want {
		home := baton.PartitionOf(id, P)
		perPartition[home]++
		for p := 0; p < P; p++ {
			storage := baton.StorageNamespace(ns, p)
			has := rdb.HExists(ctx, keyOf(storage, "tasks"), id).Val()
			if has != (p == home) {
				t.Fatalf("task %s (partition %d): in %s = %v", id, home, storage, has)
			}
		}
	}
	for p := 0; p < P; p++ {
		storage := baton.StorageNamespace(ns, p)
		n := rdb.XLen(ctx, keyOf(storage, "stream:a")).Val() + rdb.XLen(ctx, keyOf(storage, "stream:b")).Val()
		if perPartition[p] == 0 || n != int64(perPartition[p]) {
			t.Fatalf("partition %d: %d stream entries, %d tasks hashed there (all: %v)", p, n, perPartition[p], perPartition)
		}
	}
	t.Logf("tasks per partition: %v", perPartition)

	ran := newRanTasks()
	w, err := baton.NewWorker(srv.URL(), baton.WithConcurrency(4), baton.WithBlock(100*time.Millisecond), baton.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	_ = w.HandleFunc(ns, "a", ran.handler(ns))
	_ = w.HandleFunc(ns, "b", ran.handler(ns))
	startWorker(t, w)
	waitFor(t, 20*time.Second, "200 tasks done", func() bool {
		for id := range want {
			if !doneIn(rdb, baton.StorageNamespace(ns, baton.PartitionOf(id, P)), id) {
				return false
			}
		}
		return true
	})

	dupes := func(when string) {
		t.Helper()
		r, err := c.Enqueue(ctx, ns, "a", map[string]int{}, baton.TaskID("single-0"))
		if err != nil || r.Outcome != baton.Duplicate || r.State != "done" {
			t.Fatalf("%s: Enqueue of a done id: %+v, %v", when, r, err)
		}
		results, err := c.EnqueueMany(ctx, []baton.Request{
			{Namespace: ns, Type: "b", Payload: map[string]int{}, Options: []baton.EnqueueOption{baton.TaskID("batch-1")}},
			{Namespace: ns, Type: "a", Payload: map[string]int{}, Options: []baton.EnqueueOption{baton.TaskID("single-2")}},
		})
		if err != nil || results[0].Outcome != baton.Duplicate || results[1].Outcome != baton.Duplicate {
			t.Fatalf("%s: EnqueueMany of done ids: %+v, %v", when, results, err)
		}
	}
	dupes("with the count read at the first enqueue")
	// Past the refresh period the producer reads the count again (still 4): same partitions.
	time.Sleep(time.Until(started.Add(5200 * time.Millisecond)))
	dupes("after the count was read again")
	time.Sleep(200 * time.Millisecond) // nothing more runs
	ran.check(t, want)
	if s := w.Stats(); s.Succeeded != uint64(len(want)) {
		t.Errorf("stats: %+v, want %d succeeded", s, len(want))
	}
}

// A worker started with P=1 serves the partitions added while it runs (P=3) within the refresh
// period, without a restart.
func TestPartitionsGrowWhileWorkerRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNS()
	rdb := rawClient(t)
	ran := newRanTasks()
	w, err := baton.NewWorker(srv.URL(), baton.WithConcurrency(4), baton.WithBlock(100*time.Millisecond),
		baton.WithLogger(testLogger(t)), baton.WithMaintenance(true))
	if err != nil {
		t.Fatal(err)
	}
	_ = w.HandleFunc(ns, "job", ran.handler(ns))
	startWorker(t, w)

	rdb.HSet(ctx, partitionsKey, ns, 3)
	grown := time.Now()
	c := newClient(t)
	want := map[string]bool{}
	perPartition := make([]int, 3)
	for i := 0; i < 60; i++ {
		id := "grow-" + strconv.Itoa(i)
		if r, err := c.Enqueue(ctx, ns, "job", map[string]int{"i": i}, baton.TaskID(id)); err != nil || r.Outcome != baton.Queued {
			t.Fatalf("Enqueue: %+v, %v", r, err)
		}
		want[id] = true
		perPartition[baton.PartitionOf(id, 3)]++
	}
	if perPartition[1] == 0 || perPartition[2] == 0 {
		t.Fatalf("the ids do not reach the new partitions: %v", perPartition)
	}
	waitFor(t, 12*time.Second, "every task done, the new partitions' too", func() bool {
		for id := range want {
			if !doneIn(rdb, baton.StorageNamespace(ns, baton.PartitionOf(id, 3)), id) {
				return false
			}
		}
		return true
	})
	took := time.Since(grown)
	t.Logf("all %d tasks (per partition %v) done %v after the count grew", len(want), perPartition, took.Round(time.Millisecond))
	if took > 8*time.Second {
		t.Errorf("the new partitions were served after %v (refresh period 5 s)", took)
	}
	ran.check(t, want)
}

// Cancel finds a task in the id's partition or, enqueued before the namespace grew, in another;
// Configure writes every partition.
func TestPartitionsCancelAndConfigure(t *testing.T) {
	ctx := context.Background()
	ns := newNS()
	rdb := rawClient(t)
	before := newClient(t) // P = 1 for this one
	var old string         // an id whose partition of 3 is not 0: enqueued in 0 before the growth
	for i := 0; old == ""; i++ {
		if id := "old-" + strconv.Itoa(i); baton.PartitionOf(id, 3) != 0 {
			old = id
		}
	}
	if _, err := before.Enqueue(ctx, ns, "job", map[string]int{}, baton.TaskID(old), baton.Delay(time.Hour)); err != nil {
		t.Fatal(err)
	}
	rdb.HSet(ctx, partitionsKey, ns, 3)
	c := newClient(t)
	var fresh []string // one id per partition
	for i := 0; len(fresh) < 3; i++ {
		id := "new-" + strconv.Itoa(i)
		if baton.PartitionOf(id, 3) == len(fresh) {
			fresh = append(fresh, id)
		}
	}
	for _, id := range fresh {
		if _, err := c.Enqueue(ctx, ns, "job", map[string]int{}, baton.TaskID(id), baton.Delay(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range append(fresh, old) {
		if err := c.Cancel(ctx, ns, id); err != nil {
			t.Fatalf("Cancel %s: %v", id, err)
		}
		if err := c.Cancel(ctx, ns, id); !errors.Is(err, baton.ErrNotFound) {
			t.Fatalf("Cancel %s again: %v, want not_found", id, err)
		}
	}
	if err := c.Cancel(ctx, ns, "never-enqueued"); !errors.Is(err, baton.ErrNotFound) {
		t.Fatalf("Cancel of an unknown id: %v, want not_found", err)
	}
	for p := 0; p < 3; p++ {
		if n := rdb.ZCard(ctx, keyOf(baton.StorageNamespace(ns, p), "scheduled:job")).Val(); n != 0 {
			t.Errorf("partition %d still has %d scheduled tasks", p, n)
		}
	}

	got, err := c.Configure(ctx, ns, map[string]int64{"lease_ms": 12345})
	if err != nil || got["lease_ms"] != 12345 {
		t.Fatalf("Configure: %v, %v", got, err)
	}
	for p := 0; p < 3; p++ {
		if v := rdb.HGet(ctx, keyOf(baton.StorageNamespace(ns, p), "config"), "lease_ms").Val(); v != "12345" {
			t.Errorf("partition %d: lease_ms %q", p, v)
		}
	}
	if _, err := c.Configure(ctx, ns, map[string]int64{"lease_ms": 1}); !errors.Is(err, baton.ErrInvalidArgument) {
		t.Fatalf("Configure out of range: %v", err)
	}
	if v := rdb.HGet(ctx, keyOf(baton.StorageNamespace(ns, 2), "config"), "lease_ms").Val(); v != "12345" {
		t.Errorf("a refused Configure changed partition 2: lease_ms %q", v)
	}
}

// Producers whose copy of the count (P=1, read by an enqueue) is older than a growth to 4 still
// reach the new partitions with the calls that must see every one: Configure writes all four, and
// Cancel finds a task in partition 3. Each stale client makes one call, since the call refreshes
// that client's copy.
func TestPartitionsConfigureAndCancelReadACountGrownAMomentAgo(t *testing.T) {
	ctx := context.Background()
	ns := newNS()
	rdb := rawClient(t)
	staleConfigure, staleCancel := newClient(t), newClient(t)
	for i, c := range []*baton.Client{staleConfigure, staleCancel} {
		if _, err := c.Enqueue(ctx, ns, "job", map[string]int{}, baton.TaskID("warm-"+strconv.Itoa(i)), baton.Delay(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	rdb.HSet(ctx, partitionsKey, ns, 4)

	if _, err := staleConfigure.Configure(ctx, ns, map[string]int64{"lease_ms": 6000}); err != nil {
		t.Fatal(err)
	}
	for p := 0; p < 4; p++ {
		if v := rdb.HGet(ctx, keyOf(baton.StorageNamespace(ns, p), "config"), "lease_ms").Val(); v != "6000" {
			t.Errorf("partition %d: lease_ms %q after Configure, want 6000", p, v)
		}
	}

	var id string
	for i := 0; id == ""; i++ {
		if candidate := "grown-" + strconv.Itoa(i); baton.PartitionOf(candidate, 4) == 3 {
			id = candidate
		}
	}
	if _, err := newClient(t).Enqueue(ctx, ns, "job", map[string]int{}, baton.TaskID(id), baton.Delay(time.Hour)); err != nil {
		t.Fatal(err)
	}
	scheduled := keyOf(baton.StorageNamespace(ns, 3), "scheduled:job")
	if n := rdb.ZCard(ctx, scheduled).Val(); n != 1 {
		t.Fatalf("partition 3 has %d scheduled tasks, want 1", n)
	}
	if err := staleCancel.Cancel(ctx, ns, id); err != nil {
		t.Fatalf("Cancel of a task in partition 3 by a client that read P=1: %v", err)
	}
	if n := rdb.ZCard(ctx, scheduled).Val(); n != 0 {
		t.Errorf("partition 3 still has %d scheduled tasks", n)
	}
}
