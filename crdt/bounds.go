package crdt

import (
	"bytes"
	"fmt"
	"time"
)

// A peer that holds the ring's key is still only believed within what could
// be true: a node's clock is kept by NTP, so nothing it writes is dated far
// ahead of the others' clocks, and a node handles a bounded number of
// requests a minute, so none of its entries can jump by more. The checks
// below say what a replica refuses from its peers; they take the local time
// as an argument, so the package stays free of the wall clock.

// MaxClockOffset is how far ahead of this node's clock a peer's clock may
// run: a counter minute or a register stamp beyond now + MaxClockOffset
// cannot have been written by an honest node with a working clock, and is
// refused. Two minutes is far more than NTP leaves between nodes and less
// than a minute bucket's worth of harm.
const MaxClockOffset = 2 * time.Minute

// MaxEntryValue bounds one replica's entry in one cell. Every cell counts
// requests one node handled in one minute (arrivals, admissions, session
// moves, histogram bins, revocations) or, for session cells, in one expiry
// slice of at most a minute. 12,000,000 is 200,000 requests a second for a
// whole minute, several times what one node serves (see the README's proxy
// figures), so no real traffic reaches it; a larger value is refused, and
// sums over a ring stay far from overflowing.
const MaxEntryValue = 12_000_000

// Refusal reasons, the label of the counter of refused peer input.
const (
	RefusedFutureMinute    = "future_minute"    // a counter cell dated beyond now + MaxClockOffset
	RefusedFutureStamp     = "future_stamp"     // a register stamped beyond now + MaxClockOffset
	RefusedImpossibleValue = "impossible_value" // an entry above MaxEntryValue
	RefusedBeyondRoom      = "beyond_room"      // an entry above what its room's limits make possible (policy.CellLimits)
)

// OutOfBounds is why a peer's entry or register cannot be true.
type OutOfBounds struct {
	Reason string // one of the Refused... reasons
	Detail string
}

func (o *OutOfBounds) Error() string { return o.Reason + ": " + o.Detail }

// LatestMinute is the latest unix minute a peer may date a cell of kind k at
// nowMillis: the minute of now + MaxClockOffset, and for session cells,
// which are dated by their expiry, MaxSessionLead minutes more.
func LatestMinute(k Kind, nowMillis int64) int64 {
	m := floorDiv(addSat(nowMillis, MaxClockOffset.Milliseconds()), 60_000)
	if k == SessionPlus || k == SessionMinus {
		m += MaxSessionLead
	}
	return m
}

// LatestStamp is the largest wall time (milliseconds) a peer's register
// stamp may carry at nowMillis.
func LatestStamp(nowMillis int64) int64 {
	return addSat(nowMillis, MaxClockOffset.Milliseconds())
}

// CheckEntry returns an *OutOfBounds when a peer's entry cannot be true at
// nowMillis (unix milliseconds), nil when it can.
func CheckEntry(e Entry, nowMillis int64) error {
	if latest := LatestMinute(e.Key.Kind, nowMillis); e.Key.Minute > latest {
		return &OutOfBounds{RefusedFutureMinute, fmt.Sprintf("room %q kind %d minute %d is %d minutes past the latest allowed (%d)", e.Key.Room, e.Key.Kind, e.Key.Minute, e.Key.Minute-latest, latest)}
	}
	if e.Value > MaxEntryValue {
		return &OutOfBounds{RefusedImpossibleValue, fmt.Sprintf("room %q kind %d minute %d value %d > %d", e.Key.Room, e.Key.Kind, e.Key.Minute, e.Value, uint64(MaxEntryValue))}
	}
	return nil
}

// CheckStamp returns an *OutOfBounds when a peer's register stamp is dated
// beyond nowMillis + MaxClockOffset, nil otherwise.
func CheckStamp(h HLC, nowMillis int64) error {
	if latest := LatestStamp(nowMillis); h.Wall > latest {
		return &OutOfBounds{RefusedFutureStamp, fmt.Sprintf("stamp %d ms is past the latest allowed (%d ms, %v ahead of this clock)", h.Wall, latest, MaxClockOffset)}
	}
	return nil
}

// MergeAt merges a delta from a peer at nowMillis like Merge (aggregate
// entries and groups included), and makes sure
// no stamp can lock a register: a register stored with a stamp beyond
// nowMillis + MaxClockOffset (kept from before such stamps were refused, or
// from a peer whose clock ran far ahead) yields to any write within the
// bound, and a register of the delta beyond the bound is not taken. The
// caller refuses out-of-bounds input first (CheckEntry, CheckStamp), so it
// can count and log it; MergeAt only keeps the state safe.
func (s *State) MergeAt(d Delta, nowMillis int64) Delta {
	var out Delta
	for _, e := range d.Entries {
		if s.Apply(e) {
			out.Entries = append(out.Entries, e)
		}
	}
	for _, r := range d.Registers {
		if s.ApplyRegisterAt(r, nowMillis) {
			out.Registers = append(out.Registers, r)
		}
	}
	s.mergeAggregates(d, &out)
	return out
}

// ApplyRegisterAt is ApplyRegister at nowMillis with the bound of MergeAt:
// e is not taken when stamped beyond nowMillis + MaxClockOffset, and it
// replaces a stored register stamped beyond that bound whatever their
// stamps.
func (s *State) ApplyRegisterAt(e RegisterEntry, nowMillis int64) bool {
	latest := LatestStamp(nowMillis)
	if e.Reg.Stamp.Wall > latest {
		return false
	}
	if cur, ok := s.regs[e.Name]; ok && cur.Stamp.Wall > latest {
		s.regs[e.Name] = LWW[[]byte]{Value: bytes.Clone(e.Reg.Value), Stamp: e.Reg.Stamp, Replica: e.Reg.Replica}
		if s.clock.Wall > latest {
			s.clock = e.Reg.Stamp
		}
		s.clock = s.clock.Max(e.Reg.Stamp)
		return true
	}
	return s.ApplyRegister(e)
}

// localStamp is the stamp of a local write of register name at nowMillis:
// after every stamp seen and after the register's own, as long as those are
// within nowMillis + MaxClockOffset; stamps beyond that are passed over, so
// an operator's write always takes effect. It is after every stamp this
// state handed out before, passed over or not (see stamper). It updates the
// state's clock.
func (s *State) localStamp(name string, nowMillis int64) HLC {
	latest := LatestStamp(nowMillis)
	base := s.clock
	if base.Wall > latest {
		base = HLC{}
	}
	if cur, ok := s.regs[name]; ok && cur.Stamp.Wall <= latest {
		base = base.Max(cur.Stamp)
	}
	s.clock = s.own.next(base.NextWithin(nowMillis, MaxClockOffset.Milliseconds()), nowMillis)
	return s.clock
}

// DropFuture drops the counter cells dated beyond what CheckEntry lets a
// peer write at nowMillis (kept from before such cells were refused, say,
// and restored from a snapshot) and returns how many it dropped. Such a
// cell would otherwise count until its far-future minute passed.
func (s *State) DropFuture(nowMillis int64) int {
	dropped := 0
	for name, r := range s.rooms {
		for ck := range r.cells {
			if ck.Minute > LatestMinute(ck.Kind, nowMillis) {
				delete(r.cells, ck)
				dropped++
			}
		}
		for ck := range r.aggs {
			if ck.Minute > LatestMinute(ck.Kind, nowMillis) {
				delete(r.aggs, ck)
				dropped++
			}
		}
		if r.empty() {
			delete(s.rooms, name)
		}
	}
	return dropped
}
