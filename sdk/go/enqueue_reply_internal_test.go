package baton

import (
	"strings"
	"testing"
	"time"
)

// baton_v2_enqueue replies with a flat array of 2N values, status and detail of each task in
// call order; each is decoded for its own task.
func TestEnqueueReplyFlat(t *testing.T) {
	reply := []any{
		"queued", "1722489600000-0",
		"scheduled", int64(1722489660000),
		"duplicate", "active",
		"unique_conflict", "holder-1",
	}
	v, err := enqueueReply("enqueue_many", reply, 4)
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{"a", "b", "c", "d"}
	want := []EnqueueResult{
		{TaskID: "a", Outcome: Queued, StreamID: "1722489600000-0"},
		{TaskID: "b", Outcome: Scheduled, Due: time.UnixMilli(1722489660000)},
		{TaskID: "c", Outcome: Duplicate, State: "active"},
		{TaskID: "d", Outcome: UniqueConflict, Holder: "holder-1"},
	}
	for i, id := range ids {
		r, err := enqueueResult(id, v[2*i], v[2*i+1])
		if err != nil {
			t.Fatalf("task %d: %v", i, err)
		}
		if r.TaskID != want[i].TaskID || r.Outcome != want[i].Outcome || r.StreamID != want[i].StreamID ||
			!r.Due.Equal(want[i].Due) || r.State != want[i].State || r.Holder != want[i].Holder {
			t.Errorf("task %d: got %+v, want %+v", i, r, want[i])
		}
	}
}

// A reply that is not exactly 2N values (among them the former shape, N nested pairs) is an
// internal error naming baton_v2_enqueue, for the operation that made the call.
func TestEnqueueReplyWrongLengthIsRejected(t *testing.T) {
	cases := []struct {
		name  string
		reply any
		n     int
	}{
		{"one value short", []any{"queued", "1-0", "queued"}, 2},
		{"one value too many", []any{"queued", "1-0", "queued", "2-0", "queued"}, 2},
		{"N values", []any{"queued", "1-0"}, 2},
		{"nested pairs", []any{[]any{"queued", "1-0"}, []any{"duplicate", "active"}}, 2},
		{"one nested pair", []any{[]any{"queued", "1-0"}}, 1},
		{"empty", []any{}, 1},
		{"not an array", "queued", 1},
		{"nil", nil, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, err := enqueueReply("enqueue", c.reply, c.n)
			if err == nil {
				t.Fatalf("accepted %v for %d tasks as %v", c.reply, c.n, v)
			}
			if err.Code != CodeInternal || err.Op != "enqueue" ||
				!strings.Contains(err.Message, "baton_v2_enqueue: unexpected reply") {
				t.Errorf("got %#v", err)
			}
		})
	}
}

// An unknown status, or a due time that is not an integer, is an internal error naming
// baton_v2_enqueue.
func TestEnqueueResultMalformed(t *testing.T) {
	cases := []struct {
		name           string
		status, detail any
		message        string
	}{
		{"unknown status", "lost", "x", `baton_v2_enqueue: unknown status "lost"`},
		{"status not a string", []any{"queued", "1-0"}, "x", `baton_v2_enqueue: unknown status ""`},
		{"due not an integer", "scheduled", "soon", "baton_v2_enqueue: due time soon is not an integer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := enqueueResult("a", c.status, c.detail)
			if err == nil {
				t.Fatal("accepted")
			}
			if err.Code != CodeInternal || err.Message != c.message {
				t.Errorf("got %#v", err)
			}
		})
	}
}
