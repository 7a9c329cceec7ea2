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
}

func startLeaseKeeper(w *Worker) *leaseKeeper {
	k := &leaseKeeper{w: w, stop: make(chan struct{}), done: make(chan struct{})}
	go k.loop()
	return k
}

func (k *leaseKeeper) close() {
	close(k.stop)
	<-k.done
}

func (k *leaseKeeper) loop() {
	defer close(k.done)
	runners := k.w.runners
	period := make([]time.Duration, len(runners))
	next := make([]time.Time, len(runners))
	shortest := time.Duration(1<<63 - 1)
	start := time.Now()
	for i, r := range runners {
		period[i] = max(time.Duration(r.leaseMs)*time.Millisecond/3, time.Millisecond)
		next[i] = start.Add(period[i])
		shortest = min(shortest, period[i])
	}
	bo := newBackoff(100*time.Millisecond, shortest)
	timer := time.NewTimer(shortest)
	defer timer.Stop()
	for {
		wake := next[0]
		for _, t := range next[1:] {
			if t.Before(wake) {
				wake = t
			}
		}
		timer.Reset(time.Until(wake))
		select {
		case <-k.stop:
			return
		case <-timer.C:
		}
		now := time.Now()
		var due []int
		for i := range runners {
			if !next[i].After(now) {
				due = append(due, i)
			}
		}
		if err := k.beat(now, due); err != nil {
			k.w.cfg.logger.Warn("baton worker: heartbeat", "error", err)
			retry := now.Add(bo.Next())
			for _, i := range due {
				next[i] = minTime(retry, now.Add(period[i]))
			}
			continue
		}
		bo.Reset()
		for _, i := range due {
			next[i] = now.Add(period[i])
		}
	}
}

// beat extends the held tasks of the due runners in one round trip.
func (k *leaseKeeper) beat(now time.Time, due []int) error {
	ctx := context.Background()
	pipe := k.w.rdb.Pipeline()
	type sent struct {
		r     *runner
		items []extendItem
		cmd   *redis.Cmd
	}
	var calls []sent
	for _, i := range due {
		r := k.w.runners[i]
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
