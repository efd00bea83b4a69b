package gossip

import (
	"sync"
	"time"
)

// clockStepTolerance is how far the node's clock may move against real
// elapsed time between two checks before it counts as a step. NTP slews a
// clock by at most 500 ppm (half a millisecond between probes a second
// apart); a step (NTP stepping a clock far off, an operator setting it, a
// test moving a fake clock) is far larger.
const clockStepTolerance = 20 * time.Millisecond

// stepGrace widens every sample's span back in time: a measurement is read
// some time after it ended (memberlist measures a probe's round trip when
// the ack arrives, and hands it over once its goroutine runs again, which
// on a loaded machine can be much later), so a step noticed by another
// check in between must still count against it. The cost is a second's
// samples dropped after each step.
const stepGrace = time.Second

// stepWatch notices steps of the node's own clock, so that no measurement
// spans one. A probe's clock offset is the peer's clock read at one instant
// against this node's clock read at another; a change's delay is the
// origin's clock when it was made against this node's when it arrived. When
// this node's clock steps between the two readings, the sample is off by the
// whole step: a clock set forward by a minute in the middle of a probe
// measured the peer a minute behind, and the ring's time (the median of such
// offsets) held still for that minute, dating counts in the wrong minute and
// refusing the peers' cells as from the future.
//
// At each check the watch compares how far the clock moved since the last
// one with the real (monotonic) time elapsed: a clock that moved further
// forward than real time, or back, stepped. A clock that moved less than real
// time is taken as slow, not stepped (a test's fake clock stands still
// between its steps). A step is noticed at the first check after it; a
// sample that began before the last noticed step may span it and is not
// used, and the samples after it are good again.
type stepWatch struct {
	clock   func() time.Time
	elapsed func() time.Duration // real (monotonic) time since the watch began

	mu        sync.Mutex
	lastClock time.Time     // the clock at the last check; zero before the first
	lastReal  time.Duration // real time at the last check
	step      time.Duration // real time when a step was last noticed
	stepped   bool
}

// newStepWatch starts a watch of clock, read once now: the first sample's
// check is against the clock as it read when the node began, so a step
// before the node's first probe completes is noticed too.
func newStepWatch(clock func() time.Time) *stepWatch {
	start := time.Now()
	return &stepWatch{clock: clock, elapsed: func() time.Duration { return time.Since(start) }, lastClock: clock()}
}

// steady reads the clock and reports whether a measurement that ends now and
// lasted span (real time) spans no step of it: false when a step has been
// noticed, at this check or an earlier one, after the measurement began (or
// within stepGrace before).
// now is the clock's reading at this check.
func (w *stepWatch) steady(span time.Duration) (now time.Time, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now = w.clock()
	real := w.elapsed()
	if !w.lastClock.IsZero() {
		moved := now.Sub(w.lastClock)
		if moved > real-w.lastReal+clockStepTolerance || moved < -clockStepTolerance {
			w.step, w.stepped = real, true
		}
	}
	w.lastClock, w.lastReal = now, real
	return now, !w.stepped || real-max(span, 0)-stepGrace > w.step
}
