package crdt

import "math"

// HLC is a hybrid logical clock stamp: wall-clock milliseconds plus a logical
// counter that orders events within the same millisecond, or when a node's
// clock is behind a stamp it has already seen.
type HLC struct {
	Wall    int64  `msgpack:"w" json:"wall"`
	Logical uint32 `msgpack:"l" json:"logical"`
}

// MaxHLC is the largest stamp there is. Next stays there rather than wrap
// to a stamp smaller than every other.
var MaxHLC = HLC{Wall: math.MaxInt64, Logical: math.MaxUint32}

// Less orders stamps.
func (h HLC) Less(o HLC) bool {
	if h.Wall != o.Wall {
		return h.Wall < o.Wall
	}
	return h.Logical < o.Logical
}

// Next returns a stamp greater than both h and every stamp seen so far
// (last), given the local wall clock in milliseconds. The caller keeps last.
// At MaxHLC there is no greater stamp: Next returns MaxHLC itself, never a
// smaller stamp that every register would ignore. Local writes use
// NextWithin, which never gets near it.
func (h HLC) Next(nowMillis int64) HLC {
	switch {
	case nowMillis > h.Wall:
		return HLC{Wall: nowMillis}
	case h.Logical < math.MaxUint32:
		return HLC{Wall: h.Wall, Logical: h.Logical + 1}
	case h.Wall < math.MaxInt64:
		// The logical counter is spent (only a peer's corrupt or hostile
		// stamp gets here): move on to the next millisecond.
		return HLC{Wall: h.Wall + 1}
	default:
		return MaxHLC
	}
}

// NextWithin is Next for a local write when no stamp may lead the local
// clock by more than aheadMillis: a last stamp beyond nowMillis+aheadMillis
// (from a peer whose clock ran far ahead, or a hostile stamp kept from
// before such stamps were refused) is not trusted and is passed over, so
// the write takes max(now, last)+1 only while that is within the bound. A
// stamp it returns is never beyond the bound; in the one case where the
// bound leaves no room (last at the bound with its logical counter spent)
// it returns the bound itself.
func (h HLC) NextWithin(nowMillis, aheadMillis int64) HLC {
	limit := addSat(nowMillis, aheadMillis)
	if h.Wall > limit {
		h = HLC{}
	}
	n := h.Next(nowMillis)
	if n.Wall > limit {
		return HLC{Wall: limit, Logical: math.MaxUint32}
	}
	return n
}

// addSat adds without wrapping past the largest int64.
func addSat(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Max returns the larger stamp.
func (h HLC) Max(o HLC) HLC {
	if h.Less(o) {
		return o
	}
	return h
}

// LWW is a last-writer-wins register. The write with the larger stamp wins;
// equal stamps are broken by the larger replica id, so the outcome never
// depends on the order in which replicas hear of the writes.
type LWW[T any] struct {
	Value   T         `msgpack:"v" json:"value"`
	Stamp   HLC       `msgpack:"s" json:"stamp"`
	Replica ReplicaID `msgpack:"r" json:"replica"`
}

// Newer reports whether l wins over o.
func (l LWW[T]) Newer(o LWW[T]) bool {
	if l.Stamp != o.Stamp {
		return o.Stamp.Less(l.Stamp)
	}
	return l.Replica > o.Replica
}

// Merge keeps the winner of l and o in l and reports whether l changed.
func (l *LWW[T]) Merge(o LWW[T]) bool {
	if o.Newer(*l) {
		*l = o
		return true
	}
	return false
}
