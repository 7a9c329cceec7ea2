package baton

import (
	"encoding/json"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"
)

// EnqueueOption sets one property of a task being enqueued (functional options).
type EnqueueOption func(*enqueueSettings)

// enqueueSettings are the options of one task, before validation.
type enqueueSettings struct {
	taskID        string
	maxRetry      int
	delay         time.Duration
	at            time.Time
	timeout       time.Duration
	uniqueKey     string
	uniqueTTL     time.Duration
	extra         map[string]json.RawMessage
	extraErr      *Error
	explicitTrace bool
}

// TaskID sets the task id instead of a new UUIDv7. Enqueueing an id that is live, or finished
// within the namespace's done_retention_s, writes nothing: the outcome is Duplicate.
func TaskID(id string) EnqueueOption { return func(s *enqueueSettings) { s.taskID = id } }

// MaxRetry sets how many times a failed task is retried (0..25; default DefaultMaxRetry).
func MaxRetry(n int) EnqueueOption { return func(s *enqueueSettings) { s.maxRetry = n } }

// Delay makes the task wait d before its first run (recorded as delay_seconds, whole seconds:
// a fraction of a second is rounded up). The due time is counted on the Redis server's clock.
func Delay(d time.Duration) EnqueueOption { return func(s *enqueueSettings) { s.delay = d } }

// At sets the first run time (to the millisecond). A time in the past runs at once.
// delay_seconds is still recorded as set by Delay (0 by default).
func At(t time.Time) EnqueueOption { return func(s *enqueueSettings) { s.at = t } }

// ExecutionTimeout limits one attempt (1 s..24 h, whole seconds: a fraction is rounded up).
// A Go handler sees it as its context's deadline; past it the attempt fails as a timeout.
func ExecutionTimeout(d time.Duration) EnqueueOption {
	return func(s *enqueueSettings) { s.timeout = d }
}

// Unique refuses the task (outcome UniqueConflict, nothing written) while another task enqueued
// with the same key in this namespace holds it, i.e. for ttl (>= 1 s) after that enqueue.
func Unique(key string, ttl time.Duration) EnqueueOption {
	return func(s *enqueueSettings) { s.uniqueKey, s.uniqueTTL = key, ttl }
}

// Extra adds a top-level field to the task document, beside the contract's own (consumers in
// every language receive it untouched). A json.RawMessage (or []byte) value is taken as JSON text
// byte for byte; any other value is marshalled with encoding/json.
func Extra(name string, value any) EnqueueOption {
	return func(s *enqueueSettings) {
		var raw json.RawMessage
		switch v := value.(type) {
		case json.RawMessage:
			raw = v
		case []byte:
			raw = v
		default:
			b, err := json.Marshal(value)
			if err != nil {
				s.extraErr = invalid(name, "cannot be encoded as JSON: "+err.Error())
				return
			}
			raw = b
		}
		if !json.Valid(raw) {
			s.extraErr = invalid(name, "not valid JSON: "+syntaxError(raw))
			return
		}
		if s.extra == nil {
			s.extra = map[string]json.RawMessage{}
		}
		s.extra[name] = raw
		if name == "trace" {
			s.explicitTrace = true
		}
	}
}

// Headers sets the task's string headers (the extra field "headers": at most 64, values of at
// most 1024 characters).
func Headers(h map[string]string) EnqueueOption { return Extra("headers", h) }

// Trace sets the W3C trace context the task carries (the extra field "trace"). Without it,
// Enqueue takes the trace context of its ctx (an OpenTelemetry span), if any.
func Trace(traceparent, tracestate string) EnqueueOption {
	tc := map[string]string{"traceparent": traceparent}
	if tracestate != "" {
		tc["tracestate"] = tracestate
	}
	return Extra("trace", tc)
}

// Option configures a Client or a Worker (both accept it).
type Option interface {
	ClientOption
	WorkerOption
}

// ClientOption configures a Client.
type ClientOption interface{ applyClient(*clientConfig) }

// WorkerOption configures a Worker.
type WorkerOption interface{ applyWorker(*workerConfig) }

// clientConfig is what NewClient builds from its options.
type clientConfig struct {
	redisOptions   []func(*redis.Options)
	tracerProvider trace.TracerProvider
	waitReplicas   int           // WaitReplicas (0: no WAIT)
	waitTimeout    time.Duration // WaitTimeout
	logger         *slog.Logger  // WithLogger (nil: nowhere)
}

type sharedOption struct {
	client func(*clientConfig)
	worker func(*workerConfig)
}

func (o sharedOption) applyClient(c *clientConfig) { o.client(c) }
func (o sharedOption) applyWorker(c *workerConfig) { o.worker(c) }

// WithTracerProvider makes the Client create a producer span per enqueue and the Worker a
// consumer span per attempt, parented by the trace context the task carries. Without it, the
// trace context is still carried (Enqueue takes it from its ctx; handlers find it in theirs).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return sharedOption{
		client: func(c *clientConfig) { c.tracerProvider = tp },
		worker: func(c *workerConfig) { c.tracerProvider = tp },
	}
}

// WithRedisOptions adjusts the go-redis options built from the URL (TLS, pool size, timeouts,
// credentials providers, ...). The SDK installs its own OnConnect hook, which calls yours first.
func WithRedisOptions(adjust func(*redis.Options)) Option {
	return sharedOption{
		client: func(c *clientConfig) { c.redisOptions = append(c.redisOptions, adjust) },
		worker: func(c *workerConfig) { c.redisOptions = append(c.redisOptions, adjust) },
	}
}
