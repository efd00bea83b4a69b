package crdt

import (
	"cmp"
	"encoding/binary"
	"slices"
)

// aggCell is one cell's aggregate entries: a value per group, the group
// named by its index in the state's table of groups (aggTable). A cell of
// a ring of 300 data centers holds about 300 entries, every one a G-counter
// entry merged by max like any other; kept as Counts (16 bytes each) a busy
// room would take five times its budget on every node. So the entries are
// packed in a byte string, ascending by index, as runs of consecutive
// indexes (the groups of a ring's data centers, interned as they arrive,
// mostly follow each other in every cell): a run is the uvarint gap from
// the end of the run before, the uvarint number of its entries, and their
// values as uvarints. A value under 128 takes one byte. A room's map holds
// the cells themselves, not pointers to them: one allocation a cell fewer.
type aggCell struct {
	b []byte
}

// aggEntry is one entry of a cell, decoded.
type aggEntry struct {
	idx uint32
	v   uint64
}

// aggRuns reads a cell's entries in order: every reader of a cell goes
// through it.
type aggRuns struct {
	b    []byte
	off  int
	idx  uint32 // the index of the next entry
	left uint64 // entries left in the run
	end  uint32 // the index after the run
}

// next returns the next entry, where its value's bytes are (from, to),
// and false when there is none.
func (r *aggRuns) next() (idx uint32, v uint64, from, to int, ok bool) {
	for r.left == 0 {
		if r.off >= len(r.b) {
			return 0, 0, 0, 0, false
		}
		gap, k := binary.Uvarint(r.b[r.off:])
		r.off += k
		n, k := binary.Uvarint(r.b[r.off:])
		r.off += k
		r.idx, r.left = r.end+uint32(gap), n
		r.end = r.idx + uint32(n)
	}
	from = r.off
	v, k := binary.Uvarint(r.b[r.off:])
	r.off += k
	idx = r.idx
	r.idx++
	r.left--
	return idx, v, from, r.off, true
}

// each calls fn with every entry, ascending by index.
func (c *aggCell) each(fn func(idx uint32, v uint64)) {
	r := aggRuns{b: c.b}
	for idx, v, _, _, ok := r.next(); ok; idx, v, _, _, ok = r.next() {
		fn(idx, v)
	}
}

// count is the number of entries.
func (c *aggCell) count() int {
	n := 0
	c.each(func(uint32, uint64) { n++ })
	return n
}

// find returns the value of index idx and where its bytes are (from, to),
// or ok false.
func (c *aggCell) find(idx uint32) (v uint64, from, to int, ok bool) {
	r := aggRuns{b: c.b}
	for {
		i, v, from, to, ok := r.next()
		switch {
		case !ok || i > idx:
			return 0, 0, 0, false
		case i == idx:
			return v, from, to, true
		}
	}
}

// get returns the entry of index idx.
func (c *aggCell) get(idx uint32) uint64 {
	v, _, _, _ := c.find(idx)
	return v
}

// observe keeps the larger of the entry of index idx and v, and reports
// whether the cell changed. A larger value of the same length is written
// in place; anything else packs the cell afresh.
func (c *aggCell) observe(idx uint32, v uint64) bool {
	if v == 0 {
		return false
	}
	old, from, to, ok := c.find(idx)
	if ok && v <= old {
		return false
	}
	if ok {
		var buf [binary.MaxVarintLen64]byte
		if n := binary.PutUvarint(buf[:], v); n == to-from {
			copy(c.b[from:to], buf[:n])
			return true
		}
	}
	c.merge([]aggEntry{{idx, v}})
	return true
}

// raises reports whether some entry of in (ascending by index) is larger
// than the cell's, without decoding the cell into memory: a push-pull
// between nodes in step merges every cell and changes none.
func (c *aggCell) raises(in []aggEntry) bool {
	r := aggRuns{b: c.b}
	j := 0
	for idx, v, _, _, ok := r.next(); ok && j < len(in); idx, v, _, _, ok = r.next() {
		for ; j < len(in) && in[j].idx < idx; j++ {
			if in[j].v > 0 {
				return true // an index the cell lacks
			}
		}
		if j < len(in) && in[j].idx == idx {
			if in[j].v > v {
				return true
			}
			j++
		}
	}
	for ; j < len(in); j++ {
		if in[j].v > 0 {
			return true
		}
	}
	return false
}

// merge keeps, for each entry of in (ascending by index, one per index),
// the larger of it and the cell's, and returns the entries of in that
// changed the cell (sharing in's array), packing the cell once.
func (c *aggCell) merge(in []aggEntry) []aggEntry {
	if !c.raises(in) {
		return nil
	}
	have := make([]aggEntry, 0, len(c.b))
	c.each(func(idx uint32, v uint64) { have = append(have, aggEntry{idx, v}) })
	out := make([]aggEntry, 0, len(have)+len(in))
	changed := in[:0]
	i, j := 0, 0
	for i < len(have) || j < len(in) {
		switch {
		case j == len(in) || (i < len(have) && have[i].idx < in[j].idx):
			out = append(out, have[i])
			i++
		case i == len(have) || in[j].idx < have[i].idx:
			if in[j].v > 0 {
				out = append(out, in[j])
				changed = append(changed, in[j])
			}
			j++
		default:
			e := have[i]
			if in[j].v > e.v {
				e.v = in[j].v
				changed = append(changed, in[j])
			}
			out = append(out, e)
			i++
			j++
		}
	}
	if len(changed) > 0 {
		c.pack(out)
	}
	return changed
}

// pack writes entries (ascending by index) as the cell, in a byte string
// of its exact size: a cell is packed afresh only when it grows.
func (c *aggCell) pack(es []aggEntry) {
	var buf []byte
	var end uint32
	for i := 0; i < len(es); {
		j := i + 1
		for j < len(es) && es[j].idx == es[j-1].idx+1 {
			j++
		}
		buf = binary.AppendUvarint(buf, uint64(es[i].idx-end))
		buf = binary.AppendUvarint(buf, uint64(j-i))
		for _, e := range es[i:j] {
			buf = binary.AppendUvarint(buf, e.v)
		}
		end = es[j-1].idx + 1
		i = j
	}
	c.b = slices.Clip(buf)
}

func (c aggCell) clone() aggCell { return aggCell{b: slices.Clone(c.b)} }

// sortAggEntries orders entries by index, keeping the largest value of an
// index given twice.
func sortAggEntries(es []aggEntry) []aggEntry {
	slices.SortFunc(es, func(a, b aggEntry) int { return cmp.Or(cmp.Compare(a.idx, b.idx), cmp.Compare(b.v, a.v)) })
	return slices.CompactFunc(es, func(a, b aggEntry) bool { return a.idx == b.idx })
}

// aggTable is a state's table of the groups its aggregate entries name: an
// index for each id seen in an entry or a group, and what is known of the
// group (nil until its replicas arrive). Indexes are never reused while an
// entry may name them; pruneGroups builds the table afresh.
type aggTable struct {
	ids  map[ReplicaID]uint32
	recs []aggRec
	// dcs are the data centers of the groups held, by index, and dcIdx
	// their indexes by name; byReplica lists the indexes in the order of
	// their DatacenterReplica, in which a snapshot lists counts.
	dcs       []aggDC
	dcIdx     map[string]int32
	byReplica []int32
}

// aggRec is one id of the table.
type aggRec struct {
	id ReplicaID
	g  *group
}

// aggDC is one data center of the table.
type aggDC struct {
	name    string
	replica ReplicaID // DatacenterReplica(name)
}

// index returns the index of id, adding it when create is set (ok false
// when it is not and id has none).
func (t *aggTable) index(id ReplicaID, create bool) (uint32, bool) {
	if i, ok := t.ids[id]; ok {
		return i, true
	}
	if !create {
		return 0, false
	}
	if t.ids == nil {
		t.ids = map[ReplicaID]uint32{}
	}
	i := uint32(len(t.recs))
	t.ids[id] = i
	t.recs = append(t.recs, aggRec{id: id})
	return i, true
}

// dc returns the index of data center name, adding it.
func (t *aggTable) dc(name string) int32 {
	if i, ok := t.dcIdx[name]; ok {
		return i
	}
	if t.dcIdx == nil {
		t.dcIdx = map[string]int32{}
	}
	i := int32(len(t.dcs))
	t.dcIdx[name] = i
	t.dcs = append(t.dcs, aggDC{name: name, replica: DatacenterReplica(name)})
	t.byReplica = append(t.byReplica, i)
	slices.SortFunc(t.byReplica, func(a, b int32) int { return cmp.Compare(t.dcs[a].replica, t.dcs[b].replica) })
	return i
}
