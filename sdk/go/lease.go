package baton

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// leaseKeeper extends the leases of every running attempt of a Worker (baton_v2_extend), each
// task type every lease/3 of its own lease, in one pipeline for all types that are due. A task
// whose SID the call does not return was taken back (its lease had expired): its handler's
// context is cancelled with ErrLeaseLost. After a failed call it retries sooner than the period
// (100 ms doubling), so one lost beat does not cost the lease.
type leaseKeeper struct {
	w    *Worker
	stop chan struct{}
	done chan struct{}
	poke chan struct{} // cap 1: runners were added (new partitions)
}

func startLeaseKeeper(w *Worker) *leaseKeeper {
	k := &leaseKeeper{w: w, stop: make(chan struct{}), done: make(chan struct{}), poke: make(chan struct{}, 1)}
	go k.loop()
	return k
}

// added tells the keeper that the worker has new runners.
func (k *leaseKeeper) added() {
	select {
	case k.poke <- struct{}{}:
	default:
	}
}

func (k *leaseKeeper) close() {
	close(k.stop)
	<-k.done
}

func (k *leaseKeeper) loop() {
	defer close(k.done)
	period := func(r *runner) time.Duration {
		return max(time.Duration(r.leaseMs)*time.Millisecond/3, time.Millisecond)
	}
	next := map[*runner]time.Time{}
	shortest := time.Duration(1<<63 - 1)
	var bo *backoff
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		// The runner list grows when the worker serves new partitions: a new runner's first beat
		// is one period after the keeper first sees it (its tasks were leased after that).
		runners := k.w.allRunners()
		now := time.Now()
		for _, r := range runners {
			if _, ok := next[r]; !ok {
				next[r] = now.Add(period(r))
				if p := period(r); p < shortest || bo == nil {
					shortest = min(shortest, p)
					bo = newBackoff(100*time.Millisecond, shortest)
				}
			}
		}
		wake := now.Add(time.Hour)
		for _, t := range next {
			wake = minTime(wake, t)
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(time.Until(wake))
		select {
		case <-k.stop:
			return
		case <-k.poke:
			continue
		case <-timer.C:
		}
		now = time.Now()
		var due []*runner
		for _, r := range runners {
			if !next[r].After(now) {
				due = append(due, r)
			}
		}
		if err := k.beat(now, due); err != nil {
			k.w.cfg.logger.Warn("baton worker: heartbeat", "error", err)
			retry := now.Add(bo.Next())
			for _, r := range due {
				next[r] = minTime(retry, now.Add(period(r)))
			}
			continue
		}
		bo.Reset()
		for _, r := range due {
			next[r] = now.Add(period(r))
		}
	}
}

// beat extends the held tasks of the due runners in one round trip.
func (k *leaseKeeper) beat(now time.Time, due []*runner) error {
	ctx := context.Background()
	pipe := k.w.rdb.Pipeline()
	type sent struct {
		r     *runner
		items []extendItem
		cmd   *redis.Cmd
	}
	var calls []sent
	for _, r := range due {
		items := r.heldTasks(now)
		if len(items) == 0 {
			continue
		}
		cmd := fcallExtend(ctx, pipe, r.keys, k.w.cfg.group, k.w.consumer, r.leaseMs, items)
		calls = append(calls, sent{r, items, cmd})
	}
	if len(calls) == 0 {
		return nil
	}
	if err := execPipeline(ctx, pipe); err != nil {
		return err
	}
	for _, c := range calls {
		held, err := c.cmd.StringSlice()
		if err != nil {
			// Says nothing about the leases (e.g. the library is being reloaded): next beat.
			c.r.logError("baton_v2_extend", err)
			continue
		}
		c.r.leaseLost(c.items, held)
	}
	return nil
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
