package testkit

import (
	"sync"
	"time"
)

// Clock is a clock the test moves by hand. Share one among the nodes of a
// test and time moves for all of them at once. It is safe for concurrent
// use; its Now is what a node takes as its clock.
//
// A clock from NewClock stands still between moves. One from
// NewRunningClock runs with the real clock, shifted by the test's moves: for
// tests where something outside the test's hands waits in real time (a
// browser following a page's refresh) while the test still moves the
// nodes' minutes.
type Clock struct {
	mu      sync.Mutex
	t       time.Time     // a standing clock's time
	running bool          // Now is the real clock plus shift
	shift   time.Duration // a running clock's moves so far
}

// NewClock returns a clock standing at start.
func NewClock(start time.Time) *Clock { return &Clock{t: start} }

// NewRunningClock returns a clock that runs with the real clock until the
// test moves it; each move shifts it from the real clock for good.
func NewRunningClock() *Clock { return &Clock{running: true} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now()
}

func (c *Clock) now() time.Time {
	if c.running {
		return time.Now().Add(c.shift)
	}
	return c.t
}

// Advance moves the clock on by d and returns the new time.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.move(d)
	return c.now()
}

// Set moves the clock to t, forward only: a clock that went back would
// show the nodes a time they have already been past.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := t.Sub(c.now()); d > 0 {
		c.move(d)
	}
}

func (c *Clock) move(d time.Duration) {
	if c.running {
		c.shift += d
		return
	}
	c.t = c.t.Add(d)
}
