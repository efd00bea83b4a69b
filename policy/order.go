package policy

import (
	"math"
	"slices"
	"sort"

	"github.com/waitroom/waitroom/crdt"
)

// The order inside a bucket. A bucket holds everyone who came in one
// minute, thousands at a time in a busy room, and its slots open over
// several check-ins; who of them checks in first once they open is chance.
// The token records when inside the minute each visitor came
// (Counting.Arrived) and the ring counts the visitors who joined each
// bucket's queue per third of a minute (crdt.QueuedAt), so a node can tell
// how many of those still waiting in a bucket came before a given visitor,
// and let the earlier ones in first.
//
// The slot counts are of everyone who joined the bucket's queue, those
// admitted since included, and of those of them who left the slot's line
// (crdt.LeftAt): let in, turned away, held or moved to a later bucket. A
// slot still holds what joined it less what left it. The rest of the
// bucket's gone, those who stopped coming back and whose count lapsed,
// are taken to be its earliest: the order is kept, so the ones gone came
// first (slotWaiting).

// slotsPerBucket is how many arrival slots a minute bucket has.
const slotsPerBucket = 60 / crdt.ArrivalSlotSeconds

// slotLines is the ring's counts of the order inside its waiting buckets,
// as a snapshot lists them: who joined each arrival slot's line
// (crdt.QueuedAt) and who of them left it since (crdt.LeftAt).
type slotLines struct{ joined, left []crdt.SlotCount }

// keepLines copies the snapshot's slot counts for one that outlives it.
func keepLines(snap *crdt.RoomSnapshot) slotLines {
	return slotLines{slices.Clone(snap.Arrived), slices.Clone(snap.Left)}
}

// of returns how many joined each arrival slot of bucket, which has n
// waiting, how many of them left its line, how many are taken to wait
// still (slotWaiting), and whether the ring counted the bucket's slots.
func (l slotLines) of(bucket, n int64) (joined, left, waiting [slotsPerBucket]int64, known bool) {
	joined, known = inSlots(l.joined, bucket)
	left, _ = inSlots(l.left, bucket)
	return joined, left, slotWaiting(joined, left, n), known
}

// joinedIn is how many joined the line of the slot that begins at unix
// second start, 0 where the snapshot did not list it.
func (l slotLines) joinedIn(start int64) int64 { return slotAt(l.joined, start).N }

// leftBy is the count of those who left the line of the slot that begins
// at unix second start, replica by replica, where the snapshot listed it.
func (l slotLines) leftBy(start int64) []crdt.Count { return slotAt(l.left, start).ByReplica }

// slotAt is the count of the slot that begins at unix second start in
// slots (sorted, as a snapshot lists them); zero where it is not listed.
func slotAt(slots []crdt.SlotCount, start int64) crdt.SlotCount {
	i := sort.Search(len(slots), func(i int) bool { return slots[i].Second >= start })
	if i == len(slots) || slots[i].Second != start {
		return crdt.SlotCount{}
	}
	return slots[i]
}

// inSlots returns the counts of slots (sorted, as a snapshot lists them)
// for each arrival slot of bucket, and whether any is listed.
func inSlots(slots []crdt.SlotCount, bucket int64) ([slotsPerBucket]int64, bool) {
	var arrived [slotsPerBucket]int64
	i := sort.Search(len(slots), func(i int) bool { return slots[i].Bucket() >= bucket })
	known := false
	for ; i < len(slots) && slots[i].Bucket() == bucket; i++ {
		arrived[(slots[i].Second-bucket*60)/crdt.ArrivalSlotSeconds] += slots[i].N
		known = true
	}
	return arrived, known
}

// slotsOf returns the estimated number still waiting in each arrival slot
// of bucket, which has n waiting, and whether the ring counted its slots.
func (a *Allocation) slotsOf(bucket, n int64) ([slotsPerBucket]int64, bool) {
	_, _, w, known := a.lines.of(bucket, n)
	return w, known
}

// slotWaiting spreads the n still waiting in a bucket over its slots, of
// which joined joined each and left left: a slot holds those who joined it
// and did not leave, and the bucket's other gone (all those but n) are
// taken from the earliest slots first. With fewer in the slots than wait
// (counts not all heard yet), the latest slot holds the rest.
func slotWaiting(joined, left [slotsPerBucket]int64, n int64) [slotsPerBucket]int64 {
	var w [slotsPerBucket]int64
	var total int64
	for j := range joined {
		w[j] = max(joined[j]-left[j], 0)
		total += w[j]
	}
	gone := max(total-n, 0)
	for j := range w {
		take := min(gone, w[j])
		gone -= take
		w[j] -= take
	}
	w[slotsPerBucket-1] += max(n-total, 0)
	return w
}

// slotIndex is the arrival slot of a visitor who came arrived tenths of a
// second into its minute.
func slotIndex(arrived uint16) int {
	return int(min(int64(arrived)/10, 59) / crdt.ArrivalSlotSeconds)
}

// intoSlot is how far into its arrival slot, 0..1, a visitor who came
// arrived tenths of a second into its minute came.
func intoSlot(arrived uint16) float64 {
	s := slotIndex(arrived)
	return (float64(arrived)/10 - float64(s*crdt.ArrivalSlotSeconds)) / crdt.ArrivalSlotSeconds
}

// orderFrontier fills sp's last slot of the frontier bucket that the pool
// reaches, so that visitors of later slots wait while earlier ones may still
// check in (see inOrder).
//
// Under the continuous strategy the order goes down to the visitor where
// the node saw the last slot fill: of its visitors, only those whose place
// in it (rankInSlot) the pool reaches may take a pool slot, and new
// visitors wait behind the bucket even in the current minute. A slot's
// visitors were once let in in whatever order their check-ins fell, which
// put a visitor's true place anywhere within its slot: a third of a
// minute of arrivals, where a place in line a tenth off is two or three
// people. The slots go by the nodes' shares of the pool as before, so the
// limits hold as they did whoever checks in; the order only says who may.
// Without the slot's fill, an earlier minute's bucket is ordered by slot,
// the current minute's not at all, and its new visitors compete with it.
func (a *Allocation) orderFrontier(sp *split) {
	sp.lastSlot = slotsPerBucket - 1
	if a.method != FIFO || a.strategy != Continuous || !sp.hasFrontier {
		return
	}
	i := sort.Search(len(a.buckets), func(i int) bool { return a.buckets[i].bucket >= sp.frontier })
	if i == len(a.buckets) || a.buckets[i].bucket != sp.frontier {
		return
	}
	w, known := a.slotsOf(sp.frontier, a.buckets[i].n)
	if !known {
		return
	}
	var before int64
	last := slotsPerBucket - 1
	for j := range slotsPerBucket {
		if before+w[j] >= sp.pool && w[j] > 0 {
			last = j
			break
		}
		before += w[j]
	}
	if !a.arr.follows(sp.frontier*60 + int64(last*crdt.ArrivalSlotSeconds)) {
		if sp.frontier < a.minute {
			sp.lastSlot = last
		}
		return
	}
	sp.fine, sp.lastSlot, sp.reach = true, last, float64(sp.pool-before)
}

// heard is how much later than its own a node may hear another node's
// counts, in milliseconds: half the lag the room assumes (twice the gossip
// delay, see Room.Lag).
func (a *Allocation) heard() int32 { return int32(a.lag.Milliseconds() / 2) }

// inOrder reports whether a visitor of the frontier bucket may take a pool
// slot: it came in a slot the pool reaches.
func (a *Allocation) inOrder(v Visitor) bool {
	return slotIndex(v.Arrived) <= a.sp.lastSlot
}

// reached reports whether a queued visitor of the frontier bucket may take
// a pool slot when the order goes down to the visitor (see orderFrontier):
// it came in an earlier slot than the last the pool reaches, or in that one
// with a place the pool reaches, or none of this node's own visitors who
// came before it in the bucket still waits (ownFirst). Another node's
// visitor who came up to a gossip delay earlier shows in this node's
// counts after it, so the place is taken as if those shown within that
// much after it came after it: of two who came within a gossip delay at
// different nodes, either may go first.
//
// The pool's slots go by the nodes' shares, and a lone slot is one node's
// for a second at a time (see roundedPart), so the place alone would hold a
// node's slot for visitors who wait at another node, which has no slot to
// give them then: the slot stayed free while those this node could let in
// waited. With 1-minute sessions at twice the per-minute limit, the first
// node taking four times the traffic of each other, three real processes
// left a slot free for 20 to 30 s from a minute's start (a refresh interval
// is 23 s at most) while the first in line, at a node of a sixth of the
// traffic, checked in every few seconds and found its node's share empty.
// So a node gives its slot to the first of its own in the line: the order
// holds among each node's visitors, and between nodes the slots go by
// their shares, as they did before the order went down to the visitor.
// The first of its own in the last slot's line only, a node whose waiting
// visitors of the bucket all came after that slot kept its share for
// nobody: at the first minute's turn of a fresh room the pool's last slot
// went from node to node for 27 to 37 s while the one visitor it reached
// checked in at its own node in the seconds that were another's (three
// real processes, regional-4-1-1 and clock-skew; 27.2 s in the policy's
// ring model, 15.8 s with the first of the bucket's line). Nobody of an
// earlier minute is passed so: the frontier is the oldest bucket the pool
// reaches.
func (a *Allocation) reached(v Visitor) bool {
	s := slotIndex(v.Arrived)
	switch {
	case s < a.sp.lastSlot:
		return true
	case s == a.sp.lastSlot && a.rankInSlot(v.Bucket, v.Arrived, true, -a.heard(), false) < a.sp.reach:
		return true
	}
	return a.ownFirst(v.Bucket, v.Arrived)
}

// ownFirst reports whether none of the node's own visitors who came before
// one of bucket who came arrived tenths of a second into its minute still
// waits, as far as the node saw its bucket's slots fill: false where a slot
// before it counts visitors whose arrivals the node did not follow.
func (a *Allocation) ownFirst(bucket int64, arrived uint16) bool {
	s := slotIndex(arrived)
	joined, _, _, _ := a.lines.of(bucket, 0)
	for j := 0; j <= s; j++ {
		start := bucket*60 + int64(j*crdt.ArrivalSlotSeconds)
		ms := int32(crdt.ArrivalSlotSeconds * 1000) // the whole slot
		if j == s {
			ms = int32(arrived)*100 - int32(s*crdt.ArrivalSlotSeconds)*1000
		}
		ahead, ok := a.arr.ownAhead(start, ms)
		switch {
		case !ok && (j == s || joined[j] > 0):
			return false
		case ahead > 0:
			return false
		}
	}
	return true
}

// Position is the number of visitors ahead of one of bucket who came
// arrived tenths of a second into its minute, under FIFO: everyone waiting
// in older buckets and those of its own bucket who came before it and still
// wait. known is false where no position exists: random queueing, where
// nobody is ahead of anyone, and a room that does not decide (queue_all,
// suspended, passthrough, reject).
func (a *Allocation) Position(bucket int64, arrived uint16) (n int64, known bool) {
	if a.mode != modeDecide || a.method != FIFO {
		return 0, false
	}
	// The node's own visitors let out of the line since the allocation
	// are no longer ahead, though its snapshot still counts them: a
	// visitor whose page came 30 ms after the node let in the one before
	// it was told it had one ahead, nobody being (three real processes,
	// node-restart).
	p := a.positionAt(bucket, arrived) - a.led.proofs.leftBefore(cameAt(bucket, arrived))
	// A half rounds down: two of one tenth of a second with nobody ahead
	// are each placed half a place back (see waitingBefore), and either
	// may be let in first, so both are next. Rounded up, the first in line
	// was told one ahead (three real processes, regional-4-1-1).
	return int64(math.Ceil(max(p, 0) - 0.5)), true
}

// positionAt is Position before rounding. Inside the visitor's slot those
// ahead are those of its slot who came before it and still wait
// (waitingBefore: the node's own it let out of the line known, the others'
// gone taken to be the earliest of the others'); where the node did not
// see the slot fill, the share of the slot that had come by its arrival,
// of the part of the slot that had come by now (all of it, for a slot
// over). Either way at most the others of its slot still waiting.
//
// While part of the ring is cut off, those waiting at the nodes it cannot
// reach who came before the visitor are ahead too (Elsewhere).
func (a *Allocation) positionAt(bucket int64, arrived uint16) float64 {
	return a.placeHere(bucket, arrived) + a.room.Side.Waiting.ahead(bucket, arrived, a.lines, a.arr)
}

// placeHere is positionAt among the visitors of the nodes this one reaches.
func (a *Allocation) placeHere(bucket int64, arrived uint16) float64 {
	i := sort.Search(len(a.buckets), func(i int) bool { return a.buckets[i].bucket >= bucket })
	if i == len(a.buckets) {
		return float64(a.waiting)
	}
	ahead := float64(a.buckets[i].before)
	b := a.buckets[i]
	if b.bucket != bucket {
		return ahead
	}
	s := slotIndex(arrived)
	_, _, w, known := a.lines.of(bucket, b.n)
	if !known {
		// Without the slot counts, the bucket as if spread evenly over
		// the part of its minute the ring has counted.
		return ahead + float64(b.n)*shareBefore(float64(arrived)/600, a.countedIn(bucket*60, 60))
	}
	for j := range s {
		ahead += float64(w[j])
	}
	return ahead + a.inSlot(bucket, arrived)
}

// inSlot is the number of those still waiting in a visitor's arrival slot
// who came before it: see positionAt. Once the visitor is counted itself it
// is one of those waiting, and the others are at most one fewer.
func (a *Allocation) inSlot(bucket int64, arrived uint16) float64 {
	return a.rankInSlot(bucket, arrived, a.counts(bucket, arrived), 0, true)
}

// rankInSlot is the number of those still waiting in a visitor's arrival
// slot who came before it, self saying whether the visitor is counted
// itself: those of its slot who came before it and still wait
// (waitingBefore); where the node did not see the slot fill, the share of
// the slot that had come by the visitor's arrival, of the part of the slot
// that had come by now (all of it, for a slot over). shift reads the other
// nodes' counts that many milliseconds later, for those heard late (see
// reached). byReplica takes each other node's gone from its own earliest
// (see othersGone) rather than from the earliest of all the others: the
// place shown is the truer for it, but the order of admissions keeps the
// coarser rank, since with it a node reached its own second in line less
// often and held a slot for a visitor at a node with none to give (the
// three-node ring of 1-minute sessions: a slot free 16 s instead of 14 s
// at most, inversions none either way).
func (a *Allocation) rankInSlot(bucket int64, arrived uint16, self bool, shift int32, byReplica bool) float64 {
	s := slotIndex(arrived)
	var n int64
	if i := sort.Search(len(a.buckets), func(i int) bool { return a.buckets[i].bucket >= bucket }); i < len(a.buckets) && a.buckets[i].bucket == bucket {
		n = a.buckets[i].n
	}
	x, l, w, _ := a.lines.of(bucket, n)
	joined, left, waiting := x[s], min(l[s], x[s]), w[s]
	start := bucket*60 + int64(s*crdt.ArrivalSlotSeconds)
	ms := int32(arrived)*100 - int32(s*crdt.ArrivalSlotSeconds)*1000
	others := float64(waiting)
	if self {
		others = float64(max(waiting-1, 0))
	}
	var leftBy []crdt.Count
	var away []crdt.ReplicaID
	if byReplica {
		leftBy, away = a.lines.leftBy(start), a.room.Side.Waiting.unreachable()
	}
	if r, ok := a.arr.waitingBefore(start, ms, self, shift, left, max(joined-left-waiting, 0), leftBy, away); ok {
		return min(r, others)
	}
	return min(float64(waiting)*shareBefore(intoSlot(arrived), a.countedIn(start, crdt.ArrivalSlotSeconds)), others)
}

// counts reports whether the allocation counts a visitor of bucket who came
// arrived tenths of a second into it: whether its proof, which comes
// ProofRefresh after its first request and is counted at the next
// allocation, can have come by the allocation's time. A visitor is shown
// its proof's page on the allocation before.
func (a *Allocation) counts(bucket int64, arrived uint16) bool {
	came := cameAt(bucket, arrived)
	return a.now.UnixMilli() > came+ProofGrace*1000
}

// newcomerPosition is the place in line of a new visitor at its first
// answer: behind everyone counted as waiting (at the nodes a cut ring
// cannot reach too), and behind the new visitors of the last proof
// interval who will be counted once their cookie is back (see
// arrivalCurves.unproved).
func (a *Allocation) newcomerPosition() float64 {
	return float64(a.waiting) + float64(a.room.Side.Waiting.stillWaitingAll(a.lines)) + a.arr.unproved()
}

// ahead is how many of those waiting elsewhere came before a visitor of
// bucket who came arrived tenths of a second into its minute: everyone of
// the older buckets, and of its own the earlier slots' and the share of
// its slot that came before it (the slots as last heard, their gone taken
// left as at the node's own: slotWaiting), less those the nodes this one
// reaches let out of the line since (see stillWaiting); inside its slot,
// as the unreachable nodes' curves of the slot tell (inSlot). 0 for nil.
func (e *Elsewhere) ahead(bucket int64, arrived uint16, here slotLines, arr *arrivalCurves) float64 {
	if e == nil {
		return 0
	}
	var n float64
	for _, b := range e.waiting {
		switch {
		case b.Bucket < bucket:
			n += float64(e.stillWaiting(b, here))
		case b.Bucket == bucket:
			w, known := e.slotsStillWaiting(b, here)
			if !known {
				return n + float64(bucketStillWaiting(b, here))*shareBefore(float64(arrived)/600, 1)
			}
			s := slotIndex(arrived)
			for j := range s {
				n += float64(w[j])
			}
			start := bucket*60 + int64(s*crdt.ArrivalSlotSeconds)
			ms := int32(arrived)*100 - int32(s*crdt.ArrivalSlotSeconds)*1000
			return n + e.inSlot(start, ms, w[s], intoSlot(arrived), arr)
		}
	}
	return n
}

// inSlot is how many of the waiting of the slot that begins at start who
// wait elsewhere, as last heard, came before a visitor who came ms into it
// (into of the way through): as each unreachable replica's own curve of the
// slot tells, which the node followed before the cut, less that replica's
// gone, its earliest (see othersGone). Where the node did not follow every
// one of them, the share of the slot that had come by then. Taken by the
// share, a visitor late in its slot had the killed node's visitors who
// came after it, in the same slot, counted ahead: the first in line at a
// survivor was told 2 with nobody ahead (three real processes,
// node-restart).
func (e *Elsewhere) inSlot(start int64, ms int32, waiting int64, into float64, arr *arrivalCurves) float64 {
	share := float64(waiting) * shareBefore(into, 1)
	cv := arr.slot(start)
	if waiting <= 0 || cv == nil || cv.partial || cv.noReplicas {
		return share
	}
	leftBy := e.lines.leftBy(start)
	var followed int64
	var ahead float64
	for _, id := range e.replicas {
		rc := cv.replica(id)
		if rc == nil {
			continue
		}
		followed += int64(rc.last())
		ahead += max(rc.before(ms, false)-float64(countOf(leftBy, id)), 0)
	}
	if followed < e.lines.joinedIn(start) {
		return share
	}
	return min(ahead, float64(waiting))
}

// countOf is replica id's count in counts, 0 where it has none.
func countOf(counts []crdt.Count, id crdt.ReplicaID) uint64 {
	for _, c := range counts {
		if c.Replica == id {
			return c.N
		}
	}
	return 0
}

// stillWaiting is how many of bucket b's visitors waiting elsewhere, as last
// heard, still wait: less, slot by slot, those the nodes this one reaches
// let out of a slot's line beyond all who joined it there (here). Those can
// only be visitors who joined at the unreachable nodes and went elsewhere
// while their own was down: counted still waiting, they kept the first in
// line at a survivor of a killed node told one ahead (three real processes,
// node-restart). Where some who joined here still wait, the ones gone
// elsewhere are not told apart from them, and are counted as before.
func (e *Elsewhere) stillWaiting(b crdt.BucketCount, here slotLines) int64 {
	if w, known := e.slotsStillWaiting(b, here); known {
		var n int64
		for _, x := range w {
			n += x
		}
		return n
	}
	return bucketStillWaiting(b, here)
}

// bucketStillWaiting is stillWaiting where the slots elsewhere were not
// heard: the bucket's count less the reachable nodes' gone beyond those
// who joined there, slot by slot.
func bucketStillWaiting(b crdt.BucketCount, here slotLines) int64 {
	joined, left, _, _ := here.of(b.Bucket, 0)
	n := b.N
	for j := range joined {
		n -= max(left[j]-joined[j], 0)
	}
	return max(n, 0)
}

// slotsStillWaiting is bucket b's visitors still waiting elsewhere slot by
// slot (see stillWaiting), and whether the slots were last heard.
func (e *Elsewhere) slotsStillWaiting(b crdt.BucketCount, here slotLines) (w [slotsPerBucket]int64, known bool) {
	_, _, w, known = e.lines.of(b.Bucket, b.N)
	if !known {
		return w, false
	}
	joined, left, _, _ := here.of(b.Bucket, 0)
	for j := range w {
		w[j] = max(w[j]-max(left[j]-joined[j], 0), 0)
	}
	return w, true
}

// unreachable are the unreachable replicas (see Elsewhere); nil for nil.
func (e *Elsewhere) unreachable() []crdt.ReplicaID {
	if e == nil {
		return nil
	}
	return e.replicas
}

// Total is how many wait elsewhere, as last heard; 0 for nil.
func (e *Elsewhere) Total() int64 {
	if e == nil {
		return 0
	}
	var n int64
	for _, b := range e.waiting {
		n += b.N
	}
	return n
}

// stillWaitingAll is Total less those the nodes this one reaches let out of
// the line since (see stillWaiting); 0 for nil.
func (e *Elsewhere) stillWaitingAll(here slotLines) int64 {
	if e == nil {
		return 0
	}
	var n int64
	for _, b := range e.waiting {
		n += e.stillWaiting(b, here)
	}
	return n
}

// countedIn is the part of the span of width seconds from unix second
// start whose visitors the ring has counted, 0..1: up to ProofRefresh
// seconds ago, as a new visitor is counted only when its cookie comes back.
// Taking the counted visitors to be spread up to now instead placed a
// visitor at its proof, who came after every one of them, a tenth short of
// them all in the real-process flood.
func (a *Allocation) countedIn(start, width int64) float64 {
	counted := float64(a.now.UnixMilli())/1000 - ProofRefresh
	return min(max((counted-float64(start))/float64(width), 0), 1)
}

// shareBefore is the share of a span's visitors who came before one who
// came at part into it, when part elapsed of it has passed (and its
// visitors came evenly over it).
func shareBefore(into, elapsed float64) float64 {
	if elapsed <= 0 {
		return 0
	}
	return min(max(into/elapsed, 0), 1)
}
