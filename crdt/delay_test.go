package crdt_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"pgregory.net/rapid"
)

var delayT0 = time.Unix(1_800_000_000, 0)

func TestDelaysSummary(t *testing.T) {
	ms := time.Millisecond
	ramp := func(n int) []time.Duration {
		out := make([]time.Duration, n)
		for i := range out {
			out[i] = time.Duration(i+1) * ms
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		delays   []time.Duration
		wantP99  time.Duration
		wantMax  time.Duration
		wantSamp int
	}{
		{"no sample gives nothing", nil, 0, 0, 0},
		{"one sample is its own percentile", []time.Duration{70 * ms}, 70 * ms, 70 * ms, 1},
		{"of 100 samples, p99 is the 99th and max the 100th", ramp(100), 99 * ms, 100 * ms, 100},
		{"of 200 samples, p99 leaves out the two slowest", ramp(200), 198 * ms, 200 * ms, 200},
		{"only the most recent samples are kept", ramp(crdt.DelayKeep + 100), time.Duration(crdt.DelayKeep+100-5) * ms, time.Duration(crdt.DelayKeep+100) * ms, crdt.DelayKeep},
		{"a negative delay (offset error) counts as zero", []time.Duration{-5 * ms}, 0, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d crdt.Delays
			for i, x := range tc.delays {
				d.Add(delayT0.Add(time.Duration(i)*ms), x)
			}
			p := d.At(delayT0.Add(time.Second))
			if p.Delay != tc.wantP99 || p.Max != tc.wantMax || p.Samples != tc.wantSamp {
				t.Fatalf("p99 %v max %v samples %d, want %v %v %d", p.Delay, p.Max, p.Samples, tc.wantP99, tc.wantMax, tc.wantSamp)
			}
		})
	}
	t.Run("samples older than the window, or taken after now, do not count", func(t *testing.T) {
		var d crdt.Delays
		d.Add(delayT0, 900*ms)
		d.Add(delayT0.Add(crdt.DelayWindow), 100*ms)
		d.Add(delayT0.Add(crdt.DelayWindow+2*time.Second), 700*ms)
		p := d.At(delayT0.Add(crdt.DelayWindow + time.Second))
		if p.Samples != 1 || p.Delay != 100*ms {
			t.Fatalf("%+v, want the one sample of 100ms", p)
		}
	})
}

// TestDelaysProperties checks At against the plain definition: sort the
// samples within the window and take the nearest rank.
func TestDelaysProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// Mostly few samples; a full buffer and beyond at times.
		n := rapid.IntRange(0, 60).Draw(t, "n")
		if rapid.IntRange(0, 3).Draw(t, "full") == 0 {
			n = rapid.IntRange(crdt.DelayKeep-20, crdt.DelayKeep+40).Draw(t, "many")
		}
		// The samples from a drawn seed: rapid draws per sample are slow.
		rng := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 1))
		coarse := rapid.Bool().Draw(t, "coarse") // many ties
		var d crdt.Delays
		type sample struct {
			at time.Time
			d  time.Duration
		}
		var all []sample
		at := delayT0
		for range n {
			at = at.Add(time.Duration(rng.Int64N(int64(400 * time.Millisecond))))
			x := time.Duration(rng.Int64N(int64(11*time.Second))) - time.Second
			if coarse {
				x = x.Round(500 * time.Millisecond)
			}
			d.Add(at, x)
			all = append(all, sample{at, max(x, 0)})
		}
		now := at.Add(time.Duration(rapid.Int64Range(-int64(time.Second), int64(2*crdt.DelayWindow)).Draw(t, "ask")))
		kept := all[max(len(all)-crdt.DelayKeep, 0):]
		var in []time.Duration
		for _, s := range kept {
			if now.Sub(s.at) <= crdt.DelayWindow && !s.at.After(now) {
				in = append(in, s.d)
			}
		}
		got := d.At(now)
		if got.Samples != len(in) {
			t.Fatalf("samples %d, want %d", got.Samples, len(in))
		}
		if len(in) == 0 {
			if got.Delay != 0 || got.Max != 0 {
				t.Fatalf("no samples but %+v", got)
			}
			return
		}
		if want := crdt.Quantile(slices.Clone(in), crdt.DelayQuantile); got.Delay != want {
			t.Fatalf("quantile %v, want %v of %d samples", got.Delay, want, len(in))
		}
		if want := slices.Max(in); got.Max != want {
			t.Fatalf("max %v, want %v", got.Max, want)
		}
		if got.Delay > got.Max {
			t.Fatalf("quantile %v above the max %v", got.Delay, got.Max)
		}
		// At least a DelayQuantile share of the samples are no longer than
		// the figure, and it is one of them.
		le := 0
		for _, x := range in {
			if x <= got.Delay {
				le++
			}
		}
		if float64(le) < crdt.DelayQuantile*float64(len(in))-1e-9 || !slices.Contains(in, got.Delay) {
			t.Fatalf("quantile %v covers %d of %d samples", got.Delay, le, len(in))
		}
	})
}

func TestRingDelay(t *testing.T) {
	ms := time.Millisecond
	ok := func(d time.Duration) crdt.PeerDelay {
		return crdt.PeerDelay{Delay: d, Max: d, Samples: crdt.DelayMinSamples, OffsetKnown: true}
	}
	for _, tc := range []struct {
		name      string
		peers     []crdt.PeerDelay
		wantDelay time.Duration
		wantMeas  bool
	}{
		{"every live peer trusted gives the ring's delay: the highest", []crdt.PeerDelay{ok(90 * ms), ok(140 * ms)}, 140 * ms, true},
		{"a live peer without samples leaves the ring unmeasured", []crdt.PeerDelay{ok(90 * ms), {OffsetKnown: true}}, 90 * ms, false},
		{"a peer with fewer than the minimum samples is not trusted", []crdt.PeerDelay{{Delay: 90 * ms, Samples: crdt.DelayMinSamples - 1, OffsetKnown: true}}, 90 * ms, false},
		{"a peer whose clock offset is unknown is not trusted", []crdt.PeerDelay{{Delay: 90 * ms, Samples: 20}}, 90 * ms, false},
		{"no live peer: nothing is measured", nil, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, m := crdt.RingDelay(tc.peers)
			if d != tc.wantDelay || m != tc.wantMeas {
				t.Fatalf("ring delay %v measured %v, want %v %v", d, m, tc.wantDelay, tc.wantMeas)
			}
		})
	}
}

// TestRingDelayProperties: the ring's delay is the highest peer delay, it
// is measured exactly when every peer is trusted, and a further peer never
// lowers it nor makes an unmeasured ring measured.
func TestRingDelayProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		gen := rapid.Custom(func(t *rapid.T) crdt.PeerDelay {
			return crdt.PeerDelay{
				Delay:       time.Duration(rapid.Int64Range(0, int64(5*time.Second)).Draw(t, "delay")),
				Samples:     rapid.IntRange(0, 2*crdt.DelayMinSamples).Draw(t, "samples"),
				OffsetKnown: rapid.Bool().Draw(t, "offset"),
			}
		})
		peers := rapid.SliceOf(gen).Draw(t, "peers")
		extra := gen.Draw(t, "extra")
		d, m := crdt.RingDelay(peers)
		all := true
		for _, p := range peers {
			if p.Delay > d {
				t.Fatalf("peer delay %v above the ring's %v", p.Delay, d)
			}
			all = all && p.Trusted()
		}
		if len(peers) > 0 && !slices.ContainsFunc(peers, func(p crdt.PeerDelay) bool { return p.Delay == d }) {
			t.Fatalf("ring delay %v is no peer's", d)
		}
		if m != (all && len(peers) > 0) {
			t.Fatalf("measured %v with every peer trusted %v (%d peers)", m, all, len(peers))
		}
		d2, m2 := crdt.RingDelay(append(slices.Clone(peers), extra))
		if d2 != max(d, extra.Delay) || m2 != ((m || len(peers) == 0) && extra.Trusted()) {
			t.Fatalf("one more peer %+v: %v %v → %v %v", extra, d, m, d2, m2)
		}
	})
}

func TestReuseDelay(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after time.Duration
		want  bool
	}{
		{"a figure just taken is reused", 0, true},
		{"a figure younger than the reuse time is reused", crdt.DelayReuse - time.Millisecond, true},
		{"a figure as old as the reuse time is not", crdt.DelayReuse, false},
		{"a figure from the future (the clock went back) is not", -time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := crdt.ReuseDelay(delayT0, delayT0.Add(tc.after)); got != tc.want {
				t.Fatalf("ReuseDelay after %v = %v, want %v", tc.after, got, tc.want)
			}
		})
	}
}
