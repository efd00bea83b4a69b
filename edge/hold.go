package edge

import (
	"time"

	"github.com/waitroom/waitroom/policy"
)

// maxHeldRequests is how many requests a node holds at once (see holding).
// A held request is an open connection and a goroutine waiting for the
// next allocation; beyond this many, a flood's visitors are queued at once,
// as they were before holding, so a flood cannot pile up goroutines.
const maxHeldRequests = 512

// holdPatience is how long after the longest hold a held request waits for
// an allocation that ends it, should none come (the allocation loop runs at
// least every 250 ms): then it is decided once more on whatever allocation
// is current.
const holdPatience = 300 * time.Millisecond

// holding is one request held for the next allocation (policy's
// Allocation.Held): the policy says whether to hold, the edge only waits
// and asks again. It holds one of the node's maxHeldRequests places from
// the first hold until release.
type holding struct {
	s     *Server
	rm    *room
	since time.Time // the first hold, by the node's clock
	until time.Time // the end of the edge's patience, by the wall clock
	held  bool      // a place is taken
}

// first is when the request was first held; zero if it was not.
func (h *holding) first() time.Time {
	if h.held {
		return h.since
	}
	return time.Time{}
}

// ok reports whether the request may be held (again): a place is free or
// already its own, and its hold has not outlived policy.MaxHold and the
// patience after it. That end is kept by the wall clock, whatever the
// node's clock says (a test's stands still), since it bounds a real wait.
func (h *holding) ok(s *Server, rq *request, a *allocation) bool {
	if h.held {
		// A clock that stood still since the hold (a test's) brings no
		// renewed allowance: decide now.
		return time.Now().Before(h.until) && rq.now.After(h.since)
	}
	if !rq.now.After(a.At()) {
		// Nor does one that stands still at the allocation's own instant
		// (a test's, stepped with the allocations): only time renews the
		// allowance, and the request would wait for nothing.
		return false
	}
	if s.held.Add(1) > maxHeldRequests {
		s.held.Add(-1)
		rq.rm.m.holdFull.Inc()
		return false
	}
	h.s, h.rm, h.since, h.held = s, rq.rm, rq.now, true
	h.until = time.Now().Add(policy.MaxHold + holdPatience)
	return true
}

// wait waits for the allocation after a, the visitor's going away, or the
// hold's end, and sets rq.now to when it woke. It reports false when the
// visitor went away: the request is over.
func (h *holding) wait(rq *request, a *allocation) bool {
	h.rm.m.holds.Inc()
	t := time.NewTimer(max(time.Until(h.until), 0))
	defer t.Stop()
	select {
	case <-a.next:
	case <-t.C:
	case <-rq.r.Context().Done():
		h.rm.m.holdGone.Inc()
		return false
	}
	rq.now = h.s.ringNow()
	return true
}

// decided counts how a hold ended.
func (h *holding) decided(out policy.Outcome) {
	if !h.held {
		return
	}
	if out == policy.Admit {
		h.rm.m.holdAdmitted.Inc()
	} else {
		h.rm.m.holdQueued.Inc()
	}
}

// release gives the place back.
func (h *holding) release() {
	if h.held {
		h.s.held.Add(-1)
		h.held = false
	}
}
