package gossip

import (
	"testing"
	"time"
)

func TestAStepOfTheClockIsSpannedByNoSample(t *testing.T) {
	type check struct {
		clock, real time.Duration // how far each moves before the check
		span        time.Duration // how long the sample lasted (real time)
		want        bool
	}
	for _, tc := range []struct {
		name   string
		checks []check
	}{
		{"a clock that keeps step with real time gives every sample", []check{
			{0, 0, 0, true}, {time.Second, time.Second, 5 * time.Millisecond, true}, {time.Second, time.Second, 900 * time.Millisecond, true},
		}},
		{"a clock that stands still (a test's fake clock between its steps) is no step", []check{
			{0, 0, 0, true}, {0, time.Second, 5 * time.Millisecond, true}, {0, time.Minute, 5 * time.Millisecond, true},
		}},
		{"a clock slewed by NTP is no step", []check{
			{0, 0, 0, true}, {time.Second + time.Millisecond, time.Second, 5 * time.Millisecond, true},
		}},
		{"a sample that ends after the clock was set forward is dropped", []check{
			{0, 0, 0, true}, {30*time.Second + time.Second, time.Second, 5 * time.Millisecond, false},
		}},
		{"a sample that ends after the clock was set back is dropped", []check{
			{0, 0, 0, true}, {time.Second - 30*time.Second, time.Second, 5 * time.Millisecond, false},
		}},
		{"the samples begun a second after a step are good again", []check{
			{0, 0, 0, true}, {time.Minute, time.Second, time.Millisecond, false}, {2 * time.Second, 2 * time.Second, 5 * time.Millisecond, true},
		}},
		{"a sample read late, after another check noticed a step it spans, is dropped", []check{
			{0, 0, 0, true}, {time.Minute, time.Second, time.Millisecond, false}, {0, 300 * time.Millisecond, 5 * time.Millisecond, false},
		}},
		{"a sample begun before the step was noticed is dropped, even from a later check", []check{
			{0, 0, 0, true}, {time.Minute, time.Second, time.Millisecond, false}, {time.Second, time.Second, 1500 * time.Millisecond, false},
		}},
		{"a change's delay that the step inflated is dropped, as it begins before the step", []check{
			{0, 0, 0, true}, {time.Minute, time.Second, time.Millisecond, false}, {100 * time.Millisecond, 100 * time.Millisecond, time.Minute, false},
		}},
		{"a negative delay (clocks apart) is dropped at the check that notices a step", []check{
			{0, 0, 0, true}, {time.Minute, time.Second, -time.Second, false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock, real := lagT0, time.Duration(0)
			w := &stepWatch{clock: func() time.Time { return clock }, elapsed: func() time.Duration { return real }}
			for i, c := range tc.checks {
				clock, real = clock.Add(c.clock), real+c.real
				now, ok := w.steady(c.span)
				if !now.Equal(clock) {
					t.Fatalf("check %d read %v, want the clock's %v", i, now, clock)
				}
				if ok != c.want {
					t.Errorf("check %d (clock +%v, real +%v, sample of %v): steady %v, want %v", i, c.clock, c.real, c.span, ok, c.want)
				}
			}
		})
	}
}

func TestAStepBeforeTheFirstSampleIsNoticed(t *testing.T) {
	clock := lagT0
	w := newStepWatch(func() time.Time { return clock })
	clock = clock.Add(3 * time.Minute) // the node's clock steps before its first probe completes
	if _, ok := w.steady(10 * time.Millisecond); ok {
		t.Fatal("the first sample, read across a step after the node began, was taken as steady")
	}
}
