package crdt_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"pgregory.net/rapid"
)

func TestRingOffset(t *testing.T) {
	s := time.Second
	cases := []struct {
		name  string
		peers []time.Duration
		want  time.Duration
	}{
		{"a node alone keeps its own clock", nil, 0},
		{"a node with one peer meets it half way", []time.Duration{30 * s}, 15 * s},
		{"a node 30 s ahead of two correct peers moves back 30 s", []time.Duration{-30 * s, -30 * s}, -30 * s},
		{"a correct node outvotes one peer 30 s ahead", []time.Duration{0, 30 * s}, 0},
		{"peers at +30 s and -30 s around a correct node leave it as it is", []time.Duration{30 * s, -30 * s, 0, 0}, 0},
		{"one peer an hour ahead moves a ring of five by nothing", []time.Duration{time.Hour, 2 * time.Millisecond, -time.Millisecond, time.Millisecond}, time.Millisecond},
		{"a node far behind a correct majority moves to them", []time.Duration{10 * time.Minute, 10*time.Minute + time.Millisecond, 10 * time.Minute}, 10 * time.Minute},
		{"with an even count the middle two are averaged", []time.Duration{10 * s, 20 * s, 40 * s}, 15 * s},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := crdt.RingOffset(c.peers); got != c.want {
				t.Fatalf("RingOffset(%v) = %v, want %v", c.peers, got, c.want)
			}
		})
	}
}

func TestRingNow(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	s := time.Second
	cases := []struct {
		name   string
		local  time.Time
		offset time.Duration
		last   time.Time
		want   time.Time
	}{
		{"the first reading is the corrected clock", t0, -30 * s, time.Time{}, t0.Add(-30 * s)},
		{"a reading after the last is the corrected clock", t0, 2 * s, t0, t0.Add(2 * s)},
		{"a small step back holds the time still", t0, -2 * s, t0, t0},
		{"a step back of exactly the hold still holds", t0, -crdt.RingHold, t0, t0},
		{"a large step back agrees with the ring at once", t0, -30 * s, t0, t0.Add(-30 * s)},
		{"a forward step is taken at once", t0, 30 * s, t0, t0.Add(30 * s)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := crdt.RingNow(c.local, c.offset, c.last); !got.Equal(c.want) {
				t.Fatalf("RingNow(%v, %v, %v) = %v, want %v", c.local, c.offset, c.last, got, c.want)
			}
		})
	}
}

// TestEveryNodeThatHearsTheWholeRingAgreesOnItsTime draws a ring of clocks,
// lets each node measure the others' offsets exactly, and checks that every
// node's ring time is the same instant: the median of the ring's clocks.
func TestEveryNodeThatHearsTheWholeRingAgreesOnItsTime(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 12).Draw(t, "nodes")
		clocks := make([]time.Duration, n)
		for i := range clocks {
			clocks[i] = time.Duration(rapid.Int64Range(-int64(time.Hour), int64(time.Hour)).Draw(t, fmt.Sprintf("clock%d", i)))
		}
		var first time.Duration
		for i := range clocks {
			var peers []time.Duration
			for j := range clocks {
				if j != i {
					peers = append(peers, clocks[j]-clocks[i])
				}
			}
			ring := clocks[i] + crdt.RingOffset(peers)
			if i == 0 {
				first = ring
			} else if ring != first {
				t.Fatalf("node %d reads ring time %v, node 0 %v (clocks %v)", i, ring, first, clocks)
			}
		}
		s := slices.Clone(clocks)
		slices.Sort(s)
		if lo, hi := s[(n-1)/2], s[n/2]; first < lo || first > hi {
			t.Fatalf("ring time %v is not the median of the clocks %v", first, s)
		}
	})
}

// TestACorrectMajorityOutvotesAnyMinority draws a ring in which more than
// half the clocks are within a millisecond of the truth and the rest are
// anywhere within a day: every node's ring time is within a millisecond of
// the truth, whatever the bad clocks say.
func TestACorrectMajorityOutvotesAnyMinority(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		good := rapid.IntRange(1, 7).Draw(t, "good")
		bad := rapid.IntRange(0, good-1).Draw(t, "bad")
		var clocks []time.Duration
		for i := range good {
			clocks = append(clocks, time.Duration(rapid.Int64Range(-int64(time.Millisecond), int64(time.Millisecond)).Draw(t, fmt.Sprintf("good%d", i))))
		}
		for i := range bad {
			clocks = append(clocks, time.Duration(rapid.Int64Range(-int64(24*time.Hour), int64(24*time.Hour)).Draw(t, fmt.Sprintf("bad%d", i))))
		}
		for i := range clocks {
			var peers []time.Duration
			for j := range clocks {
				if j != i {
					peers = append(peers, clocks[j]-clocks[i])
				}
			}
			if ring := clocks[i] + crdt.RingOffset(peers); ring < -time.Millisecond || ring > time.Millisecond {
				t.Fatalf("node %d of %v reads ring time %v, more than 1 ms from the truth", i, clocks, ring)
			}
		}
	})
}

// TestRingTimeNeverStepsBackBySmallAmounts follows one node's readings while
// its clock runs forward and its offset wanders: each reading is the
// corrected clock or holds the last one, it never steps back by RingHold or
// less, and it is never more than RingHold ahead of the corrected clock.
func TestRingTimeNeverStepsBackBySmallAmounts(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		local := time.Unix(1_800_000_000, 0)
		var last time.Time
		steps := rapid.IntRange(1, 80).Draw(t, "steps")
		for i := range steps {
			local = local.Add(time.Duration(rapid.Int64Range(0, int64(3*time.Second)).Draw(t, fmt.Sprintf("tick%d", i))))
			off := time.Duration(rapid.Int64Range(-int64(time.Minute), int64(time.Minute)).Draw(t, fmt.Sprintf("offset%d", i)))
			got := crdt.RingNow(local, off, last)
			want := local.Add(off)
			switch {
			case !got.Equal(want) && !got.Equal(last):
				t.Fatalf("step %d: %v is neither the corrected clock %v nor the last reading %v", i, got, want, last)
			case !last.IsZero() && got.Before(last) && last.Sub(got) <= crdt.RingHold:
				t.Fatalf("step %d: stepped back %v from %v", i, last.Sub(got), last)
			case got.Sub(want) > crdt.RingHold:
				t.Fatalf("step %d: %v is %v ahead of the corrected clock", i, got, got.Sub(want))
			}
			last = got
		}
	})
}
