package gossip

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/waitroom/waitroom/crdt"
)

const testMinute = 29_000_000 // a unix minute in 2025

func entry(k crdt.Key, replica crdt.ReplicaID, v uint64) crdt.Entry {
	return crdt.Entry{Key: k, Replica: replica, Value: v}
}

func register(name string, value []byte, wall int64, logical uint32, replica crdt.ReplicaID) crdt.RegisterEntry {
	return crdt.RegisterEntry{Name: name, Reg: crdt.LWW[[]byte]{Value: value, Stamp: crdt.HLC{Wall: wall, Logical: logical}, Replica: replica}}
}

// sameDelta compares deltas, treating nil and empty slices (and register
// values) as equal: msgpack does not tell them apart.
func sameDelta(a, b crdt.Delta) bool {
	if len(a.Entries) != len(b.Entries) || len(a.Registers) != len(b.Registers) || !slices.Equal(a.Aggregates, b.Aggregates) || len(a.Groups) != len(b.Groups) {
		return false
	}
	for i := range a.Groups {
		if a.Groups[i].Datacenter != b.Groups[i].Datacenter || !slices.Equal(a.Groups[i].Replicas, b.Groups[i].Replicas) {
			return false
		}
	}
	for i := range a.Entries {
		if a.Entries[i] != b.Entries[i] {
			return false
		}
	}
	for i := range a.Registers {
		x, y := a.Registers[i], b.Registers[i]
		if x.Name != y.Name || x.Reg.Stamp != y.Reg.Stamp || x.Reg.Replica != y.Reg.Replica || !bytes.Equal(x.Reg.Value, y.Reg.Value) {
			return false
		}
	}
	return true
}

// roomState builds the state of one room written by `replicas` nodes over
// `minutes` minutes, with every kind a live room uses and a NodeInfo
// register per replica.
func roomState(replicas, minutes int) *crdt.State { return roomStateAt(replicas, minutes, testMinute) }

// roomStateAt is roomState with its first minute at base (a live node
// ignores cells older than its retention).
func roomStateAt(replicas, minutes int, base int64) *crdt.State {
	s := crdt.New()
	for r := 0; r < replicas; r++ {
		name := "node-" + string(rune('a'+r%26)) + string(rune('a'+r/26))
		id := crdt.NewReplicaID(name, uint64(r+1))
		for m := 0; m < minutes; m++ {
			minute := base + int64(m)
			for _, k := range []crdt.Kind{crdt.Arrivals, crdt.Admitted, crdt.ActivePlus, crdt.ActiveMinus} {
				s.Add(crdt.Key{Room: "shop", Kind: k, Minute: minute}, id, uint64(17*r+m+int(k)))
			}
			for b := max(0, m-4); b <= m; b++ {
				s.Add(crdt.Key{Room: "shop", Kind: crdt.WaitingPlus, Bucket: base + int64(b), Minute: minute}, id, uint64(3*r+b+1))
				s.Add(crdt.Key{Room: "shop", Kind: crdt.WaitingMinus, Bucket: base + int64(b), Minute: minute}, id, uint64(r+b+1))
			}
		}
		s.SetRegister(NodeInfoRegister(id), must(encodeNodeInfo(crdt.NodeInfo{Name: name, Incarnation: uint64(r + 1)})), id, 1_700_000_000_000+int64(r))
	}
	return s
}

func TestWireRoundTrip(t *testing.T) {
	a, b := crdt.NewReplicaID("a", 1), crdt.NewReplicaID("b", 2)
	t.Run("entries", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			es   []crdt.Entry
		}{
			{"no entry survives the trip as no entry", nil},
			{"a single admission survives the trip", []crdt.Entry{entry(crdt.Key{Room: "shop", Kind: crdt.Admitted, Bucket: 0, Minute: testMinute}, a, 1)}},
			{"a waiting entry keeps its arrival bucket", []crdt.Entry{entry(crdt.Key{Room: "shop", Kind: crdt.WaitingMinus, Bucket: testMinute - 3, Minute: testMinute}, b, 42)}},
			{"extreme values keep every bit", []crdt.Entry{
				entry(crdt.Key{Room: strings.Repeat("r", maxRoomName), Kind: 255, Bucket: math.MinInt64, Minute: math.MaxInt64}, math.MaxUint64, math.MaxUint64),
				entry(crdt.Key{Room: "é room ✓", Kind: crdt.AnalyticsBase, Bucket: -1, Minute: -1}, 1, 1),
			}},
			{"several rooms and replicas keep their order", []crdt.Entry{
				entry(crdt.Key{Room: "b", Kind: crdt.Arrivals, Bucket: 0, Minute: testMinute}, b, 9),
				entry(crdt.Key{Room: "a", Kind: crdt.Arrivals, Bucket: 0, Minute: testMinute}, a, 7),
				entry(crdt.Key{Room: "a", Kind: crdt.ActivePlus, Bucket: 0, Minute: testMinute + 1}, b, 3),
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				msg, err := EncodeEntries(tc.es)
				if err != nil {
					t.Fatal(err)
				}
				m, err := Decode(msg, MaxPacketMessage)
				if err != nil {
					t.Fatalf("decode: %v (% x)", err, msg)
				}
				if m.Type != msgEntries || !sameDelta(m.Delta, crdt.Delta{Entries: tc.es}) {
					t.Fatalf("got %+v, want type %d with %+v", m, msgEntries, tc.es)
				}
			})
		}
	})

	t.Run("registers", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			rs   []crdt.RegisterEntry
		}{
			{"a node info register survives the trip", []crdt.RegisterEntry{register(NodeInfoRegister(a), []byte{1, 2, 3}, 1_700_000_000_000, 0, a)}},
			{"an empty value and a nil value survive the trip", []crdt.RegisterEntry{register("room/x", nil, 1, 1, a), register("room/y", []byte{}, 2, 2, b)}},
			{"the largest stamp survives the trip", []crdt.RegisterEntry{register("room/z", []byte("v"), math.MaxInt64, math.MaxUint32, math.MaxUint64)}},
			{"a value far larger than a packet survives the trip", []crdt.RegisterEntry{register("room/page", bytes.Repeat([]byte("<p>"), 10_000), 5, 0, b)}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				msg, err := EncodeRegisters(tc.rs)
				if err != nil {
					t.Fatal(err)
				}
				m, err := Decode(msg, MaxReliableMessage)
				if err != nil {
					t.Fatalf("decode: %v", err)
				}
				if m.Type != msgRegisters || !sameDelta(m.Delta, crdt.Delta{Registers: tc.rs}) {
					t.Fatalf("got %+v, want %+v", m.Delta, tc.rs)
				}
			})
		}
	})

	t.Run("full state", func(t *testing.T) {
		two := crdt.New()
		two.Add(crdt.Key{Room: "a", Kind: crdt.Admitted, Minute: testMinute}, a, 3)
		two.Add(crdt.Key{Room: "a", Kind: crdt.Admitted, Minute: testMinute}, b, 4)
		two.Add(crdt.Key{Room: "b", Kind: crdt.WaitingPlus, Bucket: testMinute - 1, Minute: testMinute}, b, 5)
		two.SetRegister("room/a", []byte("cfg"), a, 1_700_000_000_000)
		pruned := roomState(3, 10)
		pruned.Prune(testMinute + 4)
		for _, tc := range []struct {
			name string
			s    *crdt.State
		}{
			{"an empty state survives the trip", crdt.New()},
			{"two rooms sharing replicas survive the trip", two},
			{"a 50-node room with an hour of counters survives the trip", roomState(50, 60)},
			{"a pruned state keeps its horizon", pruned},
		} {
			t.Run(tc.name, func(t *testing.T) {
				full := tc.s.Full()
				msg, err := EncodeFull(full, tc.s.Horizon())
				if err != nil {
					t.Fatal(err)
				}
				m, err := Decode(msg, MaxFullState)
				if err != nil {
					t.Fatalf("decode: %v", err)
				}
				if m.Type != msgFull || m.Horizon != tc.s.Horizon() || !sameDelta(m.Delta, full) {
					t.Fatalf("full state changed on the trip: horizon %d (want %d), %d entries (want %d)", m.Horizon, tc.s.Horizon(), len(m.Delta.Entries), len(full.Entries))
				}
				got := crdt.New()
				got.Prune(m.Horizon)
				got.Merge(m.Delta)
				if !got.Equal(tc.s) {
					t.Fatal("the state rebuilt from the message differs from the original")
				}
				t.Logf("%d entries, %d registers: %d bytes (%.1f bytes per entry)", len(full.Entries), len(full.Registers), len(msg), float64(len(msg))/float64(max(1, len(full.Entries))))
			})
		}
	})
}

func TestTypicalBroadcastFitsAPacket(t *testing.T) {
	r := crdt.NewReplicaID("pop-fra-1", 1_763_000_000_000_000_000)
	for _, tc := range []struct {
		name string
		e    crdt.Entry
	}{
		{"an admission counter entry", entry(crdt.Key{Room: "tickets.example.com/sale", Kind: crdt.Admitted, Bucket: 0, Minute: testMinute}, r, 1234)},
		{"a waiting entry with its arrival bucket", entry(crdt.Key{Room: "tickets.example.com/sale", Kind: crdt.WaitingMinus, Bucket: testMinute - 4, Minute: testMinute}, r, 99)},
	} {
		t.Run(tc.name+" is far under the packet budget", func(t *testing.T) {
			msg, err := EncodeEntries([]crdt.Entry{tc.e})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("single-entry broadcast: %d bytes (budget %d)", len(msg), MaxPacketMessage)
			if len(msg) > MaxPacketMessage/10 {
				t.Fatalf("%d bytes: a single entry should take under a tenth of the %d-byte budget", len(msg), MaxPacketMessage)
			}
		})
	}
}

// raw builds a message from a header and any msgpack-encodable body.
func raw(t testing.TB, typ byte, body any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte{header(typ)}, b...)
}

// must unwraps an encoder's result; encoding a well-formed delta cannot fail.
func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func TestDecodeRejects(t *testing.T) {
	a := crdt.NewReplicaID("a", 1)
	good := entry(crdt.Key{Room: "shop", Kind: crdt.Admitted, Bucket: 0, Minute: testMinute}, a, 5)
	goodEntries := must(EncodeEntries([]crdt.Entry{good, good}))
	goodRegs := must(EncodeRegisters([]crdt.RegisterEntry{register("room/x", []byte("v"), 1, 0, a)}))
	goodFull := must(EncodeFull(roomState(2, 2).Full(), 0))
	// wireEntry as a plain array, so that fields can take any value.
	we := func(room string, kind any, replica, value uint64) []any {
		return []any{room, kind, 0, testMinute, replica, value}
	}
	ok := we("shop", 2, 1, 1)
	// A full state as plain arrays: [horizon, replicas, rooms, registers].
	full := func(replicas []uint64, rooms []any, regs []any) []any { return []any{0, replicas, rooms, regs} }
	cell := func(kind uint64, counts ...uint64) []any { return []any{kind, 0, testMinute, counts} }
	room := func(name string, cells ...any) []any { return []any{name, cells} }
	reg := func(name string, replica uint64) []any { return []any{name, []byte("v"), 1, 0, replica} }

	for _, tc := range []struct {
		name   string
		msg    []byte
		limit  int
		want   error
		reason string
	}{
		{"an empty message is refused", nil, MaxPacketMessage, errEmpty, "malformed"},
		{"a message from a newer protocol version is refused", append([]byte{2<<4 | msgEntries}, goodEntries[1:]...), MaxPacketMessage, errVersion, "version"},
		{"a message from protocol version zero is refused", append([]byte{msgEntries}, goodEntries[1:]...), MaxPacketMessage, errVersion, "version"},
		{"a message of type zero is refused", append([]byte{header(0)}, goodEntries[1:]...), MaxPacketMessage, errType, "type"},
		{"a message of an unknown type is refused", append([]byte{header(0x0e)}, goodEntries[1:]...), MaxPacketMessage, errType, "type"},
		{"a message over the limit is refused before it is parsed", append(goodEntries, make([]byte, MaxPacketMessage)...), MaxPacketMessage, errOversize, "oversize"},
		{"a full state over its bound is refused", append(goodFull, make([]byte, MaxFullState)...), MaxFullState, errOversize, "oversize"},

		{"a truncated entries message is refused", goodEntries[:len(goodEntries)-1], MaxPacketMessage, errMalformed, "malformed"},
		{"a header without a body is refused", goodEntries[:1], MaxPacketMessage, errMalformed, "malformed"},
		{"a truncated register message is refused", goodRegs[:len(goodRegs)-2], MaxPacketMessage, errMalformed, "malformed"},
		{"a truncated full state is refused", goodFull[:len(goodFull)-1], MaxFullState, errMalformed, "malformed"},
		{"an entries message with trailing bytes is refused", append(bytes.Clone(goodEntries), 0x00), MaxPacketMessage, errMalformed, "malformed"},
		{"a register message with trailing bytes is refused", append(bytes.Clone(goodRegs), 0xc0), MaxPacketMessage, errMalformed, "malformed"},
		{"a full state with trailing bytes is refused", append(bytes.Clone(goodFull), 0x00), MaxFullState, errMalformed, "malformed"},
		{"an entries message that is not an array is refused", raw(t, msgEntries, "shop"), MaxPacketMessage, errMalformed, "malformed"},
		{"an entries message that is nil is refused", raw(t, msgEntries, nil), MaxPacketMessage, errMalformed, "malformed"},
		{"an entry with a field missing is refused", raw(t, msgEntries, []any{[]any{"shop", 2, 0, testMinute, 1}}), MaxPacketMessage, errMalformed, "malformed"},
		{"an entry with a string for a number is refused", raw(t, msgEntries, []any{[]any{"shop", "two", 0, testMinute, 1, 1}}), MaxPacketMessage, errMalformed, "malformed"},
		{"a full state that is not an array is refused", raw(t, msgFull, map[string]int{"a": 1}), MaxFullState, errMalformed, "malformed"},

		{"an entries array claiming four billion elements is refused", []byte{header(msgEntries), 0xdd, 0xff, 0xff, 0xff, 0xff, 0x96}, MaxPacketMessage, errMalformed, "malformed"},
		{"a register array claiming four billion elements is refused", []byte{header(msgRegisters), 0xdd, 0xff, 0xff, 0xff, 0xff}, MaxPacketMessage, errMalformed, "malformed"},
		{"a full state claiming four billion replicas is refused", []byte{header(msgFull), 0x94, 0x00, 0xdd, 0xff, 0xff, 0xff, 0xff, 0x01}, MaxFullState, errMalformed, "malformed"},
		{"a full state claiming four billion rooms is refused", []byte{header(msgFull), 0x94, 0x00, 0x90, 0xdd, 0xff, 0xff, 0xff, 0xff, 0x92}, MaxFullState, errMalformed, "malformed"},
		{"a full state claiming four billion cells is refused", []byte{header(msgFull), 0x94, 0x00, 0x90, 0x91, 0x92, 0xa1, 'r', 0xdd, 0xff, 0xff, 0xff, 0xff}, MaxFullState, errMalformed, "malformed"},
		{"a full state claiming four billion counts is refused", []byte{header(msgFull), 0x94, 0x00, 0x91, 0x01, 0x91, 0x92, 0xa1, 'r', 0x91, 0x94, 0x02, 0x00, 0x00, 0xdd, 0xff, 0xff, 0xff, 0xff}, MaxFullState, errMalformed, "malformed"},
		{"a full state claiming four billion registers is refused", []byte{header(msgFull), 0x94, 0x00, 0x90, 0x90, 0xdd, 0xff, 0xff, 0xff, 0xff}, MaxFullState, errMalformed, "malformed"},
		{"a room name claiming four gigabytes is refused", []byte{header(msgEntries), 0x91, 0x96, 0xdb, 0xff, 0xff, 0xff, 0xff, 's'}, MaxPacketMessage, errMalformed, "malformed"},
		{"a register value claiming four gigabytes is refused", []byte{header(msgRegisters), 0x91, 0x95, 0xa1, 'x', 0xc6, 0xff, 0xff, 0xff, 0xff}, MaxReliableMessage, errMalformed, "malformed"},

		{"an entry with an empty room is refused", raw(t, msgEntries, []any{ok, we("", 2, 1, 1)}), MaxPacketMessage, errValidation, "invalid"},
		{"an entry with a room name too long is refused", raw(t, msgEntries, []any{ok, we(strings.Repeat("r", maxRoomName+1), 2, 1, 1)}), MaxPacketMessage, errValidation, "invalid"},
		{"an entry of kind zero is refused", raw(t, msgEntries, []any{ok, we("shop", 0, 1, 1)}), MaxPacketMessage, errValidation, "invalid"},
		{"an entry with value zero is refused", raw(t, msgEntries, []any{ok, we("shop", 2, 1, 0)}), MaxPacketMessage, errValidation, "invalid"},
		{"an entry of replica zero is refused", raw(t, msgEntries, []any{ok, we("shop", 2, 0, 1)}), MaxPacketMessage, errValidation, "invalid"},
		{"an entry whose kind does not fit a byte is refused, not truncated", raw(t, msgEntries, []any{ok, we("shop", 257, 1, 1)}), MaxPacketMessage, errMalformed, "malformed"},
		{"a register with an empty name is refused", raw(t, msgRegisters, []any{reg("room/x", 1), reg("", 1)}), MaxPacketMessage, errValidation, "invalid"},
		{"a register with a name too long is refused", raw(t, msgRegisters, []any{reg(strings.Repeat("n", maxRegisterName+1), 1)}), MaxPacketMessage, errValidation, "invalid"},
		{"a register of replica zero is refused", raw(t, msgRegisters, []any{reg("room/x", 0)}), MaxPacketMessage, errValidation, "invalid"},
		{"a register whose logical clock does not fit 32 bits is refused, not truncated", raw(t, msgRegisters, []any{[]any{"room/x", []byte("v"), 1, uint64(math.MaxUint32) + 1, 1}}), MaxPacketMessage, errMalformed, "malformed"},

		{"a full state with a replica index out of range is refused", raw(t, msgFull, full([]uint64{7}, []any{room("shop", cell(2, 0, 1, 1, 2))}, nil)), MaxFullState, errValidation, "invalid"},
		{"a full state with an odd count list is refused", raw(t, msgFull, full([]uint64{7}, []any{room("shop", cell(2, 0, 1, 0))}, nil)), MaxFullState, errValidation, "invalid"},
		{"a full state with an empty room is refused", raw(t, msgFull, full([]uint64{7}, []any{room("", cell(2, 0, 1))}, nil)), MaxFullState, errValidation, "invalid"},
		{"a full state with a cell of kind zero is refused", raw(t, msgFull, full([]uint64{7}, []any{room("shop", cell(0, 0, 1))}, nil)), MaxFullState, errValidation, "invalid"},
		{"a full state with a count of zero is refused", raw(t, msgFull, full([]uint64{7}, []any{room("shop", cell(2, 0, 0))}, nil)), MaxFullState, errValidation, "invalid"},
		{"a full state with replica zero is refused", raw(t, msgFull, full([]uint64{0}, []any{room("shop", cell(2, 0, 1))}, nil)), MaxFullState, errValidation, "invalid"},
		{"a full state with a register of replica zero is refused", raw(t, msgFull, full(nil, nil, []any{reg("room/x", 0)})), MaxFullState, errValidation, "invalid"},
		{"a full state whose cell kind does not fit a byte is refused", raw(t, msgFull, full([]uint64{7}, []any{room("shop", cell(258, 0, 1))}, nil)), MaxFullState, errMalformed, "malformed"},
		{"a full state with a field missing is refused", raw(t, msgFull, []any{0, []uint64{7}, []any{}}), MaxFullState, errMalformed, "malformed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			m, err := Decode(tc.msg, tc.limit)
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			if err == nil {
				t.Fatalf("accepted: %+v", m)
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %q, want %q", err, tc.want)
			}
			if got := dropReason(err); got != tc.reason {
				t.Fatalf("counted as %q, want %q (error %q)", got, tc.reason, err)
			}
			if !reflect.DeepEqual(m, Message{}) {
				t.Fatalf("a refused message returned content, which a caller could merge half-way: %+v", m)
			}
			// A forged length must not make the decoder allocate beyond
			// what the message's own bytes could hold.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
				t.Fatalf("decoding %d bytes allocated %d MB", len(tc.msg), alloc>>20)
			}
		})
	}
}

// The full state a 50-node room sends by push-pull must stay well inside
// MaxFullState and memberlist's 20 MB push-pull limit.
func TestFullStateOfALargeRoomIsBounded(t *testing.T) {
	s := roomState(50, 60)
	msg := must(EncodeFull(s.Full(), s.Horizon()))
	st := s.Stats()
	t.Logf("50 nodes × 60 minutes: %d cells, %d entries, %d registers → %d bytes (bound %d)", st.Cells, st.Entries, st.Registers, len(msg), MaxFullState)
	if len(msg) > MaxFullState/4 {
		t.Fatalf("%d bytes is too close to the %d-byte bound", len(msg), MaxFullState)
	}
}
