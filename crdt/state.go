package crdt

import (
	"bytes"
	"cmp"
	"slices"
)

// Kind says what a counter cell counts.
type Kind uint8

// The counter kinds of a room. PN counters are two kinds, plus and minus, so
// every cell is a plain G-counter.
const (
	Arrivals Kind = 1 // distinct visitors first seen, per node per minute
	Admitted Kind = 2 // new admissions, per node per minute
	// ActivePlus and ActiveMinus counted sessions by the minute of their
	// latest request. They are no longer written (sessions are counted by
	// expiry in SessionPlus and SessionMinus) and no reader sums them; cells
	// from an older peer are merged and pruned like any other.
	ActivePlus   Kind = 3
	ActiveMinus  Kind = 4
	WaitingPlus  Kind = 5 // queued visitors counted in this (bucket, minute)
	WaitingMinus Kind = 6 // queued visitors moved out of this (bucket, minute)
	// Revocations records sessions ended by an origin command, one cell per
	// session: Bucket holds the session's id, Minute the minute of the
	// revocation. Every node learns them, so a revoked cookie replayed at
	// any node is refused; they are pruned with the rest once every token
	// they could match has expired.
	Revocations Kind = 7
	// SessionPlus and SessionMinus count admitted sessions by when they
	// expire, so a session stays counted for as long as its cookie lets the
	// visitor back in and not to the end of a minute bucket. Bucket holds
	// the expiry second, rounded up to the room's session slice; Minute is
	// the unix minute of that second, so a cell is pruned like any other
	// once its minute has passed. Cells of these kinds are dated in the
	// future by up to the longest session (MaxSessionLead).
	//
	// An admission adds one to SessionPlus of its cell; a renewal that
	// lands in another slice adds one to SessionMinus of the old cell and
	// one to SessionPlus of the new; a revocation adds one to SessionMinus
	// of the cell the session is counted in. A snapshot at second t sums
	// plus minus minus over the cells whose expiry second is after t
	// (RoomSnapshot.Active); policy.Count is the one place that writes
	// them.
	SessionPlus  Kind = 8
	SessionMinus Kind = 9
	// QueuedAt counts the visitors who joined the queue of an arrival
	// bucket by when inside the bucket's minute they came: Bucket holds
	// the unix second at which their slot of ArrivalSlotSeconds begins,
	// Minute the arrival bucket. A visitor is counted once per bucket it
	// joins, never taken off, so the cells are the bucket's arrival
	// order: with the waiting count they tell how many of those still
	// waiting in a bucket came before a given visitor of it. They are
	// pruned with the bucket's minute, after the retention window; a
	// bucket older than that is placed without them.
	QueuedAt Kind = 16
	// LeftAt counts, like QueuedAt, the visitors who left the queue of an
	// arrival bucket by their arrival slot: let in, turned away, held, or
	// moved to a later bucket. A visitor who simply stops coming back is
	// not counted (no request says so), and the waiting count's lapse
	// takes it off the bucket alone. With QueuedAt a slot's line is then
	// known where it stands: taking a bucket's gone to be its earliest
	// told the visitors of a room switched back from random queueing, whose
	// draws thin every slot, two to seven fewer ahead than there were, and
	// so did a node letting its own later visitor in before another node's
	// earlier one.
	LeftAt Kind = 17

	// Analytics kinds: plain per-minute G-counters of what the bot defence
	// and the room's analytics count. Kinds from AnalyticsBase up are free
	// for such counters.
	AnalyticsBase Kind = 32
)

// ArrivalSlotSeconds is the width of a QueuedAt slot: three per minute.
// Finer slots would order visitors more finely than their check-ins, twenty
// seconds apart, can be admitted in, and each slot is a cell per node and
// bucket of the room's state.
const ArrivalSlotSeconds = 20

// ArrivalSlot is the QueuedAt cell's Bucket for a visitor of arrival bucket
// bucket who came tenths tenths of a second into its minute.
func ArrivalSlot(bucket int64, tenths uint16) int64 {
	off := min(int64(tenths)/10, 59)
	return bucket*60 + off/ArrivalSlotSeconds*ArrivalSlotSeconds
}

// MaxSessionLead is how far ahead of the current minute a session cell may
// be dated: the longest session_duration (30 minutes) plus the minute its
// expiry second is rounded into.
const MaxSessionLead = 31

// Inc is a local increment of one cell, the unit in which the counter rule
// says what a request moves and a node adds to its own entries.
type Inc struct {
	Key Key
	N   uint64
}

// Valid reports whether k is a kind this version understands. Unknown kinds
// from a newer peer are still merged (they are G-counter cells like any other)
// but are never read by the policy.
func (k Kind) Valid() bool { return k != 0 }

// Key names one counter cell of a room. Minute is the unix minute the count
// belongs to, by which the cell is pruned. What Bucket holds depends on Kind:
//
//   - WaitingPlus, WaitingMinus: the arrival bucket, the unix minute of the
//     visitor's first request, so that the queue is counted per bucket and
//     the oldest buckets are admitted first;
//   - Revocations: the id of the revoked session, one cell per session;
//   - SessionPlus, SessionMinus: the second the sessions expire, rounded up
//     to the room's session slice (Minute is the minute of that second);
//   - QueuedAt, LeftAt: the second the arrival slot begins (ArrivalSlot;
//     Minute is the arrival bucket);
//   - histogram kinds (Kind.IsHistogram): the index of the histogram bin;
//   - every other kind: 0.
//
// One integer serves them all so that every cell is the same flat key,
// merged, sent and pruned alike whatever it counts.
type Key struct {
	Room   string
	Kind   Kind
	Bucket int64
	Minute int64
}

// Entry is one replica's value in one cell: the unit of a state-based delta.
type Entry struct {
	Key     Key
	Replica ReplicaID
	Value   uint64
}

// RegisterEntry is one named LWW register with opaque bytes as its value.
// Room settings and node facts are registers; their encoding belongs to the
// package that writes them.
type RegisterEntry struct {
	Name string
	Reg  LWW[[]byte]
}

// Delta is a set of entries, registers, and other data centers' aggregate
// entries with the groups they name. Applying a delta twice, or two deltas
// in either order, gives the same state.
type Delta struct {
	Entries   []Entry
	Registers []RegisterEntry
	// Aggregates are aggregate entries: Replica is the id of the Group
	// whose replicas' entries the value sums (see datacenter.go).
	Aggregates []Entry
	// Groups are the groups aggregate entries name.
	Groups []Group
}

// Empty reports whether d carries nothing.
func (d Delta) Empty() bool {
	return len(d.Entries) == 0 && len(d.Registers) == 0 && len(d.Aggregates) == 0 && len(d.Groups) == 0
}

type cellKey struct {
	Kind   Kind
	Bucket int64
	Minute int64
}

type room struct {
	cells map[cellKey]*GCounter
	// aggs holds data centers' aggregate entries (nil until the first
	// arrives).
	aggs map[cellKey]aggCell
}

// empty reports whether the room holds no cell at all.
func (r *room) empty() bool { return len(r.cells) == 0 && len(r.aggs) == 0 }

func compareCells(a, b cellKey) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Bucket, b.Bucket), cmp.Compare(a.Minute, b.Minute))
}

// State is the whole replicated picture a node holds: counter cells per room,
// named registers, and the pruning horizon. It is not safe for concurrent
// use; the owner serialises access.
type State struct {
	rooms   map[string]*room
	regs    map[string]LWW[[]byte]
	horizon int64
	clock   HLC     // the largest register stamp seen, for HLC stamping
	own     stamper // the stamps of this replica's own writes
	// agg is the table of the groups aggregate entries name, and local
	// this node's data center (SetDatacenter).
	agg   aggTable
	local string
}

// New returns an empty state.
func New() *State {
	return &State{rooms: map[string]*room{}, regs: map[string]LWW[[]byte]{}}
}

// Horizon is the first minute still kept; cells before it are pruned and
// merges of them are ignored.
func (s *State) Horizon() int64 { return s.horizon }

func (s *State) room(name string, create bool) *room {
	r := s.rooms[name]
	if r == nil && create {
		r = &room{cells: map[cellKey]*GCounter{}}
		s.rooms[name] = r
	}
	return r
}

func (s *State) cell(k Key, create bool) *GCounter {
	r := s.room(k.Room, create)
	if r == nil {
		return nil
	}
	ck := cellKey{k.Kind, k.Bucket, k.Minute}
	c := r.cells[ck]
	if c == nil && create {
		c = &GCounter{}
		r.cells[ck] = c
	}
	return c
}

// Add raises replica r's own entry in cell k by n and returns the entry to
// ship. It reports false, and changes nothing, when k is below the horizon,
// n is zero, or k names no room or no kind (a cell every peer would refuse).
func (s *State) Add(k Key, r ReplicaID, n uint64) (Entry, bool) {
	if n == 0 || k.Minute < s.horizon || k.Room == "" || !k.Kind.Valid() {
		return Entry{}, false
	}
	v := s.cell(k, true).Add(r, n)
	return Entry{Key: k, Replica: r, Value: v}, true
}

// Get returns replica r's entry in cell k.
func (s *State) Get(k Key, r ReplicaID) uint64 {
	if c := s.cell(k, false); c != nil {
		return c.Get(r)
	}
	return 0
}

// Value returns the ring's sum of cell k: every replica's entry held (this
// data center's) and every other data center's aggregate figure.
func (s *State) Value(k Key) uint64 {
	var v uint64
	if c := s.cell(k, false); c != nil {
		v = c.Value()
	}
	if r := s.rooms[k.Room]; r != nil {
		if a, ok := r.aggs[cellKey{k.Kind, k.Bucket, k.Minute}]; ok {
			v += sum(s.remoteCounts(nil, &a, &cellReader{}))
		}
	}
	return v
}

// Apply merges one entry and reports whether the state changed.
func (s *State) Apply(e Entry) bool {
	if e.Value == 0 || e.Key.Minute < s.horizon || e.Key.Room == "" || !e.Key.Kind.Valid() {
		return false
	}
	return s.cell(e.Key, true).Observe(e.Replica, e.Value)
}

// SetRegister writes register name locally with a fresh HLC stamp taken from
// the wall clock nowMillis, and returns the entry to ship. The write always
// takes effect here; its stamp is after every stamp this state handed out
// before, and beyond nowMillis + MaxClockOffset (which peers refuse) only if
// the wall clock stepped back by more than that (see localStamp and
// MergeAt).
func (s *State) SetRegister(name string, value []byte, r ReplicaID, nowMillis int64) RegisterEntry {
	e := RegisterEntry{Name: name, Reg: LWW[[]byte]{Value: bytes.Clone(value), Stamp: s.localStamp(name, nowMillis), Replica: r}}
	s.regs[name] = e.Reg
	return e
}

// ApplyRegister merges one register and reports whether the state changed.
func (s *State) ApplyRegister(e RegisterEntry) bool {
	s.clock = s.clock.Max(e.Reg.Stamp)
	cur, ok := s.regs[e.Name]
	if !ok {
		s.regs[e.Name] = LWW[[]byte]{Value: bytes.Clone(e.Reg.Value), Stamp: e.Reg.Stamp, Replica: e.Reg.Replica}
		return true
	}
	if e.Reg.Newer(cur) {
		s.regs[e.Name] = LWW[[]byte]{Value: bytes.Clone(e.Reg.Value), Stamp: e.Reg.Stamp, Replica: e.Reg.Replica}
		return true
	}
	return false
}

// Register returns register name.
func (s *State) Register(name string) (LWW[[]byte], bool) {
	r, ok := s.regs[name]
	return r, ok
}

// Registers calls fn for every register whose name starts with prefix, in
// name order.
func (s *State) Registers(prefix string, fn func(name string, r LWW[[]byte])) {
	names := make([]string, 0, len(s.regs))
	for n := range s.regs {
		if len(n) >= len(prefix) && n[:len(prefix)] == prefix {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		fn(n, s.regs[n])
	}
}

// Merge applies a delta and returns the part of it that changed this state:
// what a node should relay to its peers.
func (s *State) Merge(d Delta) Delta {
	var out Delta
	for _, e := range d.Entries {
		if s.Apply(e) {
			out.Entries = append(out.Entries, e)
		}
	}
	for _, r := range d.Registers {
		if s.ApplyRegister(r) {
			out.Registers = append(out.Registers, r)
		}
	}
	s.mergeAggregates(d, &out)
	return out
}

// mergeAggregates merges d's groups and aggregate entries and adds what
// changed to out.
func (s *State) mergeAggregates(d Delta, out *Delta) {
	for _, g := range d.Groups {
		if s.AddGroup(g) {
			out.Groups = append(out.Groups, g)
		}
	}
	es := d.Aggregates
	for i := 0; i < len(es); {
		j := i + 1
		for j < len(es) && es[j].Key == es[i].Key {
			j++
		}
		out.Aggregates = s.applyAggregates(es[i:j], out.Aggregates)
		i = j
	}
}

// MergeState folds o into s: entry-wise max, winning registers, larger
// horizon.
func (s *State) MergeState(o *State) {
	if o.horizon > s.horizon {
		// The groups are left to the next Prune: merging is their union,
		// and a group held only for cells below o's horizon may name an
		// entry of o's or of a state merged later.
		s.pruneCells(o.horizon)
	}
	for name, r := range o.rooms {
		for ck, c := range r.cells {
			if ck.Minute < s.horizon {
				continue
			}
			s.cell(Key{name, ck.Kind, ck.Bucket, ck.Minute}, true).Merge(*c)
		}
	}
	for n, r := range o.regs {
		s.ApplyRegister(RegisterEntry{Name: n, Reg: r})
	}
	s.mergeAggregateState(o)
}

// Full returns the whole state as a delta, in a deterministic order: what
// push-pull anti-entropy sends.
func (s *State) Full() Delta {
	var d Delta
	for _, name := range s.Rooms() {
		d.Entries = appendCells(d.Entries, name, s.rooms[name].cells)
		d.Aggregates = s.appendAggregates(d.Aggregates, name)
	}
	s.Registers("", func(n string, r LWW[[]byte]) {
		d.Registers = append(d.Registers, RegisterEntry{Name: n, Reg: r})
	})
	d.Groups = s.Groups()
	return d
}

// appendCells appends the entries of a room's cells, in Full's order.
func appendCells(dst []Entry, name string, cells map[cellKey]*GCounter) []Entry {
	for _, ck := range sortedKeys(cells) {
		g := cells[ck]
		for i, r := range g.ids {
			dst = append(dst, Entry{Key{name, ck.Kind, ck.Bucket, ck.Minute}, r, uint64(g.ns[i])})
		}
	}
	return dst
}

// Keys lists a room's cells of one kind, in no particular order: those with
// entries of this data center's replicas or other data centers' aggregates.
func (s *State) Keys(roomName string, kind Kind) []Key {
	r := s.rooms[roomName]
	if r == nil {
		return nil
	}
	var out []Key
	for ck := range r.cells {
		if ck.Kind == kind {
			out = append(out, Key{Room: roomName, Kind: kind, Bucket: ck.Bucket, Minute: ck.Minute})
		}
	}
	for ck := range r.aggs {
		if _, dup := r.cells[ck]; ck.Kind == kind && !dup {
			out = append(out, Key{Room: roomName, Kind: kind, Bucket: ck.Bucket, Minute: ck.Minute})
		}
	}
	return out
}

// Rooms lists the rooms with cells, sorted.
func (s *State) Rooms() []string {
	out := make([]string, 0, len(s.rooms))
	for n := range s.rooms {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Prune drops every cell whose minute is before horizon and keeps horizon, so
// later merges of such cells are ignored. A lower horizon than the current
// one is a no-op. It returns the number of cells dropped.
func (s *State) Prune(horizon int64) int {
	if horizon <= s.horizon {
		return 0
	}
	dropped := s.pruneCells(horizon)
	s.pruneGroups()
	return dropped
}

// pruneCells is Prune but for the groups.
func (s *State) pruneCells(horizon int64) int {
	s.horizon = horizon
	dropped := 0
	for name, r := range s.rooms {
		for ck := range r.cells {
			if ck.Minute < horizon {
				delete(r.cells, ck)
				dropped++
			}
		}
		for ck := range r.aggs {
			if ck.Minute < horizon {
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

// Clone returns an independent deep copy.
func (s *State) Clone() *State {
	c := &State{rooms: make(map[string]*room, len(s.rooms)), regs: make(map[string]LWW[[]byte], len(s.regs)), horizon: s.horizon, clock: s.clock, own: s.own, local: s.local, agg: s.agg.clone()}
	for n, r := range s.rooms {
		nr := &room{cells: cloneCells(r.cells)}
		if r.aggs != nil {
			nr.aggs = make(map[cellKey]aggCell, len(r.aggs))
			for ck, a := range r.aggs {
				nr.aggs[ck] = a.clone()
			}
		}
		c.rooms[n] = nr
	}
	for n, r := range s.regs {
		c.regs[n] = r
	}
	return c
}

func cloneCells(cells map[cellKey]*GCounter) map[cellKey]*GCounter {
	out := make(map[cellKey]*GCounter, len(cells))
	for ck, g := range cells {
		cg := g.Clone()
		out[ck] = &cg
	}
	return out
}

// Equal reports whether s and o hold the same cells, aggregates, registers
// and horizon, and the same groups of those their aggregates name (a group
// no entry names is kept only until the next Prune). Empty cells count as
// absent.
func (s *State) Equal(o *State) bool {
	if s.horizon != o.horizon || len(s.regs) != len(o.regs) {
		return false
	}
	if !s.sameAggregates(o) || !o.sameAggregates(s) {
		return false
	}
	for n, r := range s.regs {
		or, ok := o.regs[n]
		if !ok || r.Stamp != or.Stamp || r.Replica != or.Replica || !bytes.Equal(r.Value, or.Value) {
			return false
		}
	}
	return containsCells(s, o) && containsCells(o, s)
}

func containsCells(a, b *State) bool {
	for n, r := range a.rooms {
		br := b.rooms[n]
		for ck, g := range r.cells {
			if g.Len() == 0 {
				continue
			}
			if br == nil {
				return false
			}
			bg := br.cells[ck]
			if bg == nil || !g.Equal(bg) {
				return false
			}
		}
	}
	return true
}

// Stats sizes the state, for metrics and memory reports.
type Stats struct {
	Rooms     int
	Cells     int
	Entries   int
	Registers int
	// AggregateCells and Aggregates count other data centers' aggregate
	// cells and entries, Groups the groups they name (none on a node that
	// is a data center of its own).
	AggregateCells int `json:",omitempty"`
	Aggregates     int `json:",omitempty"`
	Groups         int `json:",omitempty"`
}

// Stats counts what the state holds.
func (s *State) Stats() Stats {
	st := Stats{Rooms: len(s.rooms), Registers: len(s.regs), Groups: s.agg.held()}
	for _, r := range s.rooms {
		st.Cells += len(r.cells)
		for _, g := range r.cells {
			st.Entries += g.Len()
		}
		st.AggregateCells += len(r.aggs)
		for _, a := range r.aggs {
			st.Aggregates += a.count()
		}
	}
	return st
}
