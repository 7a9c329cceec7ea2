package baton

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-dev/baton/sdk/go/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// The partition rule agrees with every vector of contract/fixtures/partitions.json (read at test
// time): the hash, and the partition for every count the file gives.
func TestPartitionRuleMatchesFixtures(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(redistest.RepoRoot(), "contract", "fixtures", "partitions.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Cases []struct {
			TaskID    string         `json:"task_id"`
			Fnv1a32   uint32         `json:"fnv1a32"`
			Partition map[string]int `json:"partition"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
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

// A stored count is read as the contract says: absent 1, not an integer 1.. is 1 (and flagged),
// above MaxPartitions is MaxPartitions.
func TestParsePartitionCount(t *testing.T) {
	for _, c := range []struct {
		v    any
		want int
		bad  bool
	}{
		{nil, 1, false}, {"1", 1, false}, {"4", 4, false}, {"1024", 1024, false},
		{"1025", MaxPartitions, false}, {"99999999999999999", MaxPartitions, false},
		{"0", 1, true}, {"-3", 1, true}, {"+3", 1, true}, {" 3", 1, true}, {"3.0", 1, true},
		{"many", 1, true}, {"", 1, true}, {"999999999999999999999", 1, true},
	} {
		got, bad := parsePartitionCount(c.v)
		if got != c.want || bad != c.bad {
			t.Errorf("parsePartitionCount(%#v) = %d, %v; want %d, %v", c.v, got, bad, c.want, c.bad)
		}
	}
}

// The producer's cache: one read per namespace per refresh period, a bad value logged and taken
// as 1, and a failed refresh keeps the old count (a namespace never read is an error).
func TestPartitionCountsCacheAndRefresh(t *testing.T) {
	s, err := redistest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2, MaxRetries: -1}) // no resends: fails fast once Redis is gone
	defer rdb.Close()
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

	rdb.HSet(ctx, globalKeyPartitions, "a", "3")
	now = now.Add(partitionRefresh - time.Millisecond)
	if got, _ := pc.get(ctx, []string{"a"}); got["a"] != 1 {
		t.Fatalf("read again before %v: %v", partitionRefresh, got)
	}
	now = now.Add(time.Millisecond)
	if got, _ := pc.get(ctx, []string{"a"}); got["a"] != 3 {
		t.Fatalf("not read again after %v: %v", partitionRefresh, got)
	}

	// Many callers at once (run with -race): all get the count.
	now = now.Add(partitionRefresh)
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

	s.Kill()
	now = now.Add(2 * partitionRefresh)
	if got, err := pc.get(ctx, []string{"a"}); err != nil || got["a"] != 3 {
		t.Fatalf("a failed refresh must keep the old count: %v, %v", got, err)
	}
	if _, err := pc.get(ctx, []string{"never-read"}); err == nil {
		t.Fatal("a namespace never read, with Redis down: no error")
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
