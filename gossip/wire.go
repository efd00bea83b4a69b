package gossip

import (
	"bytes"
	"errors"
	"fmt"
	"math"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"

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
	// msgStampedEntries is msgEntries with the origin's wall-clock time (unix
	// ms) of the oldest change it carries: [at, [entries...]]. Nodes that
	// predate it drop it as an unknown type, so a node sends it only when
	// every peer announced that it reads it (featureStamped in the node
	// meta); every node still reads msgEntries.
	msgStampedEntries = 4
	// msgBeat is an idle node's heartbeat, [replica, at]: its clock (unix
	// ms) when it beat. It is not state: a node takes a delay sample from
	// the first arrival of each beat and relays it. Sent, like stamped
	// entries, only when every peer reads it.
	msgBeat = 5
	// msgMarks is a batch of marks (crdt.Marks: ids that each expire, such
	// as spent single-use codes) with the sender's horizon: [horizon,
	// [[id, expires]...]]. See wiremarks.go.
	msgMarks = 6

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
	//lint:ignore U1000 msgpack reads this field by reflection: its tag writes the struct as an array
	_msgpack struct{} `msgpack:",as_array"`
	Room     string
	Kind     uint8
	Bucket   int64
	Minute   int64
	Replica  uint64
	Value    uint64
}

type wireRegister struct {
	//lint:ignore U1000 msgpack reads this field by reflection: its tag writes the struct as an array
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
	//lint:ignore U1000 msgpack reads this field by reflection: its tag writes the struct as an array
	_msgpack  struct{} `msgpack:",as_array"`
	Horizon   int64
	Replicas  []uint64
	Rooms     []wireRoom
	Registers []wireRegister
}

type wireRoom struct {
	//lint:ignore U1000 msgpack reads this field by reflection: its tag writes the struct as an array
	_msgpack struct{} `msgpack:",as_array"`
	Name     string
	Cells    []wireCell
}

type wireCell struct {
	//lint:ignore U1000 msgpack reads this field by reflection: its tag writes the struct as an array
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

// EncodeStampedEntries encodes a batch of entries with the origin's time
// (unix ms, 0 when unknown) of the oldest change among them. All entries of
// a stamped message are of one replica, whose clock at is read on.
func EncodeStampedEntries(es []crdt.Entry, at int64) ([]byte, error) {
	ws := make([]any, len(es))
	for i, e := range es {
		ws[i] = toWireEntry(e)
	}
	return encode(msgStampedEntries, []any{at, ws})
}

// EncodeBeat encodes replica r's heartbeat at unix ms at of its clock.
func EncodeBeat(r crdt.ReplicaID, at int64) ([]byte, error) {
	return encode(msgBeat, []any{uint64(r), at})
}

// EncodeRegisters encodes a batch of registers as one message.
func EncodeRegisters(rs []crdt.RegisterEntry) ([]byte, error) {
	ws := make([]wireRegister, len(rs))
	for i, r := range rs {
		ws[i] = toWireRegister(r)
	}
	return encode(msgRegisters, ws)
}

// EncodeFull encodes a whole state for push-pull: as msgFull, or as
// msgFullDC when it holds aggregates or groups (a node that names a data
// center).
func EncodeFull(d crdt.Delta, horizon int64) ([]byte, error) {
	if len(d.Aggregates) > 0 || len(d.Groups) > 0 {
		return encodeFullDC(d, horizon)
	}
	f := wireFull{Horizon: horizon}
	f.Replicas, f.Rooms = wireCells(d.Entries)
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
	// At is the origin's wall-clock time (unix ms) of the oldest change a
	// stamped entries message carries (0 when unknown or not stamped), or
	// of a beat.
	At int64
	// Origin is the replica that beat (beats only).
	Origin crdt.ReplicaID
	// Marks are the marks of a marks message, and Horizon its sender's
	// horizon for them.
	Marks []crdt.Mark
	// Datacenter is the data center whose figures a figures message
	// carries (in Delta.Aggregates and Delta.Groups).
	Datacenter string
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
	var err error
	switch m.Type {
	case msgEntries, msgStampedEntries:
		err = m.decodeEntries(body)
	case msgBeat:
		err = m.decodeBeat(body)
	case msgRegisters:
		err = m.decodeRegisters(body)
	case msgFull:
		err = m.decodeFull(body)
	case msgMarks:
		err = m.decodeMarks(body)
	case msgFigures:
		err = m.decodeFigures(body)
	case msgFullDC:
		err = m.decodeFullDC(body)
	default:
		err = fmt.Errorf("%w: %d", errType, m.Type)
	}
	if err != nil {
		return Message{}, err
	}
	return m, nil
}

// decodeEntries fills m from the body of an entries message, stamped or not,
// checking the stamp and every entry.
func (m *Message) decodeEntries(body []byte) error {
	var ws []wireEntry
	var err error
	if m.Type == msgEntries {
		ws, err = decodeBody(body, func(r *reader) ([]wireEntry, error) { return list(r, 7, r.entry) })
	} else {
		var st stamped
		st, err = decodeBody(body, (*reader).stamped)
		ws, m.At = st.entries, st.at
		if err == nil && m.At < 0 {
			err = fmt.Errorf("%w: negative stamp %d", errValidation, m.At)
		}
	}
	if err != nil {
		return err
	}
	if ws == nil {
		return fmt.Errorf("%w: nil entry list", errMalformed)
	}
	m.Delta.Entries = make([]crdt.Entry, len(ws))
	for i, w := range ws {
		e := crdt.Entry{Key: crdt.Key{Room: w.Room, Kind: crdt.Kind(w.Kind), Bucket: w.Bucket, Minute: w.Minute}, Replica: crdt.ReplicaID(w.Replica), Value: w.Value}
		if !validEntry(e) {
			return fmt.Errorf("%w: entry %d", errValidation, i)
		}
		m.Delta.Entries[i] = e
	}
	return nil
}

// decodeBeat fills m from the body of a beat, which names a replica and a
// time after the epoch.
func (m *Message) decodeBeat(body []byte) error {
	bt, err := decodeBody(body, (*reader).beat)
	if err != nil {
		return err
	}
	if bt.replica == 0 || bt.at <= 0 {
		return fmt.Errorf("%w: beat of replica %d at %d", errValidation, bt.replica, bt.at)
	}
	m.Origin, m.At = crdt.ReplicaID(bt.replica), bt.at
	return nil
}

// decodeRegisters fills m from the body of a registers message.
func (m *Message) decodeRegisters(body []byte) error {
	ws, err := decodeBody(body, func(r *reader) ([]wireRegister, error) { return list(r, 6, r.register) })
	if err != nil {
		return err
	}
	if ws == nil {
		return fmt.Errorf("%w: nil register list", errMalformed)
	}
	return m.addRegisters(ws)
}

// addRegisters checks every register of ws and appends it to m's delta.
func (m *Message) addRegisters(ws []wireRegister) error {
	for i, w := range ws {
		r := w.entry()
		if !validRegister(r) {
			return fmt.Errorf("%w: register %d", errValidation, i)
		}
		m.Delta.Registers = append(m.Delta.Registers, r)
	}
	return nil
}

// decodeFull fills m from the body of a whole state for push-pull: its
// horizon, its entries, then its registers.
func (m *Message) decodeFull(body []byte) error {
	f, err := decodeBody(body, (*reader).full)
	if err != nil {
		return err
	}
	m.Horizon = f.Horizon
	if err := m.addFullEntries(f); err != nil {
		return err
	}
	return m.addRegisters(f.Registers)
}

// addFullEntries checks every count of f's cells, an index into f's replicas
// and a value in pairs, and appends it to m's delta as an entry.
func (m *Message) addFullEntries(f wireFull) error {
	total := 0
	for _, room := range f.Rooms {
		for _, c := range room.Cells {
			total += len(c.Counts) / 2
		}
	}
	if total > 0 {
		m.Delta.Entries = make([]crdt.Entry, 0, total)
	}
	for _, room := range f.Rooms {
		for _, c := range room.Cells {
			if len(c.Counts)%2 != 0 {
				return fmt.Errorf("%w: odd counts in room %q", errValidation, room.Name)
			}
			for j := 0; j < len(c.Counts); j += 2 {
				ri := c.Counts[j]
				if ri >= uint64(len(f.Replicas)) {
					return fmt.Errorf("%w: replica index %d out of range", errValidation, ri)
				}
				e := crdt.Entry{Key: crdt.Key{Room: room.Name, Kind: crdt.Kind(c.Kind), Bucket: c.Bucket, Minute: c.Minute}, Replica: crdt.ReplicaID(f.Replicas[ri]), Value: c.Counts[j+1]}
				if !validEntry(e) {
					return fmt.Errorf("%w: room %q", errValidation, room.Name)
				}
				m.Delta.Entries = append(m.Delta.Entries, e)
			}
		}
	}
	return nil
}

// Messages are decoded by hand, field by field, rather than with msgpack's
// reflection decoder, which message content could steer into harm:
//
//   - msgpack v5.4.1 allocates a slice of whatever length a message declares
//     (its allocation limit is switched off by a flag test that is always
//     true), and a bin value of whatever length it declares: a 9-byte push-pull
//     state claiming four billion replicas made it allocate 32 GB and killed
//     the process. Here every declared length is checked against the bytes
//     left before anything is allocated.
//   - It truncates out-of-range integers silently: kind 257 became kind 1 and
//     merged into the wrong cell. Here such a field makes the message
//     malformed.
//
// Only the array form the encoder writes is accepted, and a message must end
// where its value ends.

// reader decodes from a byte slice and knows how many bytes are left: the
// decoder reads the bytes.Reader directly (it is an io.ByteScanner, so
// msgpack does not buffer it).
type reader struct {
	dec *msgpack.Decoder
	rd  *bytes.Reader
}

func decodeBody[T any](body []byte, fn func(*reader) (T, error)) (T, error) {
	rd := bytes.NewReader(body)
	r := &reader{dec: msgpack.NewDecoder(rd), rd: rd}
	v, err := fn(r)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("%w: %v", errMalformed, err)
	}
	if rd.Len() != 0 {
		var zero T
		return zero, fmt.Errorf("%w: %d trailing bytes", errMalformed, rd.Len())
	}
	return v, nil
}

// list decodes a msgpack array (nil reads as a nil slice) of elements that
// each take at least minElem bytes, refusing a declared length the bytes
// left cannot hold before allocating anything.
func list[T any](r *reader, minElem int, elem func() (T, error)) ([]T, error) {
	n, err := r.dec.DecodeArrayLen()
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, nil
	}
	if n > r.rd.Len()/minElem {
		return nil, fmt.Errorf("array of %d elements in %d bytes", n, r.rd.Len())
	}
	out := make([]T, n)
	for i := range out {
		if out[i], err = elem(); err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
	}
	return out, nil
}

func (r *reader) array(n int) error {
	got, err := r.dec.DecodeArrayLen()
	if err != nil {
		return err
	}
	if got != n {
		return fmt.Errorf("array of %d fields, want %d", got, n)
	}
	return nil
}

func (r *reader) uint(maxVal uint64) (uint64, error) {
	v, err := r.dec.DecodeUint64()
	if err == nil && v > maxVal {
		err = fmt.Errorf("%d out of range (max %d)", v, maxVal)
	}
	return v, err
}

func (r *reader) uint64() (uint64, error) { return r.dec.DecodeUint64() }

// bin reads a byte string (nil stays nil) no longer than the bytes left.
func (r *reader) bin() ([]byte, error) {
	n, err := r.dec.DecodeBytesLen()
	if err != nil || n < 0 {
		return nil, err
	}
	if n > r.rd.Len() {
		return nil, fmt.Errorf("%d-byte value in %d bytes", n, r.rd.Len())
	}
	b := make([]byte, n)
	return b, r.dec.ReadFull(b)
}

// str reads a string no longer than the bytes left (msgpack's own string
// decoder would first allocate up to 1 MB for a forged length).
func (r *reader) str() (string, error) {
	b, err := r.bin()
	return string(b), err
}

// entry reads [room, kind, bucket, minute, replica, value].
func (r *reader) entry() (w wireEntry, err error) {
	if err = r.array(6); err != nil {
		return w, err
	}
	if w.Room, err = r.str(); err != nil {
		return w, err
	}
	k, err := r.uint(math.MaxUint8)
	if err != nil {
		return w, fmt.Errorf("kind: %w", err)
	}
	w.Kind = uint8(k)
	if w.Bucket, err = r.dec.DecodeInt64(); err != nil {
		return w, err
	}
	if w.Minute, err = r.dec.DecodeInt64(); err != nil {
		return w, err
	}
	if w.Replica, err = r.dec.DecodeUint64(); err != nil {
		return w, err
	}
	w.Value, err = r.dec.DecodeUint64()
	return w, err
}

type stamped struct {
	at      int64
	entries []wireEntry
}

// stamped reads [at, [entries...]].
func (r *reader) stamped() (s stamped, err error) {
	if err = r.array(2); err != nil {
		return s, err
	}
	if s.at, err = r.dec.DecodeInt64(); err != nil {
		return s, fmt.Errorf("stamp: %w", err)
	}
	s.entries, err = list(r, 7, r.entry)
	return s, err
}

type beat struct {
	replica uint64
	at      int64
}

// beat reads [replica, at].
func (r *reader) beat() (b beat, err error) {
	if err = r.array(2); err != nil {
		return b, err
	}
	if b.replica, err = r.dec.DecodeUint64(); err != nil {
		return b, fmt.Errorf("replica: %w", err)
	}
	if b.at, err = r.dec.DecodeInt64(); err != nil {
		return b, fmt.Errorf("time: %w", err)
	}
	return b, nil
}

// register reads [name, value, wall, logical, replica].
func (r *reader) register() (w wireRegister, err error) {
	if err = r.array(5); err != nil {
		return w, err
	}
	if w.Name, err = r.str(); err != nil {
		return w, err
	}
	if w.Value, err = r.bin(); err != nil {
		return w, err
	}
	if w.Wall, err = r.dec.DecodeInt64(); err != nil {
		return w, err
	}
	l, err := r.uint(math.MaxUint32)
	if err != nil {
		return w, fmt.Errorf("logical clock: %w", err)
	}
	w.Logical = uint32(l)
	w.Replica, err = r.dec.DecodeUint64()
	return w, err
}

// full reads [horizon, replicas, rooms, registers], rooms as [name, cells]
// and cells as [kind, bucket, minute, counts].
func (r *reader) full() (f wireFull, err error) {
	if err = r.array(4); err != nil {
		return f, err
	}
	if f.Horizon, err = r.dec.DecodeInt64(); err != nil {
		return f, err
	}
	if f.Replicas, err = list(r, 1, r.uint64); err != nil {
		return f, fmt.Errorf("replicas: %w", err)
	}
	if f.Rooms, err = list(r, 3, r.room); err != nil {
		return f, fmt.Errorf("rooms: %w", err)
	}
	if f.Registers, err = list(r, 6, r.register); err != nil {
		return f, fmt.Errorf("registers: %w", err)
	}
	return f, nil
}

func (r *reader) room() (w wireRoom, err error) {
	if err = r.array(2); err != nil {
		return w, err
	}
	if w.Name, err = r.str(); err != nil {
		return w, err
	}
	w.Cells, err = list(r, 5, r.cell)
	return w, err
}

func (r *reader) cell() (c wireCell, err error) {
	if err = r.array(4); err != nil {
		return c, err
	}
	k, err := r.uint(math.MaxUint8)
	if err != nil {
		return c, fmt.Errorf("kind: %w", err)
	}
	c.Kind = uint8(k)
	if c.Bucket, err = r.dec.DecodeInt64(); err != nil {
		return c, err
	}
	if c.Minute, err = r.dec.DecodeInt64(); err != nil {
		return c, err
	}
	c.Counts, err = list(r, 1, r.uint64)
	return c, err
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

// maxNodeInfo bounds a NodeInfo register value: a name, an incarnation, an
// address and a flag take well under a hundred bytes.
const maxNodeInfo = 1024

// DecodeNodeInfo decodes a NodeInfo register value (a peer's announcement of
// itself, or of its leave) with the guards of every other message from a
// peer: bounded size and lengths, no trailing bytes, integers in range. The
// value is a msgpack map (see encodeNodeInfo); keys a newer version may add
// are skipped when they hold a plain value.
func DecodeNodeInfo(b []byte) (crdt.NodeInfo, error) {
	if len(b) == 0 {
		return crdt.NodeInfo{}, errEmpty
	}
	if len(b) > maxNodeInfo {
		return crdt.NodeInfo{}, fmt.Errorf("%w: node info of %d bytes > %d", errOversize, len(b), maxNodeInfo)
	}
	ni, err := decodeBody(b, (*reader).nodeInfo)
	if err != nil {
		return crdt.NodeInfo{}, err
	}
	if ni.Name == "" {
		return crdt.NodeInfo{}, fmt.Errorf("%w: node info without a name", errValidation)
	}
	return ni, nil
}

// nodeInfo reads a map of "n" (name), "i" (incarnation), "a" (address),
// "l" (left), "d" (data center) and "w" (address between data centers).
func (r *reader) nodeInfo() (ni crdt.NodeInfo, err error) {
	n, err := r.dec.DecodeMapLen()
	if err != nil {
		return ni, err
	}
	if n < 0 || n > r.rd.Len()/2 {
		return ni, fmt.Errorf("map of %d keys in %d bytes", n, r.rd.Len())
	}
	seen := map[string]bool{}
	for range n {
		key, err := r.str()
		if err != nil {
			return ni, fmt.Errorf("key: %w", err)
		}
		if seen[key] {
			return ni, fmt.Errorf("key %q twice", key)
		}
		seen[key] = true
		switch key {
		case "n":
			ni.Name, err = r.str()
			if err == nil && len(ni.Name) > maxRoomName {
				err = fmt.Errorf("name of %d bytes", len(ni.Name))
			}
		case "i":
			ni.Incarnation, err = r.dec.DecodeUint64()
		case "a":
			ni.Addr, err = r.str()
		case "l":
			ni.Left, err = r.dec.DecodeBool()
		case "d":
			ni.Datacenter, err = r.str()
			if err == nil && len(ni.Datacenter) > crdt.MaxDatacenterName {
				err = fmt.Errorf("data center of %d bytes", len(ni.Datacenter))
			}
		case "w":
			ni.WAN, err = r.str()
		default:
			err = r.skipScalar()
		}
		if err != nil {
			return ni, fmt.Errorf("%q: %w", key, err)
		}
	}
	return ni, nil
}

// skipScalar skips one value that is not an array, a map or an extension,
// allocating no more than the bytes left.
func (r *reader) skipScalar() error {
	c, err := r.dec.PeekCode()
	if err != nil {
		return err
	}
	switch {
	case msgpcode.IsFixedMap(c), msgpcode.IsFixedArray(c), msgpcode.IsExt(c),
		c == msgpcode.Array16, c == msgpcode.Array32, c == msgpcode.Map16, c == msgpcode.Map32:
		return fmt.Errorf("unexpected nested value (code %#x)", c)
	case msgpcode.IsString(c), msgpcode.IsBin(c):
		_, err = r.bin()
		return err
	}
	_, err = r.dec.DecodeInterfaceLoose()
	return err
}

// EncodeNodeInfo encodes a node announcement as nodes publish it (tests and
// tools that speak for a node).
func EncodeNodeInfo(ni crdt.NodeInfo) ([]byte, error) { return encodeNodeInfo(ni) }
