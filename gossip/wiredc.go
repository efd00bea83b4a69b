package gossip

import (
	"fmt"

	"github.com/waitroom/waitroom/crdt"
)

// The messages of data centers (see datacenter.go). They travel only
// between nodes that name a data center: within one (its pool carries the
// other data centers' aggregates a carrier relays) and between data
// centers (the pool of the carriers). A ring that names none never sends
// them, so its wire is as it always was; a node that predates them drops
// them as an unknown type, which is why naming data centers is a change of
// the whole ring at once. They keep the wire version: no message an older
// node reads changed.
const (
	// msgAggregates is a batch of aggregate entries, laid out as entries
	// are, the replica being the id of the group the value sums.
	msgAggregates = 7
	// msgGroups is a batch of groups: [[datacenter, [replica...]]...].
	// A group's id is derived from it, so it is never sent.
	msgGroups = 8
	// msgFullDC is the whole state of a node that names a data center,
	// for push-pull: msgFull's four fields, then its groups, the ids
	// aggregate entries name, and its aggregate cells, grouped by room as
	// msgFull's cells are, whose counts pair an index into those ids with
	// a value.
	msgFullDC = 9
)

type wireGroup struct {
	//lint:ignore U1000 msgpack reads this field by reflection: its tag writes the struct as an array
	_msgpack   struct{} `msgpack:",as_array"`
	Datacenter string
	Replicas   []uint64
}

// wireFullDC is msgFull's fields and the aggregates.
type wireFullDC struct {
	//lint:ignore U1000 msgpack reads this field by reflection: its tag writes the struct as an array
	_msgpack  struct{} `msgpack:",as_array"`
	Horizon   int64
	Replicas  []uint64
	Rooms     []wireRoom
	Registers []wireRegister
	Groups    []wireGroup
	GroupIDs  []uint64
	AggRooms  []wireRoom
}

func toWireGroup(g crdt.Group) wireGroup {
	rs := make([]uint64, len(g.Replicas))
	for i, r := range g.Replicas {
		rs[i] = uint64(r)
	}
	return wireGroup{Datacenter: g.Datacenter, Replicas: rs}
}

// EncodeAggregates encodes a batch of aggregate entries as one message.
func EncodeAggregates(es []crdt.Entry) ([]byte, error) {
	ws := make([]wireEntry, len(es))
	for i, e := range es {
		ws[i] = toWireEntry(e)
	}
	return encode(msgAggregates, ws)
}

// EncodeGroups encodes a batch of groups as one message.
func EncodeGroups(gs []crdt.Group) ([]byte, error) {
	ws := make([]wireGroup, len(gs))
	for i, g := range gs {
		ws[i] = toWireGroup(g)
	}
	return encode(msgGroups, ws)
}

// encodeFullDC encodes a whole state that holds aggregates or groups.
func encodeFullDC(d crdt.Delta, horizon int64) ([]byte, error) {
	f := wireFull{Horizon: horizon}
	f.Replicas, f.Rooms = wireCells(d.Entries)
	w := wireFullDC{Horizon: f.Horizon, Replicas: f.Replicas, Rooms: f.Rooms}
	for _, r := range d.Registers {
		w.Registers = append(w.Registers, toWireRegister(r))
	}
	for _, g := range d.Groups {
		w.Groups = append(w.Groups, toWireGroup(g))
	}
	w.GroupIDs, w.AggRooms = wireCells(d.Aggregates)
	return encode(msgFullDC, w)
}

// wireCells groups entries (sorted by room and cell, as crdt.State.Full
// lists them) by room and cell, with the replicas written once.
func wireCells(es []crdt.Entry) ([]uint64, []wireRoom) {
	var ids []uint64
	var rooms []wireRoom
	idx := map[crdt.ReplicaID]uint64{}
	var cur *wireRoom
	var cell *wireCell
	for _, e := range es {
		if cur == nil || cur.Name != e.Key.Room {
			rooms = append(rooms, wireRoom{Name: e.Key.Room})
			cur = &rooms[len(rooms)-1]
			cell = nil
		}
		if cell == nil || cell.Kind != uint8(e.Key.Kind) || cell.Bucket != e.Key.Bucket || cell.Minute != e.Key.Minute {
			cur.Cells = append(cur.Cells, wireCell{Kind: uint8(e.Key.Kind), Bucket: e.Key.Bucket, Minute: e.Key.Minute})
			cell = &cur.Cells[len(cur.Cells)-1]
		}
		i, ok := idx[e.Replica]
		if !ok {
			i = uint64(len(ids))
			idx[e.Replica] = i
			ids = append(ids, uint64(e.Replica))
		}
		cell.Counts = append(cell.Counts, i, e.Value)
	}
	return ids, rooms
}

// decodeAggregates fills m from the body of an aggregates message.
func (m *Message) decodeAggregates(body []byte) error {
	ws, err := decodeBody(body, func(r *reader) ([]wireEntry, error) { return list(r, 7, r.entry) })
	if err != nil {
		return err
	}
	if ws == nil {
		return fmt.Errorf("%w: nil aggregate list", errMalformed)
	}
	m.Delta.Aggregates = make([]crdt.Entry, len(ws))
	for i, w := range ws {
		e := crdt.Entry{Key: crdt.Key{Room: w.Room, Kind: crdt.Kind(w.Kind), Bucket: w.Bucket, Minute: w.Minute}, Replica: crdt.ReplicaID(w.Replica), Value: w.Value}
		if !validEntry(e) {
			return fmt.Errorf("%w: aggregate %d", errValidation, i)
		}
		m.Delta.Aggregates[i] = e
	}
	return nil
}

// decodeGroups fills m from the body of a groups message.
func (m *Message) decodeGroups(body []byte) error {
	ws, err := decodeBody(body, func(r *reader) ([]wireGroup, error) { return list(r, 3, r.group) })
	if err != nil {
		return err
	}
	if ws == nil {
		return fmt.Errorf("%w: nil group list", errMalformed)
	}
	return m.addGroups(ws)
}

// addGroups checks every group of ws and appends it to m's delta.
func (m *Message) addGroups(ws []wireGroup) error {
	for i, w := range ws {
		g := crdt.Group{Datacenter: w.Datacenter, Replicas: make([]crdt.ReplicaID, len(w.Replicas))}
		for j, r := range w.Replicas {
			g.Replicas[j] = crdt.ReplicaID(r)
		}
		if err := g.Check(); err != nil {
			return fmt.Errorf("%w: group %d: %v", errValidation, i, err)
		}
		m.Delta.Groups = append(m.Delta.Groups, g)
	}
	return nil
}

// decodeFullDC fills m from the body of a whole state with aggregates.
func (m *Message) decodeFullDC(body []byte) error {
	w, err := decodeBody(body, (*reader).fullDC)
	if err != nil {
		return err
	}
	m.Horizon = w.Horizon
	if err := m.addFullEntries(wireFull{Replicas: w.Replicas, Rooms: w.Rooms}); err != nil {
		return err
	}
	if err := m.addRegisters(w.Registers); err != nil {
		return err
	}
	if err := m.addGroups(w.Groups); err != nil {
		return err
	}
	entries := m.Delta.Entries
	m.Delta.Entries = nil
	if err := m.addFullEntries(wireFull{Replicas: w.GroupIDs, Rooms: w.AggRooms}); err != nil {
		return err
	}
	m.Delta.Aggregates, m.Delta.Entries = m.Delta.Entries, entries
	return nil
}

// group reads [datacenter, [replica...]].
func (r *reader) group() (w wireGroup, err error) {
	if err = r.array(2); err != nil {
		return w, err
	}
	if w.Datacenter, err = r.str(); err != nil {
		return w, err
	}
	w.Replicas, err = list(r, 1, r.uint64)
	return w, err
}

// fullDC reads msgFull's four fields, then groups, group ids and
// aggregate rooms.
func (r *reader) fullDC() (w wireFullDC, err error) {
	if err = r.array(7); err != nil {
		return w, err
	}
	if w.Horizon, err = r.dec.DecodeInt64(); err != nil {
		return w, err
	}
	if w.Replicas, err = list(r, 1, r.uint64); err != nil {
		return w, fmt.Errorf("replicas: %w", err)
	}
	if w.Rooms, err = list(r, 3, r.room); err != nil {
		return w, fmt.Errorf("rooms: %w", err)
	}
	if w.Registers, err = list(r, 6, r.register); err != nil {
		return w, fmt.Errorf("registers: %w", err)
	}
	if w.Groups, err = list(r, 3, r.group); err != nil {
		return w, fmt.Errorf("groups: %w", err)
	}
	if w.GroupIDs, err = list(r, 1, r.uint64); err != nil {
		return w, fmt.Errorf("group ids: %w", err)
	}
	if w.AggRooms, err = list(r, 3, r.room); err != nil {
		return w, fmt.Errorf("aggregate rooms: %w", err)
	}
	return w, nil
}
