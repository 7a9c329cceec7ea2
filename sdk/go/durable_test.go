package baton_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	baton "github.com/baton-dev/baton/sdk/go"
)

// WaitReplicas on a single Redis: met with its one replica, not met when asking for two, and
// not met without replicas; a task whose WAIT fell short is written and its result returned.
func TestWaitReplicasOnASingleRedisWithAReplica(t *testing.T) {
	ctx := context.Background()
	primary, err := startServer(t)
	if err != nil {
		t.Fatal(err)
	}
	replica, err := startServer(t)
	if err != nil {
		t.Fatal(err)
	}
	pc := primary.Client()
	defer pc.Close()
	// The first sync otherwise waits 5 s for more replicas (repl-diskless-sync-delay).
	if err := pc.ConfigSet(ctx, "repl-diskless-sync-delay", "0").Err(); err != nil {
		t.Fatal(err)
	}
	rc := replica.Client()
	defer rc.Close()
	if err := rc.SlaveOf(ctx, "127.0.0.1", strconv.Itoa(primary.Port)).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the replica in sync", func() bool {
		info, _ := rc.Info(ctx, "replication").Result()
		return strings.Contains(info, "master_link_status:up")
	})
	ns := newNS()
	one, err := baton.NewClient(ctx, primary.URL(), baton.WaitReplicas(1))
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	if r, err := one.Enqueue(ctx, ns, "job", map[string]any{}); err != nil || r.Outcome != baton.Queued {
		t.Fatalf("WaitReplicas(1) with one replica: %+v, %v", r, err)
	}
	if _, err := one.EnqueueMany(ctx, []baton.Request{{Namespace: ns, Type: "a", Payload: map[string]any{}},
		{Namespace: newNS(), Type: "b", Payload: map[string]any{}}}); err != nil {
		t.Fatalf("EnqueueMany with WaitReplicas(1) and one replica: %v", err)
	}

	two, err := baton.NewClient(ctx, primary.URL(), baton.WaitReplicas(2), baton.WaitTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer two.Close()
	r, err := two.Enqueue(ctx, ns, "job", map[string]any{})
	const want = "enqueue: unavailable: written on the primary but acknowledged by only 1 of 2 replicas within 100 ms: it may still run but is not known to be durable"
	if err == nil || err.Error() != want || !errors.Is(err, baton.ErrUnavailable) || r == nil || r.Outcome != baton.Queued {
		t.Fatalf("WaitReplicas(2) with one replica: %+v, %v", r, err)
	}
	waitFor(t, 5*time.Second, "the task on the replica", func() bool {
		return rc.HExists(ctx, "baton:v2:{"+ns+"}:tasks", r.TaskID).Val()
	})

	// The shared server has no replica.
	lone := newClient(t, baton.WaitReplicas(1), baton.WaitTimeout(50*time.Millisecond))
	_, err = lone.Enqueue(ctx, newNS(), "job", map[string]any{})
	if err == nil || !strings.Contains(err.Error(), "acknowledged by only 0 of 1 replicas within 50 ms") {
		t.Fatalf("WaitReplicas(1) without a replica: %v", err)
	}
}
