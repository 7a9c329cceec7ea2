package baton

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
)

// Task is one task of the contract (contract/task.schema.json): what a producer enqueues and
// what a handler receives. Payload holds the producer's bytes exactly; every top-level field the
// contract does not define (trace, headers, fields of newer producers) is kept in Extra with its
// value's bytes untouched.
type Task struct {
	// ID is the task id: a UUIDv7 made by the producer SDK, or the caller's own id.
	ID string
	// Namespace isolates queues (every key carries the hash tag {Namespace}).
	Namespace string
	// Type is the task type: the handler key; one work stream per (Namespace, Type).
	Type string
	// Payload is the JSON object text, byte for byte as the producer wrote it.
	Payload json.RawMessage
	// MaxRetry counts retries: the task runs at most 1 + MaxRetry times.
	MaxRetry int
	// DelaySeconds is the delay the producer asked for before the first run.
	DelaySeconds int64
	// CreatedAt is when the producer created the task, in Unix seconds.
	CreatedAt int64
	// ExecutionTimeout is the limit of one attempt in seconds; 0 means none.
	ExecutionTimeout int
	// Extra holds every other top-level field by name, each value as its JSON text.
	Extra map[string]json.RawMessage

	// Attempt is the run this is, 1 on the first (set on delivered tasks only).
	Attempt int
	// StreamID is the work stream entry the task was delivered from (delivered tasks only).
	StreamID string
}

// Decode unmarshals the payload into v with encoding/json, keeping numbers as json.Number when v
// (or a part of it) is an interface value, so integers beyond 2^53 survive. A payload that does
// not fit v is a failure retrying cannot fix: return NonRetryable(err) from the handler then.
func (t *Task) Decode(v any) error {
	dec := json.NewDecoder(bytes.NewReader(t.Payload))
	dec.UseNumber()
	return dec.Decode(v)
}

// PayloadMap decodes the payload as a map, numbers as json.Number (lossless).
func (t *Task) PayloadMap() (map[string]any, error) {
	var m map[string]any
	if err := t.Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}

// Timeout is ExecutionTimeout as a duration (0 when the task has none).
func (t *Task) Timeout() time.Duration { return time.Duration(t.ExecutionTimeout) * time.Second }

// Created is CreatedAt as a time.
func (t *Task) Created() time.Time { return time.Unix(t.CreatedAt, 0) }

// Headers returns the task's string headers (the extra field "headers"), or nil.
func (t *Task) Headers() map[string]string {
	var h map[string]string
	if raw, ok := t.Extra["headers"]; ok {
		if json.Unmarshal(raw, &h) != nil {
			return nil
		}
	}
	return h
}

// TraceContext returns the W3C trace context the task carries (extra field "trace"): its
// traceparent and tracestate, "" when absent.
func (t *Task) TraceContext() (traceparent, tracestate string) {
	var tc struct {
		Traceparent string `json:"traceparent"`
		Tracestate  string `json:"tracestate"`
	}
	if raw, ok := t.Extra["trace"]; ok {
		_ = json.Unmarshal(raw, &tc)
	}
	return tc.Traceparent, tc.Tracestate
}

// Validate checks every rule of the contract, in schema order, and returns the first violation
// as an *Error with code invalid_argument whose text is "<field>: <rule> (got <value>)".
func (t *Task) Validate() error {
	if err := t.validate(false); err != nil {
		return err
	}
	return nil
}

func (t *Task) validate(payloadSizeOnly bool) *Error {
	if err := checkTaskID(t.ID); err != nil {
		return err
	}
	if err := checkName("namespace", t.Namespace); err != nil {
		return err
	}
	if err := checkName("task_type", t.Type); err != nil {
		return err
	}
	if err := checkPayload(t.Payload, payloadSizeOnly); err != nil {
		return err
	}
	if err := maxRetryRule.check(int64(t.MaxRetry)); err != nil {
		return err
	}
	if err := delaySecondsRule.check(t.DelaySeconds); err != nil {
		return err
	}
	if err := createdAtRule.check(t.CreatedAt); err != nil {
		return err
	}
	if t.ExecutionTimeout != 0 {
		if err := timeoutRule.check(int64(t.ExecutionTimeout)); err != nil {
			return err
		}
	}
	return checkExtra(t.Extra)
}

// MarshalJSON writes the task document: the contract fields first (payload spliced in byte for
// byte), then the extra fields sorted by name, their values as stored. Called directly it keeps
// every byte; through json.Marshal, encoding/json compacts the whitespace (never the numbers).
func (t *Task) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.Grow(len(t.Payload) + 256)
	str := func(s string) {
		q, _ := json.Marshal(s)
		b.Write(q)
	}
	b.WriteString(`{"task_id":`)
	str(t.ID)
	b.WriteString(`,"namespace":`)
	str(t.Namespace)
	b.WriteString(`,"task_type":`)
	str(t.Type)
	b.WriteString(`,"payload":`)
	if len(t.Payload) == 0 {
		b.WriteString("null") // a task without its payload is invalid: show it, do not hide it
	} else {
		b.Write(t.Payload)
	}
	b.WriteString(`,"max_retry":` + strconv.Itoa(t.MaxRetry))
	b.WriteString(`,"delay_seconds":` + strconv.FormatInt(t.DelaySeconds, 10))
	b.WriteString(`,"created_at":` + strconv.FormatInt(t.CreatedAt, 10))
	if t.ExecutionTimeout != 0 {
		b.WriteString(`,"execution_timeout":` + strconv.Itoa(t.ExecutionTimeout))
	}
	for _, key := range sortedKeys(t.Extra) {
		if isTaskField(key) {
			continue
		}
		b.WriteByte(',')
		str(key)
		b.WriteByte(':')
		b.Write(t.Extra[key])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// extraText is the extra fields as one JSON object text (sorted by name, values as stored), the
// form the work stream keeps; "" when there are none.
func extraText(extra map[string]json.RawMessage) string {
	if len(extra) == 0 {
		return ""
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, key := range sortedKeys(extra) {
		if i > 0 {
			b.WriteByte(',')
		}
		q, _ := json.Marshal(key)
		b.Write(q)
		b.WriteByte(':')
		b.Write(extra[key])
	}
	b.WriteByte('}')
	return b.String()
}
