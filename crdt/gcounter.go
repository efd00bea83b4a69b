package crdt

import "sort"

// Count is one replica's entry in a counter.
type Count struct {
	Replica ReplicaID
	N       uint64
}

// GCounter is a grow-only counter: one monotone entry per replica, kept sorted
// by replica id. The zero value is an empty counter.
type GCounter struct {
	c []Count
}

func (g *GCounter) find(r ReplicaID) (int, bool) {
	c := g.c
	// Counters hold one entry per node, a few dozen at most; a binary search
	// keeps the lookup cheap without a map per cell.
	i := sort.Search(len(c), func(i int) bool { return c[i].Replica >= r })
	return i, i < len(c) && c[i].Replica == r
}

// Get returns replica r's entry.
func (g *GCounter) Get(r ReplicaID) uint64 {
	if i, ok := g.find(r); ok {
		return g.c[i].N
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
		g.c[i].N += n
		return g.c[i].N
	}
	if n == 0 {
		return 0
	}
	g.insert(i, Count{Replica: r, N: n})
	return n
}

// Observe merges one entry: it keeps the larger of the stored and the given
// value, and reports whether the counter changed.
func (g *GCounter) Observe(r ReplicaID, v uint64) bool {
	i, ok := g.find(r)
	if ok {
		if v <= g.c[i].N {
			return false
		}
		g.c[i].N = v
		return true
	}
	if v == 0 {
		return false
	}
	g.insert(i, Count{Replica: r, N: v})
	return true
}

// insert puts e at index i. A full slice grows by a sixteenth (and two), not
// by append's doubling: a cell gains one entry per node and then stays, so
// what doubling leaves unused (up to half of every cell of a ring whose size
// is just past a power of two) would be held for the cell's whole life. The
// extra copies cost a few dozen entries once per cell.
func (g *GCounter) insert(i int, e Count) {
	if len(g.c) == cap(g.c) {
		c := make([]Count, len(g.c), len(g.c)+len(g.c)/16+2)
		copy(c, g.c)
		g.c = c
	}
	g.c = g.c[:len(g.c)+1]
	copy(g.c[i+1:], g.c[i:])
	g.c[i] = e
}

// Merge folds o into g (entry-wise max) and reports whether g changed.
func (g *GCounter) Merge(o GCounter) bool {
	changed := false
	for _, e := range o.c {
		if g.Observe(e.Replica, e.N) {
			changed = true
		}
	}
	return changed
}

// Value is the sum of all entries.
func (g *GCounter) Value() uint64 {
	var s uint64
	for _, e := range g.c {
		s += e.N
	}
	return s
}

// Entries returns the entries sorted by replica. The slice must not be
// modified.
func (g *GCounter) Entries() []Count { return g.c }

// Len is the number of replicas with an entry.
func (g *GCounter) Len() int { return len(g.c) }

// Clone returns an independent copy.
func (g GCounter) Clone() GCounter {
	if len(g.c) == 0 {
		return GCounter{}
	}
	return GCounter{c: append([]Count(nil), g.c...)}
}

// Equal reports whether both counters hold the same entries.
func (g *GCounter) Equal(o *GCounter) bool {
	if len(g.c) != len(o.c) {
		return false
	}
	for i := range g.c {
		if g.c[i] != o.c[i] {
			return false
		}
	}
	return true
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
