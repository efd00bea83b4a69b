package policy_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/policy"
	"pgregory.net/rapid"
)

// drawRoom draws a room state seen alike by n nodes.
func drawRoom(t *rapid.T, n int) (policy.Room, world, []crdt.ReplicaID) {
	now := time.Unix(28_000_000*60, 0).Add(time.Duration(rapid.IntRange(0, 59_999).Draw(t, "ms")) * time.Millisecond)
	m := minuteOf(now)
	total := rapid.IntRange(1, 20000).Draw(t, "total")
	room := policy.Room{
		TotalActiveUsers:  total,
		NewUsersPerMinute: rapid.IntRange(1, total).Draw(t, "per minute"),
		QueueingMethod:    rapid.SampledFrom([]policy.Method{policy.FIFO, policy.Random}).Draw(t, "method"),
		Nodes:             n,
	}
	w := world{now: now, active: int64(rapid.IntRange(0, total+100).Draw(t, "active")),
		arrivals: map[int64]perNode{}, admitted: map[int64]perNode{}}
	ids := make([]crdt.ReplicaID, n)
	for i := range ids {
		ids[i] = crdt.NewReplicaID(fmt.Sprintf("n%d", i), 7)
		silent := rapid.IntRange(0, 3).Draw(t, "silent") == 0 // a node nobody has heard of
		for _, dm := range []int64{2, 1, 0} {
			if w.arrivals[m-dm] == nil {
				w.arrivals[m-dm], w.admitted[m-dm] = perNode{}, perNode{}
			}
			w.arrivals[m-dm][ids[i]] = uint64(rapid.IntRange(0, 3000).Draw(t, "arrivals"))
			w.admitted[m-dm][ids[i]] = uint64(rapid.IntRange(0, 300).Draw(t, "admitted"))
			if silent {
				w.arrivals[m-dm][ids[i]], w.admitted[m-dm][ids[i]] = 0, 0
			}
		}
	}
	b := m - 30
	for range rapid.IntRange(0, 8).Draw(t, "buckets") {
		b += int64(rapid.IntRange(1, 3).Draw(t, "gap"))
		w.waiting = append(w.waiting, crdt.BucketCount{Bucket: b, N: int64(rapid.IntRange(1, 2000).Draw(t, "waiting"))})
	}
	return room, w, ids
}

func TestPropertySplitNeverExceedsThePool(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 12).Draw(t, "nodes")
		room, w, ids := drawRoom(t, n)
		s := rapid.SampledFrom(strategies).Draw(t, "strategy")
		snap := w.snap()
		var sum, silent, bursts int64
		var pool, open, covered int64
		for _, id := range ids {
			a := settled(room, snap, id, w.now, s).Summary()
			sum += a.Allowance
			pool, open, covered = a.PoolSlots, a.SplitSlots, a.CoveredSlots
			if a.Share == 0 {
				silent++
			}
			if a.BurstAllowance > 0 && (s != policy.Continuous || len(w.waiting) > 0) {
				t.Fatalf("a burst allowance of %d with %d buckets waiting (%v)", a.BurstAllowance, len(w.waiting), s)
			}
			if limit := burstLimit(w, id); a.BurstAllowance > limit {
				t.Fatalf("a burst allowance of %d, over the node's %d", a.BurstAllowance, limit)
			}
			bursts += a.BurstAllowance
		}
		// Nodes nobody has heard from cannot place themselves exactly on the
		// continuous split's rounding line: each one past the first may cost
		// a slot.
		slack := int64(0)
		if s == policy.Continuous {
			slack = max(0, silent-1)
		}
		// While somebody waits the split never exceeds the pool. While nobody
		// waits, each node may also take its burst allowance, which together
		// may (see "Bursts" in the package doc).
		if sum > pool+slack+bursts {
			t.Fatalf("the nodes' allowances add up to %d, over the pool of %d (+%d for silent nodes, +%d in bursts)", sum, pool, slack, bursts)
		}
		if covered+pool != open {
			t.Fatalf("covered %d + pool %d != open slots %d", covered, pool, open)
		}
	})
}

func TestPropertyDecideNeverAdmitsPastTheBudget(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		room, w, ids := drawRoom(t, rapid.IntRange(1, 6).Draw(t, "nodes"))
		s := rapid.SampledFrom(strategies).Draw(t, "strategy")
		a := settled(room, w.snap(), ids[0], w.now, s)
		sum := a.Summary()
		limit := sum.Budget + sum.CoveredSlots
		m := minuteOf(w.now)
		admitted := int64(0)
		for range rapid.IntRange(0, 3000).Draw(t, "visitors") {
			v := policy.Visitor{Bucket: m - int64(rapid.IntRange(0, 30).Draw(t, "age")), Queued: rapid.Bool().Draw(t, "queued")}
			if a.Decide(v, nil) == policy.Admit {
				admitted++
			}
		}
		if admitted > limit {
			t.Fatalf("admitted %d, over budget %d + covered %d", admitted, sum.Budget, sum.CoveredSlots)
		}
		if a.Budget() < 0 {
			t.Fatalf("budget went negative: %d", a.Budget())
		}
	})
}

func TestPropertyFIFONeverLetsALaterBucketPassAnEarlierOne(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		room, w, ids := drawRoom(t, 1)
		room.QueueingMethod = policy.FIFO
		a := policy.Allocate(room, w.snap(), ids[0], w.now, rapid.SampledFrom(strategies).Draw(t, "strategy"))
		slots := a.EligibleSlots()
		for j := range slots {
			if slots[j].Eligible == 0 {
				continue
			}
			for i := range j {
				if slots[i].Eligible != slots[i].Waiting {
					t.Fatalf("bucket %d has %d eligible while the older bucket %d has %d of %d", j, slots[j].Eligible, i, slots[i].Eligible, slots[i].Waiting)
				}
			}
		}
		// Decide agrees: a queued visitor goes in only if every older bucket
		// is fully covered.
		for j, b := range slots {
			if a.Decide(policy.Visitor{Bucket: b.Bucket, Queued: true}, nil) != policy.Admit {
				continue
			}
			for i := range j {
				if slots[i].Eligible != slots[i].Waiting {
					t.Fatalf("a visitor of bucket %d went in while bucket %d was not fully covered", j, i)
				}
			}
		}
	})
}

// burstLimit is the package doc's bound on one node's burst allowance:
// ceil(λ + 4√λ) + 1, with λ the node's admissions of the last sixty seconds
// per lag.
func burstLimit(w world, id crdt.ReplicaID) int64 {
	m := minuteOf(w.now)
	frac := float64(w.now.Sub(time.Unix(m*60, 0))) / float64(time.Minute)
	own := (float64(w.admitted[m-1][id])*(1-frac) + float64(w.admitted[m][id])) * policy.DefaultLag.Minutes()
	return int64(math.Ceil(own+4*math.Sqrt(own))) + 1
}

// The safety of the continuous split rests on this: each node counts its own
// traffic as it stood one lag ago (which every other node has seen by now),
// so however fresh each node's view of the others is, the shares plus the
// Anywhere parts of all nodes add up to at most one.
func TestPropertySharesAddUpToAtMostOneUnderLag(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 10).Draw(t, "nodes")
		now := time.Unix(28_000_000*60, 0).Add(time.Duration(rapid.IntRange(2000, 59_999).Draw(t, "ms")) * time.Millisecond)
		m := minuteOf(now)
		room := policy.Room{TotalActiveUsers: 10000, NewUsersPerMinute: rapid.IntRange(1, 5000).Draw(t, "per minute"), Nodes: n}
		ids := make([]crdt.ReplicaID, n)
		then, fresh := make([]uint64, n), make([]uint64, n) // each node's traffic one lag ago, and now
		for i := range ids {
			ids[i] = crdt.NewReplicaID(fmt.Sprintf("n%d", i), 1)
			then[i] = uint64(rapid.IntRange(0, 5000).Draw(t, "then"))
			fresh[i] = then[i] + uint64(rapid.IntRange(0, 5000).Draw(t, "since"))
		}
		total := 0.0
		for i, id := range ids {
			view := func(own uint64) *crdt.RoomSnapshot {
				p := perNode{}
				for j := range ids {
					// Another node's column is somewhere between one lag old and fresh.
					p[ids[j]] = then[j] + uint64(rapid.IntRange(0, int(fresh[j]-then[j])).Draw(t, "seen"))
				}
				p[id] = own
				return world{now: now, arrivals: map[int64]perNode{m: p}}.snap()
			}
			a := policy.Allocate(room, view(then[i]), id, now.Add(-2*policy.DefaultLag), policy.Continuous).Next(room, view(fresh[i]), now)
			s := a.Summary()
			total += s.Share + s.AnywhereShare/float64(n)
		}
		if total > 1+1e-9 {
			t.Fatalf("shares add up to %v", total)
		}
	})
}

func TestPropertyEstimates(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		room, w, ids := drawRoom(t, 1)
		a := policy.Allocate(room, w.snap(), ids[0], w.now, policy.Continuous)
		m := minuteOf(w.now)
		prev := policy.Estimate{}
		for age := int64(40); age >= 0; age-- {
			e := a.Estimate(m - age)
			if e.WaitTime25 > e.WaitTime50 || e.WaitTime50 > e.WaitTime75 {
				t.Fatalf("percentiles out of order: %+v", e)
			}
			if e.WaitTimeKnown && (e.WaitTime < 1 || e.WaitTimeFormatted == policy.UnknownWait) {
				t.Fatalf("a known wait of %d minutes, %q", e.WaitTime, e.WaitTimeFormatted)
			}
			if room.QueueingMethod == policy.FIFO && e.WaitTimeKnown && !e.Eligible && e.WaitTime < prev.WaitTime && !prev.Eligible {
				t.Fatalf("bucket m-%d waits %d, less than the older bucket's %d", age, e.WaitTime, prev.WaitTime)
			}
			if e.VisitorsAhead < prev.VisitorsAhead {
				t.Fatalf("fewer ahead of a later bucket: %d < %d", e.VisitorsAhead, prev.VisitorsAhead)
			}
			prev = e
		}
	})
}

func TestPropertyRandomWaitSolvesTheEquation(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		P := rapid.Float64Range(0.001, 0.999).Draw(t, "P")
		p := rapid.Float64Range(0.01, 0.99).Draw(t, "p")
		n := policy.RandomWait(P, p)
		if got := 1 - math.Pow(1-P, n); math.Abs(got-p) > 1e-9 {
			t.Fatalf("1 - (1-%v)^%v = %v, want %v", P, n, got, p)
		}
	})
}
