package baton

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"runtime/debug"
	"strconv"
	"time"
)

// Why a handler's context ends (context.Cause(ctx) inside a handler).
var (
	// ErrExecutionTimeout: the task's execution_timeout passed; the attempt is failed as a
	// timeout whatever the handler returns.
	ErrExecutionTimeout = errors.New("baton: execution_timeout exceeded")
	// ErrLeaseLost: the worker could no longer extend the lease (it expired and the task was
	// taken back): another worker may run the task now.
	ErrLeaseLost = errors.New("baton: lease lost")
	// ErrWorkerStopping: Shutdown's grace ended with the handler still running; its outcome is
	// not recorded and the lease decides (another worker takes the task once it expires).
	ErrWorkerStopping = errors.New("baton: worker stopping")
)

// Failure kinds of baton_v2_fail (docs/keyspace.md, errors hash).
const (
	kindError        = "error"
	kindTimeout      = "timeout"
	kindNonRetryable = "non_retryable"
	kindMalformed    = "malformed"
)

// Limits on what one failed attempt writes to Redis.
const (
	maxErrorBytes = 4096
	maxStackBytes = 16384
)

// outcome is how an attempt ended: kind "" is success, else the failure's kind, message and
// stack, as baton_v2_fail records them.
type outcome struct {
	kind, message, stack string
	err                  error // what the handler returned (or the panic), for the span
}

// invoke runs the handler once and hands its outcome to deliver, exactly once: also when the
// handler panics (a failed attempt with the panic's stack; a handler goroutine never takes the
// process down, seed note 3.2) and when it ends its goroutine with runtime.Goexit (e.g.
// t.FailNow in a test), in which case deliver runs during the unwinding.
func invoke(ctx context.Context, h Handler, name string, t *Task, deliver func(outcome)) {
	delivered := false
	defer func() {
		if !delivered {
			deliver(outcome{kind: kindError, message: "handler " + name + " called runtime.Goexit",
				stack: string(debug.Stack()), err: errors.New("runtime.Goexit")})
		}
	}()
	out := callHandler(ctx, h, name, t)
	delivered = true
	deliver(out)
}

// callHandler runs the handler, recovering a panic into a failed attempt.
func callHandler(ctx context.Context, h Handler, name string, t *Task) (out outcome) {
	defer func() {
		if v := recover(); v != nil {
			stack := debug.Stack()
			perr := &PanicError{Value: v, Stack: string(stack)}
			out = outcome{kind: kindError, message: perr.Error(), err: perr,
				stack: "panic: " + fmt.Sprint(v) + " [recovered by the baton worker in handler " + name + "]\n\n" + string(stack)}
			if errors.Is(perr, ErrNonRetryable) { // panic(baton.NonRetryable(err)): as returned
				out.kind = kindNonRetryable
			}
		}
	}()
	err := h.ProcessTask(ctx, t)
	if err == nil {
		return outcome{}
	}
	out = outcome{kind: kindError, message: err.Error(), err: err}
	if errors.Is(err, ErrNonRetryable) {
		out.kind = kindNonRetryable
	}
	var se *stackError
	if errors.As(err, &se) {
		out.stack = "error " + strconv.Quote(err.Error()) + " (" + fmt.Sprintf("%T", err) + ") created at:\n" + se.stack
	} else {
		// A returned error carries no stack: record which handler returned it and where the
		// worker observed it (baton.WithStack records the creation site instead).
		out.stack = "handler " + name + " returned error " + strconv.Quote(err.Error()) + " (" +
			fmt.Sprintf("%T", err) + ")\nobserved in the worker at:\n" + string(debug.Stack())
	}
	return out
}

// timeoutOutcome is the failure of an attempt past its execution_timeout; stack is where the
// handler's goroutine was at the deadline (or where the worker noticed).
func timeoutOutcome(t *Task, stack string) outcome {
	msg := "execution_timeout of " + strconv.Itoa(t.ExecutionTimeout) + "s exceeded"
	if stack == "" {
		stack = "attempt stopped by the worker at:\n" + string(debug.Stack())
	}
	return outcome{kind: kindTimeout, message: msg, stack: stack, err: ErrExecutionTimeout}
}

// runWithDeadline runs an attempt that has an execution_timeout in its own goroutine. At the
// deadline the attempt is reported failed at once (report), with the handler goroutine's stack;
// the pool slot stays taken until the handler returns (or the worker abandons it), so a handler
// that ignores its context never runs beside more than the pool's size of others.
func runWithDeadline(ctx context.Context, h Handler, name string, t *Task, deadline time.Time,
	abandon <-chan struct{}, report func(outcome)) {
	done := make(chan outcome, 1)
	gid := make(chan uint64, 1)
	go func() {
		gid <- goroutineID()
		invoke(ctx, h, name, t, func(out outcome) { done <- out })
	}()
	id := <-gid
	select {
	case out := <-done:
		if !time.Now().Before(deadline) || errors.Is(context.Cause(ctx), ErrExecutionTimeout) {
			out = timeoutOutcome(t, "handler returned after its deadline: "+strconv.Quote(out.message)+
				"\n"+out.stack)
		}
		report(out)
		return
	case <-ctx.Done():
	}
	if errors.Is(context.Cause(ctx), ErrExecutionTimeout) {
		report(timeoutOutcome(t, goroutineStack(id)))
		select {
		case <-done:
		case <-abandon:
		}
		return
	}
	// Lease lost or worker stopping: the handler was told; its outcome is reported when it
	// returns (the worker ignores it once abandoned).
	select {
	case out := <-done:
		report(out)
	case <-abandon:
	}
}

// goroutineID is the id of the calling goroutine, from the header of its stack trace.
func goroutineID() uint64 {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	fields := bytes.Fields(buf[:n]) // "goroutine 123 [running]:"
	if len(fields) < 2 {
		return 0
	}
	id, _ := strconv.ParseUint(string(fields[1]), 10, 64)
	return id
}

// maxDumpBytes bounds the dump of all goroutines goroutineStack takes.
const maxDumpBytes = 64 << 20

// goroutineStack is the stack of goroutine id (taken from a dump of all goroutines, which stops
// the world for a moment: only done when an attempt times out). The buffer grows until the
// dump fits, so that a process with many goroutines does not cut the handler's off.
func goroutineStack(id uint64) string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) || len(buf) >= maxDumpBytes {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	header := []byte("goroutine " + strconv.FormatUint(id, 10) + " [")
	for _, block := range bytes.Split(buf, []byte("\n\n")) {
		if bytes.HasPrefix(block, header) {
			return "handler goroutine at the deadline:\n" + string(block)
		}
	}
	return ""
}

// handlerName names a handler for error records: the function and where it is defined.
func handlerName(h Handler) string {
	if f, ok := h.(HandlerFunc); ok {
		if fn := runtime.FuncForPC(reflect.ValueOf(f).Pointer()); fn != nil {
			file, line := fn.FileLine(fn.Entry())
			return fn.Name() + " (" + file + ":" + strconv.Itoa(line) + ")"
		}
	}
	return fmt.Sprintf("%T", h)
}

// clip cuts s to at most n bytes (on a UTF-8 boundary), marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - 20
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "\n... (truncated)"
}
