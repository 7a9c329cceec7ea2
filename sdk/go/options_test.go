package baton_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	baton "github.com/baton-dev/baton/sdk/go"
)

// Options outside their range are refused with the field named, never taken as another value
// (a negative fraction of a second is not "no delay" / "no timeout", a block of 0 is not 1 ms).
func TestOutOfRangeOptionsAreRefused(t *testing.T) {
	c := newClient(t)
	ns := newNS()
	for _, tc := range []struct {
		opt   baton.EnqueueOption
		field string
	}{
		{baton.Delay(-500 * time.Millisecond), "delay_seconds"},
		{baton.ExecutionTimeout(-500 * time.Millisecond), "execution_timeout"},
	} {
		_, err := c.Enqueue(context.Background(), ns, "t", []byte(`{}`), tc.opt)
		var e *baton.Error
		if !errors.As(err, &e) || e.Code != baton.CodeInvalidArgument || e.Field != tc.field {
			t.Errorf("%s: got %v", tc.field, err)
		}
	}
	for _, tc := range []struct {
		opt   baton.WorkerOption
		field string
	}{
		{baton.WithBlock(0), "block"},
		{baton.WithBlock(-time.Second), "block"},
		{baton.WithShutdownGrace(-time.Second), "shutdown_grace"},
		{baton.WithGroup(""), "group"},
		{baton.WithGroup("my group"), "group"},
		{baton.WithService("svc\n"), "service"},
	} {
		_, err := baton.NewWorker(srv.URL(), tc.opt)
		var e *baton.Error
		if !errors.As(err, &e) || e.Code != baton.CodeInvalidArgument || e.Field != tc.field {
			t.Errorf("%s: got %v", tc.field, err)
		}
	}
}

// A task without a payload does not serialize as a valid document with an empty one.
func TestTaskWithoutPayloadDoesNotMarshalAsValid(t *testing.T) {
	task := &baton.Task{ID: "a", Namespace: "s", Type: "t", CreatedAt: 1722489600}
	out, err := task.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	_, err = baton.ParseTask(out)
	var e *baton.Error
	if !errors.As(err, &e) || e.Field != "payload" {
		t.Fatalf("%s parsed: %v", out, err)
	}
}

// Only "Function not found" means the library is missing: another refusal of the version check
// (here an ACL without FCALL_RO) is reported as what it is, not as "run 'baton init'".
func TestVersionCheckRefusalIsNotVersionMismatch(t *testing.T) {
	rdb := rawClient(t)
	ctx := context.Background()
	if err := rdb.Do(ctx, "ACL", "SETUSER", "gotest-nofcall", "on", ">pw", "~*", "&*", "+@all", "-fcall_ro").Err(); err != nil {
		t.Fatal(err)
	}
	defer rdb.Do(ctx, "ACL", "DELUSER", "gotest-nofcall")
	_, err := baton.NewClient(ctx, "redis://gotest-nofcall:pw@"+srv.Addr())
	if err == nil || errors.Is(err, baton.ErrVersionMismatch) || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("got %v, want the NOPERM refusal", err)
	}
}
