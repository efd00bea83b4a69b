package crdt

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"
)

// Data centers. A data center (a point of presence: the machines of one
// site) keeps its replicas' entries to itself; what other data centers see
// of it is one aggregate entry per cell, the sum of its replicas' entries,
// written by a few of its members (its carriers) and max-merged like any
// other entry.
//
// The sum cannot be written under one id for the data center. Two carriers
// on the two sides of a split inside the data center each see their own
// side's entries grow and the other side's stand still; under one id, the
// two partial sums would be max-merged, not added, and the data center's
// figure would fall short by the smaller side's growth for as long as the
// split lasts. So an aggregate entry names the set of replicas it sums (a
// Group): a carrier sums the replicas of the members it can reach under
// one group, and every other replica with an entry in the cell (crashed,
// restarted, left, or across a split) under a group of its own. Entries of
// one group are max-merged (each is a sum of the same replicas' entries,
// which only grow, so the largest is the most recent); entries of different
// groups are combined by the largest sum over groups that share no replica
// (groupPacking). No choice of disjoint groups sums an entry twice, so the
// figure never exceeds the true sum of the replicas' entries; and once one
// carrier has heard every entry and summed every replica, its groups give
// the true sum. In the split, the two sides' carriers write {a, b} and {c}
// (each side's own) and each other's replicas as groups of their own; the
// reader adds {a, b} and {c}, which together are the whole data center.
//
// In steady state (no split, no member lost within the retention window)
// a cell carries one aggregate entry per data center.

// MaxDatacenterName bounds a data center's name, and MaxGroupReplicas the
// replicas one group may sum (a data center's live members: a few dozen).
const (
	MaxDatacenterName = 128
	MaxGroupReplicas  = 1024
)

// Group is a set of replicas of one data center whose entries one
// aggregate entry sums.
type Group struct {
	Datacenter string
	Replicas   []ReplicaID // ascending, distinct, none zero
}

// NewGroup is the group of data center dc summing replicas (in any order,
// repeats and zeros ignored).
func NewGroup(dc string, replicas []ReplicaID) Group {
	rs := make([]ReplicaID, 0, len(replicas))
	for _, r := range replicas {
		if r != 0 {
			rs = append(rs, r)
		}
	}
	slices.Sort(rs)
	return Group{Datacenter: dc, Replicas: slices.Compact(rs)}
}

// ID is the id the group's aggregate entries are written under. Its high 32
// bits are the data center's (datacenterHash), so that a cell's aggregate
// entries, kept sorted by id, lie together per data center; the low 32 bits
// are the set's and never zero.
func (g Group) ID() ReplicaID {
	h := fnv.New32a()
	var b [8]byte
	for _, r := range g.Replicas {
		binary.BigEndian.PutUint64(b[:], uint64(r))
		_, _ = h.Write(b[:])
	}
	low := h.Sum32()
	if low == 0 {
		low = 1
	}
	return ReplicaID(uint64(datacenterHash(g.Datacenter))<<32 | uint64(low))
}

// datacenterHash is the high half of the ids of a data center's groups.
func datacenterHash(dc string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte("dc\x00"))
	_, _ = h.Write([]byte(dc))
	return h.Sum32()
}

// DatacenterReplica is the replica a data center other than this node's
// appears as in a snapshot's per-replica counts (MinuteCounts.ByReplica):
// the admission policy splits the slots between data centers by their
// traffic as it splits them between the nodes of one.
func DatacenterReplica(dc string) ReplicaID {
	h := fnv.New64a()
	_, _ = h.Write([]byte("datacenter\x00"))
	_, _ = h.Write([]byte(dc))
	id := ReplicaID(h.Sum64())
	if id == 0 {
		id = 1
	}
	return id
}

// Check reports why g cannot be a group a carrier writes, or nil: a data
// center's name and at least one replica, within the bounds, replicas
// ascending and distinct, none zero.
func (g Group) Check() error {
	switch {
	case g.Datacenter == "" || len(g.Datacenter) > MaxDatacenterName:
		return fmt.Errorf("group of data center %q: the name must be 1 to %d bytes", g.Datacenter, MaxDatacenterName)
	case len(g.Replicas) == 0 || len(g.Replicas) > MaxGroupReplicas:
		return fmt.Errorf("group of data center %q sums %d replicas, must be 1 to %d", g.Datacenter, len(g.Replicas), MaxGroupReplicas)
	}
	for i, r := range g.Replicas {
		if r == 0 || (i > 0 && g.Replicas[i-1] >= r) {
			return fmt.Errorf("group of data center %q: replicas not ascending and non-zero at %d", g.Datacenter, i)
		}
	}
	return nil
}

// CheckAggregate returns an *OutOfBounds when a peer's aggregate entry e,
// summing replicas replicas, cannot be true at nowMillis: dated beyond the
// allowed clock offset like any entry (CheckEntry), or larger than
// MaxEntryValue for each replica summed. A group of several replicas may
// legitimately sum more than one node could count; an entry whose group
// is not known is checked as a group of MaxGroupReplicas.
func CheckAggregate(e Entry, replicas int, nowMillis int64) error {
	if latest := LatestMinute(e.Key.Kind, nowMillis); e.Key.Minute > latest {
		return &OutOfBounds{RefusedFutureMinute, fmt.Sprintf("aggregate of room %q kind %d minute %d is %d minutes past the latest allowed (%d)", e.Key.Room, e.Key.Kind, e.Key.Minute, e.Key.Minute-latest, latest)}
	}
	if bound := uint64(MaxEntryValue) * uint64(max(replicas, 1)); e.Value > bound {
		return &OutOfBounds{RefusedImpossibleValue, fmt.Sprintf("aggregate over %d replicas: room %q kind %d minute %d value %d > %d", replicas, e.Key.Room, e.Key.Kind, e.Key.Minute, e.Value, bound)}
	}
	return nil
}

// group is a group held by a state, with what reading it needs at hand.
type group struct {
	Group
	dc ReplicaID // DatacenterReplica(Datacenter)
}

// SetDatacenter names the data center this state's node belongs to: its
// snapshots sum that data center's replicas' own entries and every other
// data center's aggregates, never the aggregates of its own. The empty
// name (the default) is a node that is a data center of its own: it holds
// no aggregates, and every entry it holds is summed as today.
func (s *State) SetDatacenter(dc string) {
	s.local = dc
	s.localHash = datacenterHash(dc)
}

// Datacenter is the data center named by SetDatacenter.
func (s *State) Datacenter() string { return s.local }

// AddGroup keeps group g (which must pass Check) and reports whether it was
// new here. A group's id is derived from its contents, so a group is never
// replaced: it is held for as long as an aggregate entry names it.
func (s *State) AddGroup(g Group) bool {
	id := g.ID()
	if _, ok := s.groups[id]; ok {
		return false
	}
	if s.groups == nil {
		s.groups = map[ReplicaID]*group{}
	}
	s.groups[id] = &group{Group: Group{Datacenter: g.Datacenter, Replicas: slices.Clone(g.Replicas)}, dc: DatacenterReplica(g.Datacenter)}
	return true
}

// Datacenters lists, sorted, the data centers other than this state's
// whose groups it holds: those whose figures it reads.
func (s *State) Datacenters() []string {
	seen := map[string]bool{}
	var out []string
	for _, g := range s.groups {
		if g.Datacenter != s.local && !seen[g.Datacenter] {
			seen[g.Datacenter] = true
			out = append(out, g.Datacenter)
		}
	}
	slices.Sort(out)
	return out
}

// Group returns the group of id, when held.
func (s *State) Group(id ReplicaID) (*Group, bool) {
	g, ok := s.groups[id]
	if !ok {
		return nil, false
	}
	return &g.Group, true
}

// ApplyAggregate merges one aggregate entry (Replica is its group's id) and
// reports whether the state changed. An entry whose group is not held yet
// is kept all the same and counts once its group arrives.
func (s *State) ApplyAggregate(e Entry) bool {
	if e.Value == 0 || e.Key.Minute < s.horizon || e.Key.Room == "" || !e.Key.Kind.Valid() || e.Replica == 0 {
		return false
	}
	return s.aggCell(e.Key, true).Observe(e.Replica, e.Value)
}

// Aggregate returns the aggregate entry of group id in cell k.
func (s *State) Aggregate(k Key, id ReplicaID) uint64 {
	if c := s.aggCell(k, false); c != nil {
		return c.Get(id)
	}
	return 0
}

func (s *State) aggCell(k Key, create bool) *GCounter {
	r := s.room(k.Room, create)
	if r == nil {
		return nil
	}
	ck := cellKey{k.Kind, k.Bucket, k.Minute}
	c := r.aggs[ck]
	if c == nil && create {
		if r.aggs == nil {
			r.aggs = map[cellKey]*GCounter{}
		}
		c = &GCounter{}
		r.aggs[ck] = c
	}
	return c
}

// Carry is the carrier's write: for each cell of keys (every cell holding
// entries of this state's replicas when keys is nil), the sum of the
// entries of members under NewGroup(dc, members), and the entry of every
// other replica with one in the cell under a group of its own. members are
// the replicas of the data center's members the carrier can reach, itself
// included; every entry this state holds is taken as one of data center
// dc's. It returns what changed here, for the carrier to send: the
// aggregate entries that grew, and the groups they name (a peer needs a
// group to read its entries, and may have missed it when it was new).
func (s *State) Carry(dc string, members []ReplicaID, keys []Key) Delta {
	var out Delta
	m := NewGroup(dc, members)
	mid := m.ID()
	inM := func(r ReplicaID) bool { _, ok := slices.BinarySearch(m.Replicas, r); return ok }
	named := map[ReplicaID]bool{}
	write := func(k Key, g Group, id ReplicaID, v uint64) {
		if v == 0 {
			return
		}
		s.AddGroup(g)
		if !s.aggCell(k, true).Observe(id, v) {
			return
		}
		out.Aggregates = append(out.Aggregates, Entry{Key: k, Replica: id, Value: v})
		if !named[id] {
			named[id] = true
			out.Groups = append(out.Groups, s.groups[id].Group)
		}
	}
	carry := func(k Key, c *GCounter) {
		if k.Minute < s.horizon {
			return
		}
		var sum uint64
		for _, e := range c.c {
			if inM(e.Replica) {
				sum += e.N
				continue
			}
			g := Group{Datacenter: dc, Replicas: []ReplicaID{e.Replica}}
			write(k, g, g.ID(), e.N)
		}
		if len(m.Replicas) > 0 {
			write(k, m, mid, sum)
		}
	}
	if keys != nil {
		for _, k := range keys {
			if c := s.cell(k, false); c != nil {
				carry(k, c)
			}
		}
		return out
	}
	for _, name := range s.Rooms() {
		r := s.rooms[name]
		for _, ck := range sortedKeys(r.cells) {
			carry(Key{name, ck.Kind, ck.Bucket, ck.Minute}, r.cells[ck])
		}
	}
	return out
}

// remoteCounts appends to dst, for the aggregate cell g, one count per data
// center other than this state's: the data center's figure in the cell
// (groupPacking of its groups' entries) under DatacenterReplica. Entries of
// groups not held yet are left out when they are alone for their data
// center, and taken as overlapping every other group of it when not. The
// counts are in no particular order.
func (s *State) remoteCounts(dst []Count, g *GCounter, scratch *[]packItem) []Count {
	es := g.c
	for i := 0; i < len(es); {
		hi := uint32(uint64(es[i].Replica) >> 32)
		j := i + 1
		for j < len(es) && uint32(uint64(es[j].Replica)>>32) == hi {
			j++
		}
		run := es[i:j]
		i = j
		if s.local != "" && hi == s.localHash && s.runOfLocal(run) {
			continue
		}
		if len(run) == 1 {
			if gr := s.groups[run[0].Replica]; gr != nil && gr.Datacenter != s.local {
				dst = append(dst, Count{Replica: gr.dc, N: run[0].N})
			}
			continue
		}
		dst = s.packRun(dst, run, scratch)
	}
	return dst
}

// runOfLocal reports whether a run of entries that share the high half of
// this state's data center's ids is all this data center's own.
func (s *State) runOfLocal(run []Count) bool {
	for _, e := range run {
		if gr := s.groups[e.Replica]; gr == nil || gr.Datacenter != s.local {
			return false
		}
	}
	return true
}

// packRun appends the figures of the data centers of a run of aggregate
// entries whose ids share their high half (almost always one data center).
func (s *State) packRun(dst []Count, run []Count, scratch *[]packItem) []Count {
	items := (*scratch)[:0]
	var unknown []Count
	for _, e := range run {
		gr := s.groups[e.Replica]
		if gr == nil {
			unknown = append(unknown, e)
			continue
		}
		if gr.Datacenter == s.local {
			continue
		}
		items = append(items, packItem{g: gr, n: e.N})
	}
	for len(items) > 0 {
		// The data center of the first item, and every other item of it.
		dc := items[0].g.dc
		var of, rest []packItem
		for _, it := range items {
			if it.g.dc == dc {
				of = append(of, it)
			} else {
				rest = append(rest, it)
			}
		}
		// An entry of a group not held yet may overlap any group of the
		// data center: it stands alone in the packing.
		for _, e := range unknown {
			of = append(of, packItem{n: e.N})
		}
		unknown = nil
		dst = append(dst, Count{Replica: dc, N: groupPacking(of)})
		items = append(items[:0], rest...)
	}
	*scratch = items
	return dst
}

// packItem is one group's entry in a cell: g nil for a group not held,
// which overlaps every other.
type packItem struct {
	g *group
	n uint64
}

// maxPacked is how many of a data center's groups in one cell are packed;
// past it the largest are (any choice of disjoint groups is a safe
// figure, and one data center writes a handful of groups per cell).
const maxPacked = 16

// groupPacking is the largest sum of entries over groups that share no
// replica: the figure of one data center in one cell.
func groupPacking(items []packItem) uint64 {
	if len(items) == 1 {
		return items[0].n
	}
	slices.SortFunc(items, func(a, b packItem) int {
		switch {
		case a.n > b.n:
			return -1
		case a.n < b.n:
			return 1
		}
		return 0
	})
	if len(items) > maxPacked {
		items = items[:maxPacked]
	}
	// Branch and bound over taking each group or not, largest first.
	suffix := make([]uint64, len(items)+1)
	for i := len(items) - 1; i >= 0; i-- {
		suffix[i] = suffix[i+1] + items[i].n
	}
	var best uint64
	var taken []*group
	var walk func(i int, sum uint64)
	walk = func(i int, sum uint64) {
		if sum > best {
			best = sum
		}
		if i == len(items) || sum+suffix[i] <= best {
			return
		}
		if fits(items[i].g, taken) {
			taken = append(taken, items[i].g)
			walk(i+1, sum+items[i].n)
			taken = taken[:len(taken)-1]
		}
		walk(i+1, sum)
	}
	walk(0, 0)
	return best
}

// fits reports whether g shares no replica with any of taken; a group not
// held (nil) fits nothing and nothing fits it.
func fits(g *group, taken []*group) bool {
	for _, t := range taken {
		if g == nil || t == nil || overlap(g.Replicas, t.Replicas) {
			return false
		}
	}
	return true
}

// overlap reports whether two ascending lists share an element.
func overlap(a, b []ReplicaID) bool {
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] == b[j]:
			return true
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return false
}

// pruneGroups drops the groups no aggregate entry names any more.
func (s *State) pruneGroups() {
	if len(s.groups) == 0 {
		return
	}
	used := make(map[ReplicaID]bool, len(s.groups))
	for _, r := range s.rooms {
		for _, g := range r.aggs {
			for _, e := range g.c {
				used[e.Replica] = true
			}
		}
	}
	for id := range s.groups {
		if !used[id] {
			delete(s.groups, id)
		}
	}
}

// sortedKeys lists a room's cells in the order Full sends them.
func sortedKeys(cells map[cellKey]*GCounter) []cellKey {
	keys := make([]cellKey, 0, len(cells))
	for ck := range cells {
		keys = append(keys, ck)
	}
	slices.SortFunc(keys, compareCells)
	return keys
}
