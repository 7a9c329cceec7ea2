package baton

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Partitions (docs/cluster.md, "Partitions"): a namespace NS may be spread over P storage
// namespaces, NS (partition 0) and "NS:1" .. "NS:P-1", each in its own Redis Cluster slot. P is
// HGET baton:v2:partitions NS (absent: 1). Producers put a task in partition PartitionOf(id, P);
// workers serve every partition; the task's document keeps namespace NS.

// partitionRefresh is how old a cached partition count may get before it is read again.
const partitionRefresh = partitionRefreshSeconds * time.Second

// fnv1a32 is FNV-1a, 32 bits, over the bytes of s (Go strings are the UTF-8 bytes).
func fnv1a32(s string) uint32 {
	h := fnv1a32OffsetBasis
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= fnv1a32Prime // wraps modulo 2^32, as the rule says
	}
	return h
}

// PartitionOf returns the partition (0..count-1) of a task id in a namespace of count
// partitions: fnv1a32 of the id's UTF-8 bytes modulo count, the same in every language. A count
// below 2 gives 0; one above MaxPartitions counts as MaxPartitions (as a stored count does).
func PartitionOf(taskID string, count int) int {
	if count <= 1 {
		return 0
	}
	return int(fnv1a32(taskID) % uint32(min(count, MaxPartitions)))
}

// StorageNamespace is the namespace whose keys hold partition p of ns: ns itself for p = 0,
// "ns:p" otherwise (what `baton inspect` lists as a row of its own).
func StorageNamespace(ns string, p int) string {
	if p <= 0 {
		return ns
	}
	return ns + ":" + strconv.Itoa(p)
}

// parsePartitionCount reads a stored count (the "counts" of contract/fixtures/partitions.json):
// absent (HMGET's nil) is 1; text of ASCII digits only (any length, leading zeros allowed) worth at
// least 1 is min(value, MaxPartitions); anything else is 1 and reported (bad).
func parsePartitionCount(v any) (count int, bad bool) {
	text, ok := v.(string)
	if !ok {
		return 1, v != nil
	}
	n := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c < '0' || c > '9' {
			return 1, true
		}
		// Digits past the cap (however many) are the cap: no overflow.
		n = min(n*10+int(c-'0'), MaxPartitions+1)
	}
	if n < 1 {
		return 1, true
	}
	return min(n, MaxPartitions), false
}

// badCounts logs a bad stored count once per namespace and value rather than at every read (every
// 5 s per producer and worker); a namespace whose bad value changes is logged again.
type badCounts struct {
	logger *slog.Logger
	mu     sync.Mutex
	last   map[string]string // namespace -> the bad value last logged
}

func newBadCounts(logger *slog.Logger) *badCounts {
	return &badCounts{logger: logger, last: map[string]string{}}
}

func (b *badCounts) report(ns string, v any) {
	text := fmt.Sprint(v)
	b.mu.Lock()
	seen := b.last[ns] == text
	b.last[ns] = text
	b.mu.Unlock()
	if !seen {
		b.logger.Warn("baton: partition count is not an integer 1.."+strconv.Itoa(MaxPartitions)+"; using 1",
			"key", globalKeyPartitions, "namespace", ns, "value", text)
	}
}

// readPartitionCounts reads the counts of namespaces in one HMGET.
func readPartitionCounts(ctx context.Context, rdb redis.Cmdable, bad *badCounts, namespaces []string) ([]int, error) {
	values, err := rdb.HMGet(ctx, globalKeyPartitions, namespaces...).Result()
	if err != nil {
		return nil, err
	}
	if len(values) != len(namespaces) {
		return nil, errorf("", "partition counts: HMGET %s answered %d values for %d namespaces", globalKeyPartitions, len(values), len(namespaces))
	}
	counts := make([]int, len(values))
	for i, v := range values {
		var isBad bool
		counts[i], isBad = parsePartitionCount(v)
		if isBad {
			bad.report(namespaces[i], v)
		}
	}
	return counts, nil
}

// partitionCounts is a producer's cache of partition counts, each kept partitionRefresh.
// Concurrent callers of a stale namespace share one read: they wait for it and get its count, or
// its error (docs/cluster.md: an enqueue whose count needs reading fails while it cannot be read).
type partitionCounts struct {
	rdb   redis.UniversalClient
	bad   *badCounts
	clock func() time.Time // time.Now (a test sets its own)
	mu    sync.Mutex
	byNS  map[string]*partitionEntry
}

type partitionEntry struct {
	count   int
	readAt  time.Time      // zero: never read
	reading *partitionRead // non-nil while a read is in flight
}

// partitionRead is one HMGET in flight: err is set before done is closed.
type partitionRead struct {
	done chan struct{}
	err  error
}

func newPartitionCounts(rdb redis.UniversalClient, logger *slog.Logger) *partitionCounts {
	return &partitionCounts{rdb: rdb, bad: newBadCounts(logger), clock: time.Now, byNS: map[string]*partitionEntry{}}
}

// get returns the partition count of every namespace in namespaces (duplicates allowed),
// reading the stale ones (never read, or read partitionRefresh ago) in one HMGET. A failed read
// is an error, whether or not the namespace was read before (it is read again at the next call).
func (pc *partitionCounts) get(ctx context.Context, namespaces []string) (map[string]int, error) {
	for {
		out, retry, err := pc.tryGet(ctx, namespaces)
		if !retry {
			return out, err
		}
	}
}

// tryGet is one pass of get; retry when a read this caller waited for ended with its reader's
// ctx (not this caller's), so this caller reads itself.
func (pc *partitionCounts) tryGet(ctx context.Context, namespaces []string) (out map[string]int, retry bool, err error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	now := pc.clock()
	out = make(map[string]int, len(namespaces))
	var toRead []string
	var waits []*partitionRead
	pc.mu.Lock()
	for _, ns := range namespaces {
		if _, seen := out[ns]; seen {
			continue
		}
		e := pc.byNS[ns]
		if e == nil {
			e = &partitionEntry{count: 1}
			pc.byNS[ns] = e
		}
		out[ns] = e.count
		switch {
		case !e.readAt.IsZero() && now.Sub(e.readAt) < partitionRefresh:
		case e.reading != nil:
			waits = append(waits, e.reading)
		default:
			toRead = append(toRead, ns)
		}
	}
	var mine *partitionRead
	if len(toRead) > 0 {
		mine = &partitionRead{done: make(chan struct{})}
		for _, ns := range toRead {
			pc.byNS[ns].reading = mine
		}
	}
	pc.mu.Unlock()

	if mine != nil {
		counts, err := readPartitionCounts(ctx, pc.rdb, pc.bad, toRead)
		after := pc.clock()
		pc.mu.Lock()
		for i, ns := range toRead {
			e := pc.byNS[ns]
			if err == nil {
				e.count, e.readAt = counts[i], after
			}
			e.reading = nil
		}
		pc.mu.Unlock()
		mine.err = err
		close(mine.done)
		if err != nil {
			return nil, false, err
		}
	}
	for _, r := range waits {
		select {
		case <-r.done:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
		if r.err == nil {
			continue
		}
		if !errors.Is(r.err, context.Canceled) && !errors.Is(r.err, context.DeadlineExceeded) {
			return nil, false, r.err
		}
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		return nil, true, nil // the reader's ctx ended, not this caller's: read again
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	for ns := range out {
		out[ns] = pc.byNS[ns].count
	}
	return out, false, nil
}

// readNow reads the count of ns now, whatever the age of the cached copy, and caches it: for the
// calls that must see a count grown a moment ago (Cancel searches every partition, Configure
// writes every one).
func (pc *partitionCounts) readNow(ctx context.Context, ns string) (int, error) {
	counts, err := readPartitionCounts(ctx, pc.rdb, pc.bad, []string{ns})
	if err != nil {
		return 0, err
	}
	after := pc.clock()
	pc.mu.Lock()
	defer pc.mu.Unlock()
	e := pc.byNS[ns]
	if e == nil {
		e = &partitionEntry{}
		pc.byNS[ns] = e
	}
	e.count, e.readAt = counts[0], after
	return counts[0], nil
}
