package baton

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Code is an error code of the contract (contract/errors.json); the constants are generated.
// A Code is itself an error, so errors.Is(err, baton.ErrNotFound) is true for every *Error whose
// Code is CodeNotFound.
type Code string

// Error returns the code's name, e.g. "invalid_argument".
func (c Code) Error() string { return string(c) }

// Retryable reports whether a call that failed with this code may succeed later without a change
// by the caller (unavailable, resource_exhausted).
func (c Code) Retryable() bool { return codeRetryable[c] }

// Error is what every SDK call returns when the contract, the functions library or Redis refused
// it. Use errors.Is with the Err* sentinels (or Code constants) to test the code, errors.As to
// read the field.
type Error struct {
	// Op is the operation ("enqueue", "cancel", "connect", ...); empty for ParseTask and
	// Task.Validate, whose text is then exactly "<field>: <rule>".
	Op string
	// Code is the contract code.
	Code Code
	// Field names the offending value of an invalid_argument error: a top-level field
	// ("max_retry"), a nested one ("trace.traceparent", "headers.note"), or "document".
	Field string
	// Message is the rule that was broken or what went wrong, without the field.
	Message string
	// Hint says what to do, when known (e.g. "run 'baton init'").
	Hint string
	// Err is the underlying error (a Redis reply, a network or context error), if any.
	Err error
}

// Error renders "op: code: field: message", e.g.
// "enqueue: invalid_argument: max_retry: must be an integer 0..25 (got 99)". Without Op it is
// "field: message", the shape contract/fixtures/README.md asks of a parser.
func (e *Error) Error() string {
	var b strings.Builder
	if e.Op != "" {
		b.WriteString(e.Op)
		b.WriteString(": ")
		b.WriteString(string(e.Code))
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	if e.Hint != "" {
		b.WriteString(" (")
		b.WriteString(e.Hint)
		b.WriteString(")")
	}
	return b.String()
}

// Unwrap returns the underlying error, so errors.Is(err, context.Canceled) and the like work.
func (e *Error) Unwrap() error { return e.Err }

// Is matches a Code (or Err* sentinel) equal to e.Code.
func (e *Error) Is(target error) bool {
	c, ok := target.(Code)
	return ok && c == e.Code
}

// invalid builds the invalid_argument error of a contract rule.
func invalid(field, rule string) *Error {
	return &Error{Code: CodeInvalidArgument, Field: field, Message: rule}
}

// withOp returns err with its operation set (a copy when it is an *Error without one).
func withOp(op string, err error) error {
	var e *Error
	if errors.As(err, &e) && e.Op == "" {
		c := *e
		c.Op = op
		return &c
	}
	return err
}

// redisErrorRule maps a Redis error reply prefix to a code (generated from contract/errors.json).
type redisErrorRule struct {
	prefix string
	code   Code
	hint   string
}

// fromRedis turns what go-redis returned into an *Error of the contract: the library's
// BATON_* replies keep their words, Redis' own replies map by prefix, anything on the way
// (a broken connection, a timeout) is unavailable. The caller's own context ending is no
// error of Redis: it stays a context error (see contextError).
func fromRedis(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return contextError(op, err)
	}
	var e *Error
	if errors.As(err, &e) {
		return withOp(op, err)
	}
	if errors.Is(err, redis.Nil) {
		return &Error{Op: op, Code: CodeInternal, Message: "unexpected nil reply", Err: err}
	}
	var reply redis.Error
	if errors.As(err, &reply) {
		text := strings.TrimPrefix(reply.Error(), "ERR ")
		word, rest, _ := strings.Cut(text, " ")
		if code, ok := luaCodes[word]; ok {
			out := &Error{Op: op, Code: code, Message: rest, Err: err}
			if code == CodeInvalidArgument {
				if field, rule, ok := strings.Cut(rest, ": "); ok {
					out.Field, out.Message = field, rule
				}
			}
			return out
		}
		if strings.HasPrefix(reply.Error(), "MOVED ") || strings.HasPrefix(reply.Error(), "ASK ") {
			// Not run: the slot moved (failover, resharding) faster than go-redis followed it.
			return &Error{Op: op, Code: CodeUnavailable, Message: reply.Error(), Hint: "the cluster's slots moved: retry", Err: err}
		}
		for _, rule := range redisErrorRules {
			if strings.HasPrefix(reply.Error(), rule.prefix) {
				return &Error{Op: op, Code: rule.code, Message: reply.Error(), Hint: rule.hint, Err: err}
			}
		}
		return &Error{Op: op, Code: CodeInternal, Message: reply.Error(), Err: err}
	}
	// A broken connection, a timeout, a cancelled context: Unwrap still shows which.
	return &Error{Op: op, Code: CodeUnavailable, Message: err.Error(), Err: err}
}

// contextError is the error of a call whose context ended: errors.Is(err, context.Canceled)
// (or DeadlineExceeded) holds, and it is not an *Error, so it never reads as the retryable
// unavailable.
func contextError(op string, err error) error {
	return fmt.Errorf("%s: %w", op, err)
}

// isConnectionError reports whether err says nothing about the command but that the connection
// (or the server's availability) failed: the caller reconnects and sends again.
func isConnectionError(err error) bool {
	if err == nil {
		return false
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code == CodeUnavailable || e.Code == CodeVersionMismatch
	}
	var reply redis.Error
	return !errors.As(err, &reply)
}

// ErrNonRetryable marks a handler error that retrying cannot fix: the task goes straight to the
// dead-letter queue (failure kind non_retryable). Wrap it (fmt.Errorf("bad input: %w",
// baton.ErrNonRetryable)) or use NonRetryable(err).
var ErrNonRetryable = errors.New("non-retryable")

// NonRetryable wraps err so that the worker dead-letters the task at once instead of retrying.
// errors.Is(NonRetryable(err), ErrNonRetryable) and errors.Is(NonRetryable(err), err) are true.
func NonRetryable(err error) error {
	if err == nil {
		err = errors.New("non-retryable failure")
	}
	return &nonRetryableError{err: err}
}

type nonRetryableError struct{ err error }

func (e *nonRetryableError) Error() string        { return e.err.Error() }
func (e *nonRetryableError) Unwrap() error        { return e.err }
func (e *nonRetryableError) Is(target error) bool { return target == ErrNonRetryable }

// WithStack records the calling goroutine's stack in err. A handler error carries no stack of its
// own: the worker records where it observed the error; wrap an error with WithStack where it
// arises and the dead-letter queue shows that stack instead.
func WithStack(err error) error {
	if err == nil {
		return nil
	}
	return &stackError{err: err, stack: string(debug.Stack())}
}

type stackError struct {
	err   error
	stack string
}

func (e *stackError) Error() string { return e.err.Error() }
func (e *stackError) Unwrap() error { return e.err }

// PanicError is the error a handler's recovered panic becomes (its attempt fails with it,
// kind "error"); Value is what was passed to panic and Stack where it happened.
type PanicError struct {
	// Value is what the handler passed to panic.
	Value any
	// Stack is the handler goroutine's stack where the panic was recovered.
	Stack string
}

// Error renders "panic: <value>".
func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// errorf is fmt.Errorf for internal errors of the contract kind internal.
func errorf(op, format string, args ...any) *Error {
	return &Error{Op: op, Code: CodeInternal, Message: fmt.Sprintf(format, args...)}
}

// execPipeline sends a pipeline and returns an error only when the connection failed (or the
// version check of a new connection refused it): then nothing of the answers is known. Error
// replies of single commands stay on their commands.
func execPipeline(ctx context.Context, pipe redis.Pipeliner) error {
	_, err := pipe.Exec(ctx)
	if isConnectionError(err) {
		return err
	}
	for _, cmd := range pipe.Cmds() {
		if isConnectionError(cmd.Err()) {
			return cmd.Err()
		}
	}
	return nil
}
