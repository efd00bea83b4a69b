package policy_test

// The worked examples of Cloudflare's write-ups on Waiting Room, with their
// numbers: "Waiting Room: Random Queueing and Custom Web/Mobile Apps"
// (Random Queueing below and in the test names), "How Waiting Room makes
// queueing decisions on Cloudflare's highly distributed network" (Queueing
// Decisions) and "Building Waiting Room on Workers and Durable Objects"
// (Durable Objects). Where a write-up's example leaves a number out, the test
// says what it chose.

import (
	"math"
	"testing"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/policy"
)

func TestOpenSlots(t *testing.T) {
	now := at(t, "2021-05-27T15:57:00Z")
	m := minuteOf(now)
	tests := []struct {
		name             string
		total, perMinute int
		active, admit    int64
		seconds          int
		want             int64
	}{
		{name: "10,000 total, 2,000 per minute and 7,000 active leave 2,000 slots (Random Queueing)", total: 10000, perMinute: 2000, active: 7000, want: 2000},
		{name: "148 active of 200 leave 52 slots (Durable Objects)", total: 200, perMinute: 200, active: 148, want: 52},
		{name: "201 active of 200 leave none, not -1 (Durable Objects)", total: 200, perMinute: 200, active: 201, want: 0},
		{name: "admissions this minute count against new users per minute", total: 10000, perMinute: 2000, active: 7000, admit: 1500, want: 500},
		{name: "active sessions count in full whatever the second within the minute", total: 200, perMinute: 200, active: 160, seconds: 45, want: 40},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := world{now: now.Add(time.Duration(tc.seconds) * time.Second), active: tc.active,
				admitted: map[int64]perNode{m: {nairobi: uint64(tc.admit)}}}
			room := policy.Room{TotalActiveUsers: tc.total, NewUsersPerMinute: tc.perMinute}
			for _, s := range strategies {
				if got := policy.Allocate(room, w.snap(), nairobi, w.now, s).OpenSlots(); got != tc.want {
					t.Errorf("%v: open slots = %d, want %d", s, got, tc.want)
				}
			}
		})
	}
}

func TestOldestBucketsAreReservedFirst(t *testing.T) {
	tests := []struct {
		name    string
		room    policy.Room
		active  int64
		waiting []int64
		want    []int64
	}{
		{
			name: "2,000 slots over buckets of 500, 1,000 and 1,000 reserve 500, 1,000 and 500 (Random Queueing)",
			room: policy.Room{TotalActiveUsers: 10000, NewUsersPerMinute: 2000}, active: 7000,
			waiting: []int64{500, 1000, 1000}, want: []int64{500, 1000, 500},
		},
		{
			name: "52 slots over buckets of 2, 50 and 60 make 2, 50 and 0 eligible (Durable Objects)",
			room: policy.Room{TotalActiveUsers: 200, NewUsersPerMinute: 200}, active: 148,
			waiting: []int64{2, 50, 60}, want: []int64{2, 50, 0},
		},
		{
			name: "72 slots leave 20 eligible in the third bucket (Durable Objects)",
			room: policy.Room{TotalActiveUsers: 200, NewUsersPerMinute: 200}, active: 128,
			waiting: []int64{2, 50, 60}, want: []int64{2, 50, 20},
		},
		{
			name: "201 active of 200 make nobody eligible (Durable Objects)",
			room: policy.Room{TotalActiveUsers: 200, NewUsersPerMinute: 200}, active: 201,
			waiting: []int64{2, 50, 60}, want: []int64{0, 0, 0},
		},
	}
	now := at(t, "2021-05-27T15:57:10Z")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := world{now: now, active: tc.active}
			for i, n := range tc.waiting {
				w.waiting = append(w.waiting, crdt.BucketCount{Bucket: minuteOf(now) - 3 + int64(i), N: n})
			}
			for _, s := range strategies {
				got := policy.Allocate(tc.room, w.snap(), nairobi, now, s).EligibleSlots()
				for i := range tc.want {
					if got[i].Eligible != tc.want[i] || got[i].Waiting != tc.waiting[i] {
						t.Errorf("%v: bucket %d = %+v, want %d eligible of %d", s, i, got[i], tc.want[i], tc.waiting[i])
					}
				}
			}
		})
	}
}

// The Nairobi (60%) / Dublin (40%) examples of Random Queueing. The reference
// strategy reads the traffic two minutes earlier; the continuous one the
// last sixty seconds, so there the same traffic runs steadily through the
// previous and the current minute.
func TestSlotsAreSplitByTrafficShare(t *testing.T) {
	now := at(t, "2021-05-27T15:57:57Z") // :57, late enough that random queueing has released the minute
	m := minuteOf(now)
	steady := func(s policy.Strategy) map[int64]perNode {
		if s == policy.ReferencePerMinute {
			return map[int64]perNode{m - 2: {nairobi: 1200, dublin: 800}}
		}
		// 3 seconds of the previous minute are still in the last sixty: 5% of it.
		return map[int64]perNode{m - 1: {nairobi: 1200, dublin: 800}, m: {nairobi: 1140, dublin: 760}}
	}
	bucket := func(ago, n int64) crdt.BucketCount { return crdt.BucketCount{Bucket: m - ago, N: n} }
	tests := []struct {
		name          string
		method        policy.Method
		waiting       []crdt.BucketCount
		nairobiSlots  int64
		dublinSlots   int64
		poolVisitor   policy.Visitor
		coveredBucket int64 // a bucket that may enter anywhere, 0 if none
	}{
		{
			name: "the 500 slots of a partly covered bucket split 300 and 200", method: policy.FIFO,
			waiting:      []crdt.BucketCount{bucket(3, 500), bucket(2, 1000), bucket(1, 1000)},
			nairobiSlots: 300, dublinSlots: 200,
			poolVisitor: policy.Visitor{Bucket: m - 1, Queued: true}, coveredBucket: m - 2,
		},
		{
			name: "200 queued leave 1,800 new-user slots split 1,080 and 720", method: policy.FIFO,
			waiting:      []crdt.BucketCount{bucket(3, 200)},
			nairobiSlots: 1080, dublinSlots: 720,
			poolVisitor: policy.Visitor{Bucket: m}, coveredBucket: m - 3,
		},
		{
			name: "random queueing treats everyone as new: 2,000 slots split 1,200 and 800", method: policy.Random,
			waiting:      []crdt.BucketCount{bucket(3, 200)},
			nairobiSlots: 1200, dublinSlots: 800,
			poolVisitor: policy.Visitor{Bucket: m - 3, Queued: true},
		},
	}
	for _, tc := range tests {
		for _, s := range strategies {
			t.Run(tc.name+" ("+s.String()+")", func(t *testing.T) {
				room := policy.Room{TotalActiveUsers: 10000, NewUsersPerMinute: 2000, QueueingMethod: tc.method, Nodes: 2}
				w := world{now: now, active: 7000, waiting: tc.waiting, arrivals: steady(s)}
				for _, c := range []struct {
					node crdt.ReplicaID
					want int64
				}{{nairobi, tc.nairobiSlots}, {dublin, tc.dublinSlots}} {
					a := settled(room, w.snap(), c.node, now, s)
					sum := a.Summary()
					if sum.NodeSlots != c.want || sum.Allowance != c.want || sum.AnywhereSlots != 0 {
						t.Fatalf("node slots %d, allowance %d, anywhere %d; want %d, %d, 0", sum.NodeSlots, sum.Allowance, sum.AnywhereSlots, c.want, c.want)
					}
					if got := decideN(a, tc.poolVisitor, int(c.want)+50); got != int(c.want) {
						t.Errorf("admitted %d visitors of the pool, want %d", got, c.want)
					}
					if tc.coveredBucket != 0 {
						if got := a.Decide(policy.Visitor{Bucket: tc.coveredBucket, Queued: true}, nil); got != policy.Admit {
							t.Errorf("a fully covered bucket got %v after the node's share ran out, want admit at any node", got)
						}
					}
				}
			})
		}
	}
}

// Durable Objects: for 16:33 the split follows 16:31, for 16:34 it follows
// 16:32. The post's counts (50/50, then 45/55 users) are scaled by ten so the
// traffic reaches the limit; below it, the rest would be Anywhere (Queueing
// Decisions).
func TestTheTrafficTwoMinutesEarlierDecidesTheSplit(t *testing.T) {
	room := policy.Room{TotalActiveUsers: 100000, NewUsersPerMinute: 1000}
	arrivals := map[int64]perNode{
		minuteOf(at(t, "2021-05-27T16:31:00Z")): {nairobi: 500, dublin: 500},
		minuteOf(at(t, "2021-05-27T16:32:00Z")): {nairobi: 450, dublin: 550},
	}
	tests := []struct {
		name          string
		now           string
		nairobi, dubl int64
	}{
		{"at 16:33:20 the minute 16:31 splits 1,000 slots 500/500", "2021-05-27T16:33:20Z", 500, 500},
		{"at 16:34:10 the minute 16:32 splits 1,000 slots 450/550", "2021-05-27T16:34:10Z", 450, 550},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			now := at(t, tc.now)
			w := world{now: now, arrivals: arrivals}
			n := policy.Allocate(room, w.snap(), nairobi, now, policy.ReferencePerMinute).Summary()
			d := policy.Allocate(room, w.snap(), dublin, now, policy.ReferencePerMinute).Summary()
			if n.OpenSlots != 1000 || n.NodeSlots != tc.nairobi || d.NodeSlots != tc.dubl {
				t.Errorf("open %d, Nairobi %d, Dublin %d; want 1000, %d, %d", n.OpenSlots, n.NodeSlots, d.NodeSlots, tc.nairobi, tc.dubl)
			}
		})
	}

	t.Run("20 eligible slots of a partial bucket split 5/15 by the 25%/75% of 16:32", func(t *testing.T) {
		now := at(t, "2021-05-27T16:34:10Z")
		room := policy.Room{TotalActiveUsers: 200, NewUsersPerMinute: 200}
		w := world{now: now, active: 128, arrivals: map[int64]perNode{minuteOf(at(t, "2021-05-27T16:32:00Z")): {nairobi: 50, dublin: 150}},
			waiting: []crdt.BucketCount{
				{Bucket: minuteOf(at(t, "2021-05-27T15:54:00Z")), N: 2},
				{Bucket: minuteOf(at(t, "2021-05-27T15:55:00Z")), N: 50},
				{Bucket: minuteOf(at(t, "2021-05-27T15:56:00Z")), N: 60},
			}}
		n := policy.Allocate(room, w.snap(), nairobi, now, policy.ReferencePerMinute).Summary()
		d := policy.Allocate(room, w.snap(), dublin, now, policy.ReferencePerMinute).Summary()
		if n.PoolSlots != 20 || n.NodeSlots != 5 || d.NodeSlots != 15 {
			t.Errorf("partial bucket slots %d, Nairobi %d, Dublin %d; want 20, 5, 15", n.PoolSlots, n.NodeSlots, d.NodeSlots)
		}
	})
}

// Queueing Decisions, at 11:45:54: 50 active of 200, San Jose 20 and London
// 30 of the traffic, ten workers in the world (here: ten nodes). San Jose may
// send 10% of the 150 slots, 15; the Anywhere part is 75% of them, 113, of
// which each node takes a tenth, 11. Delhi, with no history, has only that.
func TestSanJoseAndAnywhereSlots(t *testing.T) {
	now := at(t, "2023-09-11T11:45:54Z")
	m := minuteOf(now)
	room := policy.Room{TotalActiveUsers: 200, NewUsersPerMinute: 200, Nodes: 10}
	history := map[policy.Strategy]map[int64]perNode{
		policy.ReferencePerMinute: {m - 2: {sanJose: 20, london: 30}},
		// The same traffic, steady over the last sixty seconds: 6 s of the
		// previous minute and 54 s of this one.
		policy.Continuous: {m - 1: {sanJose: 20, london: 30}, m: {sanJose: 18, london: 27}},
	}
	for _, s := range strategies {
		t.Run("San Jose may send 15 of 150 slots plus its part of 113 Anywhere slots ("+s.String()+")", func(t *testing.T) {
			w := world{now: now, active: 50, arrivals: history[s]}
			sj := settled(room, w.snap(), sanJose, now, s).Summary()
			if sj.OpenSlots != 150 || sj.NodeSlots != 15 || sj.AnywhereSlots != 113 {
				t.Errorf("open %d, San Jose %d, Anywhere %d; want 150, 15, 113", sj.OpenSlots, sj.NodeSlots, sj.AnywhereSlots)
			}
			if math.Abs(sj.Share-0.10) > 1e-9 || math.Abs(sj.AnywhereShare-0.75) > 1e-9 {
				t.Errorf("shares %.3f and %.3f, want 0.10 and 0.75", sj.Share, sj.AnywhereShare)
			}
			// 15 + 113/10: the reference floors to 11, the continuous split
			// rounds 15 + 11.25 on a line shared with the other nodes.
			if sj.Allowance < 26 || sj.Allowance > 26+boolInt(s == policy.Continuous) {
				t.Errorf("San Jose may admit %d, want 26 (or 27 under continuous rounding)", sj.Allowance)
			}
		})
		t.Run("Delhi, with no history, may send only its part of the Anywhere slots ("+s.String()+")", func(t *testing.T) {
			w := world{now: now, active: 50, arrivals: history[s]}
			d := settled(room, w.snap(), delhi, now, s).Summary()
			if d.NodeSlots != 0 || d.Allowance < 11 || d.Allowance > 11+boolInt(s == policy.Continuous) {
				t.Errorf("Delhi node slots %d, allowance %d; want 0 and 11", d.NodeSlots, d.Allowance)
			}
		})
	}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// Durable Objects: 60 visitors ahead, 30 admitted per minute on average: two
// minutes. (The post's queue has 2 + 50 waiting ahead of the 15:56 bucket
// but says 60; the queue here has 60 ahead, to keep the post's arithmetic.
// The visitor is alone in their bucket: the estimate also counts those of
// the visitor's own bucket who came before it, which the post leaves out;
// with nobody else in it the post's 60 / 30 stands.)
func TestFIFOEstimate(t *testing.T) {
	now := at(t, "2021-05-27T16:00:00Z")
	m := minuteOf(now)
	thirtyAMinute := map[int64]perNode{}
	for i := m - 5; i < m; i++ {
		thirtyAMinute[i] = perNode{nairobi: 10, dublin: 20}
	}
	room := policy.Room{TotalActiveUsers: 200, NewUsersPerMinute: 200}
	w := world{now: now, active: 200, admitted: thirtyAMinute, waiting: []crdt.BucketCount{
		{Bucket: m - 6, N: 10}, {Bucket: m - 5, N: 50}, {Bucket: m - 4, N: 1}, {Bucket: m - 3, N: 59},
	}}
	a := policy.Allocate(room, w.snap(), nairobi, now, policy.Continuous)

	t.Run("60 ahead at 30 per minute wait 2 minutes", func(t *testing.T) {
		e := a.Estimate(m - 4)
		want := policy.Estimate{WaitTime: 2, WaitTimeKnown: true, WaitTimeFormatted: "2 minutes",
			WaitTime25: 2, WaitTime50: 2, WaitTime75: 2, VisitorsAhead: 60, Position: 60, PositionKnown: true}
		if got := shownOf(e); got != want {
			t.Errorf("estimate %+v, want %+v", got, want)
		}
	})
	t.Run("the first bucket, with nobody ahead, waits one minute", func(t *testing.T) {
		if e := a.Estimate(m - 6); e.WaitTime != 1 || e.VisitorsAhead != 0 || e.WaitTimeFormatted != "1 minute" {
			t.Errorf("estimate %+v", e)
		}
	})
	t.Run("a visitor being queued now has the whole queue ahead: 4 minutes and a check-in, told a tenth long", func(t *testing.T) {
		if e := a.Estimate(m); e.VisitorsAhead != 120 || e.WaitTime != 5 {
			t.Errorf("estimate %+v, want 120 ahead and 5 minutes", e)
		}
	})
	t.Run("an average above the per-minute limit is forecast at the limit: 120 ahead at 20 a minute, told 7", func(t *testing.T) {
		r := room
		r.NewUsersPerMinute = 20
		if e := policy.Allocate(r, w.snap(), nairobi, now, policy.Continuous).Estimate(m); e.WaitTime != 7 {
			t.Errorf("estimate %+v, want 7 minutes", e)
		}
	})
	t.Run("without admissions the wait is unknown", func(t *testing.T) {
		w := w
		w.admitted = nil
		e := policy.Allocate(room, w.snap(), nairobi, now, policy.Continuous).Estimate(m - 4)
		if e.WaitTimeKnown || e.WaitTimeFormatted != "unknown" || e.VisitorsAhead != 60 {
			t.Errorf("estimate %+v, want unknown with 60 ahead", e)
		}
	})
	t.Run("the rate averages the last five minutes", func(t *testing.T) {
		if s := a.Summary(); s.AdmissionRate != 30 || !s.RateKnown || s.MaxWaitMinutes != 5 {
			t.Errorf("rate %v known %v, max wait %d; want 30, true, 5", s.AdmissionRate, s.RateKnown, s.MaxWaitMinutes)
		}
	})
}

// Random Queueing: P = 0.1 and p = 0.5 give n = log(0.5)/log(0.9) ≈ 6.58.
func TestRandomEstimate(t *testing.T) {
	tests := []struct {
		name      string
		perMinute float64
		p         float64
		want      float64
	}{
		{"half of the visitors get in within 6.58 minutes when a tenth go in each minute", 0.1, 0.5, 6.58},
		{"a quarter get in within 2.73 minutes", 0.1, 0.25, 2.73},
		{"three quarters get in within 13.16 minutes", 0.1, 0.75, 13.16},
		{"everyone waiting gets in within the minute when the rate covers them", 1, 0.5, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := policy.RandomWait(tc.perMinute, tc.p); math.Abs(got-tc.want) > 0.005 {
				t.Errorf("RandomWait(%v, %v) = %v, want %v", tc.perMinute, tc.p, got, tc.want)
			}
		})
	}

	now := at(t, "2021-05-27T16:00:00Z")
	m := minuteOf(now)
	adm, joins := map[int64]perNode{}, map[int64]perNode{}
	for i := m - 5; i < m; i++ {
		adm[i] = perNode{nairobi: 10}
		joins[i] = perNode{nairobi: 10}
	}
	room := policy.Room{TotalActiveUsers: 200, NewUsersPerMinute: 200, QueueingMethod: policy.Random}
	pages := []struct {
		name   string
		queued map[int64]perNode
		want   policy.Estimate
	}{
		{"10 admitted and 10 joining per minute with 100 waiting show 3 to 14 minutes, median 7, as a constant chance", joins,
			policy.Estimate{WaitTime: 7, WaitTimeKnown: true, WaitTimeFormatted: "3 minutes to 14 minutes", WaitTime25: 3, WaitTime50: 7, WaitTime75: 14, WaitSeconds25: 180, WaitSeconds50: 420, WaitSeconds75: 840, VisitorsAhead: 40}},
		{"10 admitted and nobody joining per minute with 100 waiting show 2 to 7 minutes, median 5: the queue drains in 10", nil,
			policy.Estimate{WaitTime: 5, WaitTimeKnown: true, WaitTimeFormatted: "2 minutes to 7 minutes", WaitTime25: 2, WaitTime50: 5, WaitTime75: 7, WaitSeconds25: 120, WaitSeconds50: 300, WaitSeconds75: 420, VisitorsAhead: 40}},
	}
	for _, tc := range pages {
		t.Run(tc.name, func(t *testing.T) {
			w := world{now: now, active: 200, admitted: adm, queued: tc.queued, waiting: []crdt.BucketCount{{Bucket: m - 3, N: 40}, {Bucket: m - 1, N: 60}}}
			if e := policy.Allocate(room, w.snap(), nairobi, now, policy.Continuous).Estimate(m - 1); e != tc.want {
				t.Errorf("estimate %+v, want %+v", e, tc.want)
			}
		})
	}
}

func TestFormatWait(t *testing.T) {
	tests := []struct {
		minutes int
		want    string
	}{
		{0, "less than a minute"},
		{1, "1 minute"},
		{10, "10 minutes"},
		{59, "59 minutes"},
		{60, "1 hour"},
		{61, "1 hour 1 minute"},
		{65, "1 hour 5 minutes"},
		{120, "2 hours"},
		{125, "2 hours 5 minutes"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			if got := policy.FormatWait(tc.minutes); got != tc.want {
				t.Errorf("FormatWait(%d) = %q, want %q", tc.minutes, got, tc.want)
			}
		})
	}
}

// Random Queueing: five visitors wait in the order 5 → 4 → 3 → 2 → 1 (1 is
// next). Under random queueing visitor 4 gets in; back under FIFO the order
// is 5 → 3 → 2 → 1, because random queueing kept the buckets.
func TestSwitchingFIFORandomFIFOKeepsTheOrder(t *testing.T) {
	now := at(t, "2021-05-27T16:10:30Z")
	m := minuteOf(now)
	user := func(i int64) policy.Visitor { return policy.Visitor{Bucket: m - 6 + i, Queued: true} } // user 1 is oldest
	w := world{now: now, active: 199}
	for i := int64(1); i <= 5; i++ {
		w.waiting = append(w.waiting, crdt.BucketCount{Bucket: user(i).Bucket, N: 1})
	}
	room := policy.Room{TotalActiveUsers: 200, NewUsersPerMinute: 200, Nodes: 1}

	fifo := policy.Allocate(room, w.snap(), nairobi, now, policy.Continuous)
	for i := int64(5); i >= 2; i-- {
		if got := fifo.Decide(user(i), nil); got != policy.Queue {
			t.Fatalf("fifo: user %d got %v, want queue behind user 1", i, got)
		}
	}

	room.QueueingMethod = policy.Random
	random := policy.Allocate(room, w.snap(), nairobi, now, policy.Continuous)
	if got := random.Decide(user(4), nil); got != policy.Admit {
		t.Fatalf("random: user 4 got %v, want admit (everyone is treated as new)", got)
	}
	if got := random.Decide(user(1), nil); got != policy.Queue {
		t.Fatalf("random: user 1 got %v after the only slot went, want queue", got)
	}

	// The edge records user 4's admission; later a session ends.
	w.waiting = append(w.waiting[:3:3], w.waiting[4])
	room.QueueingMethod = policy.FIFO
	back := policy.Allocate(room, w.snap(), nairobi, now, policy.Continuous)
	if ahead := back.Estimate(user(5).Bucket).VisitorsAhead; ahead != 3 {
		t.Errorf("user 5 has %d ahead, want 3 (users 1, 2, 3)", ahead)
	}
	for _, i := range []int64{5, 3, 2} {
		if got := back.Decide(user(i), nil); got != policy.Queue {
			t.Errorf("fifo again: user %d got %v, want queue", i, got)
		}
	}
	if got := back.Decide(user(1), nil); got != policy.Admit {
		t.Errorf("fifo again: user 1 got %v, want admit: the original order holds", got)
	}
}

// Queueing Decisions ends with one global counter for the Anywhere slots, so
// that "even if 128 (113 + 15) users end up going to the same worker" none is
// queued. Without a coordinator a node takes its Anywhere part per lag, and
// the continuous re-division hands it what the quiet nodes leave: 128
// visitors reaching San Jose over ten seconds all go in; the per-minute
// split lets in 26.
func TestSanJoseAloneGetsTheAnywhereSlotsQuietNodesLeave(t *testing.T) {
	start := at(t, "2023-09-11T11:45:00Z")
	m := minuteOf(start)
	room := policy.Room{TotalActiveUsers: 200, NewUsersPerMinute: 200, Nodes: 10, Lag: time.Second}
	for _, tc := range []struct {
		s    policy.Strategy
		want int
	}{{policy.Continuous, 128}, {policy.ReferencePerMinute, 26}} {
		t.Run(tc.s.String(), func(t *testing.T) {
			w := world{now: start.Add(-2 * time.Second), active: 50,
				arrivals: map[int64]perNode{m - 2: {sanJose: 20, london: 30}, m - 1: {sanJose: 20, london: 30}, m: {}},
				admitted: map[int64]perNode{m: {}}}
			a := policy.Allocate(room, w.snap(), sanJose, w.now, tc.s)
			admitted := 0
			for step := range 100 { // every 100 ms for ten seconds
				w.now = start.Add(time.Duration(step) * 100 * time.Millisecond)
				a = a.Next(room, w.snap(), w.now)
				for range (step+1)*128/100 - step*128/100 {
					w.arrivals[m][sanJose]++
					if a.Decide(policy.Visitor{Bucket: m}, nil) == policy.Admit {
						admitted++
						w.admitted[m][sanJose]++
						w.active++
					}
				}
			}
			if admitted != tc.want {
				t.Errorf("San Jose admitted %d of 128, want %d", admitted, tc.want)
			}
		})
	}
}
