package baton

import (
	"context"
	"errors"
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

// parsePartitionCount reads a stored count: absent (ok false from HMGET's nil) is 1; text that
// is not an integer 1.. is 1 and reported (bad); above MaxPartitions is MaxPartitions.
func parsePartitionCount(v any) (count int, bad bool) {
	text, ok := v.(string)
	if !ok {
		return 1, v != nil
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil || n < 1 || text[0] == '+' {
		return 1, true
	}
	return int(min(n, MaxPartitions)), false
}

// readPartitionCounts reads the counts of namespaces in one HMGET.
func readPartitionCounts(ctx context.Context, rdb redis.Cmdable, logger *slog.Logger, namespaces []string) ([]int, error) {
	values, err := rdb.HMGet(ctx, globalKeyPartitions, namespaces...).Result()
	if err != nil {
		return nil, err
	}
	if len(values) != len(namespaces) {
		return nil, errorf("", "partition counts: HMGET %s answered %d values for %d namespaces", globalKeyPartitions, len(values), len(namespaces))
	}
	counts := make([]int, len(values))
	for i, v := range values {
		var bad bool
		counts[i], bad = parsePartitionCount(v)
		if bad {
			logger.Warn("baton: partition count is not an integer 1.."+strconv.Itoa(MaxPartitions)+"; using 1",
				"key", globalKeyPartitions, "namespace", namespaces[i], "value", v)
		}
	}
	return counts, nil
}

// partitionCounts is a producer's cache of partition counts, each kept partitionRefresh.
// Concurrent callers of a stale namespace share one read; while it is in flight they use the
// count they had (a count they never had, they wait for).
type partitionCounts struct {
	rdb    redis.UniversalClient
	logger *slog.Logger
	clock  func() time.Time // time.Now (a test sets its own)
	mu     sync.Mutex
	byNS   map[string]*partitionEntry
}

type partitionEntry struct {
	count   int
	readAt  time.Time     // zero: never read
	loading chan struct{} // non-nil while a read is in flight; closed when it ends
	err     error         // the last read's error (for waiters of a first read)
}

func newPartitionCounts(rdb redis.UniversalClient, logger *slog.Logger) *partitionCounts {
	return &partitionCounts{rdb: rdb, logger: logger, clock: time.Now, byNS: map[string]*partitionEntry{}}
}

// get returns the partition count of every namespace in namespaces (duplicates allowed),
// reading the stale ones in one HMGET. A failed read of a namespace never read is an error; of
// one read before, the old count is used (and read again next time).
func (pc *partitionCounts) get(ctx context.Context, namespaces []string) (map[string]int, error) {
	for {
		out, retry, err := pc.tryGet(ctx, namespaces)
		if !retry {
			return out, err
		}
	}
}

// tryGet is one pass of get; retry when a first read this caller waited for ended with its
// reader's ctx (not this caller's), so this caller reads itself.
func (pc *partitionCounts) tryGet(ctx context.Context, namespaces []string) (out map[string]int, retry bool, err error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	now := pc.clock()
	out = make(map[string]int, len(namespaces))
	var toRead []string
	var waits []chan struct{}
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
		fresh := !e.readAt.IsZero() && now.Sub(e.readAt) < partitionRefresh
		out[ns] = e.count
		switch {
		case fresh:
		case e.loading != nil:
			if e.readAt.IsZero() {
				waits = append(waits, e.loading)
			}
		default:
			e.loading = make(chan struct{})
			toRead = append(toRead, ns)
		}
	}
	pc.mu.Unlock()

	if len(toRead) > 0 {
		counts, err := readPartitionCounts(ctx, pc.rdb, pc.logger, toRead)
		after := pc.clock()
		pc.mu.Lock()
		for i, ns := range toRead {
			e := pc.byNS[ns]
			e.err = err
			if err == nil {
				e.count, e.readAt = counts[i], after
				out[ns] = e.count
			}
			close(e.loading)
			e.loading = nil
		}
		pc.mu.Unlock()
	}
	for _, ch := range waits {
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	for _, ns := range namespaces {
		e := pc.byNS[ns]
		if e.readAt.IsZero() {
			if e.err == nil || errors.Is(e.err, context.Canceled) || errors.Is(e.err, context.DeadlineExceeded) {
				return nil, ctx.Err() == nil, e.err // another caller's read ended with its ctx
			}
			return nil, false, e.err
		}
		out[ns] = e.count
	}
	return out, false, nil
}
