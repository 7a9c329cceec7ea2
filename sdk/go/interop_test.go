package baton_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	baton "github.com/baton-dev/baton/sdk/go"
)

// Interop with the C++ side through the `baton` CLI (docs/cli.md): Go produces for
// `baton work --exec`, and `baton enqueue` produces for a Go worker whose failures
// `baton task show` then lists with their Go stacks.

func batonCLI(t *testing.T, args ...string) []byte {
	t.Helper()
	bin := cppBinary(t, "cli/baton")
	cmd := exec.Command(bin, append([]string{"--redis", srv.URL()}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("baton %v: %v: %s", args, err, ee.Stderr)
		}
		t.Fatalf("baton %v: %v", args, err)
	}
	return out
}

func TestInteropGoProducerCLIWorker(t *testing.T) {
	bin := cppBinary(t, "cli/baton")
	ctx := context.Background()
	ns := newNS()
	dir := t.TempDir()
	payload := []byte(`{"big": 123456789012345678901234567890, "price": 1.10, "text": "二 🚀"}`)
	r, err := newClient(t).Enqueue(ctx, ns, "cpp_side", payload, baton.MaxRetry(4),
		baton.Extra("x_origin", json.RawMessage(`{"lang":"go"}`)))
	if err != nil {
		t.Fatal(err)
	}
	script := `cat > "$OUT/$BATON_TASK_ID.payload"; printf '%s' "$BATON_TASK" > "$OUT/$BATON_TASK_ID.task"`
	work := exec.Command(bin, "--redis", srv.URL(), "work", "--ns", ns, "--type", "cpp_side", "--exec", script)
	work.Env = append(os.Environ(), "OUT="+dir)
	if err := work.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = work.Process.Signal(syscall.SIGTERM); _ = work.Wait() }()
	taskFile := filepath.Join(dir, r.TaskID+".task")
	waitFor(t, 30*time.Second, "baton work to run the task", func() bool {
		_, err := rawClient(t).ZScore(ctx, keyOf(ns, "done"), r.TaskID).Result()
		return err == nil
	})
	got, err := os.ReadFile(filepath.Join(dir, r.TaskID+".payload"))
	if err != nil || string(got) != string(payload) {
		t.Fatalf("stdin payload %q (%v)", got, err)
	}
	doc, err := os.ReadFile(taskFile)
	if err != nil {
		t.Fatal(err)
	}
	task, err := baton.ParseTask(doc)
	if err != nil {
		t.Fatalf("BATON_TASK %s: %v", doc, err)
	}
	if task.ID != r.TaskID || task.Namespace != ns || task.MaxRetry != 4 || string(task.Extra["x_origin"]) != `{"lang":"go"}` ||
		string(task.Payload) != string(payload) {
		t.Fatalf("BATON_TASK %s", doc)
	}
}

func TestInteropCLIProducerGoWorker(t *testing.T) {
	ns := newNS()
	payload := `{"n": 12345678901234567890, "f": 1.10}`
	out := batonCLI(t, "--json", "enqueue", "--ns", ns, "--type", "go_side", "--payload", payload,
		"--max-retry", "1", "--timeout", "30", "--extra", `{"x_from":"cli","headers":{"producer":"baton-cli"}}`)
	var enq struct {
		TaskID  string `json:"task_id"`
		Outcome string `json:"outcome"`
	}
	if err := json.Unmarshal(out, &enq); err != nil || enq.Outcome != "queued" {
		t.Fatalf("baton enqueue: %s (%v)", out, err)
	}
	got := make(chan *baton.Task, 4)
	w := newWorker(t, baton.WithMaintenance(true),
		baton.WithRetry(baton.RetryPolicy{Base: 50 * time.Millisecond, Max: 100 * time.Millisecond}))
	_ = w.HandleFunc(ns, "go_side", func(ctx context.Context, task *baton.Task) error {
		got <- task
		return errors.New("go handler refuses")
	})
	startWorker(t, w)
	var task *baton.Task
	select {
	case task = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("the Go worker never got the task")
	}
	if task.ID != enq.TaskID || string(task.Payload) != payload || task.MaxRetry != 1 || task.ExecutionTimeout != 30 ||
		string(task.Extra["x_from"]) != `"cli"` || task.Headers()["producer"] != "baton-cli" {
		t.Fatalf("task %+v extra %s", task, task.Extra)
	}
	waitFor(t, 30*time.Second, "the dead-letter queue", func() bool { return isDead(t, ns, "go_side", enq.TaskID) })
	var show struct {
		State  string `json:"state"`
		Errors []struct {
			Attempt int    `json:"attempt"`
			Kind    string `json:"kind"`
			Error   string `json:"error"`
			Stack   string `json:"stack"`
		} `json:"errors"`
	}
	doc := batonCLI(t, "--json", "task", "show", enq.TaskID, "--ns", ns)
	if err := json.Unmarshal(doc, &show); err != nil {
		t.Fatal(err)
	}
	if show.State != "dead" || len(show.Errors) != 2 {
		t.Fatalf("task show: %s", doc)
	}
	for _, e := range show.Errors {
		if e.Kind != "error" || e.Error != "go handler refuses" || !strings.Contains(e.Stack, "TestInteropCLIProducerGoWorker") {
			t.Fatalf("task show error: %+v", e)
		}
	}
}
