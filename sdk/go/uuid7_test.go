package baton_test

import (
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	baton "github.com/baton-dev/baton/sdk/go"
)

var uuid7Re = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// Task ids are RFC 9562 UUIDv7: 48-bit Unix ms, version 7, variant 10, lowercase canonical,
// strictly increasing within the process (across goroutines too).
func TestNewTaskID(t *testing.T) {
	before := time.Now().UnixMilli()
	var mu sync.Mutex
	var all []string
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			prev := ""
			for i := 0; i < 5000; i++ {
				id := baton.NewTaskID()
				if id <= prev {
					t.Errorf("%s after %s: not increasing", id, prev)
					return
				}
				prev = id
				mu.Lock()
				all = append(all, id)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	after := time.Now().UnixMilli()
	seen := map[string]bool{}
	for _, id := range all {
		if !uuid7Re.MatchString(id) || !baton.IsValidTaskID(id) {
			t.Fatalf("%s is not a canonical UUIDv7", id)
		}
		ms, _ := strconv.ParseInt(id[:8]+id[9:13], 16, 64)
		// The counter may run the timestamp a little ahead of the clock under a burst.
		if ms < before || ms > after+100 {
			t.Fatalf("%s carries %d, not within %d..%d", id, ms, before, after)
		}
		if seen[id] {
			t.Fatalf("%s twice", id)
		}
		seen[id] = true
	}
}
