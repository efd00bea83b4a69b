package policy

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
)

// Visitor is what Decide needs to know about one request.
type Visitor struct {
	Bucket int64 // arrival bucket: the unix minute of the visitor's first request
	Queued bool  // the visitor already waits (has a queued token); false on a first request
	// Arrived is when inside its bucket's minute the visitor came, in
	// tenths of a second (Counting.Arrived): its place in the bucket.
	Arrived uint16
}

// Outcome is the decision for one visitor.
type Outcome uint8

const (
	// Admit: send the visitor to the origin. The edge records the admission
	// (Admitted and Active of the current minute, minus the Waiting cell the
	// visitor was counted in) before the next Allocate.
	Admit Outcome = iota
	// Queue: show the queue page; the edge moves the visitor's Waiting count
	// to (bucket, now).
	Queue
	// Reject: a static page without refresh (method reject, or a full queue).
	Reject
	// Bypass: the room is suspended; pass through without a cookie and
	// without counting.
	Bypass
)

// String names the outcome for logs and metrics.
func (o Outcome) String() string {
	switch o {
	case Admit:
		return "admit"
	case Queue:
		return "queue"
	case Reject:
		return "reject"
	case Bypass:
		return "bypass"
	}
	return "unknown"
}

// class is where an admission for a visitor would come from.
type class uint8

const (
	classWait    class = iota // no slot is reserved for this visitor
	classCovered              // the visitor's whole bucket has reserved slots
	classPool                 // the partial bucket or the new-user remainder
)

// Decide decides for one visitor who is not already admitted, and on Admit
// consumes one slot of this node's budget. It is safe for concurrent use,
// does not allocate and does not retain v. rng is not used by the current
// algorithms (random queueing draws its randomness from when visitors check
// in, with slots released across the minute); it may be nil.
func (a *Allocation) Decide(v Visitor, rng *rand.Rand) Outcome {
	_ = rng
	switch a.mode {
	case modeBypass:
		return Bypass
	case modeRejectAll:
		return Reject
	case modeAdmitAll:
		return Admit
	case modeQueueAll:
		return a.hold(v)
	}
	switch a.classify(v) {
	case classCovered:
		// Covered visitors are distinct people already counted in the
		// waiting buckets, so any node may admit them; the cap only guards
		// against counts that have not arrived yet.
		if take(&a.led.covered, a.sp.coveredCap) || take(&a.led.pool, a.sp.poolCap) {
			return Admit
		}
	case classPool:
		if take(&a.led.pool, a.sp.poolCap) {
			return Admit
		}
	}
	return a.hold(v)
}

// hold queues a visitor, unless the queue is full and the visitor is not in
// it yet.
func (a *Allocation) hold(v Visitor) Outcome {
	if a.full && !v.Queued {
		return Reject
	}
	return Queue
}

// classify places a visitor against the split's reservation.
func (a *Allocation) classify(v Visitor) class {
	sp := &a.sp
	if a.method == Random {
		if !v.Queued && a.waiting > 0 {
			// A new visitor joins the draw with its first check-in, as
			// everyone waiting does with theirs. Drawn at its first
			// request and again at its cookie check two seconds later, it
			// had two chances in those seconds where a waiting visitor
			// has one in twenty: in the simulator's mirror of the
			// real-process random queue a quarter of the newcomers went
			// in within 24 s, and half of those who waited longer were
			// still waiting at their 75th percentile.
			return classWait
		}
		return classPool
	}
	if !v.Queued {
		// A first request comes after everyone already waiting in older
		// buckets; within the current minute's bucket it comes after those
		// the order reaches down to (see order.go), and without that order
		// it competes with those queued in it (which is no inversion: they
		// came in the same minute). (The reference strategy keeps the
		// reference's rule: behind any partial bucket.)
		newer := a.minute
		if a.strategy != Continuous || sp.fine {
			newer = math.MaxInt64
		}
		if (sp.hasHold && newer > sp.holdAfter) || (sp.hasFrontier && sp.frontier < newer) {
			return classWait
		}
		return classPool
	}
	switch {
	case sp.hasFrontier && v.Bucket < sp.frontier:
		return classCovered
	case !sp.hasFrontier && sp.hasWaiting && v.Bucket <= sp.newest:
		return classCovered
	case sp.hasHold && v.Bucket > sp.holdAfter:
		// The partial bucket, or a visitor newer than every counted one,
		// while an older bucket's visitors have not yet had their
		// check-in since it was covered (see holdBack). Covered buckets
		// are not held: their slots are reserved whatever the order.
		return classWait
	case sp.fine && v.Bucket == sp.frontier && !a.reached(v):
		// Later than the pool reaches, down to the visitor: those who
		// came before it go first (see order.go).
		return classWait
	case !sp.fine && sp.hasFrontier && v.Bucket == sp.frontier && !a.inOrder(v):
		// Later in the bucket than the pool reaches: those who came
		// before it go first (see order.go). Where the order goes down
		// to the visitor, reached has said.
		return classWait
	case sp.hasFrontier && v.Bucket == sp.frontier:
		return classPool
	case sp.hasFrontier:
		return classWait
	}
	// Queued, but newer than every counted bucket (its count has not arrived
	// yet): in line behind all of them, like a new visitor.
	return classPool
}

// take raises c by one if it is below limit.
func take(c *atomic.Int64, limit int64) bool {
	for {
		n := c.Load()
		if n >= limit {
			return false
		}
		if c.CompareAndSwap(n, n+1) {
			return true
		}
	}
}
