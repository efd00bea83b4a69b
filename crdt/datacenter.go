package crdt

import (
	"cmp"
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

// ID is the id the group's aggregate entries are written under: a hash
// of the data center and the replicas, never zero.
func (g Group) ID() ReplicaID {
	h := fnv.New64a()
	_, _ = h.Write([]byte("group\x00"))
	_, _ = h.Write([]byte(g.Datacenter))
	var b [9]byte
	for _, r := range g.Replicas {
		binary.BigEndian.PutUint64(b[1:], uint64(r))
		_, _ = h.Write(b[:])
	}
	id := ReplicaID(h.Sum64())
	if id == 0 {
		id = 1
	}
	return id
}

// DefaultCarriers is how many members of a data center carry its figures
// to the others unless configured otherwise: each relays the other data
// centers' figures into its data center, so a member gets every batch
// that many times (the gossip node's Config.Carriers, which the simulator
// models).
const DefaultCarriers = 2

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

// group is a group held by a state, with its data center's index in the
// state's table (aggTable.dcs).
type group struct {
	Group
	dc int32
}

// SetDatacenter names the data center this state's node belongs to: its
// snapshots sum that data center's replicas' own entries and every other
// data center's aggregates, never the aggregates of its own. The empty
// name (the default) is a node that is a data center of its own: it holds
// no aggregates, and every entry it holds is summed as today.
func (s *State) SetDatacenter(dc string) { s.local = dc }

// Datacenter is the data center named by SetDatacenter.
func (s *State) Datacenter() string { return s.local }

// AddGroup keeps group g (which must pass Check) and reports whether it was
// new here. A group's id is derived from its contents, so a group is never
// replaced: it is held for as long as an aggregate entry names it.
func (s *State) AddGroup(g Group) bool {
	i, _ := s.agg.index(g.ID(), true)
	if s.agg.recs[i].g != nil {
		return false
	}
	s.agg.recs[i].g = &group{Group: Group{Datacenter: g.Datacenter, Replicas: slices.Clone(g.Replicas)}, dc: s.agg.dc(g.Datacenter)}
	return true
}

// Group returns the group of id, when held.
func (s *State) Group(id ReplicaID) (*Group, bool) {
	if i, ok := s.agg.index(id, false); ok && s.agg.recs[i].g != nil {
		return &s.agg.recs[i].g.Group, true
	}
	return nil, false
}

// Groups returns the groups held, sorted by id.
func (s *State) Groups() []Group {
	var out []Group
	for _, r := range s.agg.recs {
		if r.g != nil {
			out = append(out, r.g.Group)
		}
	}
	slices.SortFunc(out, func(a, b Group) int { return cmp.Compare(a.ID(), b.ID()) })
	return out
}

// Datacenters lists, sorted, the data centers other than this state's
// whose groups it holds: those whose figures it reads.
func (s *State) Datacenters() []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range s.agg.recs {
		if r.g != nil && r.g.Datacenter != s.local && !seen[r.g.Datacenter] {
			seen[r.g.Datacenter] = true
			out = append(out, r.g.Datacenter)
		}
	}
	slices.Sort(out)
	return out
}

// DatacenterNodes returns, for each data center other than this state's
// whose groups it holds, how many nodes it has: the replicas of its
// largest group. A carrier sums the members it reaches under one group, so
// the largest group is the data center as its carrier last saw it whole;
// a member lost or a split only adds smaller groups.
func (s *State) DatacenterNodes() map[string]int {
	out := map[string]int{}
	for _, r := range s.agg.recs {
		if r.g != nil && r.g.Datacenter != s.local {
			out[r.g.Datacenter] = max(out[r.g.Datacenter], len(r.g.Replicas))
		}
	}
	return out
}

// OtherDatacenterNodes is how many nodes the other data centers have, by
// DatacenterNodes: with the members of its own data center, the nodes a
// ring's limits are divided between (the admission policy's Room.Nodes).
// Another data center's figures stand as last heard, so its nodes count as
// reachable. Zero for a state that names no data center.
func (s *State) OtherDatacenterNodes() int {
	if s.local == "" {
		return 0
	}
	k := 0
	for _, v := range s.DatacenterNodes() {
		k += v
	}
	return k
}

// ApplyAggregate merges one aggregate entry (Replica is its group's id) and
// reports whether the state changed. An entry whose group is not held yet
// is kept all the same and counts once its group arrives.
func (s *State) ApplyAggregate(e Entry) bool {
	if e.Value == 0 || e.Key.Minute < s.horizon || e.Key.Room == "" || !e.Key.Kind.Valid() || e.Replica == 0 {
		return false
	}
	i, _ := s.agg.index(e.Replica, true)
	return s.observeAgg(e.Key, i, e.Value)
}

// applyAggregates merges aggregate entries of one cell (a push-pull state
// lists a cell's entries together) in one pass over the cell, and appends
// those that changed it to dst.
func (s *State) applyAggregates(es []Entry, dst []Entry) []Entry {
	if len(es) == 1 {
		if s.ApplyAggregate(es[0]) {
			dst = append(dst, es[0])
		}
		return dst
	}
	k := es[0].Key
	if k.Minute < s.horizon || k.Room == "" || !k.Kind.Valid() {
		return dst
	}
	in := make([]aggEntry, 0, len(es))
	for _, e := range es {
		if e.Value > 0 && e.Replica != 0 {
			i, _ := s.agg.index(e.Replica, true)
			in = append(in, aggEntry{i, e.Value})
		}
	}
	for _, e := range s.mergeCell(k, sortAggEntries(in)) {
		dst = append(dst, Entry{Key: k, Replica: s.agg.recs[e.idx].id, Value: e.v})
	}
	return dst
}

// mergeCell merges entries (ascending by index, one per index) into cell k
// and returns those that changed it.
func (s *State) mergeCell(k Key, in []aggEntry) []aggEntry {
	if len(in) == 0 {
		return nil
	}
	r := s.room(k.Room, true)
	if r.aggs == nil {
		r.aggs = map[cellKey]aggCell{}
	}
	ck := cellKey{k.Kind, k.Bucket, k.Minute}
	c := r.aggs[ck]
	changed := c.merge(in)
	if len(changed) > 0 {
		r.aggs[ck] = c
	}
	return changed
}

// observeAgg merges value v of the group of index idx into cell k and
// reports whether it changed.
func (s *State) observeAgg(k Key, idx uint32, v uint64) bool {
	r := s.room(k.Room, true)
	if r.aggs == nil {
		r.aggs = map[cellKey]aggCell{}
	}
	ck := cellKey{k.Kind, k.Bucket, k.Minute}
	c := r.aggs[ck]
	if !c.observe(idx, v) {
		if len(c.b) == 0 && len(r.cells) == 0 && len(r.aggs) == 0 {
			delete(s.rooms, k.Room)
		}
		return false
	}
	r.aggs[ck] = c
	return true
}

// Aggregate returns the aggregate entry of group id in cell k.
func (s *State) Aggregate(k Key, id ReplicaID) uint64 {
	i, ok := s.agg.index(id, false)
	if r := s.rooms[k.Room]; ok && r != nil {
		c := r.aggs[cellKey{k.Kind, k.Bucket, k.Minute}]
		return c.get(i)
	}
	return 0
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
		i, _ := s.agg.index(id, true)
		if !s.observeAgg(k, i, v) {
			return
		}
		out.Aggregates = append(out.Aggregates, Entry{Key: k, Replica: id, Value: v})
		if !named[id] {
			named[id] = true
			out.Groups = append(out.Groups, s.agg.recs[i].g.Group)
		}
	}
	carry := func(k Key, c *GCounter) {
		if k.Minute < s.horizon {
			return
		}
		var sum uint64
		for i, r := range c.ids {
			n := uint64(c.ns[i])
			if inM(r) {
				sum += n
				continue
			}
			g := Group{Datacenter: dc, Replicas: []ReplicaID{r}}
			write(k, g, g.ID(), n)
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

// remoteCounts appends to dst, for the aggregate cell c, one count per data
// center other than this state's: the data center's figure in the cell
// (groupPacking of its groups' entries) under DatacenterReplica, sorted by
// replica. Entries of groups not held yet are left out (a figure without
// them is smaller, never larger, than the truth). rd holds the sums per
// data center between calls.
func (s *State) remoteCounts(dst []Count, c *aggCell, rd *cellReader) []Count {
	if n := len(s.agg.dcs); len(rd.sum) < n {
		rd.sum, rd.cnt = make([]uint64, n), make([]int32, n)
	}
	local := int32(-1)
	if i, ok := s.agg.dcIdx[s.local]; ok && s.local != "" {
		local = i
	}
	rd.touched = rd.touched[:0]
	recs := s.agg.recs
	// The cell's runs, read here rather than through each: a snapshot of
	// a busy room reads every entry of every cell.
	r := aggRuns{b: c.b}
	for idx, v, _, _, ok := r.next(); ok; idx, v, _, _, ok = r.next() {
		g := recs[idx].g
		if g == nil || g.dc == local {
			continue
		}
		if rd.cnt[g.dc] == 0 {
			rd.touched = append(rd.touched, g.dc)
		}
		rd.cnt[g.dc]++
		rd.sum[g.dc] += v
	}
	if len(rd.touched) < 32 {
		slices.SortFunc(rd.touched, func(a, b int32) int { return cmp.Compare(s.agg.dcs[a].replica, s.agg.dcs[b].replica) })
	} else {
		rd.touched = rd.touched[:0]
		for _, d := range s.agg.byReplica {
			if rd.cnt[d] > 0 {
				rd.touched = append(rd.touched, d)
			}
		}
	}
	for _, d := range rd.touched {
		v := rd.sum[d]
		if rd.cnt[d] > 1 {
			// Several groups of one data center: a split, a member lost or
			// a membership changed within the retention window.
			items := rd.pack[:0]
			c.each(func(idx uint32, v uint64) {
				if g := recs[idx].g; g != nil && g.dc == d {
					items = append(items, packItem{g: g, n: v})
				}
			})
			v = groupPacking(items)
			rd.pack = items
		}
		dst = append(dst, Count{Replica: s.agg.dcs[d].replica, N: v})
		rd.sum[d], rd.cnt[d] = 0, 0
	}
	return dst
}

// packItem is one group's entry in a cell.
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
	slices.SortFunc(items, func(a, b packItem) int { return cmp.Compare(b.n, a.n) })
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
		best = max(best, sum)
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

// fits reports whether g shares no replica with any of taken.
func fits(g *group, taken []*group) bool {
	for _, t := range taken {
		if overlap(g.Replicas, t.Replicas) {
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

// appendAggregates appends the aggregate entries of room name, in Full's
// order: by cell, and by group id within a cell.
func (s *State) appendAggregates(dst []Entry, name string) []Entry {
	r := s.rooms[name]
	for _, ck := range sortedKeys(r.aggs) {
		start := len(dst)
		c := r.aggs[ck]
		c.each(func(idx uint32, v uint64) {
			dst = append(dst, Entry{Key{name, ck.Kind, ck.Bucket, ck.Minute}, s.agg.recs[idx].id, v})
		})
		slices.SortFunc(dst[start:], func(a, b Entry) int { return cmp.Compare(a.Replica, b.Replica) })
	}
	return dst
}

// mergeAggregateState folds o's aggregate cells and groups into s (cells
// below s's horizon left out).
func (s *State) mergeAggregateState(o *State) {
	for name, r := range o.rooms {
		for ck, c := range r.aggs {
			if ck.Minute < s.horizon {
				continue
			}
			var in []aggEntry
			c.each(func(idx uint32, v uint64) {
				i, _ := s.agg.index(o.agg.recs[idx].id, true)
				in = append(in, aggEntry{i, v})
			})
			s.mergeCell(Key{name, ck.Kind, ck.Bucket, ck.Minute}, sortAggEntries(in))
		}
	}
	for _, r := range o.agg.recs {
		if r.g != nil {
			s.AddGroup(r.g.Group)
		}
	}
}

// sameAggregates reports whether every aggregate entry of s is held alike
// by o, and whether o holds the group of each as s does.
func (s *State) sameAggregates(o *State) bool {
	for name, r := range s.rooms {
		for ck, c := range r.aggs {
			if len(c.b) == 0 {
				continue
			}
			var oc aggCell
			if or := o.rooms[name]; or != nil {
				oc = or.aggs[ck]
			}
			if oc.count() != c.count() {
				return false
			}
			same := true
			c.each(func(idx uint32, v uint64) {
				rec := s.agg.recs[idx]
				oi, ok := o.agg.index(rec.id, false)
				if !ok || oc.get(oi) != v || (rec.g == nil) != (o.agg.recs[oi].g == nil) {
					same = false
				}
			})
			if !same {
				return false
			}
		}
	}
	return true
}

// pruneGroups drops the groups no aggregate entry names any more, and
// builds the table afresh when most of its ids are no longer named.
func (s *State) pruneGroups() {
	if len(s.agg.recs) == 0 {
		return
	}
	used := make([]bool, len(s.agg.recs))
	inUse := 0
	for _, r := range s.rooms {
		for _, c := range r.aggs {
			c.each(func(idx uint32, _ uint64) {
				if !used[idx] {
					used[idx] = true
					inUse++
				}
			})
		}
	}
	for i := range s.agg.recs {
		if !used[i] {
			s.agg.recs[i].g = nil
		}
	}
	if len(s.agg.recs) <= 2*inUse+64 {
		return
	}
	// Renumber the ids still named, and every cell with them.
	old := s.agg
	s.agg = aggTable{}
	remap := make([]uint32, len(old.recs))
	for i, r := range old.recs {
		if used[i] {
			remap[i], _ = s.agg.index(r.id, true)
			if r.g != nil {
				s.AddGroup(r.g.Group)
			}
		}
	}
	var es []aggEntry
	for _, r := range s.rooms {
		for ck, c := range r.aggs {
			es = es[:0]
			c.each(func(idx uint32, v uint64) { es = append(es, aggEntry{remap[idx], v}) })
			var nc aggCell
			nc.pack(sortAggEntries(es))
			r.aggs[ck] = nc
		}
	}
}

// held is how many groups the table holds.
func (t *aggTable) held() int {
	n := 0
	for _, r := range t.recs {
		if r.g != nil {
			n++
		}
	}
	return n
}

// clone is an independent copy (groups, never changed once made, are
// shared).
func (t *aggTable) clone() aggTable {
	c := aggTable{recs: slices.Clone(t.recs), dcs: slices.Clone(t.dcs)}
	if t.ids != nil {
		c.ids = make(map[ReplicaID]uint32, len(t.ids))
		for k, v := range t.ids {
			c.ids[k] = v
		}
	}
	if t.dcIdx != nil {
		c.dcIdx = make(map[string]int32, len(t.dcIdx))
		for k, v := range t.dcIdx {
			c.dcIdx[k] = v
		}
	}
	return c
}

// sortedKeys lists a room's cells in the order Full sends them.
func sortedKeys[V any](cells map[cellKey]V) []cellKey {
	keys := make([]cellKey, 0, len(cells))
	for ck := range cells {
		keys = append(keys, ck)
	}
	slices.SortFunc(keys, compareCells)
	return keys
}
