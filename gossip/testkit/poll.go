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

// Eventually waits up to timeout, checking every tick (DefaultTick when 0),
// for cond to hold, and returns how long that took. When it does not hold
// in time, Eventually fails tb with what was awaited and, when seen is
// given, what seen reports after the last check (the value observed
// instead of the one awaited).
func Eventually(tb testing.TB, timeout, tick time.Duration, what string, cond func() bool, seen func() string) time.Duration {
	tb.Helper()
	took, ok := Poll(timeout, tick, cond)
	if ok {
		return took
	}
	msg := ""
	if seen != nil {
		msg = "; last seen: " + seen()
	}
	tb.Fatalf("%s: not within %s%s", what, timeout, msg)
	return took
}
