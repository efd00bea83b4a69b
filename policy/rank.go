package policy

import (
	"cmp"
	"slices"
	"sort"
	"time"

	"github.com/waitroom/waitroom/crdt"
)

// The order inside an arrival slot. The ring counts a bucket's visitors per
// slot of twenty seconds (crdt.QueuedAt), not which of a slot's visitors
// came first; but a node sees the counts grow. A visitor is counted at its
// proof, ProofRefresh after its first request, so a slot's count as the
// node saw it at an instant is the number of its visitors who came up to
// ProofRefresh before that instant. Along its chain of allocations a node
// notes the count of every slot still filling whenever it grew
// (arrivalCurves), and a visitor's place in its slot is the count the node
// had seen by the time the visitor's proof came (waitingBefore): the
// visitors of its slot who came before it, to within one allocation's
// step, without a cell more in the ring's state.
//
// Counted twice over a slot (every twenty seconds a node's slots move on),
// a visitor one second after another of a busy slot was once placed by
// their share of the slot's twenty seconds: a visitor alone in line, at its
// proof, was the whole of its slot so far and was told it had one ahead of
// it; the first of two, twenty seconds later, was told one ahead, half of
// the two.

// curveTail is how long after its last visitor's proof could have come a
// slot's curve is still noted: proofs that come late (within ProofGrace)
// and other nodes' counts, which arrive a gossip delay after their proofs.
const curveTail = ProofGrace*time.Second + 2*time.Second

// curvePoint is one stretch of a slot's curve: its count grew to n between
// from and at, in milliseconds after the slot began (when the node looked,
// less ProofRefresh: the arrival instants of the visitors counted then).
type curvePoint struct {
	from, at, n int32
}

// curve is how a count grew, look by look. An allocation's curves are
// never changed once it holds them: a later allocation appends points only
// past the ones any allocation holds (tip), and copies them otherwise.
type curve struct {
	// seen is when the node last looked (as the points' at), the count
	// then being the last point's.
	seen int32
	pts  []curvePoint
	tip  *int // how many points the shared array holds
}

// replicaCurve is the curve of one other replica's count of a slot.
type replicaCurve struct {
	id crdt.ReplicaID
	curve
}

// slotCurve is the curve of one arrival slot: how its count grew, the
// others' together (curve) and replica by replica (by).
type slotCurve struct {
	start int64 // the unix second the slot begins
	// partial: the chain began after the slot had begun to fill, so the
	// first point's count came in at times unknown.
	partial bool
	curve
	// by are the curves of each other replica's count, sorted by replica,
	// where the snapshot listed them (crdt.Windows.SlotReplicas): whose
	// visitors came when, so that each replica's gone are taken from its
	// own earliest (waitingBefore). noReplicas: the slot was taken back
	// from places that kept none, so a replica's count first seen now
	// holds visitors who came at times unknown, and none is followed.
	by         []replicaCurve
	noReplicas bool
	// own are the arrivals, in milliseconds into the slot, of this node's
	// own visitors who joined it, sorted: the node knows them to the
	// tenth of a second (see proofLedger.joined). pts count the others'.
	// gone are those of them that left the line since: let in, turned
	// away or moved on (proofLedger.outOfLine), each one that joined here
	// (joinedHere).
	own, gone []int32
}

// arrivalCurves are the curves of the slots whose buckets still wait, in
// the order of their starts, the marks of the room's count of new visitors
// queued (see unproved) and the share of those who prove.
type arrivalCurves struct {
	slots  []slotCurve
	queued []queuedMark
	// proofRate is the share of the new visitors queued who came back
	// with their cookie, as last measured (1 until measured), and delays
	// the node's latest proofs' delays after their first answers, in
	// milliseconds, sorted.
	proofRate  float64
	delays     []int32
	proofMarks []proofMark
	// firsts are the node's own first answers that queued a new visitor,
	// over the last ProofGrace seconds, in the order their visitors came;
	// queued marks count the other nodes'.
	firsts   []firstAnswer
	lastLook int64 // unix milliseconds of this look
	// settle is when the room's count of new visitors queued may again be
	// read as new visitors (unix milliseconds; see noteArrivals).
	settle int64
	// heardMean is how much later than its own the node takes the
	// others' counts to come, on average, in milliseconds (see heard).
	heardMean int32
	self      crdt.ReplicaID // the node's own replica
}

// queuedMark is the room's count of new visitors queued (VisitorsQueued)
// as an allocation saw it, in the minute it was taken in and the one
// before.
type queuedMark struct {
	at        int64 // unix milliseconds
	minute    int64
	cur, prev uint64
}

// curveWindow is how long after a slot begins its curve is noted: its
// twenty seconds, the proof interval of its last visitors, and the tail
// for late proofs and other nodes' counts.
var curveWindow = (time.Duration(crdt.ArrivalSlotSeconds)*time.Second + ProofRefresh*time.Second + curveTail).Milliseconds()

// noteArrivals extends the chain's curves (prev, nil at a chain's start)
// with what the snapshot counts at now: a point for each slot still
// filling whose count grew, and a mark of the new visitors queued.
//
// resettle says that the replicas the snapshot sums may have changed since
// the last look: the chain starts (a node's state taken back from its data
// directory is stale until its peers' merges in), or the ring's members or
// the part of it this node reaches changed. The others' count of new
// visitors queued then jumps by visitors who came while they were not
// heard, and read as new visitors of the last seconds, it told the first
// visitor of a node that had just come back 193 ahead where there were 122,
// and one at a survivor 157 for 124 (three real processes, node-restart).
// For a proof interval after, only the count's growth from there on is read.
func noteArrivals(prev *arrivalCurves, snap *crdt.RoomSnapshot, led *ledger, self crdt.ReplicaID, oldest int64, now time.Time, lag time.Duration, resettle bool) *arrivalCurves {
	nowMs := now.UnixMilli()
	c := &arrivalCurves{lastLook: nowMs, heardMean: int32(lag.Milliseconds() / 4), self: self}
	var old []slotCurve
	if prev != nil {
		old = prev.slots
		c.settle = prev.settle
	}
	if resettle {
		c.settle = nowMs + ProofRefresh*1000
	}
	c.noteQueued(prev, snap, led, self, nowMs)
	i := 0
	for i < len(old) && old[i].start < oldest*60 {
		i++ // its bucket no longer waits: nobody is placed by it
	}
	kept := make([]slotCurve, len(old)-i, len(old)-i+2)
	copy(kept, old[i:])
	find := func(start int64, at int32) *slotCurve {
		j := sort.Search(len(kept), func(j int) bool { return kept[j].start >= start })
		if j == len(kept) || kept[j].start != start {
			kept = append(kept, slotCurve{})
			copy(kept[j+1:], kept[j:])
			kept[j] = slotCurve{start: start, partial: prev == nil, curve: curve{seen: at, tip: new(int)}}
			if prev != nil {
				// A slot not listed at the last look counted nobody then.
				kept[j].seen = min(at, int32(max(prev.lastLook-start*1000-ProofRefresh*1000, -ProofRefresh*1000)))
			}
		}
		return &kept[j]
	}
	// The node's own visitors who joined a slot are placed where they
	// came; the others as their counts are heard, less how long a proof
	// takes (the node's own tell) and how late the others' counts come.
	for _, o := range led.proofs.joined(nowMs) {
		if o.slot < oldest*60 {
			continue
		}
		cv := find(o.slot, int32(nowMs-o.slot*1000-ProofRefresh*1000))
		cv.addOwn(o.ms)
	}
	for _, o := range led.proofs.outOfLine(nowMs) {
		j := sort.Search(len(kept), func(j int) bool { return kept[j].start >= o.slot })
		if j < len(kept) && kept[j].start == o.slot && kept[j].joinedHere(o.ms) {
			kept[j].gone = insertSorted(kept[j].gone, o.ms)
		}
	}
	lead := int64(ProofRefresh*1000) + int64(c.heardMean)
	if n := len(c.delays); n > 0 {
		lead = int64(c.delays[n/2]) + int64(c.heardMean)
	}
	for _, sl := range snap.Arrived {
		since := nowMs - sl.Second*1000
		if sl.Second < oldest*60 || since < 0 || since > curveWindow {
			continue // no longer placed by, or not filling
		}
		cv := find(sl.Second, int32(since-lead))
		cv.growReplicas(sl.ByReplica, self, int32(since-lead))
		others := count32(uint64(max(sl.N-int64(len(cv.own)), 0)))
		cv.grow(others, int32(since-lead))
	}
	c.slots = kept
	return c
}

// addOwn places one of the node's own visitors, who came ms into the slot.
func (cv *slotCurve) addOwn(ms int32) { cv.own = insertSorted(cv.own, ms) }

// joinedHere reports whether one of the node's own visitors who came ms
// into the slot and has not left it yet joined it here. One who joined at
// another node (whose node went down, or before this node's chain began)
// and left through this one is the others' to count: taken as the node's
// own gone, the others' gone were one short, and the first in line at a
// restarted node was told one ahead, the one let in 2.5 s before counted
// still (three real processes, node-restart).
func (cv *slotCurve) joinedHere(ms int32) bool {
	at := func(xs []int32) int { return countBefore(xs, ms+1) - countBefore(xs, ms) }
	return at(cv.gone) < at(cv.own)
}

// insertSorted is xs, sorted, with ms in its place: a new slice, as
// allocations along the chain may hold xs.
func insertSorted(xs []int32, ms int32) []int32 {
	i := countBefore(xs, ms+1)
	out := make([]int32, 0, len(xs)+1)
	out = append(out, xs[:i]...)
	out = append(out, ms)
	return append(out, xs[i:]...)
}

// ownAhead is how many of the node's own visitors of the slot that begins
// at start came before one who came ms into it and still wait: joined and
// not let in by the node. ok is false where the node does not follow the
// slot.
func (c *arrivalCurves) ownAhead(start int64, ms int32) (n int, ok bool) {
	cv := c.slot(start)
	if cv == nil {
		return 0, false
	}
	return max(countBefore(cv.own, ms)-countBefore(cv.gone, ms), 0), true
}

// countBefore is how many of xs, sorted, are below ms.
func countBefore(xs []int32, ms int32) int {
	return sort.Search(len(xs), func(i int) bool { return xs[i] >= ms })
}

// growReplicas notes each other replica's count of the slot, counts
// sorted by replica, at a look at at: a new list of curves where one grew,
// as allocations along the chain may hold the old one.
func (cv *slotCurve) growReplicas(counts []crdt.Count, self crdt.ReplicaID, at int32) {
	if cv.noReplicas {
		return
	}
	grows := false
	for _, e := range counts {
		if e.Replica == self {
			continue
		}
		rc := cv.replica(e.Replica)
		if (rc == nil && len(cv.by) < maxReplicaCurves) || (rc != nil && rc.last() < count32(e.N)) {
			grows = true
			break
		}
	}
	if !grows {
		return
	}
	by := make([]replicaCurve, 0, min(len(cv.by)+len(counts), maxReplicaCurves))
	i, followed := 0, len(cv.by)
	for _, e := range counts {
		if e.Replica == self {
			continue
		}
		for i < len(cv.by) && cv.by[i].id < e.Replica {
			by = append(by, cv.by[i])
			i++
		}
		var rc replicaCurve
		switch {
		case i < len(cv.by) && cv.by[i].id == e.Replica:
			rc = cv.by[i]
			i++
		case followed < maxReplicaCurves:
			rc = replicaCurve{id: e.Replica, curve: curve{seen: cv.seen, tip: new(int)}}
			followed++
		default:
			continue // past the bound: its gone are the earliest of the others'
		}
		// Its growth came since the slot's last look, whether or not it
		// grew then: stretched back to the look where it last grew, a
		// replica's visitors of the last seconds were placed seconds
		// before they came.
		rc.seen = max(rc.seen, cv.seen)
		rc.grow(count32(e.N), at)
		by = append(by, rc)
	}
	cv.by = append(by, cv.by[i:]...)
}

// maxReplicaCurves bounds the other replicas a slot follows, the first it
// sees grow: in a ring of hundreds of data centers a curve for each in
// every waiting slot would come to 54,000 curves in an hour's queue of 300
// (TestCurvesOfARingOfDataCentersStayBounded). The gone of the replicas
// past it are taken as the earliest of the others', as before each
// replica's were followed.
const maxReplicaCurves = 32

// count32 is a replica's count as a curve holds it: at most 1<<30, far
// above any slot's visitors, so that sums of counts stay within int32.
func count32(n uint64) int32 { return int32(min(n, 1<<30)) }

// replica is the curve of replica id's count of the slot, nil where the
// node has none.
func (cv *slotCurve) replica(id crdt.ReplicaID) *replicaCurve {
	j := sort.Search(len(cv.by), func(j int) bool { return cv.by[j].id >= id })
	if j == len(cv.by) || cv.by[j].id != id {
		return nil
	}
	return &cv.by[j]
}

// last is the curve's count at its last look.
func (cv *curve) last() int32 {
	if k := len(cv.pts); k > 0 {
		return cv.pts[k-1].n
	}
	return 0
}

// grow notes the count n at a look at at.
func (cv *curve) grow(n, at int32) {
	if n > cv.last() {
		p := curvePoint{from: min(cv.seen, at), at: at, n: n}
		if len(cv.pts) == *cv.tip && len(cv.pts) < cap(cv.pts) {
			cv.pts = append(cv.pts, p) // in place, past every holder's points
		} else {
			pts := make([]curvePoint, len(cv.pts), 2*len(cv.pts)+2)
			copy(pts, cv.pts)
			cv.pts = append(pts, p)
			cv.tip = new(int)
		}
		*cv.tip = len(cv.pts)
	}
	cv.seen = max(cv.seen, at)
}

// follows reports whether the node saw the slot that begins at start fill
// from its first visitor on.
func (c *arrivalCurves) follows(start int64) bool {
	cv := c.slot(start)
	return cv != nil && !cv.partial
}

// slot is the curve of the slot that begins at start, nil where the node
// does not follow it.
func (c *arrivalCurves) slot(start int64) *slotCurve {
	if c == nil {
		return nil
	}
	j := sort.Search(len(c.slots), func(j int) bool { return c.slots[j].start >= start })
	if j == len(c.slots) || c.slots[j].start != start {
		return nil
	}
	return &c.slots[j]
}

// waitingBefore is how many visitors of the slot that begins at start came
// before one who came at ms milliseconds into it and still wait, slotLeft
// of the slot's visitors having left its line (crdt.LeftAt) and lapsed more
// being gone without a word: the visitor itself left out when self (it is
// counted already), and the others' counts read shift milliseconds later.
// ok is false where the node did not see them come: a chain that began
// after, or a slot it never followed.
//
// The node's own visitors are placed where they came, less those of them
// it let out of the line (gone, by when they came); the rest of slotLeft
// are the others'. Each node lets its own first in line in first (see
// reached), so each other replica's gone (leftBy, the slot's gone replica
// by replica) are taken to be its own earliest (othersGone): a later
// visitor at one node may go before an earlier one at another, and a
// lottery draws from anywhere in the slot. Taking every gone as the slot's
// earliest told the visitors of a room switched back from random queueing
// to FIFO fewer ahead than there were, the node's own draws among them.
// The lapsed, who stopped coming back at any node, this one's too, are
// still taken to be the slot's earliest. While the ring is cut off, the
// unreachable replicas' (away) are left to Elsewhere, which places them by
// their own curves: the slot's line here no longer counts their gone, and
// the first in line at a survivor of a killed node was told the visitors
// that node had let in before it died.
func (c *arrivalCurves) waitingBefore(start int64, ms int32, self bool, shift int32, slotLeft, lapsed int64, leftBy []crdt.Count, away []crdt.ReplicaID) (n float64, ok bool) {
	cv := c.slot(start)
	if cv == nil {
		return 0, false
	}
	own, left := countBefore(cv.own, ms), countBefore(cv.gone, ms)
	ahead := float64(max(own-left, 0))
	if tied := countBefore(cv.own, ms+1) - own; tied > 0 {
		// One of the node's own: it is not before itself. Those who came
		// in the same tenth of a second, which is all a token keeps, are
		// in an order nobody can tell: each is placed in their middle,
		// where it is on average. Counting none of them told four
		// visitors of one tenth that none was ahead, three of them
		// wrongly, and the slot's share after a restart told them two.
		self = false
		tiedLeft := countBefore(cv.gone, ms+1) - left
		ahead += float64(max(tied-1-tiedLeft, 0)) / 2
	}
	others, ok := cv.othersBefore(ms+shift, self)
	for _, id := range away {
		if rc := cv.replica(id); rc != nil {
			others = max(others-rc.before(ms+shift, false), 0)
		}
	}
	othersLeft := cv.othersGone(ms+shift, c.self, slotLeft, leftBy)
	return max(ahead+max(others-othersLeft, 0)-float64(lapsed), 0), ok
}

// othersGone is how many of the others' visitors who came before ms, as
// the node heard them, left the slot's line, slotLeft having left it in
// all, leftBy replica by replica (nil where the snapshot did not list
// them). Each other replica's gone are its earliest: of those it let out,
// the ones past its visitors who came before ms, as its own curve tells,
// came after ms, up to as many as came after ms there. The rest, those
// gone through a node they did not join (through this one, or through
// another while their own was down) and each replica's whose curve the
// node did not follow (a replica of this node before a restart among
// them), are taken to be the earliest of the others. Without that bound,
// the visitors of a restarted node let in at the others counted as those
// nodes' later visitors, and the first in line was told 2 ahead on two
// pages six seconds apart (three real processes, node-restart).
//
// Taken as the earliest of all the others, one node's let-ins made up for
// another's visitors still waiting: in three data centers of three nodes,
// the first in line at one node was told none ahead while another's
// earliest still waited (places within a tenth 95.9 % at best so, 99.8 %
// with each node's own earliest, the truth of a real-process run replayed).
func (cv *slotCurve) othersGone(ms int32, self crdt.ReplicaID, slotLeft int64, leftBy []crdt.Count) float64 {
	all := float64(max(slotLeft-int64(len(cv.gone)), 0))
	if len(leftBy) == 0 || cv.partial {
		return all
	}
	var after float64
	for _, e := range leftBy {
		if e.Replica == self {
			continue
		}
		if rc := cv.replica(e.Replica); rc != nil {
			// At most its visitors who came after ms: the rest of its
			// gone joined elsewhere (a node's visitors moved on while it
			// was down).
			before := rc.before(ms, false)
			after += min(max(float64(count32(e.N))-before, 0), max(float64(rc.last())-before, 0))
		}
	}
	return max(all-after, 0)
}

// othersBefore is how many of the others' visitors came before ms, as the
// node heard them, self one of them.
func (cv *slotCurve) othersBefore(ms int32, self bool) (float64, bool) {
	k := sort.Search(len(cv.pts), func(k int) bool { return cv.pts[k].at >= ms })
	if cv.partial && k == 0 && len(cv.pts) > 0 {
		return 0, false
	}
	return cv.before(ms, self), true
}

// before is how many of the count came before ms, as the node heard them,
// self one of them: the count at the last look before ms, and of the
// growth seen at the next the share of its stretch that had passed by ms.
func (cv *curve) before(ms int32, self bool) float64 {
	k := sort.Search(len(cv.pts), func(k int) bool { return cv.pts[k].at >= ms })
	before := int32(0)
	if k > 0 {
		before = cv.pts[k-1].n
	}
	if k == len(cv.pts) || ms <= cv.pts[k].from {
		return float64(before)
	}
	p := cv.pts[k]
	grew := float64(p.n - before)
	if self {
		grew = max(grew-1, 0)
	}
	return float64(before) + grew*float64(ms-p.from)/float64(p.at-p.from)
}

// maxQueuedMarks bounds the marks kept: an allocation comes
// AllocationFollow after the one before at the soonest.
const maxQueuedMarks = 128

// noteQueued marks the other nodes' count of new visitors queued at this
// look, keeping the marks of the last ProofGrace seconds and the newest
// before them, and takes the node's own first answers and proofs (see
// proof.go).
func (c *arrivalCurves) noteQueued(prev *arrivalCurves, snap *crdt.RoomSnapshot, led *ledger, self crdt.ReplicaID, nowMs int64) {
	others := func(m int64) uint64 {
		q := snap.QueuedIn(m)
		return q.Total - min(q.Of(self), q.Total)
	}
	m := queuedMark{at: nowMs, minute: snap.Minute, cur: others(snap.Minute), prev: others(snap.Minute - 1)}
	keep := nowMs - ProofGrace*1000
	if prev != nil {
		q := prev.queued
		i := sort.Search(len(q), func(i int) bool { return q[i].at >= keep })
		q = q[max(i-1, 0):]
		q = q[max(len(q)-maxQueuedMarks+1, 0):]
		c.queued = make([]queuedMark, len(q), len(q)+1)
		copy(c.queued, q)
		for _, f := range prev.firsts {
			if f.at >= keep {
				c.firsts = append(c.firsts, f)
			}
		}
	}
	if nowMs < c.settle {
		c.queued = c.queued[:0] // growth up to now is not new visitors
	}
	c.queued = append(c.queued, m)
	for _, f := range led.proofs.firstAnswers(nowMs) {
		if f.at >= keep {
			c.firsts = append(c.firsts, f)
		}
	}
	slices.SortStableFunc(c.firsts, func(a, b firstAnswer) int { return cmp.Compare(a.came, b.came) })
	for _, o := range led.proofs.proofsBy(nowMs) {
		// How long proofs take runs from the first answers, where the
		// node still has them: a visitor held for an allocation first
		// (see Allocation.Held) comes back as long after its answer as
		// any. Counted from their arrivals, a flood's first seven
		// visitors at one node, held 0.04 to 0.66 s and back 2.0 s
		// after their answers, made proofs seem to take up to 2.7 s:
		// first answers past the time proofs take were still counted
		// ahead of the next visitors, and that node, placing the
		// others' visitors by when their counts were heard less that,
		// took them to have come as much earlier, though the others,
		// reached later, had held none (three real processes,
		// fresh-flood: places within a tenth 87.4 and 90.6 % in two
		// runs, 92.9 and 93.4 % timed from the answers, side by side;
		// the first told 0 with nobody ahead 48 % of 29 pages in one,
		// 100 % timed so).
		d := o.at - o.came
		if i := c.firstOf(o.came); i >= 0 {
			d = o.at - c.firsts[i].at
			c.firsts = slices.Delete(c.firsts, i, i+1) // proved: no longer to prove
		}
		led.proofs.noteDelay(time.Duration(d) * time.Millisecond)
	}
	c.noteProofs(prev, led, nowMs)
}

// firstOf is the index in c.firsts of the first answer of a visitor who
// came at unix millisecond came, as its token keeps it; -1 for none.
func (c *arrivalCurves) firstOf(came int64) int {
	i := sort.Search(len(c.firsts), func(i int) bool { return c.firsts[i].came >= came })
	if i == len(c.firsts) || c.firsts[i].came != came {
		return -1
	}
	return i
}

// provedSince is how far the proofs the node counted since the allocation
// move a new visitor's place: one let in at its proof is ahead no more,
// where the allocation counted it as still to prove (its first answer by
// the share of proofs that take longer than its age, one given since by
// the share that prove); one that joined the line is ahead whole, the
// allocation's count of those waiting being older than it.
func (a *Allocation) provedSince() float64 {
	c := a.arr
	if c == nil {
		return 0
	}
	var n float64
	a.led.proofs.proofsSince(func(o ownProof, firstSince func() bool) {
		if o.at <= c.lastLook {
			return // the allocation's count of those waiting has it
		}
		var w float64
		if i := c.firstOf(o.came); i >= 0 {
			w = stillToProve(c.delays, c.lastLook-c.firsts[i].at) * c.proofRate
		} else if firstSince() {
			w = c.proofRate
		}
		if o.in {
			n -= w
		} else {
			n += 1 - w
		}
	})
	return n
}

// queuedSince is the growth of the room's count of new visitors queued from
// mark a to mark b (b the later).
func queuedSince(a, b queuedMark) uint64 {
	switch a.minute {
	case b.minute:
		return b.cur - min(a.cur, b.cur) + b.prev - min(a.prev, b.prev)
	case b.minute - 1:
		return b.prev - min(a.cur, b.prev) + b.cur
	}
	return b.cur
}

// unproved is the number of new visitors queued who have not come back
// with their cookie yet and will: counted as new visitors queued, not yet
// as waiting. The node knows when it gave its own first answers; another
// node's counts reach this one a gossip delay after its first answers and
// its proofs alike, so a first answer of theirs heard age ago is as far
// from its proof as one of its own given age ago. Either is still to prove
// with the chance that a proof takes longer than its age, which the node's
// own proofs tell (proofLedger); of those, the share that prove at all
// will.
func (c *arrivalCurves) unproved() float64 {
	if c == nil || len(c.queued) == 0 || c.proofRate == 0 {
		return 0
	}
	now := c.queued[len(c.queued)-1].at
	var n float64
	for i := len(c.queued) - 1; i > 0; i-- {
		a, b := c.queued[i-1], c.queued[i]
		grew := queuedSince(a, b)
		if grew == 0 {
			continue
		}
		// Heard between the two looks: its age is taken from the middle.
		age := now - (a.at+b.at)/2
		n += float64(grew) * stillToProve(c.delays, age)
	}
	for _, f := range c.firsts {
		n += stillToProve(c.delays, now-f.at)
	}
	return n * c.proofRate
}

// stillToProve is the share of proofs that take longer than age
// milliseconds after their first answer, of the delays measured (sorted);
// without any, proofs are taken to come ProofRefresh after.
func stillToProve(delays []int32, age int64) float64 {
	if len(delays) == 0 {
		if age < ProofRefresh*1000 {
			return 1
		}
		return 0
	}
	i := sort.Search(len(delays), func(i int) bool { return int64(delays[i]) > age })
	return float64(len(delays)-i) / float64(len(delays))
}
