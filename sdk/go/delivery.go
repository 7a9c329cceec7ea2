package baton

import (
	"encoding/json"
	"fmt"
)

// delivery is one task as baton_v2_dequeue delivered it: the 9 values of its entry, as text.
type delivery struct {
	sid, id, payload, maxRetry, delay, created, timeout, extra, attempt string
}

const valuesPerEntry = 9 // per task in baton_v2_dequeue's entries

// parseDequeue decodes baton_v2_dequeue's reply [entries, last_id, lease_deadline_ms].
func parseDequeue(reply any) ([]*delivery, string, error) {
	v, ok := reply.([]any)
	if !ok || len(v) < 2 {
		return nil, "", errorf("dequeue", "baton_v2_dequeue: unexpected reply %v", reply)
	}
	flat, ok := v[0].([]any)
	if !ok || len(flat)%valuesPerEntry != 0 {
		return nil, "", errorf("dequeue", "baton_v2_dequeue: entries must be 9 values per task")
	}
	lastID, _ := v[1].(string)
	out := make([]*delivery, 0, len(flat)/valuesPerEntry)
	for i := 0; i < len(flat); i += valuesPerEntry {
		s := func(j int) string {
			switch x := flat[i+j].(type) {
			case string:
				return x
			case nil:
				return ""
			default:
				return fmt.Sprint(x)
			}
		}
		out = append(out, &delivery{sid: s(0), id: s(1), payload: s(2), maxRetry: s(3), delay: s(4),
			created: s(5), timeout: s(6), extra: s(7), attempt: s(8)})
	}
	return out, lastID, nil
}

// task rebuilds the contract task of a delivery (docs/protocol.md, "Worker loop", step 2) and
// checks every rule: the entry may have been written by any producer in any language. An
// error makes the attempt fail as malformed (dead-lettered with the reason).
func (d *delivery) task(ns, taskType string) (*Task, *Error) {
	t := &Task{ID: d.id, Namespace: ns, Type: taskType, Payload: json.RawMessage(d.payload), StreamID: d.sid}
	v, err := maxRetryRule.parse(d.maxRetry)
	if err != nil {
		return nil, err
	}
	t.MaxRetry = int(v)
	if t.DelaySeconds, err = delaySecondsRule.parse(d.delay); err != nil {
		return nil, err
	}
	if t.CreatedAt, err = createdAtRule.parse(d.created); err != nil {
		return nil, err
	}
	if d.timeout != "" {
		if v, err = timeoutRule.parse(d.timeout); err != nil {
			return nil, err
		}
		t.ExecutionTimeout = int(v)
	}
	if d.extra != "" {
		if typ := jsonType([]byte(d.extra)); typ != "object" || !json.Valid([]byte(d.extra)) {
			return nil, invalid("extra", "must be a JSON object text (got "+typ+")")
		}
		if uerr := json.Unmarshal([]byte(d.extra), &t.Extra); uerr != nil {
			return nil, invalid("extra", "not valid JSON: "+uerr.Error())
		}
	}
	if v, err = attemptRule.parse(d.attempt); err != nil {
		return nil, err
	}
	t.Attempt = int(v) + 1
	if err := t.validate(false); err != nil {
		return nil, err
	}
	return t, nil
}
