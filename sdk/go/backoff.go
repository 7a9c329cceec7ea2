package baton

import (
	"math/rand/v2"
	"time"
)

// backoff is the reconnect delay of the worker's loops: 100 ms doubling to 5 s (as the C++
// worker and batond), with a little jitter so that many workers do not retry in step.
type backoff struct {
	min, max, next time.Duration
}

func newBackoff(min, max time.Duration) *backoff { return &backoff{min: min, max: max, next: min} }

// Next returns the delay to wait now and doubles the following one.
func (b *backoff) Next() time.Duration {
	d := b.next
	b.next = min(b.next*2, b.max)
	return d + time.Duration(rand.Int64N(int64(d)/5+1))
}

// Reset starts over after a success.
func (b *backoff) Reset() { b.next = b.min }
