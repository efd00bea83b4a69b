package gossip

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/waitroom/waitroom/crdt"
)

// Wire format. Every message starts with one byte: the protocol version in
// the high nibble and the message type in the low nibble. msgpack follows.
// A message is decoded and validated whole before anything is merged, so a
// bad message is dropped entirely, never merged half-way.
const (
	wireVersion = 1

	msgEntries   = 1 // a batch of counter entries (broadcast)
	msgRegisters = 2 // a batch of registers (broadcast, or reliable send when large)
	msgFull      = 3 // the whole state (push-pull)

	// MaxPacketMessage bounds a broadcast message: well under memberlist's
	// 1,400-byte UDP budget once compound-message overhead and the label are
	// added.
	MaxPacketMessage = 1200
	// MaxReliableMessage bounds a message sent over memberlist's TCP stream
	// (large registers, such as a room's custom page).
	MaxReliableMessage = 1 << 20
	// MaxFullState bounds a push-pull state.
	MaxFullState = 16 << 20

	maxRoomName     = 128
	maxRegisterName = 256
)

// Drop reasons, for counters.
var (
	errEmpty      = errors.New("empty message")
	errVersion    = errors.New("unsupported protocol version")
	errType       = errors.New("unknown message type")
	errOversize   = errors.New("message too large")
	errMalformed  = errors.New("malformed message")
	errValidation = errors.New("invalid content")
)

func header(typ byte) byte { return wireVersion<<4 | typ }

// wireEntry is one counter entry on the wire, as a msgpack array:
// [room, kind, bucket, minute, replica, value].
type wireEntry struct {
	_msgpack struct{} `msgpack:",as_array"`
	Room     string
	Kind     uint8
	Bucket   int64
	Minute   int64
	Replica  uint64
	Value    uint64
}

type wireRegister struct {
	_msgpack struct{} `msgpack:",as_array"`
	Name     string
	Value    []byte
	Wall     int64
	Logical  uint32
	Replica  uint64
}

// wireFull is the whole state, grouped so that room names and replica ids
// are written once: counts refer to replicas by their index in Replicas.
type wireFull struct {
	_msgpack  struct{} `msgpack:",as_array"`
	Horizon   int64
	Replicas  []uint64
	Rooms     []wireRoom
	Registers []wireRegister
}

type wireRoom struct {
	_msgpack struct{} `msgpack:",as_array"`
	Name     string
	Cells    []wireCell
}

type wireCell struct {
	_msgpack struct{} `msgpack:",as_array"`
	Kind     uint8
	Bucket   int64
	Minute   int64
	Counts   []uint64 // pairs: replica index, value
}

func toWireEntry(e crdt.Entry) wireEntry {
	return wireEntry{Room: e.Key.Room, Kind: uint8(e.Key.Kind), Bucket: e.Key.Bucket, Minute: e.Key.Minute, Replica: uint64(e.Replica), Value: e.Value}
}

func toWireRegister(r crdt.RegisterEntry) wireRegister {
	return wireRegister{Name: r.Name, Value: r.Reg.Value, Wall: r.Reg.Stamp.Wall, Logical: r.Reg.Stamp.Logical, Replica: uint64(r.Reg.Replica)}
}

func (w wireRegister) entry() crdt.RegisterEntry {
	return crdt.RegisterEntry{Name: w.Name, Reg: crdt.LWW[[]byte]{Value: w.Value, Stamp: crdt.HLC{Wall: w.Wall, Logical: w.Logical}, Replica: crdt.ReplicaID(w.Replica)}}
}

func validEntry(e crdt.Entry) bool {
	return e.Key.Room != "" && len(e.Key.Room) <= maxRoomName && e.Key.Kind.Valid() && e.Value > 0 && e.Replica != 0
}

func validRegister(r crdt.RegisterEntry) bool {
	return r.Name != "" && len(r.Name) <= maxRegisterName && r.Reg.Replica != 0
}

// EncodeEntries encodes a batch of entries as one message.
func EncodeEntries(es []crdt.Entry) ([]byte, error) {
	ws := make([]wireEntry, len(es))
	for i, e := range es {
		ws[i] = toWireEntry(e)
	}
	return encode(msgEntries, ws)
}

// EncodeRegisters encodes a batch of registers as one message.
func EncodeRegisters(rs []crdt.RegisterEntry) ([]byte, error) {
	ws := make([]wireRegister, len(rs))
	for i, r := range rs {
		ws[i] = toWireRegister(r)
	}
	return encode(msgRegisters, ws)
}

// EncodeFull encodes a whole state for push-pull.
func EncodeFull(d crdt.Delta, horizon int64) ([]byte, error) {
	f := wireFull{Horizon: horizon}
	idx := map[crdt.ReplicaID]uint64{}
	var cur *wireRoom
	var cell *wireCell
	for _, e := range d.Entries {
		if cur == nil || cur.Name != e.Key.Room {
			f.Rooms = append(f.Rooms, wireRoom{Name: e.Key.Room})
			cur = &f.Rooms[len(f.Rooms)-1]
			cell = nil
		}
		if cell == nil || cell.Kind != uint8(e.Key.Kind) || cell.Bucket != e.Key.Bucket || cell.Minute != e.Key.Minute {
			cur.Cells = append(cur.Cells, wireCell{Kind: uint8(e.Key.Kind), Bucket: e.Key.Bucket, Minute: e.Key.Minute})
			cell = &cur.Cells[len(cur.Cells)-1]
		}
		i, ok := idx[e.Replica]
		if !ok {
			i = uint64(len(f.Replicas))
			idx[e.Replica] = i
			f.Replicas = append(f.Replicas, uint64(e.Replica))
		}
		cell.Counts = append(cell.Counts, i, e.Value)
	}
	for _, r := range d.Registers {
		f.Registers = append(f.Registers, toWireRegister(r))
	}
	return encode(msgFull, f)
}

func encode(typ byte, v any) ([]byte, error) {
	b, err := msgpack.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode gossip message type %d: %w", typ, err)
	}
	out := make([]byte, 1+len(b))
	out[0] = header(typ)
	copy(out[1:], b)
	return out, nil
}

// Message is a decoded, validated message.
type Message struct {
	Type    byte
	Delta   crdt.Delta
	Horizon int64 // full state only
}

// Decode parses and validates one message of at most limit bytes. Any error
// means the whole message must be dropped.
func Decode(b []byte, limit int) (Message, error) {
	if len(b) == 0 {
		return Message{}, errEmpty
	}
	if len(b) > limit {
		return Message{}, fmt.Errorf("%w: %d bytes > %d", errOversize, len(b), limit)
	}
	if v := b[0] >> 4; v != wireVersion {
		return Message{}, fmt.Errorf("%w: %d", errVersion, v)
	}
	m := Message{Type: b[0] & 0x0f}
	body := b[1:]
	switch m.Type {
	case msgEntries:
		var ws []wireEntry
		if err := decodeArray(body, &ws, 7); err != nil {
			return Message{}, err
		}
		m.Delta.Entries = make([]crdt.Entry, len(ws))
		for i, w := range ws {
			e := crdt.Entry{Key: crdt.Key{Room: w.Room, Kind: crdt.Kind(w.Kind), Bucket: w.Bucket, Minute: w.Minute}, Replica: crdt.ReplicaID(w.Replica), Value: w.Value}
			if !validEntry(e) {
				return Message{}, fmt.Errorf("%w: entry %d", errValidation, i)
			}
			m.Delta.Entries[i] = e
		}
	case msgRegisters:
		var ws []wireRegister
		if err := decodeArray(body, &ws, 6); err != nil {
			return Message{}, err
		}
		for i, w := range ws {
			r := w.entry()
			if !validRegister(r) {
				return Message{}, fmt.Errorf("%w: register %d", errValidation, i)
			}
			m.Delta.Registers = append(m.Delta.Registers, r)
		}
	case msgFull:
		var f wireFull
		if err := msgpack.Unmarshal(body, &f); err != nil {
			return Message{}, fmt.Errorf("%w: %v", errMalformed, err)
		}
		m.Horizon = f.Horizon
		for _, room := range f.Rooms {
			for _, c := range room.Cells {
				if len(c.Counts)%2 != 0 {
					return Message{}, fmt.Errorf("%w: odd counts in room %q", errValidation, room.Name)
				}
				for j := 0; j < len(c.Counts); j += 2 {
					ri := c.Counts[j]
					if ri >= uint64(len(f.Replicas)) {
						return Message{}, fmt.Errorf("%w: replica index %d out of range", errValidation, ri)
					}
					e := crdt.Entry{Key: crdt.Key{Room: room.Name, Kind: crdt.Kind(c.Kind), Bucket: c.Bucket, Minute: c.Minute}, Replica: crdt.ReplicaID(f.Replicas[ri]), Value: c.Counts[j+1]}
					if !validEntry(e) {
						return Message{}, fmt.Errorf("%w: room %q", errValidation, room.Name)
					}
					m.Delta.Entries = append(m.Delta.Entries, e)
				}
			}
		}
		for i, w := range f.Registers {
			r := w.entry()
			if !validRegister(r) {
				return Message{}, fmt.Errorf("%w: register %d", errValidation, i)
			}
			m.Delta.Registers = append(m.Delta.Registers, r)
		}
	default:
		return Message{}, fmt.Errorf("%w: %d", errType, m.Type)
	}
	return m, nil
}

// decodeArray decodes a msgpack array into *out after checking that its
// declared length is possible for the bytes at hand (each element takes at
// least minElem bytes), so a forged length cannot make the decoder allocate
// far more than the message's size.
func decodeArray[T any](body []byte, out *[]T, minElem int) error {
	rd := bytes.NewReader(body)
	dec := msgpack.NewDecoder(rd)
	n, err := dec.DecodeArrayLen()
	if err != nil {
		return fmt.Errorf("%w: %v", errMalformed, err)
	}
	if n < 0 || n*minElem > len(body) {
		return fmt.Errorf("%w: array of %d elements in %d bytes", errMalformed, n, len(body))
	}
	*out = make([]T, n)
	for i := range *out {
		if err := dec.Decode(&(*out)[i]); err != nil {
			return fmt.Errorf("%w: element %d: %v", errMalformed, i, err)
		}
	}
	if rd.Len() != 0 {
		return fmt.Errorf("%w: trailing bytes", errMalformed)
	}
	return nil
}

// dropReason names the counter a decode error increments.
func dropReason(err error) string {
	switch {
	case errors.Is(err, errOversize):
		return "oversize"
	case errors.Is(err, errVersion):
		return "version"
	case errors.Is(err, errType):
		return "type"
	case errors.Is(err, errValidation):
		return "invalid"
	default:
		return "malformed"
	}
}
