package edge

import (
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/policy"
)

// What the admin API, the console, the metrics and the webhooks read of a
// room: the figures of its allocations, which they lay out for a person or
// a monitor.

// RoomFigures are a room's figures from one allocation: what its status is
// made of.
type RoomFigures struct {
	// Summary is the allocation's summary (the status, the queue, the
	// admissions, the estimates), guarded as every policy call is (see
	// failsafe.go).
	Summary policy.Summary
	// Room is the room's settings (see Rooms); Settings are those in force
	// when the allocation was made: an event's, the pre-queue's, the
	// emergency stop's.
	Room, Settings *config.Room
	// Snapshot is the merged state at the time asked for, over the windows
	// the allocation reads: who sent how much traffic.
	Snapshot crdt.RoomSnapshot
	// Failing is set while the room's allocation cannot be computed (see
	// failsafe.go).
	Failing bool
}

// Figures reports the named room from the allocation the loop made last
// (at most 250 ms old), with the merged state at the ring's time now; false
// for a room the node does not have. Reading never changes an allocation,
// so what an operator or a monitor sees is what the request path decides
// by.
func (s *Server) Figures(name string, now time.Time) (RoomFigures, bool) {
	rm := s.room(name)
	if rm == nil {
		return RoomFigures{}, false
	}
	a := rm.alloc.Load()
	if a == nil {
		return RoomFigures{}, false
	}
	f := RoomFigures{Summary: a.Summary(), Room: rm.cfg, Settings: &a.view.cfg}
	f.Snapshot = s.node.Snapshot(rm.name, now.Unix(), a.view.win)
	f.Failing = rm.failing.Load() // after the summary, whose panic fails the room
	return f, true
}

// Current is the named room's allocation in force at the ring's time now,
// computed first when the minute has turned since the last, as a request
// would find it: its summary and the settings it was made with; false for
// a room the node does not have. The metrics' gauges read it.
func (s *Server) Current(name string, now time.Time) (policy.Summary, *config.Room, bool) {
	rm := s.room(name)
	if rm == nil {
		return policy.Summary{}, nil, false
	}
	a := rm.allocation(now)
	return a.Summary(), &a.view.cfg, true
}

// Summary is the named room's last allocation's summary (the status, the
// queue, the admissions), as the request path decides by it; false for a
// room the node does not have. It reads the allocation and computes
// nothing else, for what looks at the rooms every round.
func (s *Server) Summary(name string) (policy.Summary, bool) {
	rm := s.room(name)
	if rm == nil {
		return policy.Summary{}, false
	}
	a := rm.alloc.Load()
	if a == nil {
		return policy.Summary{}, false
	}
	return a.Summary(), true
}

// WaitingNow is the number of visitors waiting in the named room as the
// node's merged state says at its clock, summed afresh rather than taken from
// the last allocation (which the loop may not have recomputed yet): for tools
// that drive load and read the count right after, such as the bench. -1 for
// a room the node does not have.
func (s *Server) WaitingNow(name string) int64 {
	now := s.ringNow()
	for _, rm := range s.rooms() {
		if rm.name == name {
			return rm.s.node.Snapshot(rm.name, now.Unix(), rm.viewAt(now).win).TotalWaiting
		}
	}
	return -1
}

// CurrentAllocation is the room's allocation as the request path reads it
// (nil for a room the node does not have), for whoever checks what
// replaces it: reading the state, for one, must not.
func (s *Server) CurrentAllocation(room string) *policy.Allocation {
	for _, rm := range s.rooms() {
		if rm.name == room {
			return rm.alloc.Load().Allocation
		}
	}
	return nil
}
