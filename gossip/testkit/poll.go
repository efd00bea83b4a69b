package testkit

import (
	"testing"
	"time"
)

// DefaultTick is how often Eventually and Poll re-check a condition when
// given no tick: often enough that a wait ends within a few milliseconds of
// the event, rarely enough that a condition which reads shared state under
// a lock does not starve the goroutines it waits for.
const DefaultTick = 10 * time.Millisecond

// Poll checks cond at once and then every tick (DefaultTick when 0) until
// it holds or timeout has passed. It reports how long the wait took and
// whether cond held: for callers that fail with a message of their own.
func Poll(timeout, tick time.Duration, cond func() bool) (time.Duration, bool) {
	if tick <= 0 {
		tick = DefaultTick
	}
	start := time.Now()
	deadline := start.Add(timeout)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		if cond() {
			return time.Since(start), true
		}
		if !time.Now().Before(deadline) {
			return time.Since(start), false
		}
		<-t.C
	}
}

// Wait is what a test awaits with Eventually: what it is, for the failure
// message, and for how long.
type Wait struct {
	What    string        // what is awaited, named when it does not come
	Timeout time.Duration // how long to wait
	Tick    time.Duration // how often to check; DefaultTick when 0
	// Seen, when given, reports after the last check what was seen instead
	// of what was awaited.
	Seen func() string
}

// Eventually waits up to w.Timeout, checking every w.Tick, for cond to
// hold, and returns how long that took. When it does not hold in time,
// Eventually fails tb with what was awaited and, when w.Seen is given, what
// was seen instead.
func Eventually(tb testing.TB, w Wait, cond func() bool) time.Duration {
	tb.Helper()
	took, ok := Poll(w.Timeout, w.Tick, cond)
	if ok {
		return took
	}
	msg := ""
	if w.Seen != nil {
		msg = "; last seen: " + w.Seen()
	}
	tb.Fatalf("%s: not within %s%s", w.What, w.Timeout, msg)
	return took
}
