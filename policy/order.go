package policy

import (
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
// admitted since included. Those still waiting are taken to be the latest
// of them: the order is kept, so the ones let in or gone came first. A slot
// then still holds what its arrivals leave after the bucket's gone are
// taken from the earliest slots on (slotWaiting).

// slotsPerBucket is how many arrival slots a minute bucket has.
const slotsPerBucket = 60 / crdt.ArrivalSlotSeconds

// slotsOf returns the estimated number still waiting in each arrival slot
// of bucket, which has n waiting, and whether the ring counted its slots.
func (a *Allocation) slotsOf(bucket, n int64) ([slotsPerBucket]int64, bool) {
	var arrived [slotsPerBucket]int64
	i := sort.Search(len(a.slots), func(i int) bool { return a.slots[i].Bucket() >= bucket })
	known := false
	for ; i < len(a.slots) && a.slots[i].Bucket() == bucket; i++ {
		arrived[(a.slots[i].Second-bucket*60)/crdt.ArrivalSlotSeconds] += a.slots[i].N
		known = true
	}
	return slotWaiting(arrived, n), known
}

// slotWaiting spreads the n still waiting in a bucket over its slots, of
// which arrived joined each: the gone (all joined but n) are taken from the
// earliest slots first. With fewer joined than wait (counts not all heard
// yet), the latest slot holds the rest.
func slotWaiting(arrived [slotsPerBucket]int64, n int64) [slotsPerBucket]int64 {
	var total int64
	for _, x := range arrived {
		total += x
	}
	gone := max(total-n, 0)
	var w [slotsPerBucket]int64
	for j, x := range arrived {
		take := min(gone, x)
		gone -= take
		w[j] = x - take
	}
	w[slotsPerBucket-1] += max(n-total, 0)
	return w
}

// slotIndex is the arrival slot of a visitor who came arrived tenths of a
// second into its minute.
func slotIndex(arrived uint16) int {
	return int(min(int64(arrived)/10, 59) / crdt.ArrivalSlotSeconds)
}

// orderFrontier fills sp's last slot of the frontier bucket that the pool
// reaches, so that visitors of later slots wait while earlier ones may still
// check in (see inOrder). Only a bucket of an earlier minute is ordered:
// the current minute's still grows, and its new visitors, who come last,
// compete with it for the pool.
func (a *Allocation) orderFrontier(sp *split) {
	sp.lastSlot = slotsPerBucket - 1
	if a.method != FIFO || a.strategy != Continuous || !sp.hasFrontier || sp.frontier >= a.minute {
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
	for j := range slotsPerBucket {
		if before+w[j] >= sp.pool && w[j] > 0 {
			sp.lastSlot = j
			return
		}
		before += w[j]
	}
}

// inOrder reports whether a visitor of the frontier bucket may take a pool
// slot: it came in a slot the pool reaches.
func (a *Allocation) inOrder(v Visitor) bool {
	return slotIndex(v.Arrived) <= a.sp.lastSlot
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
	return int64(a.positionAt(bucket, arrived) + 0.5), true
}

// positionAt is Position before rounding. Inside the visitor's slot those
// ahead are the share of the slot that had come by its arrival, of the
// part of the slot that had come by now (all of it, for a slot over).
func (a *Allocation) positionAt(bucket int64, arrived uint16) float64 {
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
	w, known := a.slotsOf(bucket, b.n)
	if !known {
		// Without the slot counts, the bucket as if spread evenly over
		// the part of its minute the ring has counted.
		return ahead + float64(b.n)*shareBefore(float64(arrived)/600, a.countedIn(bucket*60, 60))
	}
	for j := range s {
		ahead += float64(w[j])
	}
	start := bucket*60 + int64(s*crdt.ArrivalSlotSeconds)
	into := (float64(arrived)/10 - float64(s*crdt.ArrivalSlotSeconds)) / crdt.ArrivalSlotSeconds
	return ahead + float64(w[s])*shareBefore(into, a.countedIn(start, crdt.ArrivalSlotSeconds))
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

// keepSlots copies the snapshot's slot counts for the allocation, which
// outlives the snapshot.
func keepSlots(snap *crdt.RoomSnapshot) []crdt.SlotCount { return slices.Clone(snap.Arrived) }
