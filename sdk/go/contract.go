package baton

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The rules of contract/task.schema.json, one function per rule, shared by ParseTask (JSON
// values), the producer (Go values) and the worker's decoder (decimal strings from Redis), so
// every path reports a broken field with the same words: "<field>: <rule> (got <value>)", as the
// C++ library does.

var (
	taskIDRe = regexp.MustCompile(taskIDPattern)
	nameRe   = regexp.MustCompile(namePattern)
)

const (
	taskIDRule = "must be a string matching " + taskIDPattern
	nameRule   = "must be a string matching " + namePattern
	briefMax   = 40 // characters of a value quoted in an error message
)

// taskFields are the contract's own top-level fields, in schema order; every other top-level
// field of a task document is "extra" and travels untouched.
var taskFields = []string{"task_id", "namespace", "task_type", "payload", "max_retry",
	"delay_seconds", "created_at", "execution_timeout"}

func isTaskField(key string) bool {
	for _, f := range taskFields {
		if f == key {
			return true
		}
	}
	return false
}

// intRule is an integer field with an inclusive range; its message reads
// "<field>: <wording> min..max (got v)".
type intRule struct {
	field   string
	wording string
	min     int64
	max     int64
	msHint  bool // created_at: flag values that look like Unix milliseconds
}

var (
	maxRetryRule     = intRule{"max_retry", "must be an integer", minMaxRetry, MaxRetryLimit, false}
	delaySecondsRule = intRule{"delay_seconds", "must be an integer", minDelaySeconds, MaxDelaySeconds, false}
	createdAtRule    = intRule{"created_at", "must be Unix seconds", MinCreatedAt, MaxCreatedAt, true}
	timeoutRule      = intRule{"execution_timeout", "must be an integer", minExecutionTimeout, MaxExecutionTimeout, false}
	attemptRule      = intRule{"attempt", "must be an integer", 0, math.MaxInt32 - 1, false}
)

func (r intRule) fail(shown string, looksLikeMs bool) *Error {
	msg := r.wording + " " + strconv.FormatInt(r.min, 10) + ".." + strconv.FormatInt(r.max, 10) +
		" (got " + shown
	if looksLikeMs {
		msg += ": milliseconds?"
	}
	return invalid(r.field, msg+")")
}

// check is the range check of an integer already read.
func (r intRule) check(v int64) *Error {
	if v >= r.min && v <= r.max {
		return nil
	}
	ms := r.msHint && r.max <= math.MaxInt64/1000 && v >= r.min*1000 && v <= r.max*1000
	return r.fail(strconv.FormatInt(v, 10), ms)
}

// read takes a JSON value: a number with an integral value (3.0 counts, as in JSON Schema)
// within the range.
func (r intRule) read(raw json.RawMessage) (int64, *Error) {
	text := string(bytes.TrimSpace(raw))
	if jsonType(raw) != "number" {
		return 0, r.fail(briefValue(raw), false)
	}
	if !strings.ContainsAny(text, ".eE") {
		v, err := strconv.ParseInt(text, 10, 64)
		if err != nil { // beyond 64 bits
			return 0, r.fail(truncate(text), false)
		}
		return v, r.check(v)
	}
	d, err := strconv.ParseFloat(text, 64)
	// 2^63: every double below it in magnitude converts exactly to int64.
	const limit = 9223372036854775808.0
	if err != nil || math.IsInf(d, 0) || math.Trunc(d) != d || d >= limit || d < -limit {
		return 0, r.fail(truncate(text), false)
	}
	return int64(d), r.check(int64(d))
}

// parse takes a plain decimal integer as Redis holds it ("-12": no spaces, no '+').
func (r intRule) parse(text string) (int64, *Error) {
	v, err := strconv.ParseInt(text, 10, 64)
	if text == "" || text[0] == '+' || err != nil {
		return 0, r.fail(truncate(strconv.Quote(text)), false)
	}
	return v, r.check(v)
}

func checkTaskID(id string) *Error {
	if taskIDRe.MatchString(id) {
		return nil
	}
	return invalid("task_id", taskIDRule+" (got "+briefName(id, 128)+")")
}

func checkName(field, name string) *Error {
	if nameRe.MatchString(name) {
		return nil
	}
	return invalid(field, nameRule+" (got "+briefName(name, 64)+")")
}

// IsValidName reports whether name is a valid namespace or task type
// (^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$).
func IsValidName(name string) bool { return nameRe.MatchString(name) }

// IsValidTaskID reports whether id is a valid task id (^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$).
func IsValidTaskID(id string) bool { return taskIDRe.MatchString(id) }

// briefName shows a rejected id or name; a too long one by its length, which is what is wrong.
func briefName(name string, maxChars int) string {
	if len(name) > maxChars {
		return "a string of " + strconv.Itoa(len(name)) + " characters"
	}
	return truncate(strconv.Quote(name))
}

// checkPayload applies the payload rules to its serialized text: at most MaxPayloadBytes bytes
// and (unless sizeOnly, when the caller already knows) one JSON object.
func checkPayload(text []byte, sizeOnly bool) *Error {
	if len(text) > MaxPayloadBytes {
		return invalid("payload", "must be at most "+strconv.Itoa(MaxPayloadBytes)+
			" bytes serialized (got "+strconv.Itoa(len(text))+")")
	}
	if sizeOnly {
		return nil
	}
	if !json.Valid(text) {
		return invalid("payload", "not valid JSON: "+syntaxError(text))
	}
	if t := jsonType(text); t != "object" {
		return invalid("payload", "must be a JSON object (got "+t+")")
	}
	return nil
}

// syntaxError is encoding/json's description of what is wrong with text.
func syntaxError(text []byte) string {
	var v any
	if err := json.Unmarshal(text, &v); err != nil {
		return err.Error()
	}
	return "not a single JSON value"
}

// checkExtra applies the rules to the extra top-level fields: none of them a contract field,
// and the shapes of "trace" and "headers" when present.
func checkExtra(extra map[string]json.RawMessage) *Error {
	for _, key := range sortedKeys(extra) {
		if isTaskField(key) {
			return invalid("extra", "must not contain the contract field "+strconv.Quote(key)+
				" (use the option for it)")
		}
		if !json.Valid(extra[key]) {
			return invalid(key, "not valid JSON: "+syntaxError(extra[key]))
		}
	}
	if raw, ok := extra["trace"]; ok {
		if err := checkTrace(raw); err != nil {
			return err
		}
	}
	if raw, ok := extra["headers"]; ok {
		if err := checkHeaders(raw); err != nil {
			return err
		}
	}
	return nil
}

func checkTrace(raw json.RawMessage) *Error {
	if t := jsonType(raw); t != "object" {
		return invalid("trace", "must be a JSON object (got "+t+")")
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return invalid("trace", "not valid JSON: "+err.Error())
	}
	for _, key := range sortedKeys(members) {
		var max int
		switch key {
		case "traceparent":
			max = traceparentMaxChars
		case "tracestate":
			max = tracestateMaxChars
		default:
			return invalid("trace", "unknown field "+strconv.Quote(key)+
				" (allowed: traceparent, tracestate)")
		}
		if err := checkShortString("trace."+key, members[key], max); err != nil {
			return err
		}
	}
	return nil
}

func checkHeaders(raw json.RawMessage) *Error {
	if t := jsonType(raw); t != "object" {
		return invalid("headers", "must be a JSON object (got "+t+")")
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return invalid("headers", "not valid JSON: "+err.Error())
	}
	if len(members) > headersMaxFields {
		return invalid("headers", "must have at most "+strconv.Itoa(headersMaxFields)+
			" fields (got "+strconv.Itoa(len(members))+")")
	}
	for _, key := range sortedKeys(members) {
		if err := checkShortString("headers."+key, members[key], headerValueMaxChars); err != nil {
			return err
		}
	}
	return nil
}

// checkShortString: a JSON string of at most maxChars characters (code points, not bytes).
func checkShortString(field string, raw json.RawMessage, maxChars int) *Error {
	rule := "must be a string of at most " + strconv.Itoa(maxChars) + " characters"
	var s string
	if jsonType(raw) != "string" || json.Unmarshal(raw, &s) != nil {
		return invalid(field, rule+" (got "+briefValue(raw)+")")
	}
	if n := utf8.RuneCountInString(s); n > maxChars {
		return invalid(field, rule+" (got a string of "+strconv.Itoa(n)+" characters)")
	}
	return nil
}

// jsonType names the type of a JSON text by its first significant character: "object",
// "array", "string", "boolean", "null", "number" (or "nothing").
func jsonType(text []byte) string {
	t := bytes.TrimLeft(text, " \t\r\n")
	if len(t) == 0 {
		return "nothing"
	}
	switch t[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// briefValue is a short, printable rendering of a JSON value for an error message: containers
// by their size, scalars as written (cut to about 40 characters).
func briefValue(raw json.RawMessage) string {
	switch jsonType(raw) {
	case "object":
		var m map[string]json.RawMessage
		_ = json.Unmarshal(raw, &m)
		return sizeOf("an object", "{}", len(m))
	case "array":
		var a []json.RawMessage
		_ = json.Unmarshal(raw, &a)
		return sizeOf("an array", "[]", len(a))
	}
	return truncate(string(bytes.TrimSpace(raw)))
}

func sizeOf(what, empty string, n int) string {
	switch n {
	case 0:
		return empty
	case 1:
		return what + " of 1 element"
	}
	return what + " of " + strconv.Itoa(n) + " elements"
}

// truncate cuts text to briefMax bytes without splitting a UTF-8 sequence.
func truncate(text string) string {
	if len(text) <= briefMax {
		return text
	}
	cut := briefMax - 3
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + "..."
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
