package policy

import (
	"math/rand/v2"
	"time"

	"github.com/waitroom/waitroom/crdt"
)

// One visitor's request, step by step. Every request of a visitor takes the
// same steps: an admitted visitor within its session goes to the origin
// (TurnSession, counted as StepSession); a queued one back before its
// refresh interval gets the page again and counts nothing (TurnEarly); any
// other is decided on (TurnDecide): by the room's allocation, or held for
// the node's next allocation when it is queued only for the slots the node
// keeps back, and then counted by the counter rule. The node does the
// waiting, the locking and the answering; what happens to a request and
// what it counts are decided here, once, for the node, the simulator and
// the tests' ring model.

// NewCounting is a new visitor's counting, for a first request at time at
// (the ring's time, which buckets are dated by): its arrival bucket is the
// minute, and Arrived when in the minute it came, in tenths of a second.
func NewCounting(at time.Time) Counting {
	bucket := floorMinute(at.Unix())
	return Counting{Bucket: bucket, Arrived: arrivedAt(bucket, at.UnixMilli())}
}

// HeldArrival is the counting of a new visitor whose first request, made
// at first, is decided at now after being held for an allocation (see
// Allocation.Held): it keeps the arrival of that request, so that the hold
// does not put it behind those who came while it was held. Dated by its
// wake instead, five visitors of a flood held for one allocation came out
// as arrived in the same tenth of a second, half a second after the first
// of them, and another node's visitor of that half second ahead of them.
// Across a minute's turn it is dated by now: the new minute's bucket is the
// one it joins (an older one may be reserved in full already).
func HeldArrival(first, now time.Time) Counting {
	c := NewCounting(first)
	if now.Before(first) || c.Bucket != floorMinute(now.Unix()) {
		return NewCounting(now)
	}
	return c
}

// arrivedAt is Counting.Arrived for a visitor given bucket at unix
// millisecond ms: its offset into the bucket's minute in tenths of a
// second, held to the minute.
func arrivedAt(bucket, ms int64) uint16 {
	return uint16(min(max((ms-bucket*60_000)/100, 0), 599))
}

// cameAt is the unix millisecond a visitor of bucket who came arrived
// tenths of a second into its minute came, to the tenth its token keeps:
// arrivedAt the other way.
func cameAt(bucket int64, arrived uint16) int64 { return bucket*60_000 + int64(arrived)*100 }

// Turn is what a request is, by where its visitor is counted.
type Turn uint8

const (
	// TurnDecide is a request that is decided on: a new visitor's, a
	// queued visitor's check-in that is due, or one of a visitor counted
	// nowhere.
	TurnDecide Turn = iota
	// TurnSession is a request of an admitted visitor within its session:
	// it goes to the origin, counted as StepSession.
	TurnSession
	// TurnEarly is a queued visitor's check-in before its refresh
	// interval: the page again, not an attempt, nothing counted.
	TurnEarly
)

// TurnOf says what a request at second now is for a visitor counted as c.
// fresh: the request carried no valid token (c is then not read); infinite:
// the visitor is in the infinite queue, whose token never goes in.
func TurnOf(c Counting, fresh, infinite bool, now int64) Turn {
	switch {
	case fresh:
		return TurnDecide
	case c.Admitted() && !infinite:
		return TurnSession
	case EarlyCheckIn(c, now):
		return TurnEarly
	}
	return TurnDecide
}

// NextCheckIn is how many seconds after second now a visitor counted as c
// is told to come back when its check-in was early: when its refresh
// interval ends, and at least one second.
func NextCheckIn(c Counting, now int64) int64 {
	return max(c.LastCheckIn+int64(c.RefreshInterval)-now, 1)
}

// Decider is the allocation a request is decided by: an *Allocation, or
// the node's guard around one, which answers for it while it fails.
type Decider interface {
	Decide(v Visitor, rng *rand.Rand) Outcome
	DecidePriority(v Visitor, g int, share float64) (Outcome, bool)
	Held(v Visitor, since time.Time) bool
	RefreshInterval(bucket int64, draw float64) uint16
}

// Group is a priority group of the room, as a decision needs it.
type Group struct {
	// Name is the group's name; "" for a visitor of no group.
	Name string
	// Index is the group's place among the room's groups, 0 to
	// MaxPriorityGroups-1: its count of admissions ahead of the line.
	Index int
	// Share is the most of the node's admissions the group may take ahead
	// of the line, above 0 and at most 1; 0 means 1.
	Share float64
	// NewUsersPerMinute is the group's own cap: once the ring has admitted
	// this many of its holders in a minute, its holders wait in the line
	// like everyone else until the next. 0: no cap of its own.
	NewUsersPerMinute int
}

// GroupAdmittedKey is the cell that counts the ring's admissions of group's
// holders in a minute: the count a Request's GroupAdmitted is read from.
func GroupAdmittedKey(room, group string, minute int64) crdt.Key {
	return crdt.Key{Room: room, Kind: crdt.PriorityAdmitted, Bucket: crdt.GroupBucket(group), Minute: minute}
}

// Request is one request that is decided on (TurnDecide).
type Request struct {
	// Fresh: the request carried no valid token. Before is then the new
	// visitor's counting, NewCounting of its first request (or of the time
	// it is decided, when a first request was held).
	Fresh bool
	// Before is where the visitor is counted: the newest counting the node
	// knows of its token.
	Before Counting
	// At is when the request is decided, by the ring's time.
	At time.Time
	// HeldSince is when the request was first held for a next allocation;
	// zero while it was not.
	HeldSince time.Time
	// Shuffled, when not zero, is the bucket a shuffle at an event's start
	// gives the visitor.
	Shuffled int64
	// Challenged: the queue page the visitor would be shown carries the
	// bot challenge.
	Challenged bool
	// Verdict is what the challenge made of the visitor on this request.
	Verdict Verdict
	// Group is the visitor's priority group, if it holds one the room has.
	Group Group
	// GroupAdmitted is the ring's admissions of the group's holders in the
	// request's minute, as far as the node has heard of them
	// (GroupAdmittedKey).
	GroupAdmitted uint64
}

// Bucket is the arrival bucket the request is decided in.
func (q Request) Bucket() int64 {
	if q.Shuffled != 0 {
		return q.Shuffled
	}
	return q.Before.Bucket
}

// Visitor is the visitor as Decide sees it.
func (q Request) Visitor() Visitor {
	return Visitor{Bucket: q.Bucket(), Queued: q.Before.Waiting(), Arrived: q.Before.Arrived}
}

// Decision is a request's decision, before it is counted.
type Decision struct {
	Request
	Outcome Outcome
	// Ahead: a priority holder let in ahead of the line, within its
	// group's share.
	Ahead bool
	// Hold: queued only for the slots the node keeps back for what the
	// others may have admitted unheard (Allocation.Held). The node holds
	// the request and decides it again on its next allocation, counting
	// nothing; one that cannot hold it (too many held, held too long)
	// counts it as queued.
	Hold bool
}

// Decide decides request q by allocation a: a priority holder within its
// group's own cap ahead of the line (Allocation.DecidePriority), anyone else
// (and a holder over the cap) in the line (Allocation.Decide).
func (q Request) Decide(a Decider) Decision {
	d := Decision{Request: q}
	v := q.Visitor()
	g := q.Group
	switch {
	case g.Name == "":
		d.Outcome = a.Decide(v, nil)
	case g.NewUsersPerMinute > 0 && q.GroupAdmitted >= uint64(g.NewUsersPerMinute):
		// The group's own cap for the minute is reached: in the line.
		d.Outcome = a.Decide(v, nil)
	default:
		share := g.Share
		if share == 0 {
			share = 1
		}
		d.Outcome, d.Ahead = a.DecidePriority(v, g.Index, share)
	}
	if d.Outcome == Queue {
		since := q.HeldSince
		if since.IsZero() {
			since = q.At
		}
		d.Hold = a.Held(v, since)
	}
	return d
}

// Count counts decision d by the counter rule into dst (see Count) and
// returns the increments with the visitor's counting after it. A new
// visitor queued, and a proof, are noted in a's chain too: how new
// visitors prove, for the places of the first answers (proof.go). A visitor
// shown the queue page, or turned away by a full queue, is given the
// refresh interval a gives its bucket (Allocation.RefreshInterval): short
// near the front of the line, so that the slots that open there are taken
// within seconds. draw is asked for the interval's jitter, a uniform draw
// in [0, 1), only then.
func (d Decision) Count(dst []crdt.Inc, a Decider, room Room, name string, draw func() float64) ([]crdt.Inc, Counting) {
	ev := Event{
		Step: StepDecided, Fresh: d.Fresh, Outcome: d.Outcome, Shuffled: d.Shuffled,
		Challenged: d.Challenged, Verdict: d.Verdict, At: d.At.Unix(),
	}
	if d.Outcome == Admit {
		ev.Group = d.Group.Name
	}
	if d.Outcome == Queue || d.Outcome == Reject {
		ev.Refresh = a.RefreshInterval(d.Bucket(), draw())
	}
	n := len(dst)
	dst, after := Count(dst, room, name, d.Before, ev)
	if p, ok := a.(proofNoter); ok {
		l := p.proofLedger()
		switch {
		case d.Fresh && d.Outcome == Queue:
			l.noteFirst(cameAt(after.Bucket, after.Arrived), d.At.UnixMilli())
		case !d.Fresh && d.Before.Proving():
			l.noteProof(cameAt(d.Before.Bucket, d.Before.Arrived), d.At.UnixMilli(), d.Outcome == Admit)
		}
		for _, in := range dst[n:] {
			switch {
			case in.Key.Kind == crdt.QueuedAt:
				// Joined a slot: its place in it, to the tenth of a second.
				l.noteJoin(in.Key.Bucket, int32(int64(after.Arrived)*100-(in.Key.Bucket-after.Bucket*60)*1000), d.At.UnixMilli())
			case in.Key.Kind == crdt.LeftAt:
				// Out of the line of the slot it had joined: let in, turned
				// away, or moved to another bucket.
				slot := in.Key.Bucket
				l.noteLeft(slot, int32(int64(d.Before.Arrived)*100-(slot-d.Before.Bucket*60)*1000), d.At.UnixMilli())
			}
		}
	}
	return dst, after
}

// proofNoter is a Decider that measures how new visitors prove (proof.go):
// an *Allocation, or a node's guard around one.
type proofNoter interface{ proofLedger() *proofLedger }

// proofLedger is the chain's count of first answers and proofs.
func (a *Allocation) proofLedger() *proofLedger { return &a.led.proofs }
