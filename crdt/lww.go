package crdt

import "math"

// HLC is a hybrid logical clock stamp: wall-clock milliseconds plus a logical
// counter that orders events within the same millisecond, or when a node's
// clock is behind a stamp it has already seen.
type HLC struct {
	Wall    int64  `msgpack:"w" json:"wall"`
	Logical uint32 `msgpack:"l" json:"logical"`
}

// Less orders stamps.
func (h HLC) Less(o HLC) bool {
	if h.Wall != o.Wall {
		return h.Wall < o.Wall
	}
	return h.Logical < o.Logical
}

// Next returns a stamp greater than both h and every stamp seen so far
// (last), given the local wall clock in milliseconds. The caller keeps last.
func (h HLC) Next(nowMillis int64) HLC {
	if nowMillis > h.Wall {
		return HLC{Wall: nowMillis}
	}
	if h.Logical == math.MaxUint32 {
		// The logical counter is spent (only a peer's corrupt or hostile
		// stamp gets here): move on to the next millisecond rather than
		// wrap to a smaller stamp.
		return HLC{Wall: h.Wall + 1}
	}
	return HLC{Wall: h.Wall, Logical: h.Logical + 1}
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
