package baton

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// servePair is one registration to serve in one partition of its namespace.
type servePair struct {
	reg       *registration
	partition int
}

// newRunners builds the runners of pairs, their leases resolved: the type's Lease, else the
// lease_ms setting of the partition's storage namespace (one pipelined read for all of them).
func (w *Worker) newRunners(ctx context.Context, pairs []servePair) ([]*runner, error) {
	runners := make([]*runner, len(pairs))
	reads := map[string]*redis.Cmd{}
	var pipe redis.Pipeliner
	for i, p := range pairs {
		r := newRunner(w, p.reg.ns, p.partition, p.reg.typ, p.reg.handler, p.reg.tc)
		runners[i] = r
		if r.lease != 0 {
			r.leaseMs = r.lease.Milliseconds()
			continue
		}
		if reads[r.storage] == nil {
			if pipe == nil {
				pipe = w.rdb.Pipeline()
			}
			reads[r.storage] = fcallConfigure(ctx, pipe, newKeySet(r.storage, ""), nil)
		}
	}
	if pipe != nil {
		if err := execPipeline(ctx, pipe); err != nil {
			return nil, fromRedis("configure", err)
		}
	}
	for _, r := range runners {
		if r.lease != 0 {
			continue
		}
		settings, err := readSettings(reads[r.storage].Result())
		if err != nil {
			return nil, withPartition(err, r.storage)
		}
		r.leaseMs = settings["lease_ms"]
		if r.leaseMs <= 0 {
			r.leaseMs = defaultLeaseMs
		}
	}
	return runners, nil
}

// partitionWatcher reads the partition counts of the worker's namespaces every partitionRefresh
// and starts runners for the partitions a namespace gained (P only grows: a smaller count read
// later stops nothing).
type partitionWatcher struct {
	w          *Worker
	namespaces []string       // the registered namespaces, each once
	count      map[string]int // partitions served so far, per namespace
	bad        *badCounts
	ctx        context.Context
	cancel     context.CancelFunc
	done       chan struct{}
}

func newPartitionWatcher(w *Worker) *partitionWatcher {
	pw := &partitionWatcher{w: w, count: map[string]int{}, bad: newBadCounts(w.cfg.logger), done: make(chan struct{})}
	pw.ctx, pw.cancel = context.WithCancel(context.Background())
	for _, r := range w.regs {
		if _, ok := pw.count[r.ns]; !ok {
			pw.count[r.ns] = 0
			pw.namespaces = append(pw.namespaces, r.ns)
		}
	}
	return pw
}

// unserved lists the pairs not served yet for counts (read for pw.namespaces, in order).
func (pw *partitionWatcher) unserved(counts []int) []servePair {
	var out []servePair
	for i, ns := range pw.namespaces {
		for p := pw.count[ns]; p < counts[i]; p++ {
			for _, reg := range pw.w.regs {
				if reg.ns == ns {
					out = append(out, servePair{reg, p})
				}
			}
		}
	}
	return out
}

// served records that counts are served.
func (pw *partitionWatcher) served(counts []int) {
	for i, ns := range pw.namespaces {
		pw.count[ns] = max(pw.count[ns], counts[i])
	}
}

func (pw *partitionWatcher) loop() {
	defer close(pw.done)
	ticker := time.NewTicker(partitionRefresh)
	defer ticker.Stop()
	for {
		select {
		case <-pw.ctx.Done():
			return
		case <-ticker.C:
		}
		if err := pw.check(); err != nil && pw.ctx.Err() == nil {
			pw.w.cfg.logger.Warn("baton worker: partition counts (tried again in "+partitionRefresh.String()+")", "error", err)
		}
	}
}

// check reads the counts and starts the runners of new partitions.
func (pw *partitionWatcher) check() error {
	w := pw.w
	counts, err := readPartitionCounts(pw.ctx, w.rdb, pw.bad, pw.namespaces)
	if err != nil {
		return err
	}
	pairs := pw.unserved(counts)
	if len(pairs) == 0 {
		return nil
	}
	runners, err := w.newRunners(pw.ctx, pairs)
	if err != nil {
		return err
	}
	w.runMu.Lock()
	w.runners = append(w.runners, runners...)
	w.runMu.Unlock()
	for _, r := range runners {
		if w.maint != nil {
			w.maint.add(r)
		}
		r.start()
	}
	w.keeper.added()
	for i, ns := range pw.namespaces {
		if counts[i] > pw.count[ns] {
			w.cfg.logger.Info("baton worker: serving new partitions", "namespace", ns,
				"partitions", strconv.Itoa(pw.count[ns])+".."+strconv.Itoa(counts[i]-1))
		}
	}
	pw.served(counts)
	return nil
}

// close stops the watcher; once it returns no runner is added.
func (pw *partitionWatcher) close() {
	pw.cancel()
	<-pw.done
}
