package policy

import (
	"math"
	"sort"

	"github.com/waitroom/waitroom/crdt"
)

// The span of a FIFO wait. The ring keeps the order inside a bucket to its
// arrival slots (a third of a minute), not to the visitor: everyone still
// waiting in one slot goes in together, in whatever order their check-ins
// fall, once the slots ahead of it are through. A visitor's wait is
// therefore not one number but a span: from when those of the earlier slots
// and buckets are in (lo visitors ahead) to when its own slot is too (hi),
// at the room's admission rate. Its place inside the slot says nothing
// about where in that span it falls. In the simulator's 10× step, where a
// slot holds some 1,700 visitors and takes three minutes to let in, the
// estimate from the visitor's own place was within 20 % of its wait for
// half as many visitors as in the later slots, whose waits are longer.
//
// The estimate is the whole minute that the most of that span lies within
// a fifth of (spanMinutes): the wait that comes out right for the most
// visitors who are told it.

// slotSpan returns the visitors waiting ahead of the arrival slot of a
// visitor of bucket who came arrived tenths of a second into it (lo) and
// those ahead plus the slot's own (hi). Without the slot counts, or for a
// bucket nobody waits in, the span is the visitor's position alone.
func (a *Allocation) slotSpan(bucket int64, arrived uint16) (lo, hi float64) {
	i := sort.Search(len(a.buckets), func(i int) bool { return a.buckets[i].bucket >= bucket })
	if i == len(a.buckets) || a.buckets[i].bucket != bucket {
		p := a.placeHere(bucket, arrived)
		return p, p
	}
	b := a.buckets[i]
	w, known := a.slotsOf(bucket, b.n)
	s := slotIndex(arrived)
	if !known || a.arr.follows(bucket*60+int64(s*crdt.ArrivalSlotSeconds)) {
		// Without the slot counts, or where the node saw the slot fill
		// and its visitors go in in the order they came: the visitor's
		// own place.
		p := a.placeHere(bucket, arrived)
		return p, p
	}
	lo = float64(b.before)
	for j := range s {
		lo += float64(w[j])
	}
	return lo, lo + float64(w[s])
}

// spanMinutes is the whole number of minutes, at least one, within ±20 %
// of which the most of the span [lo, hi] minutes lies, the wait being
// taken as spread evenly over it: m covers the waits from m/1.2 to m/0.8.
// Of equally good minutes, as all that cover a narrow span whole are, the
// one nearest a tenth beyond the span's middle wins: a wait comes out
// longer than the rate says more often than shorter (a rate that slows as
// a ring loses a node, a check-in that comes late), and an estimate that
// errs long disappoints less. Rounding to the nearest minute instead told
// 4 minutes to the node crash's visitors who waited 5.1 to 5.3.
func spanMinutes(lo, hi float64) int {
	if math.IsNaN(lo) || math.IsNaN(hi) || hi > maxWaitMinutes {
		return maxWaitMinutes
	}
	lo, hi = max(lo, 0), max(hi, lo)
	aim := 1.1 * (lo + hi) / 2
	first := max(1, int(math.Floor(0.8*lo)))
	last := max(first, int(math.Ceil(1.2*hi)))
	best, bestCover, bestDist := first, -1.0, math.Inf(1)
	for m := first; m <= last; m++ {
		from, to := max(lo, float64(m)/1.2), min(hi, float64(m)/0.8)
		cover := to - from
		if hi == lo {
			cover = 0
			if lo >= float64(m)/1.2-1e-9 && lo <= float64(m)/0.8+1e-9 {
				cover = 1
			}
		}
		cover = math.Round(cover*1e9) / 1e9
		dist := math.Abs(float64(m) - aim)
		if cover > bestCover || (cover == bestCover && dist < bestDist) {
			best, bestCover, bestDist = m, cover, dist
		}
	}
	return min(best, maxWaitMinutes)
}

// fifoWait is the FIFO estimate in minutes under the continuous strategy:
// the span of the visitor's slot at the admission rate, plus half a
// check-in interval, the mean wait for the check-in that takes a slot once
// it opens.
func (a *Allocation) fifoWait(bucket int64, arrived uint16) int {
	lo, hi := a.slotSpan(bucket, arrived)
	d := a.room.checkIn().Minutes() / 2
	return spanMinutes(a.admissionAt(lo+1)+d, a.admissionAt(max(hi, lo+1))+d)
}

// waitRate is the admission rate a wait is forecast at: the recent average,
// but never above the per-minute limit, which is what the room admits at
// most once the minutes of an overshoot (gossip slower than the lag lets
// a flood's first minutes in at 1.5 × the limit) are behind it. Counting
// the overshoot as the pace made the estimates of the simulator's 5 s
// gossip a quarter too short.
func (a *Allocation) waitRate() float64 {
	if l := a.room.NewUsersPerMinute; l > 0 {
		return min(a.rate, float64(l))
	}
	return a.rate
}
