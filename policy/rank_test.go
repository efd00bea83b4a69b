package policy_test

import (
	"testing"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/policy"
)

// line is a room of one node whose one slot is taken, and new visitors who
// come to it and prove ProofRefresh later, as browsers do. Its chain steps
// every quarter of a second over the counts those visitors leave.
type line struct {
	room  policy.Room
	start time.Time // a minute boundary
	came  []time.Duration
	chain policy.Chain
	now   time.Duration
}

func newLine(t *testing.T) *line {
	return &line{
		room:  policy.Room{TotalActiveUsers: 1, NewUsersPerMinute: 1, Nodes: 1},
		start: at(t, "2026-11-21T12:00:00Z"),
		chain: policy.NewChain(nairobi, policy.Continuous),
	}
}

// snap is what the ring counts at d: the visitor let in, the first answers
// given by then and the proofs come by then.
func (l *line) snap(d time.Duration) *crdt.RoomSnapshot {
	now := l.start.Add(d)
	m := minuteOf(now)
	var queued uint64
	var proved int64
	for _, c := range l.came {
		if c < d {
			queued++
		}
		if c+policy.ProofRefresh*time.Second < d {
			proved++
		}
	}
	w := world{now: now, active: 1, admitted: map[int64]perNode{m: {nairobi: 1}}, queued: map[int64]perNode{m: {nairobi: queued}}}
	if proved > 0 {
		w.waiting = []crdt.BucketCount{{Bucket: m, N: proved}}
	}
	s := w.snap()
	if proved > 0 {
		s.Arrived = []crdt.SlotCount{{Second: m * 60, N: proved}}
	}
	return s
}

// until steps the chain up to d and returns the allocation of d.
func (l *line) until(d time.Duration) *policy.Allocation {
	for ; l.now <= d; l.now += 250 * time.Millisecond {
		_, l.chain = l.chain.Allocate(l.room, l.snap(l.now), l.start.Add(l.now))
	}
	return l.chain.Last()
}

// place is the place in line shown to the visitor who came at came, at d:
// on its first answer (first) or later.
func (l *line) place(came, d time.Duration, first bool) int64 {
	a := l.until(d)
	e := a.EstimateAt(minuteOf(l.start), uint16(came/(100*time.Millisecond)))
	if first {
		e = e.ForNewVisitor()
	}
	if !e.PositionKnown {
		return -1
	}
	return e.Position
}

func TestAPlaceInLineCountsNeitherTheVisitorNorThoseAfterIt(t *testing.T) {
	s := time.Second
	a, b := 10*s, 11*s // two visitors, a second apart, in one arrival slot
	l := newLine(t)
	l.came = []time.Duration{a, b}
	tests := []struct {
		name  string
		who   time.Duration
		at    time.Duration
		first bool
		want  int64
	}{
		{"the first, alone in line, is told 0 on its first answer", a, a, true, 0},
		{"the second's first answer counts the first, who has not proved yet", b, b, true, 1},
		{"the first is told 0 at its proof", a, a + 2*s, false, 0},
		{"the second is told 1 at its proof", b, b + 2*s, false, 1},
		{"the first is told 0 at its next check-in, with both counted", a, a + 22*s, false, 0},
		{"the second is told 1 at its next check-in", b, b + 22*s, false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := l.place(tt.who, tt.at, tt.first); got != tt.want {
				t.Errorf("told %d ahead, want %d", got, tt.want)
			}
		})
	}
}

func TestAFirstAnswerCountsThoseStillToProveAtTheShareThatDo(t *testing.T) {
	s := time.Second
	l := newLine(t)
	room, m := l.room, minuteOf(l.start)
	// Ten new visitors, one a second; every other one proves 2.2 s after
	// its first answer, the others keep no cookie. Then, at 30 s, four
	// more within a second.
	var first, proofs []time.Duration
	for i := range 10 {
		first = append(first, time.Duration(i+1)*s)
		if i%2 == 0 {
			proofs = append(proofs, time.Duration(i+1)*s+2200*time.Millisecond)
		}
	}
	for i := range 4 {
		first = append(first, 30*s+time.Duration(i)*250*time.Millisecond)
	}
	count := func(a *policy.Allocation, at time.Duration, proof bool) {
		when := l.start.Add(at)
		q := policy.Request{Fresh: true, Before: policy.NewCounting(when), At: when}
		if proof {
			came := when.Add(-2200 * time.Millisecond)
			q = policy.Request{Before: policy.Counting{Bucket: m, Arrived: uint16(came.Sub(l.start) / (100 * time.Millisecond)), LastCheckIn: came.Unix(), RefreshInterval: policy.ProofRefresh}, At: when}
		}
		d := policy.Decision{Request: q, Outcome: policy.Queue}
		d.Count(nil, a, room, "shop", func() float64 { return 0.5 })
	}
	l.came = nil // the snapshot below counts what the ring would
	snapAt := func(d time.Duration) *crdt.RoomSnapshot {
		now := l.start.Add(d)
		var queued uint64
		var proved int64
		for _, f := range first {
			if f < d {
				queued++
			}
		}
		for _, p := range proofs {
			if p < d {
				proved++
			}
		}
		w := world{now: now, active: 1, admitted: map[int64]perNode{m: {nairobi: 1}}, queued: map[int64]perNode{m: {nairobi: queued}}}
		w.waiting = []crdt.BucketCount{{Bucket: m, N: proved}}
		snap := w.snap()
		snap.Arrived = []crdt.SlotCount{{Second: m * 60, N: proved}}
		return snap
	}
	fi, pi := 0, 0
	var a *policy.Allocation
	end := 31 * s
	for d := time.Duration(0); d <= end; d += 250 * time.Millisecond {
		a, l.chain = l.chain.Allocate(room, snapAt(d), l.start.Add(d))
		for ; fi < len(first) && first[fi] <= d; fi++ {
			count(a, first[fi], false)
		}
		for ; pi < len(proofs) && proofs[pi] <= d; pi++ {
			count(a, proofs[pi], true)
		}
	}
	e := a.EstimateAt(m, 310).ForNewVisitor()
	// The five who proved wait; of the four first answers of the last
	// second, half will prove.
	if e.Position != 5+2 {
		t.Errorf("a new visitor is told %d ahead, want 7: the 5 counted and half of the 4 still to prove", e.Position)
	}
}
