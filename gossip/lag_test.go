package gossip

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

var lagT0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func TestOffsetAndDelayCancel(t *testing.T) {
	for _, tc := range []struct {
		name      string
		theirSkew time.Duration // their clock minus ours
		rtt       time.Duration // the probe's round trip (symmetric)
		transit   time.Duration // how long the change took to arrive
	}{
		{"a peer with the same clock is measured at its transit time", 0, 2 * time.Millisecond, 80 * time.Millisecond},
		{"a peer 30 seconds ahead is measured at its transit time", 30 * time.Second, 4 * time.Millisecond, 120 * time.Millisecond},
		{"a peer 5 minutes behind is measured at its transit time", -5 * time.Minute, 50 * time.Millisecond, 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The probe: sent at lagT0, answered at rtt/2 by their clock,
			// the ack back at rtt.
			answered := lagT0.Add(tc.rtt / 2).Add(tc.theirSkew)
			payload := make([]byte, ackPayloadSize)
			payload[0] = 1
			binary.BigEndian.PutUint64(payload[1:], uint64(answered.UnixNano()))
			off, ok := offsetFromAck(payload, tc.rtt, lagT0.Add(tc.rtt))
			if !ok || off != tc.theirSkew {
				t.Fatalf("offset %v (%v), want %v", off, ok, tc.theirSkew)
			}
			// A change made a second later (their clock reads that plus
			// the skew), received transit later.
			made := lagT0.Add(time.Second)
			at := made.Add(tc.theirSkew).UnixMilli()
			if d := delayOf(at, made.Add(tc.transit), off); d != tc.transit {
				t.Fatalf("delay %v, want %v", d, tc.transit)
			}
		})
	}
	t.Run("an ack without a clock (a node that predates it) gives no offset", func(t *testing.T) {
		for _, p := range [][]byte{nil, {1, 2, 3}, make([]byte, ackPayloadSize)} {
			if _, ok := offsetFromAck(p, time.Millisecond, lagT0); ok {
				t.Errorf("payload % x read as a clock", p)
			}
		}
	})
}

func TestLagBook(t *testing.T) {
	ms := time.Millisecond
	// samples adds n delays of d at one per 100 ms, starting at from.
	type add struct {
		peer string
		from time.Duration // after lagT0
		n    int
		d    time.Duration
	}
	for _, tc := range []struct {
		name      string
		offsets   []string // peers with a known offset (probed at lagT0)
		adds      []add
		at        time.Duration // when asked, after lagT0
		live      []string
		wantDelay time.Duration
		wantMeas  bool
	}{
		{
			name:    "every live peer with enough samples gives the ring's delay: the highest peer p99",
			offsets: []string{"a", "b"},
			adds:    []add{{"a", 0, 20, 90 * ms}, {"b", 0, 20, 140 * ms}},
			at:      3 * time.Second, live: []string{"a", "b"},
			wantDelay: 140 * ms, wantMeas: true,
		},
		{
			name:    "a live peer without samples leaves the ring unmeasured",
			offsets: []string{"a", "b"},
			adds:    []add{{"a", 0, 20, 90 * ms}},
			at:      3 * time.Second, live: []string{"a", "b"},
			wantDelay: 90 * ms, wantMeas: false,
		},
		{
			name:    "a peer with fewer than the minimum samples is not trusted",
			offsets: []string{"a"},
			adds:    []add{{"a", 0, LagMinSamples - 1, 90 * ms}},
			at:      time.Second, live: []string{"a"},
			wantDelay: 90 * ms, wantMeas: false,
		},
		{
			name:    "a peer whose clock offset is unknown is not trusted",
			offsets: nil,
			adds:    []add{{"a", 0, 20, 90 * ms}},
			at:      3 * time.Second, live: []string{"a"},
			wantDelay: 90 * ms, wantMeas: false,
		},
		{
			name:    "samples older than the window no longer count",
			offsets: []string{"a"},
			adds:    []add{{"a", 0, 20, 900 * ms}, {"a", 30 * time.Second, 20, 100 * ms}},
			at:      LagWindow + 10*time.Second, live: []string{"a"},
			wantDelay: 100 * ms, wantMeas: true,
		},
		{
			name:    "once every sample expired the peer is unmeasured again",
			offsets: []string{"a"},
			adds:    []add{{"a", 0, 20, 100 * ms}},
			at:      LagWindow + 3*time.Second, live: []string{"a"},
			wantDelay: 0, wantMeas: false,
		},
		{
			name:    "a peer that left (not live) does not count",
			offsets: []string{"a", "b"},
			adds:    []add{{"a", 0, 20, 90 * ms}, {"b", 0, 20, 900 * ms}},
			at:      3 * time.Second, live: []string{"a"},
			wantDelay: 90 * ms, wantMeas: true,
		},
		{
			name: "no live peer: nothing is measured",
			at:   time.Second, live: nil,
			wantDelay: 0, wantMeas: false,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b lagBook
			for _, p := range tc.offsets {
				b.addOffset(p, lagT0, 0, ms)
			}
			for _, a := range tc.adds {
				for i := range a.n {
					b.addDelay(a.peer, lagT0.Add(a.from+time.Duration(i)*100*ms), a.d)
				}
			}
			r := b.ring(tc.live, lagT0.Add(tc.at))
			if r.Delay != tc.wantDelay || r.Measured != tc.wantMeas {
				t.Fatalf("ring delay %v measured %v, want %v %v (%+v)", r.Delay, r.Measured, tc.wantDelay, tc.wantMeas, r.Peers)
			}
			if len(r.Peers) != len(tc.live) {
				t.Fatalf("%d peers reported, want the %d live ones", len(r.Peers), len(tc.live))
			}
		})
	}
}

func TestLagPercentiles(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name     string
		delays   []time.Duration
		wantP99  time.Duration
		wantMax  time.Duration
		wantSamp int
	}{
		{"one sample is its own percentile", []time.Duration{70 * ms}, 70 * ms, 70 * ms, 1},
		{"of 100 samples, p99 is the 99th and max the 100th", ramp(100), 99 * ms, 100 * ms, 100},
		{"of 200 samples, p99 leaves out the two slowest", ramp(200), 198 * ms, 200 * ms, 200},
		{"only the most recent samples are kept", ramp(maxDelaySamples + 100), time.Duration(maxDelaySamples+100-5) * ms, time.Duration(maxDelaySamples+100) * ms, maxDelaySamples},
		{"a negative delay (offset error) counts as zero", []time.Duration{-5 * ms}, 0, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b lagBook
			b.addOffset("a", lagT0, 0, ms)
			for i, d := range tc.delays {
				b.addDelay("a", lagT0.Add(time.Duration(i)*ms), d)
			}
			p := b.peer("a", lagT0.Add(time.Second))
			if p.Delay() != tc.wantP99 || p.DelayMaxMs != float64(tc.wantMax/ms) || p.Samples != tc.wantSamp {
				t.Fatalf("p99 %v max %vms samples %d, want %v %v %d", p.Delay(), p.DelayMaxMs, p.Samples, tc.wantP99, tc.wantMax, tc.wantSamp)
			}
		})
	}
}

// ramp is 1 ms, 2 ms, ... n ms.
func ramp(n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(i+1) * time.Millisecond
	}
	return out
}

func TestLagOffsets(t *testing.T) {
	ms := time.Millisecond
	t.Run("the probe with the shortest round trip gives the offset", func(t *testing.T) {
		var b lagBook
		b.addOffset("a", lagT0, 30*time.Second+40*ms, 90*ms)
		b.addOffset("a", lagT0.Add(time.Second), 30*time.Second+ms, 2*ms)
		b.addOffset("a", lagT0.Add(2*time.Second), 30*time.Second-20*ms, 50*ms)
		off, rtt, ok := b.offset("a", lagT0.Add(3*time.Second))
		if !ok || off != 30*time.Second+ms || rtt != 2*ms {
			t.Fatalf("offset %v rtt %v (%v)", off, rtt, ok)
		}
	})
	t.Run("a peer's clock stepped since older probes is followed after a few probes", func(t *testing.T) {
		var b lagBook
		at := lagT0
		for range maxOffsetSamples + 3 {
			b.addOffset("a", at, 0, ms) // short round trips, before the step
			at = at.Add(time.Second)
		}
		for range offsetRecent {
			b.addOffset("a", at, 30*time.Second, 5*ms) // longer ones, after it
			at = at.Add(time.Second)
		}
		if off, _, ok := b.offset("a", at); !ok || off != 30*time.Second {
			t.Fatalf("offset %v (%v), want the stepped clock's 30s", off, ok)
		}
	})
	t.Run("a probe read across a clock step is outvoted by the others, however short its round trip", func(t *testing.T) {
		// The fake clock moved a minute between the peer's reading and
		// ours, and the ack was handed over too late for the step watch.
		for _, tc := range []struct {
			name  string
			spike int // which of the probes
		}{{"first", 0}, {"middle", 2}, {"last", offsetRecent - 1}} {
			t.Run("as the "+tc.name+" probe", func(t *testing.T) {
				var b lagBook
				at := lagT0
				for i := range offsetRecent {
					off, rtt := 3*ms+time.Duration(i)*ms, 5*ms
					if i == tc.spike {
						off, rtt = -time.Minute, ms/2
					}
					b.addOffset("a", at, off, rtt)
					at = at.Add(time.Second)
				}
				if off, _, ok := b.offset("a", at); !ok || off < 0 || off > 10*ms {
					t.Fatalf("offset %v (%v), want one of the honest probes' few milliseconds", off, ok)
				}
			})
		}
	})
	t.Run("an offset older than its window is forgotten", func(t *testing.T) {
		var b lagBook
		b.addOffset("a", lagT0, time.Second, ms)
		if _, _, ok := b.offset("a", lagT0.Add(OffsetWindow+time.Second)); ok {
			t.Fatal("an expired offset is still used")
		}
	})
	t.Run("a peer that left is forgotten", func(t *testing.T) {
		var b lagBook
		b.addOffset("a", lagT0, time.Second, ms)
		b.forget("a")
		if _, _, ok := b.offset("a", lagT0); ok {
			t.Fatal("a forgotten peer still has an offset")
		}
	})
}

func TestClockSkew(t *testing.T) {
	m := time.Minute
	for _, tc := range []struct {
		name     string
		offsets  []time.Duration // peers' clocks minus ours
		wantSkew time.Duration
		wantOff  bool
	}{
		{"no peers: no skew", nil, 0, false},
		{"peers within seconds: in step", []time.Duration{time.Second, -2 * time.Second, 0}, 0, false},
		{"every peer 6 minutes ahead: this clock is 6 minutes behind", []time.Duration{6 * m, 6 * m, 6 * m}, -6 * m, true},
		{"one peer far off does not move the median", []time.Duration{0, time.Second, 60 * m}, -time.Second, false},
		{"two peers: the median is between them", []time.Duration{-10 * m, -12 * m}, 11 * m, true},
		{"exactly the limit is still in step", []time.Duration{-5 * m}, 5 * m, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			skew, off := clockSkew(tc.offsets, ClockSkewLimit)
			if skew != tc.wantSkew || off != tc.wantOff {
				t.Fatalf("skew %v off %v, want %v %v", skew, off, tc.wantSkew, tc.wantOff)
			}
		})
	}
}

func TestRingNow(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		offsets  map[string]time.Duration
		wantRing time.Duration
		farOff   bool
	}{
		{"a node alone keeps its own clock", nil, 0, false},
		{"a node 30 s ahead of three agreeing peers moves back 30 s", map[string]time.Duration{"b": -30 * time.Second, "c": -30 * time.Second, "d": -30 * time.Second}, -30 * time.Second, false},
		{"one peer 30 s ahead of a node and two others moves it by nothing", map[string]time.Duration{"b": 30 * time.Second, "c": 0, "d": 0}, 0, false},
		{"a node 6 minutes behind its peers takes their time and is reported far off", map[string]time.Duration{"b": 6 * time.Minute, "c": 6 * time.Minute, "d": 6 * time.Minute}, 6 * time.Minute, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := bareNode("a", func() time.Time { return now })
			for p, off := range tc.offsets {
				n.peers[p] = memberlist.Node{Name: p}
				n.lag.addOffset(p, now, off, time.Millisecond)
			}
			if got := n.RingNow(); !got.Equal(now.Add(tc.wantRing)) {
				t.Fatalf("ring time %v, want %v", got, now.Add(tc.wantRing))
			}
			l := n.Lag(now)
			if l.RingOffset() != tc.wantRing || l.ClockFarOff != tc.farOff {
				t.Fatalf("lag reports ring offset %v far off %v, want %v %v", l.RingOffset(), l.ClockFarOff, tc.wantRing, tc.farOff)
			}
		})
	}
}
