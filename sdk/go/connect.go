package baton

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// newRedis builds a go-redis client for url whose every (re)connect checks the functions library
// version (docs/protocol.md: a client refuses to run against another version). extraPool is added
// to the pool size the options end with (the worker holds a few connections per task type).
func newRedis(url string, adjust []func(*redis.Options), extraPool int) (*redis.Client, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, &Error{Op: "connect", Code: CodeInvalidArgument, Field: "redis_url", Message: err.Error(), Err: err}
	}
	// Redis 7.0 has no maintenance notifications; asking for them only costs a refused command.
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	opt.DisableIdentity = true // no CLIENT SETINFO (Redis 7.0 refuses it)
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
	return redis.NewClient(opt), nil
}

// checkVersion asks FCALL_RO baton_v2_version 0 and refuses anything but LibraryVersion.
func checkVersion(ctx context.Context, c redis.Cmdable) error {
	v, err := fcallVersion(ctx, c).Text()
	if err != nil {
		var reply redis.Error
		if errors.As(err, &reply) { // "Function not found": no v2 library loaded
			return versionMismatch("none")
		}
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
