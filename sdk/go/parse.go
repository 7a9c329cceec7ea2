package baton

import (
	"encoding/json"
)

// ParseTask parses and validates a task document (contract/task.schema.json). The payload keeps
// the exact bytes of the document's payload value; unknown top-level fields go to Extra, their
// values' bytes untouched. A refusal is an *Error with code invalid_argument whose text starts
// with the field and states the rule ("max_retry: must be an integer 0..25 (got 99)",
// "task_id: required", "document: not valid JSON: ..."). When a document breaks several rules
// the first in schema order is reported.
func ParseTask(document []byte) (*Task, error) {
	t, err := parseTask(document)
	if err != nil {
		return nil, err
	}
	return t, nil
}

func parseTask(document []byte) (*Task, *Error) {
	if !json.Valid(document) {
		return nil, invalid("document", "not valid JSON: "+syntaxError(document))
	}
	if typ := jsonType(document); typ != "object" {
		return nil, invalid("document", "must be a JSON object (got "+typ+")")
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(document, &members); err != nil {
		return nil, invalid("document", "not valid JSON: "+err.Error())
	}
	t := &Task{}
	var err *Error
	if t.ID, err = readString(members, "task_id", taskIDRule, checkTaskID); err != nil {
		return nil, err
	}
	if t.Namespace, err = readString(members, "namespace", nameRule, nameCheck("namespace")); err != nil {
		return nil, err
	}
	if t.Type, err = readString(members, "task_type", nameRule, nameCheck("task_type")); err != nil {
		return nil, err
	}
	payload, ok := members["payload"]
	if !ok {
		return nil, invalid("payload", "required")
	}
	if typ := jsonType(payload); typ != "object" {
		return nil, invalid("payload", "must be a JSON object (got "+typ+")")
	}
	if err := checkPayload(payload, true); err != nil {
		return nil, err
	}
	t.Payload = payload
	var v int64
	if v, err = readInt(members, maxRetryRule); err != nil {
		return nil, err
	}
	t.MaxRetry = int(v)
	if t.DelaySeconds, err = readInt(members, delaySecondsRule); err != nil {
		return nil, err
	}
	if t.CreatedAt, err = readInt(members, createdAtRule); err != nil {
		return nil, err
	}
	if raw, ok := members["execution_timeout"]; ok {
		if v, err = timeoutRule.read(raw); err != nil {
			return nil, err
		}
		t.ExecutionTimeout = int(v)
	}
	for key, raw := range members {
		if !isTaskField(key) {
			if t.Extra == nil {
				t.Extra = map[string]json.RawMessage{}
			}
			t.Extra[key] = raw
		}
	}
	if err := checkExtra(t.Extra); err != nil {
		return nil, err
	}
	return t, nil
}

func nameCheck(field string) func(string) *Error {
	return func(name string) *Error { return checkName(field, name) }
}

// readString reads a required string member and checks it.
func readString(members map[string]json.RawMessage, field, rule string, check func(string) *Error) (string, *Error) {
	raw, ok := members[field]
	if !ok {
		return "", invalid(field, "required")
	}
	var s string
	if jsonType(raw) != "string" || json.Unmarshal(raw, &s) != nil {
		return "", invalid(field, rule+" (got "+briefValue(raw)+")")
	}
	return s, check(s)
}

// readInt reads a required integer member.
func readInt(members map[string]json.RawMessage, rule intRule) (int64, *Error) {
	raw, ok := members[rule.field]
	if !ok {
		return 0, invalid(rule.field, "required")
	}
	return rule.read(raw)
}
