package baton_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	baton "github.com/baton-dev/baton/sdk/go"
	"github.com/baton-dev/baton/sdk/go/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// clusterNode is one node of the harness' JSON line.
type clusterNode struct {
	Port int    `json:"port"`
	Role string `json:"role"`
	PID  int    `json:"pid"`
}

// testCluster is a 3-primary, 3-replica Redis Cluster started by tests/harness/redis_cluster.py
// with the functions library loaded; it lives until the test's cleanup closes its stdin.
type testCluster struct {
	URL   string        `json:"url"`
	Nodes []clusterNode `json:"nodes"`
	raw   *redis.ClusterClient
}

func startCluster(t *testing.T) *testCluster {
	t.Helper()
	script := filepath.Join(redistest.RepoRoot(), "tests", "harness", "redis_cluster.py")
	cmd := exec.Command("/usr/bin/python3", script, "--load-library")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close() // the harness stops every node and removes their directories
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("redis_cluster.py: %v: %s", err, stderr.String())
	}
	c := &testCluster{}
	if err := json.Unmarshal([]byte(line), c); err != nil {
		t.Fatalf("redis_cluster.py printed %q: %v", line, err)
	}
	seeds := strings.Split(strings.TrimPrefix(c.URL, "redis+cluster://"), ",")
	c.raw = redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds})
	t.Cleanup(func() { c.raw.Close() })
	return c
}

// primaryOf is the address of the primary that holds namespace ns.
func (c *testCluster) primaryOf(t *testing.T, ns string) *redis.Client {
	t.Helper()
	node, err := c.raw.MasterForKey(context.Background(), keyOf(ns, "tasks"))
	if err != nil {
		t.Fatal(err)
	}
	return node
}

// pidOf is the pid of the node at addr ("127.0.0.1:port").
func (c *testCluster) pidOf(t *testing.T, addr string) int {
	t.Helper()
	for _, n := range c.Nodes {
		if strings.HasSuffix(addr, ":"+strconv.Itoa(n.Port)) {
			return n.PID
		}
	}
	t.Fatalf("no node at %s in %+v", addr, c.Nodes)
	return 0
}

// spreadNamespaces returns one namespace per primary (each in a slot of a different primary).
func (c *testCluster) spreadNamespaces(t *testing.T, prefix string) []string {
	t.Helper()
	byPrimary := map[string]string{}
	var out []string
	for i := 0; len(out) < 3; i++ {
		if i > 1000 {
			t.Fatalf("found namespaces on only %d primaries", len(out))
		}
		ns := prefix + strconv.Itoa(i)
		addr := c.primaryOf(t, ns).Options().Addr
		if _, ok := byPrimary[addr]; !ok {
			byPrimary[addr] = ns
			out = append(out, ns)
		}
	}
	return out
}

// isDone reports whether task id of ns ended done (in its done set).
func (c *testCluster) isDone(ns, id string) bool {
	_, err := c.raw.ZScore(context.Background(), keyOf(ns, "done"), id).Result()
	return err == nil
}

func newClusterWorker(t *testing.T, url string, opts ...baton.WorkerOption) *baton.Worker {
	t.Helper()
	opts = append([]baton.WorkerOption{baton.WithLogger(testLogger(t)), baton.WithMaintenance(true),
		baton.WithBlock(200 * time.Millisecond), baton.WithRetry(baton.RetryPolicy{Base: 50 * time.Millisecond, Max: 100 * time.Millisecond}),
		baton.WithLease(2 * time.Second)}, opts...)
	w, err := baton.NewWorker(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// A bad redis+cluster:// URL is refused before any connection, by Client and Worker alike, with
// the field, the rule and the form, and never the password.
func TestClusterURLErrorsNameTheRule(t *testing.T) {
	const form = " (redis+cluster://host:port[,host:port...])"
	cases := map[string]string{
		"redis+cluster://h:1,h:2/0":                   "redis_url: redis+cluster:// takes no /db (a cluster has only db 0)",
		"redis+cluster://h:1,,h:2":                    "redis_url: seed 2: missing host" + form,
		"redis+cluster://":                            "redis_url: seed 1: missing host" + form,
		"redis+cluster://u:hunter2@h:1,h:x":           "redis_url: seed 2: port must be 1..65535 (got 'x')" + form,
		"redis+cluster://h:1,h:99999":                 "redis_url: seed 2: port must be 1..65535 (got '99999')" + form,
		"redis+cluster://h:0":                         "redis_url: seed 1: port must be 1..65535 (got '0')" + form,
		"redis+cluster://[::1:7000":                   "redis_url: seed 1: unterminated IPv6 address '['" + form,
		"redis+cluster://h:1?max_redirects=9":         "redis_url: redis+cluster:// takes no ?options (set them with WithRedisOptions)" + form,
		"redis+cluster://u:p%zz@h:1":                  "redis_url: user and password must be percent-encoded (bad '%' escape)",
		"redis+cluster://app:hunter2@h:1,h:2/1?x=y&z": "redis_url: redis+cluster:// takes no /db (a cluster has only db 0)",
	}
	for url, want := range cases {
		_, err := baton.NewClient(context.Background(), url)
		if err == nil || err.Error() != "connect: invalid_argument: "+want || !errors.Is(err, baton.ErrInvalidArgument) {
			t.Errorf("NewClient(%q) = %v, want connect: invalid_argument: %s", url, err, want)
		}
		_, err = baton.NewWorker(url)
		if err == nil || err.Error() != "worker: invalid_argument: "+want {
			t.Errorf("NewWorker(%q) = %v, want worker: invalid_argument: %s", url, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("the error of %q shows the password: %v", url, err)
		}
	}
}

// The SDK on a real 3-primary, 3-replica cluster: namespaces on every primary, every path of a
// task, the version check on every primary, WAIT, and a kill -9 of a primary.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 6-node Redis Cluster")
	}
	ctx := context.Background()
	cl := startCluster(t)

	t.Run("TasksRunOnEveryPrimary", func(t *testing.T) {
		nss := cl.spreadNamespaces(t, "gocl-run")
		c, err := baton.NewClient(ctx, cl.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if c.Redis() != nil {
			t.Fatal("Redis() is not nil on a cluster")
		}
		if _, ok := c.RedisUniversal().(*redis.ClusterClient); !ok {
			t.Fatalf("RedisUniversal() is a %T", c.RedisUniversal())
		}
		var mu sync.Mutex
		ran := map[string]int{}
		w := newClusterWorker(t, cl.URL)
		for _, ns := range nss {
			if err := w.HandleFunc(ns, "job", func(ctx context.Context, task *baton.Task) error {
				mu.Lock()
				ran[task.Namespace+"/"+task.ID]++
				mu.Unlock()
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		startWorker(t, w)
		// EnqueueMany across the three primaries (a cluster pipeline split per node), then
		// single Enqueue calls.
		var reqs []baton.Request
		for i := 0; i < 30; i++ {
			reqs = append(reqs, baton.Request{Namespace: nss[i%3], Type: "job", Payload: map[string]int{"i": i}})
		}
		results, err := c.EnqueueMany(ctx, reqs)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{}
		for i, r := range results {
			if r.Outcome != baton.Queued {
				t.Fatalf("request %d: %+v", i, r)
			}
			want[reqs[i].Namespace+"/"+r.TaskID] = reqs[i].Namespace
		}
		for i := 0; i < 9; i++ {
			r, err := c.Enqueue(ctx, nss[i%3], "job", map[string]int{"single": i})
			if err != nil {
				t.Fatal(err)
			}
			want[nss[i%3]+"/"+r.TaskID] = nss[i%3]
		}
		waitFor(t, 20*time.Second, "every task done", func() bool {
			for key, ns := range want {
				if !cl.isDone(ns, strings.TrimPrefix(key, ns+"/")) {
					return false
				}
			}
			return true
		})
		mu.Lock()
		defer mu.Unlock()
		for key := range want {
			if ran[key] != 1 {
				t.Errorf("%s ran %d times", key, ran[key])
			}
		}
		if len(ran) != len(want) {
			t.Errorf("%d tasks ran, %d enqueued", len(ran), len(want))
		}
	})

	t.Run("RetryDeadLetterAndDelay", func(t *testing.T) {
		ns := cl.spreadNamespaces(t, "gocl-fail")[1]
		c, err := baton.NewClient(ctx, cl.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var mu sync.Mutex
		attempts := 0
		var delayedAt time.Time
		w := newClusterWorker(t, cl.URL)
		_ = w.HandleFunc(ns, "fails", func(ctx context.Context, task *baton.Task) error {
			mu.Lock()
			attempts++
			mu.Unlock()
			return errors.New("always fails")
		})
		_ = w.HandleFunc(ns, "later", func(ctx context.Context, task *baton.Task) error {
			mu.Lock()
			delayedAt = time.Now()
			mu.Unlock()
			return nil
		})
		startWorker(t, w)
		failing, err := c.Enqueue(ctx, ns, "fails", map[string]any{}, baton.MaxRetry(2))
		if err != nil {
			t.Fatal(err)
		}
		enqueued := time.Now()
		later, err := c.Enqueue(ctx, ns, "later", map[string]any{}, baton.Delay(time.Second))
		if err != nil || later.Outcome != baton.Scheduled {
			t.Fatalf("delayed enqueue: %+v, %v", later, err)
		}
		waitFor(t, 20*time.Second, "the failing task dead-lettered", func() bool {
			_, err := cl.raw.ZScore(ctx, keyOf(ns, "dead:fails"), failing.TaskID).Result()
			return err == nil
		})
		waitFor(t, 20*time.Second, "the delayed task done", func() bool { return cl.isDone(ns, later.TaskID) })
		mu.Lock()
		defer mu.Unlock()
		if attempts != 3 {
			t.Errorf("the failing task ran %d times, want 3 (max_retry 2)", attempts)
		}
		if ran := delayedAt.Sub(enqueued); ran < 900*time.Millisecond {
			t.Errorf("the task delayed 1 s ran after %v", ran)
		}
	})

	t.Run("Partitions", func(t *testing.T) { testClusterPartitions(t, cl) })

	t.Run("WaitReplicas", func(t *testing.T) {
		nss := cl.spreadNamespaces(t, "gocl-wait")
		one, err := baton.NewClient(ctx, cl.URL, baton.WaitReplicas(1))
		if err != nil {
			t.Fatal(err)
		}
		defer one.Close()
		r, err := one.Enqueue(ctx, nss[0], "job", map[string]any{})
		if err != nil || r.Outcome != baton.Queued {
			t.Fatalf("Enqueue with WaitReplicas(1): %+v, %v", r, err)
		}
		var reqs []baton.Request
		for i := 0; i < 12; i++ {
			reqs = append(reqs, baton.Request{Namespace: nss[i%3], Type: "job", Payload: map[string]int{"i": i}})
		}
		if _, err := one.EnqueueMany(ctx, reqs); err != nil {
			t.Fatalf("EnqueueMany with WaitReplicas(1): %v", err)
		}

		// Each primary has one replica: WAIT 2 cannot be met.
		two, err := baton.NewClient(ctx, cl.URL, baton.WaitReplicas(2), baton.WaitTimeout(150*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer two.Close()
		const short = "unavailable: written on the primary but acknowledged by only 1 of 2 replicas within 150 ms: it may still run but is not known to be durable"
		r, err = two.Enqueue(ctx, nss[1], "job", map[string]any{})
		if err == nil || err.Error() != "enqueue: "+short || !errors.Is(err, baton.ErrUnavailable) {
			t.Fatalf("Enqueue with WaitReplicas(2) = %v, want enqueue: %s", err, short)
		}
		if r == nil || r.Outcome != baton.Queued {
			t.Fatalf("Enqueue with WaitReplicas(2) gave no result: %+v", r)
		}
		if n, err := cl.raw.HExists(ctx, keyOf(nss[1], "tasks"), r.TaskID).Result(); err != nil || !n {
			t.Fatalf("the task of a short WAIT is not written: %v, %v", n, err)
		}
		results, err := two.EnqueueMany(ctx, reqs)
		if err == nil || err.Error() != "enqueue: "+short || len(results) != len(reqs) {
			t.Fatalf("EnqueueMany with WaitReplicas(2) = %d results, %v", len(results), err)
		}
		for i, res := range results {
			if res.Outcome != baton.Queued {
				t.Errorf("request %d: %+v", i, res)
			}
		}
		for _, opt := range []struct {
			o    baton.ClientOption
			want string
		}{
			{baton.WaitReplicas(-1), "connect: invalid_argument: wait_replicas: must be >= 0 (got -1)"},
			{baton.WaitTimeout(-time.Second), "connect: invalid_argument: wait_timeout: must be at least 1ms (got -1s)"},
		} {
			if _, err := baton.NewClient(ctx, cl.URL, opt.o); err == nil || err.Error() != opt.want {
				t.Errorf("NewClient = %v, want %s", err, opt.want)
			}
		}
		if _, err := baton.NewClient(ctx, cl.URL, baton.WaitReplicas(1), baton.WaitTimeout(5*time.Second)); err == nil ||
			!strings.HasPrefix(err.Error(), "connect: invalid_argument: wait_timeout: must be shorter than the Redis read timeout 3s") {
			t.Errorf("WaitTimeout 5s: %v", err)
		}
	})

	t.Run("PrimaryWithoutLibraryIsRefused", func(t *testing.T) {
		node := cl.primaryOf(t, cl.spreadNamespaces(t, "gocl-lib")[2])
		dump, err := node.FunctionDump(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if err := node.FunctionFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := node.FunctionRestore(ctx, dump).Err(); err != nil {
				t.Fatal(err)
			}
		}()
		const want = "connect: version_mismatch: functions library version none loaded in Redis, this client needs " +
			baton.LibraryVersion + ": run 'baton init'"
		_, err = baton.NewClient(ctx, cl.URL)
		if err == nil || err.Error() != want || !errors.Is(err, baton.ErrVersionMismatch) {
			t.Fatalf("NewClient with a primary without the library = %v, want %s", err, want)
		}
		w := newClusterWorker(t, cl.URL)
		_ = w.HandleFunc("gocl-lib", "job", func(context.Context, *baton.Task) error { return nil })
		if err := w.Start(ctx); err == nil || !errors.Is(err, baton.ErrVersionMismatch) ||
			!strings.Contains(err.Error(), "functions library version none loaded in Redis") {
			t.Fatalf("Worker.Start with a primary without the library = %v", err)
		}
	})

	// Last: it changes the topology. Tasks acknowledged with WaitReplicas(1) survive a kill -9
	// of their primary and all end done on the promoted replica.
	t.Run("FailoverKeepsAcknowledgedTasks", func(t *testing.T) {
		ns := cl.spreadNamespaces(t, "gocl-failover")[0]
		primary := cl.primaryOf(t, ns).Options().Addr
		c, err := baton.NewClient(ctx, cl.URL, baton.WaitReplicas(1), baton.WaitTimeout(300*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var mu sync.Mutex
		ran := map[string]int{}
		w := newClusterWorker(t, cl.URL, baton.WithLogger(testLogger(t)))
		_ = w.HandleFunc(ns, "job", func(ctx context.Context, task *baton.Task) error {
			time.Sleep(20 * time.Millisecond)
			mu.Lock()
			ran[task.ID]++
			mu.Unlock()
			return nil
		}, baton.Concurrency(4))
		startWorker(t, w)
		var ids []string
		for i := 0; i < 40; i++ {
			r, err := c.Enqueue(ctx, ns, "job", map[string]int{"i": i})
			if err != nil {
				t.Fatalf("enqueue %d before the kill: %v", i, err)
			}
			ids = append(ids, r.TaskID)
		}
		if err := syscall.Kill(cl.pidOf(t, primary), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		// The producer keeps going: an unavailable answer without a result while the replica
		// takes over is retried with the same TaskID (a Duplicate then means the first try was
		// written). The promoted replica has no replica of its own, so WAIT 1 now falls short:
		// the task is written and the error says so.
		shortWaits := 0
		var firstWritten time.Duration
		for i := 0; i < 10; i++ {
			id := fmt.Sprintf("after-kill-%d", i)
			for {
				r, err := c.Enqueue(ctx, ns, "job", map[string]int{"after": i}, baton.TaskID(id))
				if err != nil && !errors.Is(err, baton.ErrUnavailable) {
					t.Fatalf("enqueue after the kill: %v", err)
				}
				if r != nil && (r.Outcome == baton.Queued || r.Outcome == baton.Duplicate) {
					if err != nil {
						if !strings.Contains(err.Error(), "written on the primary but acknowledged by only 0 of 1 replicas") {
							t.Fatalf("enqueue after the kill gave a result and %v", err)
						}
						shortWaits++
					}
					if firstWritten == 0 {
						firstWritten = time.Since(killed)
					}
					break
				}
				if time.Since(killed) > 30*time.Second {
					t.Fatalf("enqueue after the kill still fails: %v", err)
				}
				time.Sleep(100 * time.Millisecond)
			}
			ids = append(ids, id)
		}
		if shortWaits == 0 {
			t.Errorf("WAIT 1 never fell short on a shard that lost its replica")
		}
		t.Logf("first enqueue written %v after the kill, 10 written after %v", firstWritten.Round(time.Millisecond),
			time.Since(killed).Round(time.Millisecond))
		waitFor(t, 40*time.Second, "every acknowledged task done after the failover", func() bool {
			for _, id := range ids {
				if !cl.isDone(ns, id) {
					return false
				}
			}
			return true
		})
		t.Logf("all %d tasks done %v after the kill", len(ids), time.Since(killed).Round(time.Millisecond))
		if now := cl.primaryOf(t, ns).Options().Addr; now == primary {
			t.Fatalf("the namespace is still on the killed primary %s", primary)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, id := range ids {
			if ran[id] == 0 {
				t.Errorf("task %s is done but never ran here", id)
			}
		}
	})
}
