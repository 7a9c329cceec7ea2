package baton

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// queue is one (namespace, type) of a Client: its keys and the batcher of its single Enqueue
// calls. Concurrent Enqueue calls of one queue share baton_v2_enqueue calls ("natural
// batching"): when no call is in flight a task is sent at once, alone, so an idle producer
// waits for nothing; the tasks that arrive while a call is in flight go together in the next
// call, sent by one of their callers as soon as the previous call returns. Under load a call
// carries many tasks, which costs Redis far less per task than one call each (every call has
// fixed costs: the events entry, the duplicate checks, the trim).
type queue struct {
	keys    *keySet
	mu      sync.Mutex
	busy    bool              // a call is in flight (its sender leads the next one)
	pending []*pendingEnqueue // tasks waiting for the next call
}

// pendingEnqueue is one Enqueue waiting for its call.
type pendingEnqueue struct {
	p    *prepared
	lead chan struct{} // "send the next call": this caller leads it
	done chan struct{} // closed when res/err are set
	res  EnqueueResult
	err  error
}

// submit enqueues one prepared task and returns its result.
func (q *queue) submit(ctx context.Context, c *Client, p *prepared) (EnqueueResult, error) {
	if err := ctx.Err(); err != nil {
		return EnqueueResult{}, contextError("enqueue", err) // nothing written
	}
	pe := &pendingEnqueue{p: p, lead: make(chan struct{}, 1), done: make(chan struct{})}
	q.mu.Lock()
	q.pending = append(q.pending, pe)
	if !q.busy {
		q.busy = true
		q.mu.Unlock()
		q.send(ctx, c, pe)
	} else {
		q.mu.Unlock()
		select {
		case <-pe.done:
		case <-pe.lead:
			q.send(ctx, c, pe)
		case <-ctx.Done():
			if q.withdraw(pe) {
				return EnqueueResult{}, contextError("enqueue", ctx.Err())
			}
			// Already taken into a call (or leading one): its outcome is coming.
			select {
			case <-pe.done:
			case <-pe.lead:
				q.send(ctx, c, pe)
			}
		}
	}
	<-pe.done
	return pe.res, pe.err
}

// withdraw takes pe out of the pending list; false when a call already took it.
func (q *queue) withdraw(pe *pendingEnqueue) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, x := range q.pending {
		if x == pe {
			if i == 0 && len(pe.lead) > 0 {
				return false // it was just handed the lead
			}
			q.pending = append(q.pending[:i], q.pending[i+1:]...)
			return true
		}
	}
	return false
}

// send sends one call with the pending tasks (at most enqueueCallLimit) for its caller own,
// then hands the lead to the first task still pending, or marks the queue idle.
func (q *queue) send(ctx context.Context, c *Client, own *pendingEnqueue) {
	q.mu.Lock()
	n := min(len(q.pending), enqueueCallLimit)
	batch := append([]*pendingEnqueue(nil), q.pending[:n]...)
	q.pending = q.pending[n:]
	q.mu.Unlock()

	// A call that carries other callers' tasks must not fail because this one's context ends
	// (go-redis still applies its own timeouts); a call with only the caller's task honours it.
	callCtx := ctx
	if len(batch) != 1 || batch[0] != own {
		callCtx = context.WithoutCancel(ctx)
	}
	q.call(callCtx, c, batch)
	for _, pe := range batch {
		close(pe.done)
	}

	q.mu.Lock()
	if len(q.pending) == 0 {
		q.busy = false
		q.mu.Unlock()
		return
	}
	// Handed over under the lock (the channel has room for it), so that withdraw sees it.
	q.pending[0].lead <- struct{}{}
	q.mu.Unlock()
}

// call sends one baton_v2_enqueue with the batch and sets each result. A call the library
// refuses writes nothing: then every task is sent alone, so that each caller gets its own answer.
func (q *queue) call(ctx context.Context, c *Client, batch []*pendingEnqueue) {
	tasks := make([]*prepared, len(batch))
	for i, pe := range batch {
		tasks[i] = pe.p
	}
	var cmd *redis.Cmd
	var short *Error
	if c.waitReplicas > 0 {
		dc := &durableCall{key: q.keys.stream, build: func(t redis.Cmdable) *redis.Cmd {
			return enqueueCall(ctx, t, q.keys, tasks)
		}}
		c.sendDurable(ctx, "enqueue", []*durableCall{dc})
		cmd, short = dc.cmd, dc.short
	} else {
		cmd = enqueueCall(ctx, c.rdb, q.keys, tasks)
	}
	err := cmd.Err()
	if err != nil && len(batch) > 1 && !isConnectionError(err) {
		for _, pe := range batch {
			q.call(ctx, c, []*pendingEnqueue{pe})
		}
		return
	}
	if err != nil {
		for _, pe := range batch {
			pe.err = fromRedis("enqueue", err)
		}
		return
	}
	reply, e := enqueueReply("enqueue", cmd.Val(), len(batch))
	if e != nil {
		for _, pe := range batch {
			own := *e // each caller gets its own error
			pe.err = &own
		}
		return
	}
	for i, pe := range batch {
		r, e := enqueueResult(pe.p.task.ID, reply[2*i], reply[2*i+1])
		if e != nil {
			e.Op = "enqueue"
			pe.err = e
			continue
		}
		pe.res = r
		if short != nil {
			own := *short
			pe.err = &own
		}
	}
}
