package crdt

import (
	"math"
	"slices"
	"sort"
)

// Count is one replica's entry in a counter.
type Count struct {
	Replica ReplicaID
	N       uint64
}

// GCounter is a grow-only counter: one monotone entry per replica, kept sorted
// by replica id. The zero value is an empty counter.
//
// The entries are kept as two slices, the replicas and their values, and a
// value in 32 bits: a cell of a busy room holds one entry per node, and a
// room holds a thousand cells, so an entry's size is the room's. As one
// slice of Counts (16 bytes, 800 bytes a cell of 50 nodes, held in 896 by
// the allocator) the room of 50 nodes with a 60-minute queue took 983 KiB,
// and 1,077 KiB once the arrival slots counted those who left them, over
// its budget of 1 MiB; at 12 bytes an entry it takes 740 and 809 KiB
// (TestMemoryPerRoom). No entry a peer may send is above MaxEntryValue
// (CheckEntry), far below 32 bits; a larger value is held as the largest,
// which merges by max all the same.
type GCounter struct {
	ids []ReplicaID
	ns  []uint32
}

// entryValue is v as an entry holds it: at most the largest 32-bit value.
func entryValue(v uint64) uint32 { return uint32(min(v, math.MaxUint32)) }

func (g *GCounter) find(r ReplicaID) (int, bool) {
	ids := g.ids
	// Counters hold one entry per node, a few dozen at most; a binary search
	// keeps the lookup cheap without a map per cell.
	i := sort.Search(len(ids), func(i int) bool { return ids[i] >= r })
	return i, i < len(ids) && ids[i] == r
}

// Get returns replica r's entry.
func (g *GCounter) Get(r ReplicaID) uint64 {
	if i, ok := g.find(r); ok {
		return uint64(g.ns[i])
	}
	return 0
}

// Add raises replica r's own entry by n and returns the new entry. Only the
// owner of r may call it. Adding zero stores nothing: a counter never holds a
// zero entry, so that it equals any counter it merged with (Observe ignores
// zero entries too).
func (g *GCounter) Add(r ReplicaID, n uint64) uint64 {
	i, ok := g.find(r)
	if ok {
		g.ns[i] = entryValue(uint64(g.ns[i]) + min(n, math.MaxUint32))
		return uint64(g.ns[i])
	}
	if n == 0 {
		return 0
	}
	g.insert(i, r, entryValue(n))
	return uint64(g.ns[i])
}

// Observe merges one entry: it keeps the larger of the stored and the given
// value, and reports whether the counter changed.
func (g *GCounter) Observe(r ReplicaID, v uint64) bool {
	x := entryValue(v)
	i, ok := g.find(r)
	if ok {
		if x <= g.ns[i] {
			return false
		}
		g.ns[i] = x
		return true
	}
	if x == 0 {
		return false
	}
	g.insert(i, r, x)
	return true
}

// insert puts replica r's entry v at index i. Full slices grow by a
// sixteenth (and two), not by append's doubling: a cell gains one entry per
// node and then stays, so what doubling leaves unused (up to half of every
// cell of a ring whose size is just past a power of two) would be held for
// the cell's whole life. The extra copies cost a few dozen entries once per
// cell.
func (g *GCounter) insert(i int, r ReplicaID, v uint32) {
	if n := len(g.ids); n == cap(g.ids) || n == cap(g.ns) {
		c := n + n/16 + 2
		g.ids = append(make([]ReplicaID, 0, c), g.ids...)
		g.ns = append(make([]uint32, 0, c), g.ns...)
	}
	g.ids = slices.Insert(g.ids, i, r)
	g.ns = slices.Insert(g.ns, i, v)
}

// Merge folds o into g (entry-wise max) and reports whether g changed. Both
// are sorted by replica, so one walk along g finds every entry of o.
func (g *GCounter) Merge(o GCounter) bool {
	changed := false
	i := 0
	for j, r := range o.ids {
		for i < len(g.ids) && g.ids[i] < r {
			i++
		}
		v := o.ns[j]
		switch {
		case i < len(g.ids) && g.ids[i] == r:
			if v > g.ns[i] {
				g.ns[i], changed = v, true
			}
		case v != 0:
			g.insert(i, r, v)
			changed = true
		}
	}
	return changed
}

// Value is the sum of all entries.
func (g *GCounter) Value() uint64 {
	var s uint64
	for _, n := range g.ns {
		s += uint64(n)
	}
	return s
}

// Entries returns the entries sorted by replica, in a new slice.
func (g *GCounter) Entries() []Count { return g.appendTo(nil) }

// appendTo appends the entries to dst, sorted by replica.
func (g *GCounter) appendTo(dst []Count) []Count {
	n := len(dst)
	dst = slices.Grow(dst, len(g.ids))[:n+len(g.ids)]
	out, ns := dst[n:], g.ns[:len(g.ids)]
	for i, r := range g.ids {
		out[i] = Count{Replica: r, N: uint64(ns[i])}
	}
	return dst
}

// Len is the number of replicas with an entry.
func (g *GCounter) Len() int { return len(g.ids) }

// Clone returns an independent copy.
func (g GCounter) Clone() GCounter {
	if len(g.ids) == 0 {
		return GCounter{}
	}
	return GCounter{ids: slices.Clone(g.ids), ns: slices.Clone(g.ns)}
}

// Equal reports whether both counters hold the same entries.
func (g *GCounter) Equal(o *GCounter) bool {
	return slices.Equal(g.ids, o.ids) && slices.Equal(g.ns, o.ns)
}

// PNCounter is a counter that can go down: a plus and a minus GCounter.
type PNCounter struct {
	P, N GCounter
}

// Inc adds n on replica r's plus side.
func (p *PNCounter) Inc(r ReplicaID, n uint64) { p.P.Add(r, n) }

// Dec adds n on replica r's minus side.
func (p *PNCounter) Dec(r ReplicaID, n uint64) { p.N.Add(r, n) }

// Merge folds o into p and reports whether p changed.
func (p *PNCounter) Merge(o PNCounter) bool {
	a := p.P.Merge(o.P)
	b := p.N.Merge(o.N)
	return a || b
}

// Value is plus minus minus. It can be negative while a minus has arrived
// before the plus it cancels; readers of totals clamp at zero.
func (p *PNCounter) Value() int64 {
	return int64(p.P.Value()) - int64(p.N.Value())
}
