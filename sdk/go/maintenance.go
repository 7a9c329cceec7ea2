package baton

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// maintenance is a Worker's optional in-process share of batond's work (WithMaintenance): for
// the worker's own task types it promotes due delayed and retrying tasks (baton_v2_promote) and
// reclaims tasks whose lease ended (baton_v2_reclaim, which only ever takes a task past its own
// deadline, whoever calls it). It sleeps until the earliest due time or lease deadline the
// functions report (against the server's now_ms), at most maxMaintenanceSleep, and wakes early
// when this worker schedules an earlier retry. It never polls faster.
type maintenance struct {
	w     *Worker
	ring  chan struct{}
	stop  chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	plans map[*runner]*maintPlan
	// serverOffset is the server's Unix ms minus the local monotonic ms, from the last reply.
	serverOffset time.Duration
	haveOffset   bool
	epoch        time.Time
}

type maintPlan struct {
	promoteAt, reclaimAt time.Time
}

const (
	maxMaintenanceSleep = time.Second
	minMaintenanceSleep = 10 * time.Millisecond
	promoteLimit        = 1000 // tasks per baton_v2_promote call
	reclaimCount        = 100  // expired leases per baton_v2_reclaim call
	// maxJitterSeed bounds baton_v2_reclaim's jitter seed: the functions take integer
	// arguments of at most 15 digits.
	maxJitterSeed = 1_000_000_000_000_000
)

func startMaintenance(w *Worker) *maintenance {
	now := time.Now()
	m := &maintenance{w: w, ring: make(chan struct{}, 1), stop: make(chan struct{}),
		done: make(chan struct{}), plans: map[*runner]*maintPlan{}, epoch: now}
	for _, r := range w.runners {
		m.plans[r] = &maintPlan{promoteAt: now, reclaimAt: now}
	}
	go m.loop()
	return m
}

// add plans the calls of a runner started after the others (a new partition), due now.
func (m *maintenance) add(r *runner) {
	now := time.Now()
	m.mu.Lock()
	m.plans[r] = &maintPlan{promoteAt: now, reclaimAt: now}
	m.mu.Unlock()
	select {
	case m.ring <- struct{}{}:
	default:
	}
}

func (m *maintenance) close() {
	close(m.stop)
	<-m.done
}

// retryScheduled: baton_v2_fail put a task of r back for due_ms (server clock): promote it then
// if that is earlier than planned.
func (m *maintenance) retryScheduled(r *runner, dueMs int64) {
	m.mu.Lock()
	due := time.Now()
	if m.haveOffset {
		due = m.epoch.Add(time.Duration(dueMs)*time.Millisecond - m.serverOffset)
	}
	p := m.plans[r]
	wake := p != nil && due.Before(p.promoteAt)
	if wake {
		p.promoteAt = due
	}
	m.mu.Unlock()
	if wake {
		select {
		case m.ring <- struct{}{}:
		default:
		}
	}
}

func (m *maintenance) loop() {
	defer close(m.done)
	bo := newBackoff(100*time.Millisecond, 5*time.Second)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-m.ring:
		case <-timer.C:
		}
		var wait time.Duration
		if err := m.pass(); err != nil {
			m.w.cfg.logger.Warn("baton worker maintenance", "error", err)
			wait = bo.Next()
		} else {
			bo.Reset()
			m.mu.Lock()
			wake := time.Now().Add(maxMaintenanceSleep)
			for _, p := range m.plans {
				wake = minTime(wake, minTime(p.promoteAt, p.reclaimAt))
			}
			m.mu.Unlock()
			wait = time.Until(wake)
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(max(wait, 0))
	}
}

// pass sends the calls that are due in one round trip and plans the next ones.
func (m *maintenance) pass() error {
	ctx := context.Background()
	type call struct {
		r       *runner
		promote bool
		cmd     *redis.Cmd
	}
	now := time.Now()
	pipe := m.w.rdb.Pipeline()
	var calls []call
	m.mu.Lock()
	for r, p := range m.plans {
		if !p.promoteAt.After(now) {
			calls = append(calls, call{r, true, fcallPromote(ctx, pipe, r.keys, promoteLimit)})
		}
		if !p.reclaimAt.After(now) {
			calls = append(calls, call{r, false, fcallReclaim(ctx, pipe, r.keys, reclaimCount,
				r.retry.Base.Milliseconds(), r.retry.Max.Milliseconds(), rand.Int64N(maxJitterSeed), m.w.consumer)})
		}
	}
	m.mu.Unlock()
	if len(calls) == 0 {
		return nil
	}
	if err := execPipeline(ctx, pipe); err != nil {
		return err
	}
	after := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range calls {
		p := m.plans[c.r]
		v, err := c.cmd.Int64Slice()
		want := 5
		if c.promote {
			want = 3
		}
		if err != nil || len(v) != want {
			c.r.logError("maintenance", err)
			if c.promote {
				p.promoteAt = after.Add(maxMaintenanceSleep)
			} else {
				p.reclaimAt = after.Add(maxMaintenanceSleep)
			}
			continue
		}
		serverNow := v[len(v)-1]
		m.serverOffset = time.Duration(serverNow)*time.Millisecond - after.Sub(m.epoch)
		m.haveOffset = true
		if c.promote { // [promoted, next_due_ms, now_ms]
			p.promoteAt = localDue(v[1], serverNow, v[0] > 0, after)
		} else { // [reclaimed, retried, dead, next_deadline_ms, now_ms]
			p.reclaimAt = localDue(v[3], serverNow, v[0] > 0, after)
			if v[1] > 0 {
				p.promoteAt = after // retries scheduled: promote says when they are due
			}
		}
	}
	return nil
}

// localDue is the local time of server time atMs, given the server's nowMs read at local now:
// at most now + maxMaintenanceSleep (-1, "nothing due", is that too) and, unless the call made
// progress (it hit its limit: call again at once), at least a few ms from now.
func localDue(atMs, nowMs int64, progressed bool, now time.Time) time.Time {
	if atMs < 0 {
		return now.Add(maxMaintenanceSleep)
	}
	least := minMaintenanceSleep
	if progressed {
		least = 0
	}
	wait := time.Duration(atMs-nowMs) * time.Millisecond
	return now.Add(min(max(wait, least), maxMaintenanceSleep))
}
