package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	baton "github.com/baton-dev/baton/sdk/go"
)

// consume runs a Go worker for the conformance task types of ns for `seconds` (or until
// SIGTERM/SIGINT, then shuts down gracefully). Retry backoff: base 100 ms, max 1 s.
func consume(redisURL, ns, reportPath, corpus string, seconds int) int {
	report, err := openReport(reportPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "consume:", err)
		return 1
	}
	defer report.close()
	w, err := baton.NewWorker(redisURL, baton.WithService("conformance-go"),
		baton.WithRetry(baton.RetryPolicy{Base: 100 * time.Millisecond, Max: time.Second}))
	if err != nil {
		fmt.Fprintln(os.Stderr, "consume:", err)
		return 1
	}
	h := &handlers{report: report, corpus: corpus}
	for typ, f := range map[string]baton.HandlerFunc{
		"conf_echo": h.echo, "conf_fail": h.fail, "conf_sleep": h.sleep,
		"conf_delay": h.delay, "conf_once": h.once,
	} {
		if err := w.Handle(ns, typ, f); err != nil {
			fmt.Fprintln(os.Stderr, "consume:", err)
			return 1
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, time.Duration(seconds)*time.Second)
	defer cancel()
	if err := w.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "consume:", err)
		return 1
	}
	s := w.Stats()
	fmt.Printf("consume: succeeded %d, failed %d, dead %d, malformed %d\n", s.Succeeded, s.Failed, s.Dead, s.Malformed)
	return 0
}

type handlers struct {
	report *report
	corpus string
}

func nowMs() int64 { return time.Now().UnixMilli() }

// echo reports the task as received; payload_value_equal compares the payload with the corpus
// file, both decoded by encoding/json with UseNumber (lossless) and numbers compared by value.
func (h *handlers) echo(ctx context.Context, t *baton.Task) error {
	var caseName string
	_ = json.Unmarshal(t.Extra["x_conformance_case"], &caseName)
	sum := sha256.Sum256(t.Payload)
	var timeout any
	if t.ExecutionTimeout != 0 {
		timeout = t.ExecutionTimeout
	}
	extra := map[string]json.RawMessage{}
	for k, v := range t.Extra {
		extra[k] = v
	}
	return h.report.append(map[string]any{
		"type": "conf_echo", "case": caseName, "task_id": t.ID, "namespace": t.Namespace,
		"task_type": t.Type, "max_retry": t.MaxRetry, "delay_seconds": t.DelaySeconds,
		"created_at": t.CreatedAt, "execution_timeout": timeout, "extra": extra,
		"payload_sha256":      hex.EncodeToString(sum[:]),
		"payload_value_equal": h.valueEqual(caseName, t),
	})
}

func (h *handlers) valueEqual(caseName string, t *baton.Task) any {
	name, ok := strings.CutPrefix(caseName, "payload/")
	if !ok {
		return nil
	}
	want, err := os.ReadFile(filepath.Join(h.corpus, name+".json"))
	if err != nil {
		return nil
	}
	wantValue, err := decode(want)
	if err != nil {
		return nil
	}
	got, err := t.PayloadMap()
	if err != nil {
		return false
	}
	return jsonEqual(got, wantValue)
}

// fail fails in both Go idioms: a panic when the payload says {"panic": true}, a returned error
// otherwise.
func (h *handlers) fail(ctx context.Context, t *baton.Task) error {
	if err := h.report.append(map[string]any{"type": "conf_fail", "task_id": t.ID, "attempt": t.Attempt}); err != nil {
		return err
	}
	var p struct {
		Panic bool `json:"panic"`
	}
	_ = t.Decode(&p)
	msg := fmt.Sprintf("conf_fail: deliberate failure on attempt %d of %s", t.Attempt, t.ID)
	if p.Panic {
		panic(msg)
	}
	return errors.New(msg)
}

// sleep sleeps cooperatively: it returns when its context ends (the execution_timeout).
func (h *handlers) sleep(ctx context.Context, t *baton.Task) error {
	if err := h.report.append(map[string]any{"type": "conf_sleep", "task_id": t.ID, "attempt": t.Attempt,
		"started_ms": nowMs()}); err != nil {
		return err
	}
	var p struct {
		SleepMs int64 `json:"sleep_ms"`
	}
	_ = t.Decode(&p)
	select {
	case <-time.After(time.Duration(p.SleepMs) * time.Millisecond):
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (h *handlers) delay(ctx context.Context, t *baton.Task) error {
	return h.report.append(map[string]any{"type": "conf_delay", "task_id": t.ID, "started_ms": nowMs()})
}

func (h *handlers) once(ctx context.Context, t *baton.Task) error {
	return h.report.append(map[string]any{"type": "conf_once", "task_id": t.ID})
}
