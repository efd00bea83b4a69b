package policy

import "time"

// MaxHold is the longest a visitor may be held (see Allocation.Held),
// however long the lag: a held request is an open connection with no answer
// yet, and a visitor should see a page within about a second.
const MaxHold = time.Second

// Held reports whether a visitor whom Decide queued on this allocation
// should rather be held (the request kept open, its answer not yet given)
// and decided again on the node's next allocation, the visitor having first
// been so held at since (its first decision: since is then the allocation's
// own now or a little before it).
//
// It is so when the node queued the visitor only because it keeps the rest
// of the open slots it sees back for what the other nodes may have admitted
// within the last lag without its knowing (see "What the lag hides" in the
// package doc): the slots are open in its view, the visitor's place in line
// would let it in, and only this node's allowance for the lag is used up.
// Within a lag or two one of two things happens: the others' admissions arrive
// and the slots are gone (the visitor is then queued, having waited under a
// second), or they do not, the node's own admissions of the lag leave the
// window its allowance counts, and the slot is this node's to give. Queued
// instead, the visitor would come back only at its next check-in, a refresh
// interval later, and the slot would stay free meanwhile: a fresh room of
// 40 flooded at three real processes queued its first visitor at 34 of 40
// with the lag the edge measured on a loaded machine (0.15–0.8 s).
//
// Holding changes no count and takes no slot, but it turns this node's
// bursts off for two lags (see heldNew): the visitor is decided again,
// by Decide, on a later allocation, as if it had come then, so the overshoot
// bound is that of Decide. It ends on the first allocation made two lags (at
// most MaxHold) after since: by then the node has heard the others'
// admissions of the first lag and its own have left the span its allowance
// counts, so its answer stands. (One lag was too short at the
// edge: a real fresh flood queued its first visitor at 37 of 40 after
// holding it for one lag, 0.28 s, with the node's share still used up.)
//
// Only while the room is calm, as far as the node knows: nobody waits and
// nobody was queued lately. Once anyone is queued, a newcomer let in within
// the second could go ahead of them (across a minute's turn, or ahead of a
// count not yet heard), and the first queued visitor of a flood ends holding
// at every node within a lag.
func (a *Allocation) Held(v Visitor, since time.Time) bool {
	if a.mode != modeDecide || a.strategy != Continuous || a.cut || a.now.Sub(since) >= min(2*a.lag, MaxHold) {
		// Cut off from part of the ring, the node hears nothing more of
		// that part's admissions, however long it waits.
		return false
	}
	if !a.calm {
		// The slots of a room that queues are for the check-ins of those
		// who wait (see holdBack).
		return false
	}
	if a.classify(v) == classWait {
		// Its turn has not come: older buckets first, or the hold for a
		// covered bucket's check-ins.
		return false
	}
	if a.poolLeft() <= 0 {
		return false
	}
	a.led.heldAt.Store(a.now.UnixNano())
	return true
}

// At is the time the allocation was computed for.
func (a *Allocation) At() time.Time { return a.now }

// poolLeft is how many of the pool's slots this node sees open and has not
// taken itself since the allocation was made.
func (a *Allocation) poolLeft() int64 {
	return a.sp.pool - (a.led.pool.Load() - a.sp.poolAt)
}
