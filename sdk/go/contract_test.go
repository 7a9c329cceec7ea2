package baton_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	baton "github.com/baton-dev/baton/sdk/go"
	"github.com/baton-dev/baton/sdk/go/internal/redistest"
)

// fixture is one case of contract/fixtures (see its README).
type fixture struct {
	Description   string          `json:"description"`
	Document      json.RawMessage `json:"document"`
	DocumentText  *string         `json:"document_text"`
	PayloadRepeat *struct {
		Key   string `json:"key"`
		Char  string `json:"char"`
		Count int    `json:"count"`
	} `json:"payload_repeat"`
	Valid bool `json:"valid"`
	Error *struct {
		Code  string `json:"code"`
		Field string `json:"field"`
	} `json:"error"`
}

// documentText is the text a runner parses: document_text, the exact bytes of document, or its
// compact re-serialization with the repeated payload value.
func (f *fixture) documentText(t *testing.T) []byte {
	if f.DocumentText != nil {
		return []byte(*f.DocumentText)
	}
	if f.PayloadRepeat == nil {
		return f.Document
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(f.Document, &members); err != nil {
		t.Fatal(err)
	}
	var payload map[string]json.RawMessage
	if err := json.Unmarshal(members["payload"], &payload); err != nil {
		t.Fatal(err)
	}
	value, _ := json.Marshal(strings.Repeat(f.PayloadRepeat.Char, f.PayloadRepeat.Count))
	payload[f.PayloadRepeat.Key] = value
	members["payload"], _ = json.Marshal(payload)
	text, err := json.Marshal(members)
	if err != nil {
		t.Fatal(err)
	}
	return text
}

// Every fixture of contract/fixtures is accepted or refused exactly as it says, and a refusal
// names the offending field: "<field>: <rule>", errors.Is-friendly.
func TestContractFixtures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(redistest.RepoRoot(), "contract", "fixtures", "*.json"))
	if err != nil || len(files) < 60 {
		t.Fatalf("expected the contract fixtures, found %d (%v)", len(files), err)
	}
	valid, invalid := 0, 0
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		if name == "partitions" { // the partition rule's vectors, not a task: TestPartitionFixtures
			continue
		}
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var f fixture
			if err := json.Unmarshal(data, &f); err != nil {
				t.Fatal(err)
			}
			text := f.documentText(t)
			task, err := baton.ParseTask(text)
			if f.Valid {
				valid++
				if err != nil {
					t.Fatalf("%s: refused: %v", f.Description, err)
				}
				checkPayloadBytes(t, text, task)
				if err := task.Validate(); err != nil {
					t.Fatalf("Validate of a parsed valid task: %v", err)
				}
				return
			}
			invalid++
			if err == nil {
				t.Fatalf("%s: accepted", f.Description)
			}
			if !errors.Is(err, baton.ErrInvalidArgument) || f.Error.Code != "invalid_argument" {
				t.Fatalf("code: got %v, want %s", err, f.Error.Code)
			}
			var e *baton.Error
			if !errors.As(err, &e) || e.Field != f.Error.Field {
				t.Fatalf("field: got %q (%v), want %q", e.Field, err, f.Error.Field)
			}
			if !strings.HasPrefix(err.Error(), f.Error.Field+": ") || len(err.Error()) <= len(f.Error.Field)+2 {
				t.Fatalf("message %q must start with %q and state the rule", err.Error(), f.Error.Field+": ")
			}
		})
	}
	t.Logf("%d valid and %d invalid fixtures", valid, invalid)
}

// checkPayloadBytes: the parsed payload is the document's payload value byte for byte.
func checkPayloadBytes(t *testing.T, doc []byte, task *baton.Task) {
	t.Helper()
	var members map[string]json.RawMessage
	if err := json.Unmarshal(doc, &members); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(members["payload"], task.Payload) {
		t.Fatalf("payload bytes changed:\n got %.80s\nwant %.80s", task.Payload, members["payload"])
	}
}

// Messages follow the C++ library's words (the same rule text in every language).
func TestValidationMessages(t *testing.T) {
	cases := map[string]string{
		`{"task_id":"a","namespace":"s","task_type":"t","payload":{},"max_retry":99,"delay_seconds":0,"created_at":1722489600}`:            "max_retry: must be an integer 0..25 (got 99)",
		`{"task_id":"a","namespace":"s","task_type":"t","payload":{},"max_retry":3,"delay_seconds":0,"created_at":1722489600000}`:          "created_at: must be Unix seconds 946684800..4102444800 (got 1722489600000: milliseconds?)",
		`{"task_id":"a","namespace":"s","task_type":"t","payload":[1],"max_retry":3,"delay_seconds":0,"created_at":1722489600}`:            "payload: must be a JSON object (got array)",
		`{"namespace":"s","task_type":"t","payload":{},"max_retry":3,"delay_seconds":0,"created_at":1722489600}`:                           "task_id: required",
		`{"task_id":"a","namespace":"s","task_type":"t","payload":{},"max_retry":"3","delay_seconds":0,"created_at":1722489600}`:           `max_retry: must be an integer 0..25 (got "3")`,
		`{"task_id":"a","namespace":"s","task_type":"t","payload":{},"max_retry":3,"delay_seconds":0,"created_at":1722489600,"trace":"x"}`: "trace: must be a JSON object (got string)",
	}
	for doc, want := range cases {
		_, err := baton.ParseTask([]byte(doc))
		if err == nil || err.Error() != want {
			t.Errorf("ParseTask(%s)\n got %v\nwant %s", doc, err, want)
		}
	}
	_, err := baton.ParseTask([]byte(`{"task_id": "a"`))
	if err == nil || !strings.HasPrefix(err.Error(), "document: not valid JSON: ") {
		t.Errorf("broken JSON: got %v", err)
	}
}

// Unknown top-level fields travel untouched, and MarshalJSON writes a document ParseTask reads
// back to the same task.
func TestTaskDocumentRoundTrip(t *testing.T) {
	doc := []byte(`{"task_id":"0190f3a0-7b1c-7def-8abc-0123456789ab","namespace":"shop","task_type":"send_email",` +
		`"payload":{"big": 12345678901234567890, "price": 1.10},"max_retry":3,"delay_seconds":0,` +
		`"created_at":1722489600,"execution_timeout":30,"x_origin":{"hops": [1, 2]},"note":null,` +
		`"headers":{"producer":"go"}}`)
	task, err := baton.ParseTask(doc)
	if err != nil {
		t.Fatal(err)
	}
	if string(task.Extra["x_origin"]) != `{"hops": [1, 2]}` || string(task.Extra["note"]) != "null" {
		t.Fatalf("extra fields changed: %s", task.Extra)
	}
	if task.Headers()["producer"] != "go" || task.ExecutionTimeout != 30 {
		t.Fatalf("headers %v, timeout %d", task.Headers(), task.ExecutionTimeout)
	}
	out, err := task.MarshalJSON() // encoding/json would compact the payload's whitespace
	if err != nil {
		t.Fatal(err)
	}
	again, err := baton.ParseTask(out)
	if err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if string(again.Payload) != `{"big": 12345678901234567890, "price": 1.10}` || len(again.Extra) != 3 {
		t.Fatalf("round trip changed the task: %s", out)
	}
	m, err := again.PayloadMap()
	if err != nil {
		t.Fatal(err)
	}
	if m["big"].(json.Number).String() != "12345678901234567890" || m["price"].(json.Number).String() != "1.10" {
		t.Fatalf("json.Number decoding lost digits: %v", m)
	}
}
