package policy_test

// Tests for what the simulator (policy/sim, docs/sim) found:
// coverage that sticks within a minute, traffic counted once, and estimates
// that count the visitor's place in their own bucket.

import (
	"math"
	"testing"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/policy"
)

// A bucket covered earlier in the minute keeps its slots when the pool
// admissions of other nodes, seen a lag late, have since used the minute's
// budget below what it needs: otherwise its last visitors are refused while
// a later bucket has just gone in (a FIFO inversion).
func TestACoveredBucketStaysCoveredForTheRestOfTheMinute(t *testing.T) {
	start := at(t, "2021-05-27T16:00:10Z")
	m := minuteOf(start)
	room := policy.Room{TotalActiveUsers: 100_000, NewUsersPerMinute: 100, Nodes: 1}
	old, partial := policy.Visitor{Bucket: m - 2, Queued: true}, policy.Visitor{Bucket: m - 1, Queued: true}
	before := world{now: start, waiting: []crdt.BucketCount{{Bucket: m - 2, N: 30}, {Bucket: m - 1, N: 200}}}
	// Ten seconds later other nodes have admitted 90 from the partial
	// bucket; nobody of the covered bucket has checked in yet.
	after := world{now: start.Add(10 * time.Second), waiting: []crdt.BucketCount{{Bucket: m - 2, N: 30}, {Bucket: m - 1, N: 110}},
		admitted: map[int64]perNode{m: {london: 90}}}

	t.Run("on the allocation chain", func(t *testing.T) {
		a := policy.Allocate(room, before.snap(), nairobi, start, policy.Continuous)
		if a.Estimate(old.Bucket).Eligible != true {
			t.Fatal("the old bucket is not covered to begin with")
		}
		a = a.Next(room, after.snap(), after.now)
		if got := decideN(a, old, 30); got != 30 {
			t.Errorf("admitted %d of the covered bucket's 30 with 10 open slots, want all", got)
		}
		if got := a.Decide(partial, nil); got != policy.Queue {
			t.Errorf("the next bucket got %v, want queue: the minute's slots are gone", got)
		}
		if s := a.EligibleSlots(); s[0].Eligible != 30 || s[1].Eligible != 0 {
			t.Errorf("eligible slots %+v, want 30 and 0", s)
		}
	})
	t.Run("not into the next minute", func(t *testing.T) {
		a := policy.Allocate(room, before.snap(), nairobi, start, policy.Continuous)
		next := after
		next.now = start.Add(time.Minute)
		next.admitted = map[int64]perNode{m: {london: 90}, m + 1: {london: 90}}
		if got := decideN(a.Next(room, next.snap(), next.now), old, 30); got != 10 {
			t.Errorf("admitted %d of the old bucket the next minute with 10 open slots, want 10", got)
		}
	})
	t.Run("not for visitors counted after it was covered", func(t *testing.T) {
		a := policy.Allocate(room, before.snap(), nairobi, start, policy.Continuous)
		grown := after
		grown.waiting = []crdt.BucketCount{{Bucket: m - 2, N: 40}, {Bucket: m - 1, N: 110}}
		a = a.Next(room, grown.snap(), grown.now)
		if a.Estimate(old.Bucket).Eligible {
			t.Error("a bucket with more waiting than were covered is still covered")
		}
	})
	t.Run("not for a node that did not see it covered", func(t *testing.T) {
		a := policy.Allocate(room, after.snap(), nairobi, after.now, policy.Continuous)
		if a.Estimate(old.Bucket).Eligible {
			t.Error("covered without ever having had the slots")
		}
	})
}

// The edge counts as arrivals every distinct visitor a node sees in a
// minute, admitted ones included, so admissions are no longer added to the
// traffic: a node that admitted many of its visitors has the same share as
// one that queued them.
func TestTrafficIsArrivalsAlone(t *testing.T) {
	now := at(t, "2021-05-27T16:00:30Z")
	m := minuteOf(now)
	room := policy.Room{TotalActiveUsers: 100_000, NewUsersPerMinute: 100, Nodes: 2}
	w := world{now: now,
		arrivals: map[int64]perNode{m - 1: {nairobi: 300, dublin: 300}, m: {nairobi: 300, dublin: 300}},
		admitted: map[int64]perNode{m - 1: {nairobi: 50}, m: {nairobi: 50}}}
	n := settled(room, w.snap(), nairobi, now, policy.Continuous).Summary()
	d := settled(room, w.snap(), dublin, now, policy.Continuous).Summary()
	if math.Abs(n.Share-d.Share) > 1e-9 || math.Abs(n.Share-0.5) > 1e-9 {
		t.Errorf("shares %.3f and %.3f, want 0.5 each", n.Share, d.Share)
	}
}

func TestFIFOEstimateCountsTheVisitorsPlaceInTheirBucket(t *testing.T) {
	now := at(t, "2021-05-27T16:00:00Z")
	m := minuteOf(now)
	perMinute := map[int64]perNode{}
	for i := m - 5; i < m; i++ {
		perMinute[i] = perNode{nairobi: 100}
	}
	room := policy.Room{TotalActiveUsers: 200, NewUsersPerMinute: 200}
	w := world{now: now, active: 200, admitted: perMinute, waiting: []crdt.BucketCount{
		{Bucket: m - 3, N: 300}, {Bucket: m - 2, N: 1001},
	}}
	a := policy.Allocate(room, w.snap(), nairobi, now, policy.Continuous)
	// Of the 1,201 who joined bucket m − 2 (600, 300 and 301 in its three
	// slots), 200 are gone, the earliest: 400, 300 and 301 still wait.
	slotted := w.snap()
	slotted.Arrived = []crdt.SlotCount{{Second: (m - 2) * 60, N: 600}, {Second: (m-2)*60 + 20, N: 300}, {Second: (m-2)*60 + 40, N: 301}}
	withSlots := policy.Allocate(room, slotted, nairobi, now, policy.Continuous)
	// The same 200 gone as the ring counted them leaving each slot's line:
	// drawn from every slot alike (100, 50 and 50), so 500, 250 and 251
	// still wait; or 100 let in from the second slot, and the other 100
	// gone unannounced, taken from the earliest: 500, 200 and 301.
	drawn := slotted
	drawn.Left = []crdt.SlotCount{{Second: (m - 2) * 60, N: 100}, {Second: (m-2)*60 + 20, N: 50}, {Second: (m-2)*60 + 40, N: 50}}
	withLeft := policy.Allocate(room, drawn, nairobi, now, policy.Continuous)
	lapsed := slotted
	lapsed.Left = []crdt.SlotCount{{Second: (m-2)*60 + 20, N: 100}}
	withLapsed := policy.Allocate(room, lapsed, nairobi, now, policy.Continuous)
	tests := []struct {
		name     string
		a        *policy.Allocation
		bucket   int64
		arrived  uint16
		position int64
		wait     int
	}{
		{"the first of a bucket has the 300 of older buckets ahead: 3 minutes at 100 a minute", a, m - 2, 0, 300, 3},
		{"halfway through its minute, with no slot counts, half of its bucket is ahead too (500.5, a half rounding down): 9 minutes, a tenth long", a, m - 2, 300, 800, 9},
		{"with slot counts, those still waiting from earlier slots and a quarter of its own slot are ahead; the wait spans its slot", withSlots, m - 2, 250, 300 + 400 + 75, 8},
		{"the last of a bucket has nearly all of it ahead, and waits as long as the first of its slot", withSlots, m - 2, 599, 1299, 12},
		{"with the slots' left counts, each earlier slot holds what joined it less what left it, and so does the visitor's", withLeft, m - 2, 250, 300 + 500 + 62, 9},
		{"the gone whose leaving the ring did not count are taken from the earliest slots", withLapsed, m - 2, 250, 300 + 500 + 50, 9},
		{"a visitor of a newer bucket has everyone ahead", a, m, 0, 1301, 15},
		{"the reference strategy counts older buckets only for the wait", policy.Allocate(room, w.snap(), nairobi, now, policy.ReferencePerMinute), m - 2, 300, 800, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := tt.a.EstimateAt(tt.bucket, tt.arrived)
			if e.Position != tt.position || !e.PositionKnown || e.WaitTime != tt.wait {
				t.Errorf("estimate %+v, want position %d and %d minutes", e, tt.position, tt.wait)
			}
		})
	}
	t.Run("in the current minute, those counted in the visitor's bucket so far came before it", func(t *testing.T) {
		w := w
		w.now = now.Add(30 * time.Second)
		w.waiting = append(w.waiting, crdt.BucketCount{Bucket: m, N: 100})
		if e := policy.Allocate(room, w.snap(), nairobi, w.now, policy.Continuous).EstimateAt(m, 300); e.Position != 1401 || e.WaitTime != 16 {
			t.Errorf("estimate %+v, want position 1,401 and 16 minutes", e)
		}
	})
	t.Run("at its proof, a visitor has every counted visitor of its slot ahead: the ring counts them only up to two seconds ago", func(t *testing.T) {
		w := w
		w.now = now.Add(12 * time.Second) // a flood began 4 s into the minute; this one came at 10 s
		w.waiting = append(w.waiting, crdt.BucketCount{Bucket: m, N: 50})
		snap := w.snap()
		snap.Arrived = append(snap.Arrived, crdt.SlotCount{Second: m * 60, N: 50})
		if e := policy.Allocate(room, snap, nairobi, w.now, policy.Continuous).EstimateAt(m, 100); e.Position != 1301+50 {
			t.Errorf("estimate %+v, want position 1,351: the older buckets and the 50 counted before it", e)
		}
	})
	t.Run("random queueing has no position", func(t *testing.T) {
		r := room
		r.QueueingMethod = policy.Random
		if e := policy.Allocate(r, w.snap(), nairobi, now, policy.Continuous).EstimateAt(m-2, 300); e.PositionKnown || e.Position != 0 {
			t.Errorf("estimate %+v, want no position", e)
		}
	})
}

func TestTheAdmissionRateCountsFullMinutesSinceAdmissionsBegan(t *testing.T) {
	now := at(t, "2021-05-27T16:00:40Z")
	m := minuteOf(now)
	room := policy.Room{TotalActiveUsers: 2000, NewUsersPerMinute: 500}
	tests := []struct {
		name     string
		admitted map[int64]perNode
		want     float64
	}{
		{"500 a minute for the last two minutes, none before: 500", map[int64]perNode{m - 2: {nairobi: 500}, m - 1: {nairobi: 500}}, 500},
		{"a quiet minute between busy ones counts: 300", map[int64]perNode{m - 3: {nairobi: 500}, m - 2: {nairobi: 0}, m - 1: {nairobi: 400}}, 300},
		{"the current minute's burst at :00 does not count once a full minute does", map[int64]perNode{m - 1: {nairobi: 200}, m: {nairobi: 500}}, 200},
		{"before a full minute, what the current one admitted so far", map[int64]perNode{m: {nairobi: 450}}, 450},
		{"a first minute whose admissions began in its last seconds is left out: 500", map[int64]perNode{m - 3: {nairobi: 40}, m - 2: {nairobi: 500}, m - 1: {nairobi: 500}}, 500},
		{"a first minute with half the next one's admissions or more counts: 475", map[int64]perNode{m - 2: {nairobi: 450}, m - 1: {nairobi: 500}}, 475},
		{"a first minute followed by the current one alone counts: 40", map[int64]perNode{m - 1: {nairobi: 40}, m: {nairobi: 500}}, 40},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := world{now: now, admitted: tc.admitted}
			if got := policy.Allocate(room, w.snap(), nairobi, now, policy.Continuous).Summary().AdmissionRate; got != tc.want {
				t.Errorf("rate %v, want %v", got, tc.want)
			}
		})
	}
}

// Once a bucket is covered, its visitors go in at their next check-in, up
// to one refresh interval later. Admitting newer visitors from the pool
// meanwhile lets in people of a later minute while people of an earlier one
// wait: the pool waits for the covered bucket's check-ins, for one check-in
// interval and a lag at most.
func TestACoveredBucketsCheckInsGoBeforeNewerVisitors(t *testing.T) {
	start := at(t, "2021-05-27T16:00:01Z")
	m := minuteOf(start)
	room := policy.Room{TotalActiveUsers: 100_000, NewUsersPerMinute: 100, Nodes: 1, Lag: time.Second}
	covered, partial, fresh := policy.Visitor{Bucket: m - 2, Queued: true}, policy.Visitor{Bucket: m - 1, Queued: true}, policy.Visitor{Bucket: m}
	// Before the minute turned, the slots of the minute were gone and both
	// buckets waited; at :00 the new slots cover the older one.
	full := world{now: start.Add(-2 * time.Second), waiting: []crdt.BucketCount{{Bucket: m - 2, N: 30}, {Bucket: m - 1, N: 200}},
		admitted: map[int64]perNode{m - 1: {nairobi: 100}}}
	turned := world{now: start, waiting: full.waiting}
	chain := func(s policy.Strategy, method policy.Method) *policy.Allocation {
		r := room
		r.QueueingMethod = method
		return policy.Allocate(r, full.snap(), nairobi, full.now, s).Next(r, turned.snap(), turned.now)
	}
	later := func(a *policy.Allocation, after time.Duration, w world) *policy.Allocation {
		w.now = start.Add(after)
		return a.Next(room, w.snap(), w.now)
	}
	tests := []struct {
		name           string
		alloc          func() *policy.Allocation
		covered        policy.Outcome
		partial, fresh policy.Outcome
	}{
		{"right after the bucket is covered, its visitors go in and the newer ones wait",
			func() *policy.Allocation { return chain(policy.Continuous, policy.FIFO) }, policy.Admit, policy.Queue, policy.Queue},
		{"a check-in interval and a lag later, the newer ones go in even if the count lingers",
			func() *policy.Allocation {
				return later(chain(policy.Continuous, policy.FIFO), policy.DefaultCheckIn+time.Second, turned)
			}, policy.Admit, policy.Admit, policy.Queue},
		{"once the covered bucket's count is gone, the newer ones go in at once",
			func() *policy.Allocation {
				gone := world{waiting: []crdt.BucketCount{{Bucket: m - 1, N: 200}}, admitted: map[int64]perNode{m: {nairobi: 30}}}
				return later(chain(policy.Continuous, policy.FIFO), 5*time.Second, gone)
			}, policy.Admit, policy.Admit, policy.Queue},
		{"when every bucket is covered, new visitors wait for the check-ins too",
			func() *policy.Allocation {
				small := []crdt.BucketCount{{Bucket: m - 2, N: 30}, {Bucket: m - 1, N: 20}}
				before, after := full, turned
				before.waiting, after.waiting = small, small
				return policy.Allocate(room, before.snap(), nairobi, before.now, policy.Continuous).Next(room, after.snap(), after.now)
			}, policy.Admit, policy.Admit, policy.Queue},
		{"the reference strategy keeps the reference's rule",
			func() *policy.Allocation { return chain(policy.ReferencePerMinute, policy.FIFO) }, policy.Admit, policy.Admit, policy.Queue},
		{"random queueing keeps no order, but a new visitor joins the draw with its first check-in",
			func() *policy.Allocation { return chain(policy.Continuous, policy.Random) }, policy.Admit, policy.Admit, policy.Queue},
		{"a node that starts its chain finds the bucket covered long ago",
			func() *policy.Allocation {
				return policy.Allocate(room, turned.snap(), nairobi, start, policy.Continuous)
			}, policy.Admit, policy.Admit, policy.Queue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := tt.alloc()
			if got := a.Decide(partial, nil); got != tt.partial {
				t.Errorf("the partial bucket's visitor: %v, want %v", got, tt.partial)
			}
			if got := a.Decide(fresh, nil); got != tt.fresh {
				t.Errorf("a new visitor: %v, want %v", got, tt.fresh)
			}
			if got := a.Decide(covered, nil); got != tt.covered {
				t.Errorf("the covered bucket's visitor: %v, want %v", got, tt.covered)
			}
		})
	}
}

// A covered bucket's hold runs from when the bucket was last seen becoming
// covered as it stands: its visitors turned away while it was not covered,
// and those who joined it after it was covered, check in up to one
// interval after that, and a newer bucket let in meanwhile goes before
// them.
func TestAHoldRunsFromWhenTheBucketWasLastCoveredAsItStands(t *testing.T) {
	// The bucket is covered at 16:00:45; the minute turns 15 s later, and
	// with it the coverage, which sticks only within a minute.
	start := at(t, "2021-05-27T16:00:45Z")
	m := minuteOf(start)
	room := policy.Room{TotalActiveUsers: 1000, NewUsersPerMinute: 100, Nodes: 1, Lag: time.Second}
	older, newer := policy.Visitor{Bucket: m - 2, Queued: true}, policy.Visitor{Bucket: m - 1, Queued: true}
	span := policy.DefaultCheckIn + room.Lag
	w := func(after time.Duration, active, olderN int64) world {
		return world{now: start.Add(after), active: active, waiting: []crdt.BucketCount{{Bucket: m - 2, N: olderN}, {Bucket: m - 1, N: 200}}}
	}
	tests := []struct {
		name  string
		steps []world // the chain's allocations after its first, which covers the older bucket
		newer policy.Outcome
	}{
		{"covered without a break and as it stands, the hold ends one interval and a lag after the coverage",
			[]world{w(16*time.Second, 960, 30), w(span+time.Second, 960, 30)}, policy.Admit},
		{"covered again after its slots went elsewhere, the newer bucket waits another interval",
			[]world{w(16*time.Second, 1000, 30), w(span+time.Second, 960, 30)}, policy.Queue},
		{"joined by a visitor after it was covered, the newer bucket waits another interval",
			[]world{w(16*time.Second, 960, 31), w(16*time.Second+policy.NearCheckIn, 960, 31)}, policy.Queue},
		{"joined by a visitor after it was covered, a bucket near the front for long waits only the short interval again",
			[]world{w(16*time.Second, 960, 31), w(16*time.Second+policy.NearCheckIn+room.Lag+time.Second, 960, 31)}, policy.Admit},
		{"a bucket that shrinks as its visitors go in keeps its hold's start",
			[]world{w(16*time.Second, 970, 20), w(span+time.Second, 970, 20)}, policy.Admit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first := w(0, 960, 30)
			a := policy.Allocate(room, w(-2*time.Second, 1000, 30).snap(), nairobi, start.Add(-2*time.Second), policy.Continuous).
				Next(room, first.snap(), first.now)
			if got := a.Decide(newer, nil); got != policy.Queue {
				t.Fatalf("right after the coverage the newer bucket's visitor: %v, want queue", got)
			}
			for _, s := range tt.steps {
				a = a.Next(room, s.snap(), s.now)
			}
			if got := a.Decide(newer, nil); got != tt.newer {
				t.Errorf("the newer bucket's visitor: %v, want %v", got, tt.newer)
			}
			if got := a.Decide(older, nil); got != policy.Admit {
				t.Errorf("the covered bucket's visitor: %v, want admit", got)
			}
		})
	}
}
