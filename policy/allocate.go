package policy

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom/crdt"
)

// randomReleaseLead is how far ahead of the clock random queueing releases
// the new-user slots of a minute (see openSlots): enough that visitors
// arriving in the first seconds of a minute are not queued below the limit,
// small enough that the check-ins just after :00 do not take the minute.
const randomReleaseLead = 5 * time.Second

// Allocation is one node's admission plan for one room, computed from a
// merged snapshot. Decide and Estimate may be called from many goroutines at
// once; everything but the admission counters is immutable.
type Allocation struct {
	room     Room
	roomName string
	self     crdt.ReplicaID
	strategy Strategy
	method   Method
	mode     mode
	lag      time.Duration

	now       time.Time
	minute    int64
	frac      float64 // elapsed part of the current minute, 0..1
	activeEff float64 // active users: the sessions not yet expired
	admitted  int64   // admissions of the current minute, all nodes
	open      int64   // open slots S as of now

	// While cut off from part of the ring (Room.Side): the fraction of the
	// nodes this one reaches, and the unreachable nodes' active sessions
	// (the expiring minute pro rata) and admissions of the minute as last
	// heard.
	cut        bool
	part       float64
	elseActive float64
	elseAdm    int64

	buckets []bucket       // waiting buckets, oldest first
	lines   slotLines      // who joined and left them, per arrival slot (see order.go)
	arr     *arrivalCurves // how the slots filled, along the chain (see rank.go)
	newOnce sync.Once      // newBase, once asked for (see Estimate.ForNewVisitor)
	newBase float64
	// firstsAt is the node's count of its own first answers that queued
	// a new visitor when the allocation was made (see newcomerNow).
	firstsAt int64
	waiting  int64
	full     bool
	rate     float64      // admissions per minute, recent average
	joining  float64      // new visitors queued per minute, recent average (lottery.go)
	joinFor  float64      // minutes they are taken to go on joining (joiningFor)
	fc       *forecast    // when the slots free up (forecast.go)
	book     forecastBook // the mean browse, along the chain (forecast.go)

	sp    split
	led   *ledger
	marks marks
	cov   coverage
	held  holds
	// nearSeen, nearThrough and nearAll: which buckets are near the front
	// of the line, and since when (see RefreshInterval).
	nearSeen    nears
	nearThrough int64
	nearAll     bool

	chainStart bool // no earlier allocation of this chain
	// calm: nobody waits or was queued lately, as far as this node knows
	// (see Held).
	calm bool
}

// holds remembers, along a chain, since when each covered waiting bucket
// has been covered without a break and without anyone joining it (see
// holdBack), so the wait for its visitors' check-ins ends even when some of
// them have given up and their count lingers.
type holds struct {
	b [maxHolds]struct {
		bucket int64
		since  int64 // unix nanoseconds
		n      int64 // visitors waiting in it when last seen
	}
	n int
}

// maxHolds is how many covered buckets, oldest first, a chain follows;
// newer covered buckets beyond it are not held for (their order is behind
// the held ones' anyway).
const maxHolds = 8

// find returns the entry of bucket, if any.
func (h *holds) find(bucket int64) (since, n int64, ok bool) {
	for i := range h.n {
		if h.b[i].bucket == bucket {
			return h.b[i].since, h.b[i].n, true
		}
	}
	return 0, 0, false
}

// add records bucket as covered since since with n waiting; it reports
// false when no room is left.
func (h *holds) add(bucket, since, n int64) bool {
	if h.n == maxHolds {
		return false
	}
	h.b[h.n].bucket, h.b[h.n].since, h.b[h.n].n = bucket, since, n
	h.n++
	return true
}

// coverage remembers, for one minute, the newest bucket that an allocation
// of the chain reserved in full (see reserve).
type coverage struct {
	minute, through int64
	reserved        int64 // visitors waiting in buckets up to through, then
	ok              bool
}

// bucket is one waiting arrival bucket with the number waiting in older ones.
type bucket struct {
	bucket, n, before int64
}

// split is the division of the open slots that Decide enforces. Continuous
// makes a new one at every allocation; ReferencePerMinute keeps the first one
// of each minute.
type split struct {
	minute   int64
	open     int64 // S the split was made from
	covered  int64 // C: visitors in fully covered buckets
	pool     int64 // U = S − C: the partial bucket's slots or the new-user remainder
	frontier int64 // oldest bucket not fully covered
	lastSlot int   // the frontier's last arrival slot the pool reaches (order.go)
	// fine: the order goes down to the visitor (order.go); reach is how
	// many of the last slot's visitors the pool reaches.
	fine        bool
	reach       float64
	hasFrontier bool
	newest      int64 // newest waiting bucket
	hasWaiting  bool
	// Visitors of buckets newer than holdAfter, and new visitors, wait
	// while hasHold: an older bucket is covered and its visitors have not
	// all had a check-in since (see holdBack).
	holdAfter int64
	hasHold   bool

	share, anywhere           float64 // this node's share, the Anywhere part
	nodes                     int
	shareSlots, anywhereSlots float64 // share × U, Anywhere × U (the whole cluster's)
	allowance                 int64   // pool admissions this split granted
	burst                     int64   // the allowance while nobody waits, share or not (see burstAllowance)
	poolCap, coveredCap       int64   // limits on the ledger counters
	poolAt                    int64   // the ledger's pool count when the split was made
}

// ledger counts this node's admissions across a chain of allocations (see
// Next), so an admission made on a superseded allocation still counts.
type ledger struct {
	pool    atomic.Int64 // admissions from the pool: partial bucket, new users, random
	covered atomic.Int64 // admissions from fully covered buckets
	baseK   int64        // own admissions already made this minute when the chain began
	// heldAt is when the node last held a visitor (see Held), in unix
	// nanoseconds by the allocation's clock (0: never).
	heldAt atomic.Int64
	// prio counts the admissions each priority group took ahead of the
	// line (see DecidePriority).
	prio [MaxPriorityGroups]atomic.Int64
	// proofs counts the node's first answers and proofs (see proof.go).
	proofs proofLedger
}

// mark records, at one allocation, what the node had done and counted, so a
// later allocation can tell what happened within the last lag.
type mark struct {
	at       int64 // unix nanoseconds
	pool     int64 // ledger.pool
	minute   int64
	cur, prv float64 // own traffic of minute and minute−1 as counted then
	others   int64   // the other nodes' admissions of minute, as heard then
	waiting  float64 // own waiting visitors as counted then (see drawShares)
}

const maxMarks = 40

// marks keeps the newest mark at least one lag old and every later one, at
// most one per 32nd of a lag; keeping fewer only makes the estimates of
// recent own activity more conservative. How conservative matters in a
// flood: the node counts as recent its admissions since the mark it finds
// at or before one lag ago, and every admission counted too many holds back
// (1 − f)/f slots of the pool, f being its fraction (two for each of three
// nodes). With a mark per eighth of a lag, a fresh room flooded at three
// nodes with gossip as slow as the lag queued its first visitor at 0.83 of
// its limits; with a mark per 32nd, at 0.90.
type marks struct {
	m [maxMarks]mark
	n int
}

// at returns the newest mark taken no later than t.
func (ms *marks) at(t int64) (mark, bool) {
	for i := ms.n - 1; i >= 0; i-- {
		if ms.m[i].at <= t {
			return ms.m[i], true
		}
	}
	return mark{}, false
}

func (ms *marks) record(m mark, lag time.Duration) {
	cut := m.at - lag.Nanoseconds()
	keep := 0 // first index to keep: the newest mark <= cut
	for i := ms.n - 1; i >= 0; i-- {
		if ms.m[i].at <= cut {
			keep = i
			break
		}
	}
	if keep > 0 {
		copy(ms.m[:], ms.m[keep:ms.n])
		ms.n -= keep
	}
	if ms.n > 0 && m.at-ms.m[ms.n-1].at < lag.Nanoseconds()/32 {
		return
	}
	if ms.n == maxMarks {
		copy(ms.m[:], ms.m[1:])
		ms.n--
	}
	ms.m[ms.n] = m
	ms.n++
}

// Allocate computes node self's allocation for the room from the merged
// snapshot at time now, with no memory of earlier allocations. Without that
// memory it must assume all of the node's admissions this minute were
// recent, so a node that only ever calls Allocate gets a split close to the
// reference's; call Next on the previous allocation instead to get the
// continuous re-division.
func Allocate(room Room, snap *crdt.RoomSnapshot, self crdt.ReplicaID, now time.Time, s Strategy) *Allocation {
	return build(nil, room, snap, now, maker{self: self, strategy: s})
}

// Next computes the allocation that follows a, for the same node and
// strategy: what the edge calls whenever the merged state changes and at
// every minute boundary, and the simulator on every gossip delivery. It
// carries a's admission counters, so admissions still being decided on a
// count against the new allocation too, and the record of the node's recent
// admissions that the continuous split needs.
func (a *Allocation) Next(room Room, snap *crdt.RoomSnapshot, now time.Time) *Allocation {
	return build(a, room, snap, now, maker{self: a.self, strategy: a.strategy})
}

// maker is the node an allocation is computed for and the strategy it
// follows.
type maker struct {
	self     crdt.ReplicaID
	strategy Strategy
	// resume is the order inside the arrival slots that a chain starting
	// again takes back (ResumeChain); nil for a fresh start.
	resume *arrivalCurves
}

func build(prev *Allocation, room Room, snap *crdt.RoomSnapshot, now time.Time, by maker) *Allocation {
	self, s := by.self, by.strategy
	a := &Allocation{
		room: room, roomName: snap.Room, self: self, strategy: s,
		method: room.method(), mode: room.mode(), lag: room.lag(),
		now: now, minute: snap.Minute,
	}
	start := time.Unix(snap.Minute*60, 0)
	a.frac = min(max(now.Sub(start).Seconds()/60, 0), 1)
	a.activeEff = float64(snap.Active)
	a.admitted = int64(snap.AdmittedIn(snap.Minute).Total)
	a.cut, a.part = room.cut()
	if a.cut {
		a.elseActive = float64(room.Side.Active)
		a.elseAdm = room.Side.Admitted
	}
	a.buckets = make([]bucket, len(snap.Waiting))
	for i, b := range snap.Waiting {
		a.buckets[i] = bucket{bucket: b.Bucket, n: b.N, before: a.waiting}
		a.waiting += b.N
	}
	a.lines = keepLines(snap)
	a.full = room.MaxQueue > 0 && a.waiting >= a.partOf(int64(room.MaxQueue))
	if s == ReferencePerMinute {
		a.rate = referenceRate(snap, a.frac)
	} else {
		a.rate = admissionRate(snap)
	}
	a.joining = joiningRate(snap)
	if a.frac >= 1.0/6 {
		// A queue that began in the last minute joins at the current
		// minute's pace, which the full minutes before it understate.
		a.joining = max(a.joining, float64(snap.QueuedIn(snap.Minute).Total)/a.frac)
	}
	a.joining = thinnedJoining(a.joining, float64(snap.QueuedIn(snap.Minute).Total), a.frac)
	a.joinFor = joiningFor(snap, a.frac)
	if a.waiting > 0 {
		a.fc = &forecast{now: snap.Now, expiring: snap.Expiring, admitted: snap.AdmittedTotals}
	}
	a.open = a.openSlots(false)

	if prev != nil && prev.led != nil && prev.roomName == snap.Room && prev.self == self {
		a.led, a.marks, a.held, a.nearSeen = prev.led, prev.marks, prev.held, prev.nearSeen
		a.book = prev.book
		if prev.cov.minute == snap.Minute && sameLimits(prev.room, room) {
			a.cov = prev.cov
		}
	} else {
		a.led = &ledger{baseK: int64(snap.AdmittedIn(snap.Minute).Of(self))}
		a.chainStart = true
		if now.Sub(start) < a.lag {
			a.led.baseK += int64(snap.AdmittedIn(snap.Minute - 1).Of(self))
		}
	}
	oldest := snap.Minute
	if len(a.buckets) > 0 {
		oldest = min(oldest, a.buckets[0].bucket)
	}
	prevArr := by.resume
	if !a.chainStart {
		prevArr = prev.arr
	}
	resettle := a.chainStart || prev.room.Nodes != room.Nodes || prev.room.Side.Nodes != room.Side.Nodes
	a.arr = noteArrivals(prevArr, snap, a.led, self, oldest, now, a.lag, resettle)
	a.firstsAt = a.led.proofs.first.Load()
	if room.TotalActiveUsers > 0 && s == Continuous && !a.cut {
		a.book = a.book.update(room, snap.Now, a.activeEff, snap.Expiring, snap.AdmittedTotals)
	}
	if a.fc != nil {
		a.fc.pace = a.book.pace(snap, float64(room.NewUsersPerMinute))
	}
	pool, covered := a.led.pool.Load(), a.led.covered.Load()

	switch {
	case s == ReferencePerMinute && prev != nil && prev.led == a.led && prev.strategy == s &&
		prev.sp.minute == snap.Minute && sameRoom(prev.room, room):
		a.sp = prev.sp // the reference never revisits a minute's split
	case s == ReferencePerMinute:
		a.sp = a.referenceSplit(snap, pool, covered)
	default:
		a.sp = a.continuousSplit(snap, now.Sub(start), pool, covered)
	}

	a.calm = a.waiting == 0 && !a.queuedNew(snap)
	a.marks.record(mark{
		at: now.UnixNano(), pool: pool, minute: snap.Minute,
		cur: ownTraffic(snap, snap.Minute, self), prv: ownTraffic(snap, snap.Minute-1, self),
		others:  othersAdmitted(snap, snap.Minute, self),
		waiting: ownWaiting(snap, self),
	}, a.lag)
	return a
}

// sameRoom reports whether rooms a and b are the same but for what a cut
// ring last heard of the others' line, which is read again at every
// allocation.
func sameRoom(a, b Room) bool {
	a.Side.Waiting, b.Side.Waiting = nil, nil
	return a == b
}

// sameLimits reports whether a promise made under room a holds under room
// b: the same limits and method.
func sameLimits(a, b Room) bool {
	return a.TotalActiveUsers == b.TotalActiveUsers && a.NewUsersPerMinute == b.NewUsersPerMinute &&
		a.method() == b.method() && a.mode() == b.mode() && a.Side.Nodes == b.Side.Nodes
}

// partOf is this node's part of a room-wide limit: all of it, or while cut
// off the reachable nodes' fraction, rounded down so that the parts of a
// cut ring add up to at most the limit (but never below one, or a lone node
// of a large ring could never admit anyone).
func (a *Allocation) partOf(limit int64) int64 {
	if !a.cut || limit <= 0 {
		return limit
	}
	return max(1, int64(math.Floor(tidy(a.part*float64(limit)))))
}

// openSlots is S = min(total − active, new per minute − admitted), never
// negative. Random queueing under the continuous strategy, while anybody
// waits, releases the new-user slots across the minute (paced) rather than
// all at :00, so that the check-ins that happen to fall just after the
// minute turns do not take them all (the section "How random is random
// queueing?" of "Waiting Room: Random Queueing and Custom Web/Mobile
// Apps").
//
// While cut off from part of the ring, the reachable part keeps within its
// part of each limit (partOf) and within what the whole room has left as
// far as this node last heard of the others. Two parts that see each other's
// counts from before the cut are then held together within the limits: if
// one had already taken more than its part before the cut, the other is
// held by the room-wide bound, which counts those admissions.
func (a *Allocation) openSlots(paced bool) int64 {
	total := float64(a.room.TotalActiveUsers)
	perMinute := float64(a.room.NewUsersPerMinute)
	if paced {
		perMinute = math.Floor(perMinute * min(1, a.frac+randomReleaseLead.Minutes()))
	}
	byActive := math.Floor(total - a.activeEff)
	byMinute := perMinute - float64(a.admitted)
	if a.cut {
		byActive = math.Floor(min(total-a.activeEff-a.elseActive, float64(a.partOf(int64(total)))-a.activeEff))
		byMinute = min(byMinute-float64(a.elseAdm), float64(a.partOf(int64(perMinute)))-float64(a.admitted))
	}
	s := min(byActive, byMinute)
	if s <= 0 {
		return 0
	}
	return int64(s)
}

// reserve gives the open slots to the oldest buckets first (the eligible
// slots of Random Queueing and Durable Objects, see the package doc): it
// fills sp's covered, pool and bucket boundaries for open slots s.
//
// With sticky set (the continuous strategy), buckets that an earlier
// allocation of the same minute covered stay covered for the rest of the
// minute, as long as no more visitors wait in them than were covered then,
// even if S has since dropped below what they need: their visitors were
// promised a slot at every node, and what took the slots instead was the
// pool, admitted on views up to one lag old. Covered then may exceed S, and
// the pool is what S leaves after it. Only buckets of earlier minutes stick:
// the current minute's still grows.
func (a *Allocation) reserve(sp *split, s int64, sticky bool) {
	sp.open = s
	if n := len(a.buckets); n > 0 {
		sp.newest, sp.hasWaiting = a.buckets[n-1].bucket, true
	}
	if a.method == Random {
		// Everyone is treated as new: the whole of S is one pool. The buckets
		// are still kept, so switching back to FIFO keeps the order.
		sp.covered, sp.pool = 0, s
		return
	}
	keep := sticky && a.cov.ok && a.cov.minute == a.minute
	var c int64
	last := -1   // index of the newest covered bucket
	byOpen := -1 // index of the newest bucket the open slots cover, stickiness aside
	for i, b := range a.buckets {
		limit := s
		if keep && b.bucket <= a.cov.through {
			limit = max(s, a.cov.reserved)
		}
		if c+b.n > limit {
			sp.frontier, sp.hasFrontier = b.bucket, true
			break
		}
		c += b.n
		last = i
		if c <= s {
			byOpen = i
		}
	}
	sp.covered, sp.pool = c, max(0, s-c)
	a.orderFrontier(sp)
	a.holdBack(sp, last, byOpen)
	if !sticky {
		return
	}
	// Remember what is covered now, up to the newest bucket of an earlier
	// minute, for the next allocations of this minute.
	a.cov = coverage{}
	var r int64
	for _, b := range a.buckets[:last+1] {
		if b.bucket >= a.minute {
			break
		}
		r += b.n
		a.cov = coverage{minute: a.minute, through: b.bucket, reserved: r, ok: true}
	}
}

// holdBack keeps pool admissions (the partial bucket's visitors and new
// visitors) of buckets newer than an older, covered one out while that
// bucket's visitors have not all had the chance to check in since it was
// covered; last is the index of the newest covered bucket. Covered buckets
// themselves are not held: their slots are reserved, so their order costs
// no visitor a slot, and holding them too concentrated their admissions
// enough to overshoot the active limit in the simulator's reference
// experiment (1.034 × the limit).
//
// A covered bucket's visitors may enter at any node, but only when they
// next check in, up to one refresh interval later. Admitting a newer bucket
// meanwhile lets in someone who came in a later minute while someone who
// came earlier still waits: a FIFO inversion, as the visitors see it. The
// regional 4:1:1 flood measured 4.4% of admissions so at the origin, nearly
// all of them at the minute turn, when the new minute's slots cover the
// oldest bucket and the new visitors of the minute, who need no check-in,
// took the rest at once. Holding costs nothing of the per-minute limit (the
// minute's slots wait for its remaining seconds) and at most one check-in
// interval of the slots that sessions free; it ends as soon as the bucket's
// count is gone, and after one interval whatever the count says, so the
// visitors who gave up, whose count lingers for the waiting window, hold
// nobody for long.
// The interval is the short one of the visitors near the front (see
// RefreshInterval) once the bucket has been near for long enough that all
// its visitors were given it.
//
// The interval runs from when the bucket was last seen becoming covered,
// not when it first was: a bucket that was covered, then not (the minute
// turned and its coverage with it, or the active limit's slots went
// elsewhere), turned its visitors away meanwhile, and those come back up
// to one interval after that; so does a visitor who joined the bucket after
// it was covered (the current minute's bucket grows, and counts from other
// nodes arrive). Timing the hold from the first coverage let newer
// buckets in while those visitors waited for their next check-in: with
// 1-minute sessions at 1.5 × the per-minute limit over three nodes, where
// the active limit's slots open one by one, 4.6% of admissions in the
// policy's ring model and 9% at the origin with three real processes.
//
// Covered "as it stands" means by the open slots: a bucket this chain keeps
// covered only because coverage sticks for the minute (see reserve; last is
// past byOpen, the index of the newest bucket the open slots cover) counts
// as not covered yet, and its interval starts when the open slots cover it
// again. Stickiness is this node's alone: the others, which never saw the
// slots cover it, treat it as the partial bucket, whose pool of a slot or
// two at the minute's end their shares round to nothing, and turn its
// visitors away at every check-in. Timed from the first coverage instead,
// the node counted those check-ins as had, did not hold at the next minute's
// turn, and the ring let the next bucket's pool in at once while the last
// visitor of the older one waited for its next check-in (the simulator's
// clock-skew scenario: one such visitor, 181 inversions, 1.5% of
// admissions; none after).
func (a *Allocation) holdBack(sp *split, last, byOpen int) {
	if a.method == Random || a.strategy != Continuous {
		return
	}
	a.markNear(last)
	if len(a.buckets) == 0 {
		return
	}
	now := a.now.UnixNano()
	if a.chainStart {
		// The start of a chain (Allocate, or a node that just started)
		// cannot know since when the buckets it finds covered have been
		// so; it takes them as covered long ago, as the reference does,
		// and holds only for those it sees covered later.
		now = math.MinInt64
	}
	var next holds
	for i, b := range a.buckets[:last+1] {
		since := now
		s, n, ok := a.held.find(b.bucket)
		switch {
		case i > byOpen:
			// Covered only because coverage sticks: the interval starts
			// once the open slots cover it.
			since = a.now.UnixNano()
		case ok && b.n <= n:
			since = s
		}
		if !next.add(b.bucket, since, b.n) {
			break
		}
		// A bucket near the front for long enough has its visitors on the
		// short refresh interval (see RefreshInterval): their check-ins
		// come within it.
		cutoff := a.now.UnixNano() - (a.checkInOf(b.bucket) + a.lag).Nanoseconds()
		if !sp.hasHold && since > cutoff {
			sp.holdAfter, sp.hasHold = b.bucket, true
		}
	}
	a.held = next
}

// continuousSplit divides the pool as described under "Continuous" in the
// package doc: this node may make, within any span of one lag, at most its
// share of the pool as it stood at the start of that span.
func (a *Allocation) continuousSplit(snap *crdt.RoomSnapshot, elapsed time.Duration, pool, covered int64) split {
	var sp split
	sp.minute = snap.Minute
	// Pacing keeps a queue's check-ins from racing for the slots as the
	// minute turns; with nobody waiting there is no race, and a paced room
	// turned its visitors away while far below its limits (the real-process
	// random queue queued its first visitor with 8 of 60 active).
	a.reserve(&sp, a.openSlots(a.method == Random && a.waiting > 0), true)

	// k: this node's pool admissions within the last lag. Its own traffic is
	// taken as counted one lag ago, which every other node has seen.
	m, ok := a.marks.at(a.now.UnixNano() - a.lag.Nanoseconds())
	var k int64
	var ownCur, ownPrv float64
	if ok {
		k = pool - m.pool
		switch m.minute {
		case snap.Minute:
			ownCur, ownPrv = m.cur, m.prv
		case snap.Minute - 1:
			ownPrv = m.cur
		}
	} else {
		k = pool + a.led.baseK
	}
	if elapsed >= a.lag {
		ownPrv = ownTraffic(snap, snap.Minute-1, a.self) // final, and seen by all
	}

	var t trafficSums
	if a.drawShares(snap) {
		own := ownWaiting(snap, a.self)
		if ok {
			own = m.waiting
		}
		t = drawTraffic(snap.WaitingBy, a.self, own)
		a.shares(&sp, &t, true)
	} else {
		w := 1 - a.frac
		ls := [4]weighted{{snap.ArrivalsIn(snap.Minute - 1).ByReplica, w}, {snap.ArrivalsIn(snap.Minute).ByReplica, 1}}
		t = traffic(&ls, a.self)
		t.self = ownPrv*w + ownCur
		a.shares(&sp, &t, false)
	}

	v := float64(sp.pool + k) // the pool as it stood one lag ago, in this node's view
	anyEach := sp.anywhere / float64(sp.nodes)
	// The line holds the nodes with traffic in id order, each its share and
	// its Anywhere part, then the nodes nobody has heard from yet. Those
	// cannot know each other's places and take one by their id; two of them
	// may share a place, which can cost a slot.
	var lo float64
	if t.self > 0 {
		lo = t.before/t.denom + float64(t.rankBefore)*anyEach
	} else {
		free := max(1, sp.nodes-t.known)
		lo = t.others/t.denom + float64(t.known)*anyEach + float64(uint64(a.self)%uint64(free))*anyEach
	}
	lo = min(lo, 1)
	hi := min(lo+sp.share+anyEach, 1)
	// Systematic rounding: every node rounds its interval of the common line
	// with the same offset, so the rounded parts add up to at most v.
	total := roundedPart(a.roomName, v, lo, hi, a.now)
	sp.allowance = max(0, total-k)
	sp.burst = a.burstAllowance(snap, sp.pool, k, a.othersSince(snap, m, ok))
	sp.allowance = max(sp.allowance, sp.burst)
	sp.shareSlots = sp.share * float64(sp.pool)
	sp.anywhereSlots = sp.anywhere * float64(sp.pool)
	sp.poolCap = pool + sp.allowance
	sp.coveredCap = covered + sp.covered
	sp.poolAt = pool
	return sp
}

// burstAllowance is how many pool admissions this node may make within the
// current lag when nobody waits, share or not (see "Bursts" in the package
// doc), given the pool u it sees, its k pool admissions of the last lag and
// recent, the other nodes' admissions it heard of within the last lag.
func (a *Allocation) burstAllowance(snap *crdt.RoomSnapshot, u, k, recent int64) int64 {
	if a.waiting > 0 || u <= 0 || a.queuedNew(snap) || a.heldNew() {
		return 0
	}
	// Admissions per lag over the last sixty seconds, the whole room's and
	// this node's. With nobody waiting every visitor is admitted, so these
	// are the demand.
	w := 1 - a.frac
	prev, cur := snap.AdmittedIn(snap.Minute-1), snap.AdmittedIn(snap.Minute)
	perLag := a.lag.Minutes()
	all := (float64(prev.Total)*w + float64(cur.Total)) * perLag
	own := (float64(prev.Of(a.self))*w + float64(cur.Of(a.self))) * perLag
	b := math.Ceil(own+burstSigmas*math.Sqrt(own)) + 1
	// Leave what the other nodes are expected to take within the lag, which
	// this node hears of only after it: their pace over the last sixty
	// seconds, or what they were heard admitting within the last lag when
	// that is beyond what the sixty seconds explain (more than burstSigmas
	// standard deviations of a Poisson count above it): a flood. The sixty
	// seconds alone cannot tell a flood at every node from a burst at this
	// one: in a fresh room flooded at three nodes, each node saw the others
	// at a tenth of their real pace, took its burst near the end of the
	// pool, and the ring admitted 42 of 40 (the policy's ring model, gossip
	// as slow as the lag). Only beyond that bound, because what was heard
	// within one lag is a handful of admissions whose chance ups and downs
	// would otherwise turn bursts off at steady load: with 1-minute sessions
	// at 1.5 × the per-minute limit the ring model then queued its first
	// visitor at 0.90 of the limits instead of 0.975.
	others := all - own
	if r := float64(recent); r > others+burstSigmas*math.Sqrt(others) {
		others = r
	}
	return max(0, int64(math.Min(b, math.Floor(float64(u)-others)))-k)
}

// othersSince is how many admissions of the other nodes this node heard of
// since mark m (ok: there is one): their admissions of the current minute,
// and of the previous one when m was taken in it, counted then and now.
// Without a mark it is 0: the node has no record of what it heard when.
func (a *Allocation) othersSince(snap *crdt.RoomSnapshot, m mark, ok bool) int64 {
	if !ok {
		return 0
	}
	now := othersAdmitted(snap, snap.Minute, a.self)
	switch m.minute {
	case snap.Minute:
		return max(0, now-m.others)
	case snap.Minute - 1:
		return now + max(0, othersAdmitted(snap, snap.Minute-1, a.self)-m.others)
	}
	return 0
}

// othersAdmitted is the other nodes' admissions of minute m in snap.
func othersAdmitted(snap *crdt.RoomSnapshot, m int64, self crdt.ReplicaID) int64 {
	c := snap.AdmittedIn(m)
	return int64(c.Total) - int64(c.Of(self))
}

// queuedNew reports whether a node may have queued a new visitor that is
// not counted as waiting yet: it is counted at its proof, ProofRefresh
// after its first page, and reaches the others a lag later. Until then
// only the room's count of new visitors queued says that someone waits:
// any this minute, or in the last one while this one is younger than the
// proof and two lags.
func (a *Allocation) queuedNew(snap *crdt.RoomSnapshot) bool {
	if snap.QueuedIn(snap.Minute).Total > 0 {
		return true
	}
	young := a.frac*60 < (ProofRefresh*time.Second + 2*a.lag).Seconds()
	return young && snap.QueuedIn(snap.Minute-1).Total > 0
}

// heldNew reports whether this node held a visitor (see Held) within the
// last two lags: nobody held counts as waiting, nor as queued, so without it
// bursts stayed on while a flood was being held at every node, and the held
// visitors and the bursts of new ones, decided together on the next
// allocation, overshot (in the policy's ring model, a lone node cut off from
// four: 108 of 100 in a minute). Two lags: as long as a hold lasts.
func (a *Allocation) heldNew() bool {
	h := a.led.heldAt.Load()
	return h != 0 && a.now.UnixNano()-h < 2*a.lag.Nanoseconds()
}

// burstSigmas is how far beyond its expected admissions per lag, in
// standard deviations of a Poisson count, a node's burst allowance reaches.
const burstSigmas = 4

// referenceSplit is the reference's split of a minute (Random Queueing,
// Queueing Decisions, Durable Objects; see the package doc): this
// node's share of the traffic two minutes earlier, plus its part of the
// Anywhere slots, fixed for the minute.
func (a *Allocation) referenceSplit(snap *crdt.RoomSnapshot, pool, covered int64) split {
	var sp split
	sp.minute = snap.Minute
	a.reserve(&sp, a.openSlots(false), false)
	ls := [4]weighted{{snap.ArrivalsIn(snap.Minute - 2).ByReplica, 1}}
	t := traffic(&ls, a.self)
	a.shares(&sp, &t, false)
	u := float64(sp.pool)
	sp.shareSlots = t.self * u / t.denom
	sp.anywhereSlots = sp.anywhere * u
	// Floors (and one rounding of the Anywhere slots, as the reference's
	// 112.5 → 113) keep the nodes' quotas within the pool.
	perNodeAnywhere := math.Floor(math.Round(sp.anywhereSlots) / float64(sp.nodes))
	sp.allowance = int64(math.Floor(sp.shareSlots+1e-9) + perNodeAnywhere)
	sp.poolCap = pool + sp.allowance
	sp.coveredCap = covered + sp.covered
	return sp
}

// shares turns traffic into this node's share and the Anywhere part, as
// Queueing Decisions does: a node's share is its traffic over the larger of
// the total traffic and the per-minute limit; what the traffic does not claim
// is Anywhere, divided evenly between the nodes. Shared by where the
// visitors wait (drawShares), the waiting claim the whole pool: nobody new
// goes in while anybody waits, so a part for anywhere would be a part for
// nobody at the nodes with nobody waiting.
func (a *Allocation) shares(sp *split, t *trafficSums, byWaiting bool) {
	sp.nodes = a.room.Nodes
	if a.cut {
		// The snapshot holds the reachable part only: share among it.
		sp.nodes = a.room.Side.Nodes
	}
	if sp.nodes <= 0 {
		sp.nodes = t.known + 1
	}
	x := t.self + t.others
	t.denom = max(x, float64(max(a.partOf(int64(a.room.NewUsersPerMinute)), 1)))
	if byWaiting {
		t.denom = max(x, 1)
	}
	sp.share = t.self / t.denom
	sp.anywhere = max(0, 1-x/t.denom)
}

type weighted struct {
	c []crdt.Count
	w float64
}

// trafficSums is what a node knows of the traffic per node.
type trafficSums struct {
	self       float64 // this node's traffic
	others     float64 // every other node's
	before     float64 // the traffic of nodes ordered before this one
	rankBefore int     // how many known nodes are ordered before this one
	known      int     // other nodes with traffic
	denom      float64
}

// other counts x of another node's traffic, ordered before this node's
// when before.
func (t *trafficSums) other(x float64, before bool) {
	t.others += x
	t.known++
	if before {
		t.before += x
		t.rankBefore++
	}
}

// traffic sums weighted per-replica lists (sorted by replica, as the crdt
// keeps them) in one merge pass.
func traffic(ls *[4]weighted, self crdt.ReplicaID) trafficSums {
	var t trafficSums
	var idx [4]int
	for {
		var r crdt.ReplicaID
		found := false
		for i := range ls {
			if idx[i] < len(ls[i].c) && (!found || ls[i].c[idx[i]].Replica < r) {
				r, found = ls[i].c[idx[i]].Replica, true
			}
		}
		if !found {
			break
		}
		var x float64
		for i := range ls {
			if idx[i] < len(ls[i].c) && ls[i].c[idx[i]].Replica == r {
				x += ls[i].w * float64(ls[i].c[idx[i]].N)
				idx[i]++
			}
		}
		if r == self {
			t.self += x
			continue
		}
		t.other(x, r < self)
	}
	t.denom = 1
	return t
}

// drawWeight is the claim on the pool of a node where waiting visitors
// wait. Each of them checks in about once a RefreshBase, and a node can
// give a slot only to a visitor who checks in while the slot is its own (a
// RoundingWindow of the systematic rounding, after which the slot is
// another node's): a node holding the slot for a window gives it away with
// the chance 1 − exp(−waiting·window/RefreshBase) that one of its visitors
// checks in meanwhile. Weighted by that chance's inverse, every waiting
// visitor has the same chance a window, wherever it waits: a node of a few
// visitors holds the slot about as often as any other with some (most of
// its windows pass without a check-in), one of many about in proportion
// to them (nearly every window of its has one). Weighted by the visitors
// alone, the node of many took its slot in nearly every window of its and
// the others' slots in the windows they passed: in the real-process random
// queue with one node getting four times the traffic of each other, its
// waiting visitors had 1.19 times the ring's chance a second and the
// others' 0.72 and 0.82; weighted so, 1.02, 0.92 and 1.00.
func drawWeight(waiting float64) float64 {
	if !(waiting > 0) {
		return 0
	}
	x := waiting * RoundingWindow.Seconds() / RefreshBase
	return waiting / -math.Expm1(-x)
}

// drawTraffic is trafficSums for drawShares: each node's drawWeight of its
// waiting visitors (waitingBy, sorted by replica), own those of node self.
func drawTraffic(waitingBy []crdt.ReplicaPart, self crdt.ReplicaID, own float64) trafficSums {
	t := trafficSums{self: drawWeight(own), denom: 1}
	for _, c := range waitingBy {
		if c.Replica == self {
			continue
		}
		t.other(drawWeight(c.N), c.Replica < self)
	}
	return t
}

// drawShares reports whether the pool is shared by where the visitors wait
// rather than by traffic: under random queueing, while anybody waits,
// every waiting visitor is in the draw, and a node's share of the slots is
// its share of those waiting (crdt.RoomSnapshot.WaitingBy), so that every
// one of them has the same chance wherever it waits, as in one lottery of
// the whole ring. Shared by traffic instead, the visitors browsing a node
// counted as much as those waiting there: the node that had let more in
// drew more, and the more it let in the more it drew. In the real-process
// random queue with one node getting four times the traffic of each other,
// the busy node's waiting visitors had 1.26 times the ring's chance a
// second and the others' 0.82 and 0.66 (mean waits 77, 118 and 148 s), and
// the last one at a small node was turned away at every check-in for the
// last four minutes of the run while the room had free slots, its node's
// share of the traffic rounding to nothing.
func (a *Allocation) drawShares(snap *crdt.RoomSnapshot) bool {
	return a.method == Random && a.waiting > 0 && len(snap.WaitingBy) > 0
}

// ownWaiting is how many of the waiting visitors the snapshot counts at
// node self (crdt.RoomSnapshot.WaitingBy).
func ownWaiting(snap *crdt.RoomSnapshot, self crdt.ReplicaID) float64 {
	for _, c := range snap.WaitingBy {
		if c.Replica == self {
			return c.N
		}
	}
	return 0
}

// ownTraffic is the traffic a node counts for itself in minute m: its
// arrivals, which the edge counts as the distinct visitors the node saw in
// the minute, queued check-ins and admitted visitors included. (Adding the
// admissions would count every admitted visitor twice.)
func ownTraffic(snap *crdt.RoomSnapshot, m int64, self crdt.ReplicaID) float64 {
	return float64(snap.ArrivalsIn(m).Of(self))
}

// admissionRate is the admissions per minute of the last five full minutes,
// averaged over those since the first one with any admission (a surge that
// began two minutes ago has a rate of two minutes, not of five), less that
// first one where admissions began within it (see begunWithin). The current
// minute is left out: admissions come in bursts at the start of a minute
// when the per-minute limit binds, so a part of it says little about the
// whole. Without a full minute of admissions the rate is what the current
// minute has admitted so far.
func admissionRate(snap *crdt.RoomSnapshot) float64 {
	var sum float64
	n := 0
	for m := snap.Minute - 5; m < snap.Minute; m++ {
		c := snap.AdmittedIn(m).Total
		if n == 0 && (c == 0 || begunWithin(snap, m)) {
			continue
		}
		sum += float64(c)
		n++
	}
	if n == 0 {
		return float64(snap.AdmittedIn(snap.Minute).Total)
	}
	return sum / float64(n)
}

// begunWithin reports whether admissions began within full minute m, the
// first with any: none in the minute before, and fewer than half the next
// full minute's. Such a minute holds the seconds since the room first
// queued, not a minute's admissions: a room that began queueing at :57 let
// in 4 in it and 39 in the next, and a rate of their average told the
// visitors of the first five minutes waits 1.6 times too long.
func begunWithin(snap *crdt.RoomSnapshot, m int64) bool {
	return m+1 < snap.Minute && snap.AdmittedIn(m-1).Total == 0 &&
		2*snap.AdmittedIn(m).Total < snap.AdmittedIn(m+1).Total
}

// referenceRate is the admission rate as the reference strategy reads it:
// the average of the last five minutes, the current one in part.
func referenceRate(snap *crdt.RoomSnapshot, frac float64) float64 {
	var sum float64
	for m := snap.Minute - 4; m <= snap.Minute; m++ {
		sum += float64(snap.AdmittedIn(m).Total)
	}
	sum += (1 - frac) * float64(snap.AdmittedIn(snap.Minute-5).Total)
	return sum / 5
}

// tidy drops floating-point dust, so that 0.4 × 500 is 200 and not a hair
// below it, which the rounding above would turn into 199.
func tidy(x float64) float64 { return math.Round(x*1e9) / 1e9 }

// unitHash maps (s, x) to [0, 1) so that every node draws the same offset
// for the same room and rounding window.
func unitHash(s string, x int64) float64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	for i := 0; i < 8; i++ {
		h = (h ^ uint64(byte(x>>(8*i)))) * 1099511628211
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	return float64(h>>11) / (1 << 53)
}
