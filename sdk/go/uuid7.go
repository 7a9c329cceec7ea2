package baton

import (
	"math/rand/v2"
	"sync"
	"time"
)

// Task ids: RFC 9562 UUIDv7, lowercase canonical form, the same rule as the C++ library.
//
// Layout (128 bits): unix_ts_ms (48) | ver=0b0111 (4) | rand_a (12) | var=0b10 (2) | rand_b (62).
// rand_a is a counter (RFC 9562 section 6.2, method 1): on a new millisecond it starts at a random
// value below 2048 (leaving at least 2048 increments of headroom); within the same millisecond,
// or when the wall clock steps back, it is incremented; when it would overflow 12 bits the
// timestamp moves on by one ms (the id runs slightly ahead of the clock rather than back). So
// the ids of one process sort in creation order, across goroutines too.

var uuid7State struct {
	sync.Mutex
	lastMs  uint64
	counter uint64
}

// NewTaskID returns a new UUIDv7 (RFC 9562) in lowercase canonical form, e.g.
// "0190f3a0-7b1c-7def-8abc-0123456789ab". Safe for concurrent use; strictly increasing (as
// strings) within a process.
func NewTaskID() string {
	return newUUID7(uint64(time.Now().UnixMilli()))
}

func newUUID7(nowMs uint64) string {
	s := &uuid7State
	s.Lock()
	if nowMs > s.lastMs {
		s.lastMs = nowMs
		s.counter = rand.Uint64() & 0x7FF
	} else if s.counter++; s.counter > 0xFFF {
		s.lastMs++
		s.counter = rand.Uint64() & 0x7FF
	}
	ms, counter := s.lastMs, s.counter
	s.Unlock()
	hi := (ms&0xFFFFFFFFFFFF)<<16 | 0x7000 | counter
	lo := 0x8000000000000000 | (rand.Uint64() & 0x3FFFFFFFFFFFFFFF)
	return formatUUID(hi, lo)
}

func formatUUID(hi, lo uint64) string {
	const hex = "0123456789abcdef"
	var out [36]byte
	pos := 0
	put := func(v uint64) {
		for shift := 60; shift >= 0; shift -= 4 {
			if pos == 8 || pos == 13 || pos == 18 || pos == 23 {
				out[pos] = '-'
				pos++
			}
			out[pos] = hex[(v>>uint(shift))&0xF]
			pos++
		}
	}
	put(hi)
	put(lo)
	return string(out[:])
}
