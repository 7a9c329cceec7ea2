package baton

import (
	"context"
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// newRedis builds a go-redis client for url whose every (re)connect checks the functions library
// version (docs/protocol.md: a client refuses to run against another version). extraPool is added
// to the pool size the options end with (the worker holds a few connections per task type). A
// redis+cluster:// URL gives a *redis.ClusterClient (every node client with these options and
// the same check, see newClusterClient), any other a *redis.Client.
func newRedis(url string, adjust []func(*redis.Options), extraPool int) (redis.UniversalClient, error) {
	var cluster *clusterURL
	var opt *redis.Options
	if strings.HasPrefix(url, clusterScheme) {
		u, e := parseClusterURL(url)
		if e != nil {
			return nil, e
		}
		cluster = u
		opt = &redis.Options{Username: u.username, Password: u.password}
	} else {
		o, err := redis.ParseURL(url)
		if err != nil {
			return nil, &Error{Op: "connect", Code: CodeInvalidArgument, Field: "redis_url", Message: err.Error(), Err: err}
		}
		opt = o
	}
	// Redis 7.0 has no maintenance notifications; asking for them only costs a refused command.
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	opt.DisableIdentity = true // no CLIENT SETINFO (Redis 7.0 refuses it)
	// A ctx deadline bounds the socket reads and writes of a call, not only the pool wait.
	opt.ContextTimeoutEnabled = true
	// go-redis would send a command again after a read timeout or EOF, when the first one may
	// have run: an enqueue then answers Duplicate for its own task, an ack "gone". The SDK's
	// callers retry themselves (the worker's loops; a producer with the same TaskID). A
	// max_retries in the URL or WithRedisOptions still wins.
	if opt.MaxRetries == 0 {
		opt.MaxRetries = -1
	}
	for _, f := range adjust {
		f(opt)
	}
	if opt.PoolSize == 0 {
		opt.PoolSize = 10
	}
	opt.PoolSize += extraPool
	userHook := opt.OnConnect
	opt.OnConnect = func(ctx context.Context, cn *redis.Conn) error {
		if userHook != nil {
			if err := userHook(ctx, cn); err != nil {
				return err
			}
		}
		return checkVersion(ctx, cn)
	}
	if cluster != nil {
		return newClusterClient(cluster, opt), nil
	}
	return redis.NewClient(opt), nil
}

// checkVersion asks FCALL_RO baton_v2_version 0 and refuses anything but LibraryVersion.
func checkVersion(ctx context.Context, c redis.Cmdable) error {
	v, err := fcallVersion(ctx, c).Text()
	if err != nil {
		var reply redis.Error
		if errors.As(err, &reply) && strings.HasPrefix(reply.Error(), "ERR Function not found") {
			return versionMismatch("none") // no v2 library loaded
		}
		// LOADING, BUSY, NOPERM, ...: the caller maps the reply (fromRedis); it says nothing
		// about the library.
		return err
	}
	if v != LibraryVersion {
		return versionMismatch(v)
	}
	return nil
}

// versionMismatch carries no wrapped cause on purpose: go-redis returns errors.Unwrap of an
// OnConnect error when it has one, which would hide this one.
func versionMismatch(have string) *Error {
	return &Error{
		Op:      "connect",
		Code:    CodeVersionMismatch,
		Message: "functions library version " + have + " loaded in Redis, this client needs " + LibraryVersion + ": run 'baton init'",
	}
}
