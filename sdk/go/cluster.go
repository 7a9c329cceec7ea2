package baton

import (
	"context"
	"errors"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"
)

// newClusterClient builds the go-redis ClusterClient of a redis+cluster:// URL. node is the
// per-node template newRedis prepared (the SDK's settings, then the WithRedisOptions
// adjustments, then the version-checking OnConnect): its settings go to every node client.
//
// go-redis (v9.17.3) resends a command in ClusterClient.process and processPipeline, up to
// MaxRedirects (3) times, after a MOVED/ASK reply (the command did not run: fine), after
// TRYAGAIN/CLUSTERDOWN/LOADING/READONLY replies (did not run either), but also after a
// network error or timeout, when the command may have run; and a cluster pipeline resends
// every command of a node's batch after a read error on one of them, including those whose
// replies it had read. noResend stops both: see its doc.
func newClusterClient(u *clusterURL, node *redis.Options) *redis.ClusterClient {
	hook := &noResend{}
	opt := &redis.ClusterOptions{
		Addrs:                      u.seeds,
		ClientName:                 node.ClientName,
		Dialer:                     node.Dialer,
		OnConnect:                  node.OnConnect,
		Protocol:                   node.Protocol,
		Username:                   node.Username,
		Password:                   node.Password,
		CredentialsProvider:        node.CredentialsProvider,
		CredentialsProviderContext: node.CredentialsProviderContext,
		MaxRetries:                 node.MaxRetries,
		MinRetryBackoff:            node.MinRetryBackoff,
		MaxRetryBackoff:            node.MaxRetryBackoff,
		DialTimeout:                node.DialTimeout,
		ReadTimeout:                node.ReadTimeout,
		WriteTimeout:               node.WriteTimeout,
		ContextTimeoutEnabled:      node.ContextTimeoutEnabled,
		PoolFIFO:                   node.PoolFIFO,
		PoolSize:                   node.PoolSize,
		PoolTimeout:                node.PoolTimeout,
		MinIdleConns:               node.MinIdleConns,
		MaxIdleConns:               node.MaxIdleConns,
		MaxActiveConns:             node.MaxActiveConns,
		ConnMaxIdleTime:            node.ConnMaxIdleTime,
		ConnMaxLifetime:            node.ConnMaxLifetime,
		TLSConfig:                  node.TLSConfig,
		DisableIdentity:            node.DisableIdentity,
		MaintNotificationsConfig:   node.MaintNotificationsConfig,
		NewClient: func(o *redis.Options) *redis.Client {
			c := redis.NewClient(o)
			c.AddHook(hook)
			return c
		},
	}
	cc := redis.NewClusterClient(opt)
	hook.reload = func() { cc.ReloadState(context.Background()) }
	return cc
}

// noResend is a hook on every node client of a ClusterClient. A network error (EOF, reset,
// timeout) after a command was written says nothing about whether it ran: the hook hides it
// from go-redis' retry test (wrapping it in mayHaveRun, which has no Unwrap to io.EOF or
// net.Error), so ClusterClient.process returns it instead of sending the command again; the
// SDK's callers retry themselves (the worker's loops; a producer with the same TaskID). In a
// pipeline go-redis has already queued the node's commands for a resend when the hook sees
// the error, so on a resend the hook passes on only the commands that did not run (a
// MOVED/ASK/TRYAGAIN/CLUSTERDOWN/LOADING/READONLY reply, or no connection at all) and leaves
// the others with their reply or error. It also asks for a reload of the slot map, so that
// after a failover the new primary is found without waiting for go-redis' 10 s refresh.
type noResend struct {
	reload func()
}

func (h *noResend) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *noResend) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		return h.hide(next(ctx, cmd))
	}
}

func (h *noResend) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if resend := anyErr(cmds); resend {
			cmds = notRun(cmds)
			if len(cmds) == 0 {
				return nil
			}
		}
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			if e := cmd.Err(); e != nil {
				cmd.SetErr(h.hide(e))
			}
		}
		return h.hide(err)
	}
}

// hide wraps an error after which the command may have run. After any network error (a
// failed dial too: a dead primary) it asks for a reload of the slot map (go-redis runs at most
// one per 200 ms).
func (h *noResend) hide(err error) error {
	if err == nil {
		return nil
	}
	hide := mayHaveRunErr(err)
	if (hide || isDialError(err)) && h.reload != nil {
		h.reload()
	}
	if !hide {
		return err
	}
	return &mayHaveRun{err: err}
}

func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// mayHaveRunErr: a network error or timeout once the command may have been written. Not: a
// Redis reply, the caller's context, a closed client or pool, a pool timeout or a failed dial
// (nothing was sent), or one already hidden.
func mayHaveRunErr(err error) bool {
	var reply redis.Error
	var hidden *mayHaveRun
	var own *Error // the version check of a new connection: nothing was sent
	switch {
	case errors.As(err, &hidden), errors.As(err, &reply), errors.As(err, &own),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, redis.ErrClosed), errors.Is(err, redis.ErrPoolTimeout), isDialError(err):
		return false
	}
	return true
}

// anyErr: a batch with an error in it is a resend (go-redis sends a fresh batch first).
func anyErr(cmds []redis.Cmder) bool {
	for _, cmd := range cmds {
		if cmd.Err() != nil {
			return true
		}
	}
	return false
}

// notRun keeps the commands of a resent batch that did not run (with the ASKING before one).
func notRun(cmds []redis.Cmder) []redis.Cmder {
	var out []redis.Cmder
	for i, cmd := range cmds {
		if cmd.Name() == "asking" && cmd.Err() == nil {
			if i+1 < len(cmds) && didNotRun(cmds[i+1].Err()) {
				out = append(out, cmd)
			}
			continue
		}
		if didNotRun(cmd.Err()) {
			out = append(out, cmd)
		}
	}
	return out
}

// didNotRun: a reply or error that says the command was not executed.
func didNotRun(err error) bool {
	var hidden *mayHaveRun
	if err == nil || errors.As(err, &hidden) {
		return false // its reply was read (it ran), or it may have run
	}
	var reply redis.Error
	if errors.As(err, &reply) {
		for _, p := range notRunReplies {
			if strings.HasPrefix(reply.Error(), p) {
				return true
			}
		}
		return false
	}
	return !mayHaveRunErr(err) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// notRunReplies are the replies of a Redis Cluster node that refused a command without running it.
var notRunReplies = []string{"MOVED ", "ASK ", "TRYAGAIN", "CLUSTERDOWN", "LOADING", "READONLY", "MASTERDOWN"}

// mayHaveRun is a network error after which the command may have run.
type mayHaveRun struct{ err error }

func (e *mayHaveRun) Error() string { return e.err.Error() }

// pingAll checks the connection (and, through OnConnect, the functions library version): on
// a cluster on every primary, so that a primary without the library is refused at once.
func pingAll(ctx context.Context, rdb redis.UniversalClient) error {
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			return node.Ping(ctx).Err()
		})
	}
	return rdb.Ping(ctx).Err()
}
