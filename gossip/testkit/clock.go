package testkit

import (
	"sync"
	"time"
)

// Clock is a clock the test moves by hand. Share one among the nodes of a
// test and time moves for all of them at once. It is safe for concurrent
// use; its Now is what a node takes as its clock.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock standing at start.
func NewClock(start time.Time) *Clock { return &Clock{t: start} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock on by d and returns the new time.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}

// Set moves the clock to t, forward only: a clock that went back would
// show the nodes a time they have already been past.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.t) {
		c.t = t
	}
}
