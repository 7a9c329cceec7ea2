package baton

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-dev/baton/sdk/go/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// Decodes contract/fixtures/partitions.json into `into` (read at test time), failing the test when
// it cannot.
func readPartitionFixtures(t *testing.T, into any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(redistest.RepoRoot(), "contract", "fixtures", "partitions.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, into); err != nil {
		t.Fatal(err)
	}
}

// The partition rule agrees with every vector of contract/fixtures/partitions.json (read at test
// time): the hash, and the partition for every count the file gives.
func TestPartitionRuleMatchesFixtures(t *testing.T) {
	var f struct {
		Cases []struct {
			TaskID    string         `json:"task_id"`
			Fnv1a32   uint32         `json:"fnv1a32"`
			Partition map[string]int `json:"partition"`
		} `json:"cases"`
	}
	readPartitionFixtures(t, &f)
	if len(f.Cases) == 0 {
		t.Fatal("partitions.json has no cases")
	}
	vectors := 0
	for _, c := range f.Cases {
		if got := fnv1a32(c.TaskID); got != c.Fnv1a32 {
			t.Errorf("fnv1a32(%q) = %d, want %d", c.TaskID, got, c.Fnv1a32)
		}
		if len(c.Partition) == 0 {
			t.Errorf("case %q has no partitions", c.TaskID)
		}
		for countText, want := range c.Partition {
			count, err := strconv.Atoi(countText)
			if err != nil {
				t.Fatalf("case %q: count %q", c.TaskID, countText)
			}
			if got := PartitionOf(c.TaskID, count); got != want {
				t.Errorf("PartitionOf(%q, %d) = %d, want %d", c.TaskID, count, got, want)
			}
			vectors++
		}
	}
	t.Logf("%d cases, %d (id, count) vectors", len(f.Cases), vectors)
	if StorageNamespace("shop", 0) != "shop" || StorageNamespace("shop", 3) != "shop:3" || StorageNamespace("shop", 10) != "shop:10" {
		t.Error("StorageNamespace must be NS for 0 and NS:p otherwise")
	}
}

// A stored count is read as every vector of "counts" in contract/fixtures/partitions.json says.
func TestPartitionCountsMatchFixtures(t *testing.T) {
	var f struct {
		Counts []struct {
			Stored *string `json:"stored"`
			Count  int     `json:"count"`
		} `json:"counts"`
	}
	readPartitionFixtures(t, &f)
	if len(f.Counts) < 10 {
		t.Fatalf("partitions.json has %d counts", len(f.Counts))
	}
	for _, c := range f.Counts {
		var v any // HMGET's nil: absent
		if c.Stored != nil {
			v = *c.Stored
		}
		if got, _ := parsePartitionCount(v); got != c.Count {
			t.Errorf("parsePartitionCount(%#v) = %d, want %d", v, got, c.Count)
		}
	}
}

// A value that is not a count is flagged (to be logged); absent and valid ones are not.
func TestParsePartitionCountFlagsBadValues(t *testing.T) {
	for _, c := range []struct {
		v    any
		want int
		bad  bool
	}{
		{nil, 1, false}, {"1", 1, false}, {"0004", 4, false}, {"1025", MaxPartitions, false},
		{"999999999999999999999", MaxPartitions, false}, {"0", 1, true}, {"-3", 1, true},
		{"+3", 1, true}, {" 3", 1, true}, {"3.0", 1, true}, {"many", 1, true}, {"", 1, true},
		{"\uff13", 1, true},
	} {
		got, bad := parsePartitionCount(c.v)
		if got != c.want || bad != c.bad {
			t.Errorf("parsePartitionCount(%#v) = %d, %v; want %d, %v", c.v, got, bad, c.want, c.bad)
		}
	}
}

// hmgetCounter counts the HMGET commands a client sends.
type hmgetCounter struct{ n atomic.Int64 }

func (h *hmgetCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *hmgetCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if strings.EqualFold(cmd.Name(), "hmget") {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (h *hmgetCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// The producer's cache: one read per namespace per refresh period, shared by concurrent callers;
// a bad value taken as 1 and logged once per value; a failed read, due or first, is an error
// (unavailable once mapped, as an enqueue returns it), for every caller that needed it.
func TestPartitionCountsCacheAndRefresh(t *testing.T) {
	s, err := redistest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2, MaxRetries: -1}) // no resends: fails fast once Redis is gone
	defer rdb.Close()
	hmgets := &hmgetCounter{}
	rdb.AddHook(hmgets)
	var logs safeBuffer
	now := time.Unix(1_000_000, 0)
	pc := newPartitionCounts(rdb, slog.New(slog.NewTextHandler(&logs, nil)))
	pc.clock = func() time.Time { return now }

	rdb.HSet(ctx, globalKeyPartitions, "b", "4", "c", "many", "d", "5000", "e", "0")
	got, err := pc.get(ctx, []string{"a", "b", "c", "d", "e", "b"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"a": 1, "b": 4, "c": 1, "d": MaxPartitions, "e": 1}
	for ns, n := range want {
		if got[ns] != n {
			t.Errorf("count of %s = %d, want %d (all: %v)", ns, got[ns], n, got)
		}
	}
	for _, ns := range []string{"namespace=c", "namespace=e"} {
		if !strings.Contains(logs.String(), ns) {
			t.Errorf("no warning for %s in %q", ns, logs.String())
		}
	}
	if strings.Contains(logs.String(), "namespace=d") || strings.Contains(logs.String(), "namespace=a ") {
		t.Errorf("a valid or absent count was reported: %q", logs.String())
	}

	// Read again after the period: the same bad values are not logged again, a new one is.
	rdb.HSet(ctx, globalKeyPartitions, "e", "-1")
	now = now.Add(partitionRefresh)
	if _, err := pc.get(ctx, []string{"a", "c", "e"}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), "namespace=c"); n != 1 {
		t.Errorf("the bad value of c was logged %d times, want once: %q", n, logs.String())
	}
	if n := strings.Count(logs.String(), "namespace=e"); n != 2 || !strings.Contains(logs.String(), "value=-1") {
		t.Errorf("the new bad value of e was not logged once: %q", logs.String())
	}

	rdb.HSet(ctx, globalKeyPartitions, "a", "3")
	now = now.Add(partitionRefresh - time.Millisecond)
	if got, _ := pc.get(ctx, []string{"a"}); got["a"] != 1 {
		t.Fatalf("read again before %v: %v", partitionRefresh, got)
	}
	now = now.Add(time.Millisecond)
	if got, _ := pc.get(ctx, []string{"a"}); got["a"] != 3 {
		t.Fatalf("not read again after %v: %v", partitionRefresh, got)
	}

	// Many callers at once (run with -race): all get the count, from one HMGET (the clock
	// stands still, so a caller that comes after the read finds it fresh).
	now = now.Add(partitionRefresh)
	before := hmgets.n.Load()
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got, err := pc.get(ctx, []string{"a", "f"}); err != nil || got["a"] != 3 || got["f"] != 1 {
				t.Errorf("concurrent get: %v, %v", got, err)
			}
		}()
	}
	wg.Wait()
	if n := hmgets.n.Load() - before; n != 1 {
		t.Errorf("20 concurrent callers of 2 stale namespaces sent %d HMGETs, want 1", n)
	}

	// Redis gone: the due re-read of a count read before fails, and so does every caller.
	s.Kill()
	now = now.Add(2 * partitionRefresh)
	got, err = pc.get(ctx, []string{"a"})
	if err == nil {
		t.Fatalf("a failed re-read of a due count: no error (counts %v)", got)
	}
	if mapped := fromRedis("enqueue", err); !errors.Is(mapped, ErrUnavailable) {
		t.Fatalf("a failed re-read maps to %v, want unavailable", mapped)
	}
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got, err := pc.get(ctx, []string{"a"}); err == nil {
				t.Errorf("concurrent get with Redis down: %v and no error", got)
			}
		}()
	}
	wg.Wait()
	if _, err := pc.get(ctx, []string{"never-read"}); err == nil {
		t.Fatal("a namespace never read, with Redis down: no error")
	}
	if _, err := pc.readNow(ctx, "a"); err == nil {
		t.Fatal("readNow with Redis down: no error")
	}
}

type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
