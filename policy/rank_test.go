package policy_test

import (
	"cmp"
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/policy"
)

// line is a room of one node whose one slot is taken, and new visitors who
// come to it and prove ProofRefresh later, as browsers do, each request
// counted as the node counts it (policy.Decision.Count). Its chain steps
// every quarter of a second over the counts those visitors leave.
type line struct {
	room   policy.Room
	start  time.Time // a minute boundary
	came   []time.Duration
	chain  policy.Chain
	now    time.Duration
	done   int // requests counted, of the first answers and proofs in time order
	queued uint64
	joined int64
	left   int64 // of those joined, how many left the slot's line
	lapsed int64 // and how many stopped coming back
	// away are visitors of the same slot at other nodes, heard of a proof
	// and a gossip delay after they came.
	away []awayVisitor
	// down is a node killed at downAt (none when zero): from then on the
	// line's node reaches the others only, and keeps what it last heard
	// of it (policy.Room.CutOff).
	down   crdt.ReplicaID
	downAt time.Duration
}

// awayVisitor is a visitor who waits at another node: which, when it came,
// and when it was let in (0: never), by that node or by via.
type awayVisitor struct {
	node, via crdt.ReplicaID
	came, in  time.Duration
}

// gossipDelay is how long after a node counts something the line's node
// hears of it.
const gossipDelay = 200 * time.Millisecond

func newLine(t *testing.T) *line {
	return &line{
		room:  policy.Room{TotalActiveUsers: 1, NewUsersPerMinute: 1, Nodes: 1},
		start: at(t, "2026-11-21T12:00:00Z"),
		chain: policy.NewChain(nairobi, policy.Continuous),
	}
}

// requests are the visitors' first answers and proofs, in time order: when,
// and whether a proof.
func (l *line) requests() []struct {
	at    time.Duration
	proof bool
} {
	var out []struct {
		at    time.Duration
		proof bool
	}
	for _, c := range l.came {
		out = append(out, struct {
			at    time.Duration
			proof bool
		}{c, false}, struct {
			at    time.Duration
			proof bool
		}{c + policy.ProofRefresh*time.Second, true})
	}
	slices.SortStableFunc(out, func(a, b struct {
		at    time.Duration
		proof bool
	}) int {
		return cmp.Compare(a.at, b.at)
	})
	return out
}

// snap is what the ring counts at d: the visitor let in, the first answers
// and the proofs counted so far; with a node down by then, what the line's
// node reaches.
func (l *line) snap(d time.Duration) *crdt.RoomSnapshot {
	now := l.start.Add(d)
	m := minuteOf(now)
	w := world{now: now, active: 1, admitted: map[int64]perNode{m: {nairobi: 1}}, queued: map[int64]perNode{m: {nairobi: l.queued}}}
	joined, left := l.counts(d)
	joined[nairobi], left[nairobi] = l.joined, l.left
	if l.cut(d) {
		delete(joined, l.down)
		delete(left, l.down)
	}
	return l.lineOf(w, joined, left, l.lapsed)
}

// cut reports whether the down node is down at d.
func (l *line) cut(d time.Duration) bool { return l.down != 0 && d >= l.downAt }

// rest is what the line's node last heard of the down node, at d.
func (l *line) rest(d time.Duration) *crdt.RoomSnapshot {
	joined, left := l.counts(l.downAt)
	return l.lineOf(world{now: l.start.Add(d)}, map[crdt.ReplicaID]int64{l.down: joined[l.down]}, map[crdt.ReplicaID]int64{l.down: left[l.down]}, 0)
}

// counts are the other nodes' joined and left of the slot, as heard at d.
func (l *line) counts(d time.Duration) (joined, left map[crdt.ReplicaID]int64) {
	joined, left = map[crdt.ReplicaID]int64{}, map[crdt.ReplicaID]int64{}
	for _, v := range l.away {
		if v.came+policy.ProofRefresh*time.Second+gossipDelay <= d {
			joined[v.node]++
		}
		if v.in > 0 && v.in+gossipDelay <= d {
			by := v.node
			if v.via != 0 {
				by = v.via
			}
			left[by]++
		}
	}
	return joined, left
}

// lineOf is w's snapshot with the slot's line: joined and left replica by
// replica, lapsed of them gone without a word.
func (l *line) lineOf(w world, joined, left map[crdt.ReplicaID]int64, lapsed int64) *crdt.RoomSnapshot {
	m := minuteOf(w.now)
	sum := func(by map[crdt.ReplicaID]int64) crdt.SlotCount {
		c := crdt.SlotCount{Second: m * 60}
		for r, n := range by {
			if n > 0 {
				c.N += n
				c.ByReplica = append(c.ByReplica, crdt.Count{Replica: r, N: uint64(n)})
			}
		}
		slices.SortFunc(c.ByReplica, func(a, b crdt.Count) int { return cmp.Compare(a.Replica, b.Replica) })
		return c
	}
	j, lf := sum(joined), sum(left)
	if j.N > lf.N+lapsed {
		w.waiting = []crdt.BucketCount{{Bucket: m, N: j.N - lf.N - lapsed}}
	}
	s := w.snap()
	if j.N > lf.N+lapsed {
		s.Arrived = []crdt.SlotCount{j}
		if lf.N > 0 {
			s.Left = []crdt.SlotCount{lf}
		}
	}
	return s
}

// until steps the chain up to d, counting the requests made by then on the
// allocation of their time, and returns the allocation of d.
func (l *line) until(d time.Duration) *policy.Allocation {
	reqs := l.requests()
	m := minuteOf(l.start)
	for ; l.now <= d; l.now += 250 * time.Millisecond {
		room := l.room
		if l.cut(l.now) {
			room = room.CutOff(room.Nodes-1, l.rest(l.now))
		}
		_, l.chain = l.chain.Allocate(room, l.snap(l.now), l.start.Add(l.now))
		for ; l.done < len(reqs) && reqs[l.done].at < l.now+250*time.Millisecond; l.done++ {
			r := reqs[l.done]
			when := l.start.Add(r.at)
			q := policy.Request{Fresh: true, Before: policy.NewCounting(when), At: when}
			if r.proof {
				came := when.Add(-policy.ProofRefresh * time.Second)
				q = policy.Request{Before: policy.Counting{Bucket: m, Arrived: uint16(came.Sub(l.start) / (100 * time.Millisecond)),
					LastCheckIn: came.Unix(), RefreshInterval: policy.ProofRefresh}, At: when}
				l.joined++
			} else {
				l.queued++
			}
			d := policy.Decision{Request: q, Outcome: policy.Queue}
			d.Count(nil, l.chain.Last(), l.room, "shop", func() float64 { return 0.5 })
		}
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

// told is a place a visitor is told at a check-in: the one who came at
// who has want ahead.
type told struct {
	name string
	who  time.Duration
	want int64
}

// expect checks each place, read at d on a page after the first, in a
// subtest of its own.
func (l *line) expect(t *testing.T, d time.Duration, places []told) {
	t.Helper()
	for _, p := range places {
		t.Run(p.name, func(t *testing.T) {
			if got := l.place(p.who, d, false); got != p.want {
				t.Errorf("told %d ahead, want %d", got, p.want)
			}
		})
	}
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

// TestOneLetInSinceTheAllocationIsNoLongerAhead: the node lets in the first
// of two in line between two allocations; the second, checking in before
// the next allocation, is told 0 at once, on its page and as a new visitor
// would be counted behind one fewer.
func TestOneLetInSinceTheAllocationIsNoLongerAhead(t *testing.T) {
	s := time.Second
	l := newLine(t)
	l.came = []time.Duration{10 * s, 11 * s}
	a := l.until(20 * s)
	m := minuteOf(l.start)
	placeOfSecond := func() int64 { return a.EstimateAt(m, 110).Position }
	newcomer := func() int64 { return a.EstimateAt(m, 595).ForNewVisitor().Position }
	if got := placeOfSecond(); got != 1 {
		t.Fatalf("before anyone is let in, the second is told %d ahead, want 1", got)
	}
	before := newcomer()

	// The first, at its proof, as the node counts it; then let in.
	proof := policy.Counting{Bucket: m, Arrived: 100, LastCheckIn: l.start.Add(10 * s).Unix(), RefreshInterval: policy.ProofRefresh}
	_, waiting := policy.Decision{Request: policy.Request{Before: proof, At: l.start.Add(12 * s)}, Outcome: policy.Queue}.Count(nil, a, l.room, "shop", func() float64 { return 0.5 })
	policy.Decision{Request: policy.Request{Before: waiting, At: l.start.Add(20*s + 100*time.Millisecond)}, Outcome: policy.Admit}.Count(nil, a, l.room, "shop", nil)

	t.Run("the second is told 0 before the next allocation", func(t *testing.T) {
		if got := placeOfSecond(); got != 0 {
			t.Errorf("told %d ahead, want 0", got)
		}
	})
	t.Run("a new visitor is counted behind one fewer", func(t *testing.T) {
		if got := newcomer(); got != before-1 {
			t.Errorf("a new visitor is told %d ahead, want %d", got, before-1)
		}
	})
}

// TestOneLetInFromLaterInTheSlotLeavesTheEarlierAhead: the node lets the
// last of three in first (a lottery's draw, before the room went back to
// FIFO); the ring counts one gone from the slot, and the second still has
// the first ahead, where taking the gone to be the slot's earliest told it
// nobody was.
func TestOneLetInFromLaterInTheSlotLeavesTheEarlierAhead(t *testing.T) {
	s := time.Second
	l := newLine(t)
	l.came = []time.Duration{10 * s, 11 * s, 12 * s}
	a := l.until(20 * s)
	m := minuteOf(l.start)
	third := policy.Counting{Bucket: m, Arrived: 120, LastCheckIn: l.start.Add(14 * s).Unix(), Counted: m, RefreshInterval: 20}
	policy.Decision{Request: policy.Request{Before: third, At: l.start.Add(20*s + 100*time.Millisecond)}, Outcome: policy.Admit}.Count(nil, a, l.room, "shop", nil)
	l.left = 1
	l.expect(t, 21*s, []told{
		{"the first is told 0", 10 * s, 0},
		{"the second is told 1: the one let in came after it", 11 * s, 1},
	})
}

// TestEachOtherNodesGoneAreItsOwnEarliest: of a slot's line, this node's
// own came at 12 and 16 s, and the other nodes let some of theirs in.
// Each node lets its own first in line in first, so another node's
// let-ins are its own earliest, not a third node's; but of a node's gone
// only as many as came there after a visitor can be its later ones, the
// rest having joined elsewhere.
func TestEachOtherNodesGoneAreItsOwnEarliest(t *testing.T) {
	s := time.Second
	cairo := crdt.NewReplicaID("cairo", 1)
	tests := []struct {
		name   string
		away   []awayVisitor
		places []told
	}{
		{
			name: "dublin's let-in, who came at 15 s, leaves cairo's of 5 s ahead",
			away: []awayVisitor{{node: cairo, came: 5 * s}, {node: dublin, came: 15 * s, in: 20 * s}},
			places: []told{
				{"the one who came after cairo's is told 1", 12 * s, 1},
				{"the one who came after dublin's too is told 2", 16 * s, 2},
			},
		},
		{
			name: "dublin lets in cairo's of 5 s (cairo was down) and its own of 15 s: both are gone",
			away: []awayVisitor{{node: cairo, via: dublin, came: 5 * s, in: 19 * s}, {node: dublin, came: 15 * s, in: 20 * s}},
			places: []told{
				{"the one who came after cairo's is told 0", 12 * s, 0},
				{"the one who came after dublin's too is told 1", 16 * s, 1},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLine(t)
			l.came = []time.Duration{12 * s, 16 * s}
			l.away = tt.away
			l.expect(t, 21*s, tt.places)
		})
	}
}

// TestAKilledNodesVisitorsArePlacedWhereTheyCame: cairo lets in its
// visitor of 5 s and is killed; its visitor of 14 s waits for it to come
// back. The line's node, cut off from it, places cairo's still waiting by
// cairo's own curve of the slot, as it heard it fill before the kill.
func TestAKilledNodesVisitorsArePlacedWhereTheyCame(t *testing.T) {
	s := time.Second
	cairo := crdt.NewReplicaID("cairo", 1)
	l := newLine(t)
	l.room.Nodes = 3
	l.came = []time.Duration{12 * s, 16 * s, 35 * s / 2}
	l.away = []awayVisitor{{node: cairo, came: 5 * s, in: 18 * s}, {node: cairo, came: 14 * s}}
	l.down, l.downAt = cairo, 19*s
	l.expect(t, 22*s, []told{
		// By the share of the slot that had come by 12 s, cairo's one
		// still waiting was 0.6 ahead, told as 1.
		{"the one who came after cairo's visitor it let in is told 0", 12 * s, 0},
		{"the one who came after cairo's still waiting is told 2", 16 * s, 2},
		{"the last is told 3", 35 * s / 2, 3},
	})
}

// TestOneWhoStoppedComingBackIsNoLongerAhead: the first of three at one
// node stops checking in, and its waiting count lapses without a word (no
// request says it left); the node still sees it joined before the other
// two, who are told one fewer ahead once the ring counts one fewer
// waiting.
func TestOneWhoStoppedComingBackIsNoLongerAhead(t *testing.T) {
	s := time.Second
	l := newLine(t)
	l.came = []time.Duration{10 * s, 11 * s, 12 * s}
	if got := l.place(12*s, 20*s, false); got != 2 {
		t.Fatalf("while the first waits, the third is told %d ahead, want 2", got)
	}
	l.lapsed = 1
	l.expect(t, 21*s, []told{
		{"the second is told 0", 11 * s, 0},
		{"the third is told 1", 12 * s, 1},
	})
}

// TestOneLetInAtItsProofIsNoLongerStillToProve: a first answer is counted
// ahead of newer visitors until its proof may have come; once the proof
// came and let its visitor in, nobody is ahead of the next one.
func TestOneLetInAtItsProofIsNoLongerStillToProve(t *testing.T) {
	s, tenth := time.Second, 100*time.Millisecond
	l := newLine(t)
	m := minuteOf(l.start)
	// Two earlier visitors, let in at their proofs 3 s after their first
	// answers: proofs take 3 s here, as the node measures them.
	count := func(a *policy.Allocation, came, at time.Duration, proof bool, out policy.Outcome) {
		when := l.start.Add(at)
		q := policy.Request{Fresh: true, Before: policy.NewCounting(when), At: when}
		if proof {
			q = policy.Request{Before: policy.Counting{Bucket: m, Arrived: uint16(came / tenth),
				LastCheckIn: l.start.Add(came).Unix(), RefreshInterval: policy.ProofRefresh}, At: when}
		} else {
			l.queued++
		}
		policy.Decision{Request: q, Outcome: out}.Count(nil, a, l.room, "shop", func() float64 { return 0.5 })
	}
	for _, came := range []time.Duration{1 * s, 2 * s} {
		count(l.until(came), came, came, false, policy.Queue)
		count(l.until(came+3*s), came, came+3*s, true, policy.Admit)
	}
	// The third comes at 10.1 s and is let in at its proof, 2 s later.
	came := 10*s + tenth
	count(l.until(came), came, came, false, policy.Queue)
	a := l.until(12 * s)
	newcomer := func(a *policy.Allocation) int64 { return a.EstimateAt(m, 125).ForNewVisitor().Position }
	if got := newcomer(a); got != 1 {
		t.Fatalf("before its proof, a new visitor is told %d ahead, want 1: the third, still to prove", got)
	}
	count(a, came, came+2*s, true, policy.Admit)

	t.Run("a new visitor of the same allocation is told 0", func(t *testing.T) {
		if got := newcomer(a); got != 0 {
			t.Errorf("told %d ahead, want 0", got)
		}
	})
	t.Run("a new visitor of the next allocations is told 0", func(t *testing.T) {
		for _, d := range []time.Duration{12*s + 250*time.Millisecond, 12*s + 750*time.Millisecond} {
			if got := newcomer(l.until(d)); got != 0 {
				t.Errorf("at %v: told %d ahead, want 0", d, got)
			}
		}
	})
}

// TestAProofIsTimedFromItsAnswerAfterAHold: a visitor held for an
// allocation comes back as long after its answer as any other, so the time
// its proof took is counted from the answer; counted from its arrival,
// the hold made proofs seem slower, and a first answer older than a proof
// takes was still counted ahead of the next visitor.
func TestAProofIsTimedFromItsAnswerAfterAHold(t *testing.T) {
	s, ms := time.Second, time.Millisecond
	l := newLine(t)
	m := minuteOf(l.start)
	count := func(a *policy.Allocation, q policy.Request) {
		policy.Decision{Request: q, Outcome: policy.Queue}.Count(nil, a, l.room, "shop", func() float64 { return 0.5 })
	}
	// The first comes at 10 s, is held 600 ms, and proves 2 s after its
	// answer.
	came, answered := l.start.Add(10*s), l.start.Add(10*s+600*ms)
	count(l.until(10*s+500*ms), policy.Request{Fresh: true, Before: policy.HeldArrival(came, answered), At: answered, HeldSince: came})
	l.queued++
	proof := policy.Counting{Bucket: m, Arrived: 100, LastCheckIn: answered.Unix(), RefreshInterval: policy.ProofRefresh}
	count(l.until(12*s+500*ms), policy.Request{Before: proof, At: answered.Add(2 * s)})
	l.joined++
	// The second comes at 20 s and never comes back (a client that keeps
	// no cookie).
	second := l.start.Add(20 * s)
	count(l.until(19*s+750*ms), policy.Request{Fresh: true, Before: policy.NewCounting(second), At: second})
	l.queued++
	// 2.25 s after the second's answer, past the 2 s proofs take here, a
	// new visitor has only the first ahead.
	if got := l.until(22*s+250*ms).EstimateAt(m, 223).ForNewVisitor().Position; got != 1 {
		t.Errorf("a new visitor is told %d ahead, want 1: the first, in line", got)
	}
}

// TestOneOfTheSameTenthLetInSinceLeavesTheOtherFirst: two who came in one
// tenth of a second are each placed in their middle, half a place; once
// the node lets one of them in, the other is first in line, before the
// next allocation too.
func TestOneOfTheSameTenthLetInSinceLeavesTheOtherFirst(t *testing.T) {
	s, ms := time.Second, time.Millisecond
	l := newLine(t)
	l.came = []time.Duration{10*s + 110*ms, 10*s + 130*ms}
	a := l.until(20 * s)
	m := minuteOf(l.start)
	proof := policy.Counting{Bucket: m, Arrived: 101, LastCheckIn: l.start.Add(10 * s).Unix(), RefreshInterval: policy.ProofRefresh}
	_, waiting := policy.Decision{Request: policy.Request{Before: proof, At: l.start.Add(12 * s)}, Outcome: policy.Queue}.Count(nil, a, l.room, "shop", func() float64 { return 0.5 })
	policy.Decision{Request: policy.Request{Before: waiting, At: l.start.Add(20*s + 100*ms)}, Outcome: policy.Admit}.Count(nil, a, l.room, "shop", nil)
	if got := a.EstimateAt(m, 101).Position; got != 0 {
		t.Errorf("the one left of the tenth is told %d ahead, want 0", got)
	}
}

// TestVisitorsOfOneTenthOfASecondArePlacedInTheirMiddle: a token keeps
// when its visitor came to the tenth of a second, so the order of three
// who came within one tenth cannot be told. Each is told the middle of
// them (truly 0, 1 and 2 ahead: each told 1), never all the first place;
// one who came before them is still told 0, and one after them 4.
func TestVisitorsOfOneTenthOfASecondArePlacedInTheirMiddle(t *testing.T) {
	s, tenth := time.Second, 100*time.Millisecond
	l := newLine(t)
	l.came = []time.Duration{5 * s, 10*s + tenth, 10*s + tenth + tenth/4, 10*s + tenth + tenth/2, 12 * s}
	tests := []struct {
		name string
		who  time.Duration
		want int64
	}{
		{"the one who came before them is told 0", l.came[0], 0},
		{"each of the three of one tenth is told the middle of them", l.came[2], 2},
		{"the one who came after them is told 4", l.came[4], 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := l.place(tt.who, 40*s, false); got != tt.want {
				t.Errorf("told %d ahead, want %d", got, tt.want)
			}
		})
	}
}

// TestTwoOfOneTenthAtTheFrontAreBothNext: of two who came within one
// tenth of a second with nobody ahead, either may be let in first (the
// node cannot tell their order either), so both are told they are next;
// told their middle rounded up, the first in line was told one ahead
// (three real processes, regional-4-1-1: two visitors 21 ms apart at one
// node).
func TestTwoOfOneTenthAtTheFrontAreBothNext(t *testing.T) {
	s, tenth := time.Second, 100*time.Millisecond
	l := newLine(t)
	l.came = []time.Duration{10*s + tenth, 10*s + tenth + tenth/2, 12 * s}
	l.expect(t, 40*s, []told{
		{"the first of the two is told 0", l.came[0], 0},
		{"and so is the second", l.came[1], 0},
		{"the one who came after them is told 2", l.came[2], 2},
	})
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

func TestTheFirstToComeOfAQueueAreLetInFirst(t *testing.T) {
	s := time.Second
	l := newLine(t)
	// One slot free: two may be active and one is. Five visitors queue
	// in the current minute, half a second apart, and are counted.
	l.room.TotalActiveUsers, l.room.NewUsersPerMinute = 2, 10
	for i := range 5 {
		l.came = append(l.came, 10*s+time.Duration(i)*s/2)
	}
	a := l.until(20 * s)
	m := minuteOf(l.start)
	visitor := func(came time.Duration) policy.Visitor {
		return policy.Visitor{Bucket: m, Queued: true, Arrived: uint16(came / (100 * time.Millisecond))}
	}
	tests := []struct {
		name string
		v    policy.Visitor
		want policy.Outcome
	}{
		{"the last to come waits", visitor(l.came[4]), policy.Queue},
		{"the second waits", visitor(l.came[1]), policy.Queue},
		{"a new visitor waits behind them", policy.Visitor{Bucket: m, Arrived: 200}, policy.Queue},
		{"the first to come takes the slot", visitor(l.came[0]), policy.Admit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := a.Decide(tt.v, nil); got != tt.want {
				t.Errorf("%v, want %v", got, tt.want)
			}
		})
	}
}

// TestASlotTheFirstInLineCannotTakeHereGoesToThisNodesFirst: a room of
// three nodes with one slot free, which this node's share of the traffic
// makes all its own. The first in line came six seconds earlier at another
// node, which has no slot to give; this node's own two visitors come after
// it. The slot goes to the first of this node's own, not to nobody, and
// once that one is in, to the next.
func TestASlotTheFirstInLineCannotTakeHereGoesToThisNodesFirst(t *testing.T) {
	s := time.Second
	start := at(t, "2026-11-21T12:00:00Z")
	m := minuteOf(start)
	room := policy.Room{TotalActiveUsers: 2, NewUsersPerMinute: 10, Nodes: 3}
	elsewhere := 4 * s                         // the first in line, at dublin
	heard := elsewhere + 2200*time.Millisecond // its proof, and a gossip delay
	own := []time.Duration{10 * s, 11 * s}     // this node's, in line behind it
	tenths := func(d time.Duration) uint16 { return uint16(d / (100 * time.Millisecond)) }
	chain := policy.NewChain(nairobi, policy.Continuous)
	active := int64(1)
	var queued uint64
	var proved int64
	snap := func(d time.Duration) *crdt.RoomSnapshot {
		n := proved
		if d >= heard {
			n++
		}
		w := world{now: start.Add(d), active: active,
			arrivals: map[int64]perNode{m: {nairobi: 30}},
			admitted: map[int64]perNode{m: {nairobi: 1}},
			queued:   map[int64]perNode{m: {nairobi: queued, dublin: 1}}}
		w.waiting = []crdt.BucketCount{{Bucket: m, N: n}}
		sn := w.snap()
		if n > 0 {
			sn.Arrived = []crdt.SlotCount{{Second: m * 60, N: n}}
		}
		return sn
	}
	count := func(a *policy.Allocation, q policy.Request, o policy.Outcome) {
		d := policy.Decision{Request: q, Outcome: o}
		d.Count(nil, a, room, "shop", func() float64 { return 0.5 })
	}
	counting := func(came time.Duration) policy.Counting {
		when := start.Add(came)
		return policy.Counting{Bucket: m, Arrived: tenths(came), LastCheckIn: when.Unix(), RefreshInterval: policy.ProofRefresh}
	}
	var a *policy.Allocation
	step := func(from, to time.Duration) {
		for d := from; d <= to; d += 250 * time.Millisecond {
			a, chain = chain.Allocate(room, snap(d), start.Add(d))
			for _, c := range own {
				switch {
				case c >= d && c < d+250*time.Millisecond:
					when := start.Add(c)
					count(a, policy.Request{Fresh: true, Before: policy.NewCounting(when), At: when}, policy.Queue)
					queued++
				case c+policy.ProofRefresh*s >= d && c+policy.ProofRefresh*s < d+250*time.Millisecond:
					count(a, policy.Request{Before: counting(c), At: start.Add(c + policy.ProofRefresh*s)}, policy.Queue)
					proved++
				}
			}
		}
	}
	step(0, 20*s)
	visitor := func(came time.Duration) policy.Visitor {
		return policy.Visitor{Bucket: m, Queued: true, Arrived: tenths(came)}
	}
	if got := a.Decide(visitor(own[1]), nil); got != policy.Queue {
		t.Errorf("this node's second, with its first still waiting: %v, want queue", got)
	}
	if got := a.Decide(visitor(own[0]), nil); got != policy.Admit {
		t.Fatalf("this node's first, behind another node's visitor who cannot take the slot there: %v, want admit", got)
	}
	// The first is let in; a session ends, and the slot is free again.
	checked := counting(own[0])
	checked.Counted, checked.RefreshInterval = m, 20
	count(a, policy.Request{Before: checked, At: start.Add(20 * s)}, policy.Admit)
	proved--
	step(20*s+250*time.Millisecond, 21*s)
	if got := a.Decide(visitor(own[1]), nil); got != policy.Admit {
		t.Errorf("this node's second, once its first is in: %v, want admit", got)
	}
}
