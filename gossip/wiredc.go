package gossip

import (
	"bytes"
	"fmt"
	"math"

	"github.com/vmihailenco/msgpack/v5"

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
	// msgFigures is a batch of one data center's aggregate entries of one
	// room, as its carrier sends them between data centers and relays them
	// into a data center: [datacenter, room, [group...], [id...],
	// [[kind, bucket, minute, id index, value]...]]. A group is its
	// replicas (its data center being the batch's), sent while it is new;
	// ids are the groups the entries name, and an entry's bucket and
	// minute are the differences from the entry before it (from zero for
	// the first), which keeps a batch of a busy minute's cells to a few
	// bytes a cell.
	msgFigures = 7
	// msgFullDC is the whole state of a node that names a data center,
	// for push-pull: msgFull's four fields, then its groups, the ids
	// aggregate entries name, and its aggregate cells, grouped by room as
	// msgFull's cells are, whose counts pair an index into those ids with
	// a value.
	msgFullDC = 8
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
	return encodeCompact(msgFullDC, w)
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

// group reads [datacenter, [replica...]] (a group of the whole state).
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

// wireFigures is a msgFigures body.
type wireFigures struct {
	datacenter, room string
	groups           [][]uint64
	ids              []uint64
	entries          []wireFigure
}

// wireFigure is one entry of a batch: bucket and minute as differences
// from the entry before.
type wireFigure struct {
	kind           uint8
	bucket, minute int64
	id             uint64
	value          uint64
}

// EncodeFigures encodes the aggregate entries es of data center dc in room
// (all of that room, in crdt.State.Full's order), with the groups gs of dc
// a receiver may not hold yet, as one msgFigures message.
func EncodeFigures(dc, room string, gs []crdt.Group, es []crdt.Entry) ([]byte, error) {
	groups := make([][]uint64, len(gs))
	for i, g := range gs {
		groups[i] = toWireGroup(g).Replicas
	}
	idx := map[crdt.ReplicaID]uint64{}
	var ids []uint64
	rows := make([][5]any, len(es))
	var pb, pm int64
	for i, e := range es {
		j, ok := idx[e.Replica]
		if !ok {
			j = uint64(len(ids))
			idx[e.Replica] = j
			ids = append(ids, uint64(e.Replica))
		}
		rows[i] = [5]any{uint8(e.Key.Kind), e.Key.Bucket - pb, e.Key.Minute - pm, j, e.Value}
		pb, pm = e.Key.Bucket, e.Key.Minute
	}
	return encodeCompact(msgFigures, []any{dc, room, groups, ids, rows})
}

// encodeCompact is encode writing every integer in the fewest bytes that
// hold it (msgpack writes an int64 in nine by default): a figure's
// differences and values are mostly under a hundred.
func encodeCompact(typ byte, v any) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte(header(typ))
	enc := msgpack.NewEncoder(&buf)
	enc.UseCompactInts(true)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode gossip message type %d: %w", typ, err)
	}
	return buf.Bytes(), nil
}

// decodeFigures fills m from the body of a batch of figures, checking
// every group and entry.
func (m *Message) decodeFigures(body []byte) error {
	w, err := decodeBody(body, (*reader).figures)
	if err != nil {
		return err
	}
	if w.datacenter == "" || len(w.datacenter) > crdt.MaxDatacenterName || w.room == "" || len(w.room) > maxRoomName {
		return fmt.Errorf("%w: figures of data center %q, room %q", errValidation, w.datacenter, w.room)
	}
	m.Datacenter = w.datacenter
	for i, rs := range w.groups {
		g := crdt.Group{Datacenter: w.datacenter, Replicas: make([]crdt.ReplicaID, len(rs))}
		for j, r := range rs {
			g.Replicas[j] = crdt.ReplicaID(r)
		}
		if err := g.Check(); err != nil {
			return fmt.Errorf("%w: group %d: %v", errValidation, i, err)
		}
		m.Delta.Groups = append(m.Delta.Groups, g)
	}
	m.Delta.Aggregates = make([]crdt.Entry, len(w.entries))
	var b, mi int64
	for i, f := range w.entries {
		b, mi = b+f.bucket, mi+f.minute
		if f.id >= uint64(len(w.ids)) {
			return fmt.Errorf("%w: figure %d names group %d of %d", errValidation, i, f.id, len(w.ids))
		}
		e := crdt.Entry{Key: crdt.Key{Room: w.room, Kind: crdt.Kind(f.kind), Bucket: b, Minute: mi}, Replica: crdt.ReplicaID(w.ids[f.id]), Value: f.value}
		if !validEntry(e) {
			return fmt.Errorf("%w: figure %d", errValidation, i)
		}
		m.Delta.Aggregates[i] = e
	}
	return nil
}

// figures reads [datacenter, room, [[replica...]...], [id...], [[kind,
// bucket, minute, id index, value]...]].
func (r *reader) figures() (w wireFigures, err error) {
	if err = r.array(5); err != nil {
		return w, err
	}
	if w.datacenter, err = r.str(); err != nil {
		return w, err
	}
	if w.room, err = r.str(); err != nil {
		return w, err
	}
	if w.groups, err = list(r, 1, func() ([]uint64, error) { return list(r, 1, r.uint64) }); err != nil {
		return w, fmt.Errorf("groups: %w", err)
	}
	if w.ids, err = list(r, 1, r.uint64); err != nil {
		return w, fmt.Errorf("ids: %w", err)
	}
	w.entries, err = list(r, 6, r.figure)
	if err == nil && len(w.entries) == 0 {
		err = fmt.Errorf("no figure")
	}
	return w, err
}

// figure reads [kind, bucket, minute, id index, value].
func (r *reader) figure() (f wireFigure, err error) {
	if err = r.array(5); err != nil {
		return f, err
	}
	k, err := r.uint(math.MaxUint8)
	if err != nil {
		return f, fmt.Errorf("kind: %w", err)
	}
	f.kind = uint8(k)
	if f.bucket, err = r.dec.DecodeInt64(); err != nil {
		return f, err
	}
	if f.minute, err = r.dec.DecodeInt64(); err != nil {
		return f, err
	}
	if f.id, err = r.dec.DecodeUint64(); err != nil {
		return f, err
	}
	f.value, err = r.dec.DecodeUint64()
	return f, err
}
