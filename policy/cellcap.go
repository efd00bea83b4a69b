package policy

import "github.com/waitroom/waitroom/crdt"

// How far a peer is believed. A node that holds the ring's key still
// writes only its own counts, and those are bounded by the room's limits:
// in one minute a node admits at most the room's new users per minute
// (the ring's admissions are shared among its nodes, and the decision
// keeps them within the limit up to a small overshoot), a session cell
// counts at most the room's active sessions, and with a max_queue a
// waiting cell counts at most that many visitors. A cell value beyond
// that, with generous headroom, is not a count but an attack (one cell of
// millions would queue a room for as long as the cell lives) and is
// refused. Kinds no limit bounds (arrivals: a flood is real traffic) keep
// the absolute crdt.MaxEntryValue only.

// Headroom of a cell's ceiling over the room's limit: ten times the limit,
// plus CellSlack, so a limit lowered at run time, an event's higher limits
// or the ring's overshoot never come near it.
const (
	CellHeadroom = 10
	CellSlack    = 1000
)

// CellLimits are the largest limits a room had in force (its own and its
// events'), as they bound one node's counts.
type CellLimits struct {
	TotalActiveUsers  int
	NewUsersPerMinute int
	MaxQueue          int // 0: no cap on the queue
	// Unbounded: the room or one of its events lets everyone through
	// (passthrough), still counted, so admissions follow the traffic.
	Unbounded bool
}

// Ceiling is the largest value one node may hold in one cell of kind k of
// a room with limits l, and false when the room's limits bound no cell of
// that kind (then crdt.MaxEntryValue alone applies).
func (l CellLimits) Ceiling(k crdt.Kind) (uint64, bool) {
	var limit int
	switch k {
	case crdt.Admitted:
		limit = l.NewUsersPerMinute
	case crdt.SessionPlus, crdt.SessionMinus:
		// A renewal moves a session from one cell to another, so a cell
		// counts at most the sessions there are.
		limit = max(l.TotalActiveUsers, l.NewUsersPerMinute)
	case crdt.WaitingPlus, crdt.WaitingMinus, crdt.QueuedAt, crdt.LeftAt:
		limit = l.MaxQueue
	default:
		return 0, false
	}
	if limit <= 0 || (l.Unbounded && k != crdt.WaitingPlus && k != crdt.WaitingMinus && k != crdt.QueuedAt && k != crdt.LeftAt) {
		return 0, false
	}
	return min(uint64(limit)*CellHeadroom+CellSlack, crdt.MaxEntryValue), true
}
