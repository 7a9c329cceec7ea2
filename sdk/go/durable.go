package baton

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultWaitTimeout is how long an enqueue waits for its replicas (WaitReplicas) by default.
const DefaultWaitTimeout = time.Second

// durableAttempts bounds the sends of an enqueue call that a node refused without running it
// (MOVED/ASK/TRYAGAIN/CLUSTERDOWN, or no connection): the slot map is reloaded between them.
const durableAttempts = 5

type clientOnlyOption func(*clientConfig)

func (o clientOnlyOption) applyClient(c *clientConfig) { o(c) }

// WaitReplicas makes every enqueue (Enqueue and EnqueueMany) durable against the loss of its
// primary: after the baton_v2_enqueue call, on the same connection of the same node, the Client
// sends WAIT n <WaitTimeout>. When fewer than n replicas acknowledged the write in time, the
// enqueue returns its results together with an unavailable error: the task was written on the
// primary (it may still run) but is not known to be durable. 0 (the default) sends no WAIT.
// Works on a Redis Cluster and on a single Redis with replicas.
func WaitReplicas(n int) ClientOption {
	return clientOnlyOption(func(c *clientConfig) { c.waitReplicas = n })
}

// WaitTimeout is how long WaitReplicas waits for the replicas (default DefaultWaitTimeout; at
// least 1 ms, and shorter than the go-redis read timeout, 3 s by default).
func WaitTimeout(d time.Duration) ClientOption {
	return clientOnlyOption(func(c *clientConfig) { c.waitTimeout = d })
}

// checkWait validates WaitReplicas and WaitTimeout against the client's read timeout.
func checkWait(cfg *clientConfig, rdb redis.UniversalClient) *Error {
	if cfg.waitReplicas < 0 {
		return clientInvalid("wait_replicas", "must be >= 0 (got "+strconv.Itoa(cfg.waitReplicas)+")")
	}
	if cfg.waitTimeout == 0 {
		cfg.waitTimeout = DefaultWaitTimeout
	}
	if cfg.waitTimeout < time.Millisecond {
		return clientInvalid("wait_timeout", "must be at least 1ms (got "+cfg.waitTimeout.String()+")")
	}
	var readTimeout time.Duration
	switch r := rdb.(type) {
	case *redis.Client:
		readTimeout = r.Options().ReadTimeout
	case *redis.ClusterClient:
		readTimeout = r.Options().ReadTimeout
	}
	if cfg.waitReplicas > 0 && readTimeout > 0 && cfg.waitTimeout >= readTimeout {
		return clientInvalid("wait_timeout", "must be shorter than the Redis read timeout "+readTimeout.String()+
			" (got "+cfg.waitTimeout.String()+"; set ReadTimeout with WithRedisOptions)")
	}
	return nil
}

func clientInvalid(field, rule string) *Error {
	e := invalid(field, rule)
	e.Op = "connect"
	return e
}

// durableCall is one baton_v2_enqueue call of a durable enqueue.
type durableCall struct {
	key   string                         // a key of the call: routes it
	build func(redis.Cmdable) *redis.Cmd // queues the call on a pipeline
	cmd   *redis.Cmd                     // the call as last sent
	short *Error                         // the WAIT of its node fell short (the call ran)
}

// nodeFor is the client of the primary that holds key: the Client itself on a single Redis.
func nodeFor(ctx context.Context, rdb redis.UniversalClient, key string) (*redis.Client, error) {
	switch r := rdb.(type) {
	case *redis.Client:
		return r, nil
	case *redis.ClusterClient:
		return r.MasterForKey(ctx, key)
	}
	return nil, errors.New("unsupported go-redis client")
}

// sendDurable sends the calls, each node's in one pipeline ending with WAIT on the same
// connection (WAIT counts the replicas that have the writes of its own connection), the nodes
// in parallel. A call its node refused without running it is sent again (at most
// durableAttempts times, after a slot map reload); no other call is. On return every call has
// its cmd (its reply or error) and, if it ran but its node's WAIT fell short or failed, short.
func (c *Client) sendDurable(ctx context.Context, op string, calls []*durableCall) {
	pending := calls
	for attempt := 0; len(pending) > 0; attempt++ {
		if attempt > 0 {
			if cc, ok := c.rdb.(*redis.ClusterClient); ok {
				cc.ReloadState(ctx)
			}
			select {
			case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
			case <-ctx.Done():
				return // the calls keep the errors of their last send
			}
		}
		byNode := map[*redis.Client][]*durableCall{}
		var order []*redis.Client
		for _, dc := range pending {
			node, err := nodeFor(ctx, c.rdb, dc.key)
			if err != nil {
				dc.cmd = redis.NewCmd(ctx)
				dc.cmd.SetErr(err)
				continue
			}
			if byNode[node] == nil {
				order = append(order, node)
			}
			byNode[node] = append(byNode[node], dc)
		}
		var wg sync.WaitGroup
		for _, node := range order {
			wg.Add(1)
			go func(node *redis.Client, group []*durableCall) {
				defer wg.Done()
				c.sendDurableNode(ctx, op, node, group)
			}(node, byNode[node])
		}
		wg.Wait()
		var again []*durableCall
		for _, dc := range pending {
			if didNotRun(dc.cmd.Err()) && attempt+1 < durableAttempts {
				again = append(again, dc)
			}
		}
		pending = again
	}
}

// sendDurableNode sends the calls of one node and its WAIT in one pipeline.
func (c *Client) sendDurableNode(ctx context.Context, op string, node *redis.Client, group []*durableCall) {
	pipe := node.Pipeline()
	for _, dc := range group {
		dc.cmd = dc.build(pipe)
	}
	timeoutMs := c.waitTimeout.Milliseconds()
	wait := pipe.Do(ctx, "WAIT", c.waitReplicas, timeoutMs)
	if _, err := pipe.Exec(ctx); err != nil {
		// go-redis v9.17.3 returns a failed dial of a pipeline (with retries off) without setting
		// it on the commands: those left without reply nor error were not sent.
		var reply redis.Error
		if !errors.As(err, &reply) {
			for _, cmd := range append([]*redis.Cmd{wait}, cmdsOf(group)...) {
				if cmd.Err() == nil && cmd.Val() == nil {
					cmd.SetErr(err)
				}
			}
		}
	}
	acked, werr := wait.Int64()
	for _, dc := range group {
		dc.short = nil
		if dc.cmd.Err() != nil {
			continue // not written (or unknown): the call's own error says so
		}
		switch {
		case werr != nil:
			dc.short = &Error{Op: op, Code: CodeUnavailable, Err: werr,
				Message: "written on the primary, but WAIT " + strconv.Itoa(c.waitReplicas) + " failed (" + werr.Error() +
					"): it may still run but is not known to be durable"}
		case acked < int64(c.waitReplicas):
			dc.short = &Error{Op: op, Code: CodeUnavailable,
				Message: "written on the primary but acknowledged by only " + strconv.FormatInt(acked, 10) + " of " +
					strconv.Itoa(c.waitReplicas) + " replicas within " + strconv.FormatInt(timeoutMs, 10) +
					" ms: it may still run but is not known to be durable"}
		}
	}
}

func cmdsOf(group []*durableCall) []*redis.Cmd {
	out := make([]*redis.Cmd, len(group))
	for i, dc := range group {
		out[i] = dc.cmd
	}
	return out
}
