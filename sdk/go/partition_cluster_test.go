package baton_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	baton "github.com/baton-dev/baton/sdk/go"
)

// testClusterPartitions (a subtest of TestCluster): a namespace of 6 partitions whose partitions
// are on at least two primaries (from CLUSTER KEYSLOT and the slot map). A producer with
// WaitReplicas(1) enqueues one by one and in one batch; a worker serves every partition; every
// task ends done in its partition, once, and handlers see the namespace.
func testClusterPartitions(t *testing.T, cl *testCluster) {
	ctx := context.Background()
	const P = 6
	slots, err := cl.raw.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	primaryOfSlot := func(slot int64) string {
		for _, s := range slots {
			if int64(s.Start) <= slot && slot <= int64(s.End) {
				return s.Nodes[0].Addr
			}
		}
		t.Fatalf("slot %d is in no range of CLUSTER SLOTS", slot)
		return ""
	}
	var ns string
	var primaries map[string][]int // primary -> partitions it holds
	for i := 0; ns == ""; i++ {
		if i == 20 {
			t.Fatalf("20 namespaces had all %d partitions on one primary", P)
		}
		candidate := "gocl-part" + strconv.Itoa(i)
		primaries = map[string][]int{}
		for p := 0; p < P; p++ {
			slot, err := cl.raw.ClusterKeySlot(ctx, keyOf(baton.StorageNamespace(candidate, p), "stream:job")).Result()
			if err != nil {
				t.Fatal(err)
			}
			addr := primaryOfSlot(slot)
			primaries[addr] = append(primaries[addr], p)
		}
		if len(primaries) >= 2 {
			ns = candidate
		}
	}
	t.Logf("namespace %s: partitions by primary %v", ns, primaries)
	if err := cl.raw.HSet(ctx, partitionsKey, ns, P).Err(); err != nil {
		t.Fatal(err)
	}

	c, err := baton.NewClient(ctx, cl.URL, baton.WaitReplicas(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ran := newRanTasks()
	w := newClusterWorker(t, cl.URL)
	if err := w.HandleFunc(ns, "job", ran.handler(ns)); err != nil {
		t.Fatal(err)
	}
	startWorker(t, w)

	want := map[string]bool{}
	for i := 0; i < 60; i++ {
		r, err := c.Enqueue(ctx, ns, "job", map[string]int{"i": i}, baton.TaskID("one-"+strconv.Itoa(i)))
		if err != nil || r.Outcome != baton.Queued {
			t.Fatalf("Enqueue: %+v, %v", r, err)
		}
		want[r.TaskID] = true
	}
	var reqs []baton.Request
	for i := 0; i < 60; i++ {
		reqs = append(reqs, baton.Request{Namespace: ns, Type: "job", Payload: map[string]int{"i": i},
			Options: []baton.EnqueueOption{baton.TaskID("many-" + strconv.Itoa(i))}})
	}
	results, err := c.EnqueueMany(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	perPartition := make([]int, P)
	for i, r := range results {
		if r.Outcome != baton.Queued {
			t.Fatalf("EnqueueMany result %d: %+v", i, r)
		}
		want[r.TaskID] = true
	}
	for id := range want {
		perPartition[baton.PartitionOf(id, P)]++
	}
	started := time.Now()
	waitFor(t, 20*time.Second, "every task done in its partition", func() bool {
		for id := range want {
			if !doneIn(cl.raw, baton.StorageNamespace(ns, baton.PartitionOf(id, P)), id) {
				return false
			}
		}
		return true
	})
	t.Logf("%d tasks (per partition %v) done %v after the last enqueue", len(want), perPartition, time.Since(started).Round(time.Millisecond))
	time.Sleep(200 * time.Millisecond)
	ran.check(t, want)
}
