package baton

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"
)

// replyError is a Redis error reply as go-redis reports it (it implements redis.Error).
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

// A network error after a command was written is not retried by go-redis' cluster loop (it is
// hidden from its retry test) and reads as unavailable; a failed dial, a Redis reply and the
// caller's context pass unchanged. Both ask for a slot map reload.
func TestNoResendHidesErrorsAfterWhichTheCommandMayHaveRun(t *testing.T) {
	reloads := 0
	h := &noResend{reload: func() { reloads++ }}
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	for _, c := range []struct {
		err    error
		hidden bool
	}{
		{io.EOF, true}, {reset, true}, {dial, false}, {replyError("MOVED 1 127.0.0.1:7000"), false},
		{replyError("BATON_CONFLICT running"), false}, {context.Canceled, false}, {redis.ErrPoolTimeout, false},
		{versionMismatch("none"), false},
	} {
		reloads = 0
		got := h.ProcessHook(func(context.Context, redis.Cmder) error { return c.err })(context.Background(), redis.NewCmd(context.Background(), "fcall"))
		var hidden *mayHaveRun
		if errors.As(got, &hidden) != c.hidden {
			t.Errorf("%v: hidden %v, want %v", c.err, !c.hidden, c.hidden)
		}
		if c.hidden && (errors.Is(got, io.EOF) || got.Error() != c.err.Error()) {
			t.Errorf("%v: the hidden error %v still unwraps to the cause or reads differently", c.err, got)
		}
		if c.hidden && !errors.Is(fromRedis("ack", got), CodeUnavailable) {
			t.Errorf("%v: fromRedis = %v, want unavailable", c.err, fromRedis("ack", got))
		}
		if wantReload := c.hidden || c.err == dial; (reloads > 0) != wantReload {
			t.Errorf("%v: %d reloads", c.err, reloads)
		}
	}
}

// go-redis resends a node's whole pipeline batch after a read error on one of its commands (and
// the redirected commands of a MOVED/ASK): the hook passes on only those that did not run.
func TestNoResendPassesOnOnlyCommandsThatDidNotRun(t *testing.T) {
	ctx := context.Background()
	h := &noResend{}
	ran := redis.NewCmd(ctx, "fcall", "baton_v2_ack")
	lost := redis.NewCmd(ctx, "fcall", "baton_v2_fail")
	moved := redis.NewCmd(ctx, "fcall", "baton_v2_extend")
	asking := redis.NewCmd(ctx, "asking")
	asked := redis.NewCmd(ctx, "fcall", "baton_v2_promote")
	first := []redis.Cmder{ran, lost, moved}
	var sent [][]redis.Cmder
	pipeline := h.ProcessPipelineHook(func(_ context.Context, cmds []redis.Cmder) error {
		sent = append(sent, cmds)
		if len(sent) == 1 {
			ran.SetVal("ok")
			lost.SetErr(io.ErrUnexpectedEOF)
			moved.SetErr(replyError("MOVED 12 127.0.0.1:7001"))
			return io.ErrUnexpectedEOF
		}
		return nil
	})
	_ = pipeline(ctx, first)
	asked.SetErr(replyError("ASK 13 127.0.0.1:7002"))
	_ = pipeline(ctx, []redis.Cmder{ran, lost, moved, asking, asked}) // the resend
	if len(sent) != 2 || len(sent[1]) != 3 || sent[1][0] != moved || sent[1][1] != asking || sent[1][2] != asked {
		t.Fatalf("resent %v, want only the MOVED command and ASKING + the ASK command", sent[len(sent)-1])
	}
	if ran.Val() != "ok" || ran.Err() != nil {
		t.Errorf("the command that ran lost its reply: %v", ran)
	}
	var hidden *mayHaveRun
	if !errors.As(lost.Err(), &hidden) {
		t.Errorf("the command lost on the wire: %v", lost.Err())
	}
	// Nothing left to send: the hook sends nothing.
	_ = pipeline(ctx, []redis.Cmder{ran, lost})
	if len(sent) != 2 {
		t.Errorf("sent a batch of commands that ran or may have run: %v", sent[len(sent)-1])
	}
}
