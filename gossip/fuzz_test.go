package gossip

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/waitroom/waitroom/crdt"
)

// FuzzDecode feeds arbitrary bytes to Decode. It must never panic nor
// allocate without bound; a refused message yields nothing; anything it
// accepts is valid content that re-encodes to a message decoding to the same
// delta, and re-encoding that gives the same bytes.
//
// The seed corpus is in testdata/fuzz/FuzzDecode; run the fuzzer with
//
//	go test -run '^$' -fuzz '^FuzzDecode$' -fuzztime 30s ./gossip/
func FuzzDecode(f *testing.F) {
	a, b := crdt.NewReplicaID("a", 1), crdt.NewReplicaID("b", 2)
	f.Add(must(EncodeEntries([]crdt.Entry{entry(crdt.Key{Room: "shop", Kind: crdt.Admitted, Bucket: 0, Minute: testMinute}, a, 3), entry(crdt.Key{Room: "shop", Kind: crdt.WaitingMinus, Bucket: testMinute - 2, Minute: testMinute}, b, 1)})))
	f.Add(must(EncodeRegisters([]crdt.RegisterEntry{register("room/shop", []byte(`{"total_active_users":100}`), 1_700_000_000_000, 2, a)})))
	s := roomState(3, 3)
	f.Add(must(EncodeFull(s.Full(), s.Horizon())))
	f.Add(must(EncodeBeat(a, 1_700_000_000_123)))
	f.Add(must(EncodeStampedEntries([]crdt.Entry{entry(crdt.Key{Room: "shop", Kind: crdt.Admitted, Bucket: 0, Minute: testMinute}, a, 3)}, 1_700_000_000_123)))
	f.Add(must(EncodeMarks([]crdt.Mark{{ID: "code/shop/Zx81", Expires: 1_700_172_800}, {ID: "revoked/shop/Qq", Expires: 1_700_100_000}}, 1_700_000_000)))
	east := crdt.NewGroup("east", []crdt.ReplicaID{a, b})
	f.Add(must(EncodeFigures("east", "shop", []crdt.Group{east}, []crdt.Entry{entry(crdt.Key{Room: "shop", Kind: crdt.Admitted, Minute: testMinute}, east.ID(), 5), entry(crdt.Key{Room: "shop", Kind: crdt.WaitingPlus, Bucket: testMinute - 3, Minute: testMinute}, east.ID(), 2)})))
	dc := crdt.New()
	dc.Merge(crdt.Delta{Groups: []crdt.Group{east}, Aggregates: []crdt.Entry{entry(crdt.Key{Room: "shop", Kind: crdt.Admitted, Minute: testMinute}, east.ID(), 5)}})
	f.Add(must(EncodeFull(dc.Full(), dc.Horizon())))

	f.Fuzz(func(t *testing.T, msg []byte) {
		m, err := Decode(msg, MaxFullState)
		if err != nil {
			if !reflect.DeepEqual(m, Message{}) {
				t.Fatalf("refused (%v) but returned content %+v", err, m)
			}
			switch dropReason(err) {
			case "oversize", "version", "type", "invalid", "malformed":
			default:
				t.Fatalf("error %v has no drop reason", err)
			}
			return
		}
		for i, e := range m.Delta.Entries {
			if !validEntry(e) {
				t.Fatalf("accepted an invalid entry %d: %+v", i, e)
			}
		}
		for i, r := range m.Delta.Registers {
			if !validRegister(r) {
				t.Fatalf("accepted an invalid register %d: %+v", i, r)
			}
		}
		for i, e := range m.Delta.Aggregates {
			if !validEntry(e) {
				t.Fatalf("accepted an invalid aggregate %d: %+v", i, e)
			}
		}
		for i, g := range m.Delta.Groups {
			if err := g.Check(); err != nil {
				t.Fatalf("accepted an invalid group %d: %v", i, err)
			}
		}
		for i, mk := range m.Marks {
			if !validMark(mk) {
				t.Fatalf("accepted an invalid mark %d: %+v", i, mk)
			}
		}
		if m.Type != msgMarks && m.Marks != nil {
			t.Fatalf("a message of type %d carried marks: %+v", m.Type, m)
		}
		var again []byte
		switch m.Type {
		case msgEntries:
			if len(m.Delta.Registers) != 0 || m.Horizon != 0 || m.At != 0 {
				t.Fatalf("an entries message carried more: %+v", m)
			}
			again, err = EncodeEntries(m.Delta.Entries)
		case msgStampedEntries:
			if len(m.Delta.Registers) != 0 || m.Horizon != 0 || m.At < 0 {
				t.Fatalf("a stamped entries message carried more: %+v", m)
			}
			again, err = EncodeStampedEntries(m.Delta.Entries, m.At)
		case msgBeat:
			if len(m.Delta.Entries) != 0 || len(m.Delta.Registers) != 0 || m.At <= 0 || m.Origin == 0 {
				t.Fatalf("a beat carried more or less: %+v", m)
			}
			again, err = EncodeBeat(m.Origin, m.At)
		case msgRegisters:
			if len(m.Delta.Entries) != 0 || m.Horizon != 0 {
				t.Fatalf("a register message carried more: %+v", m)
			}
			again, err = EncodeRegisters(m.Delta.Registers)
		case msgFull:
			again, err = EncodeFull(m.Delta, m.Horizon)
		case msgFullDC:
			again, err = encodeFullDC(m.Delta, m.Horizon)
		case msgFigures:
			if len(m.Delta.Entries) != 0 || len(m.Delta.Registers) != 0 || len(m.Delta.Aggregates) == 0 || m.Horizon != 0 || m.Datacenter == "" {
				t.Fatalf("a figures message carried more or less: %+v", m)
			}
			for _, g := range m.Delta.Groups {
				if g.Datacenter != m.Datacenter {
					t.Fatalf("a figures message of %q carried a group of %q", m.Datacenter, g.Datacenter)
				}
			}
			again, err = EncodeFigures(m.Datacenter, m.Delta.Aggregates[0].Key.Room, m.Delta.Groups, m.Delta.Aggregates)
		case msgMarks:
			if !m.Delta.Empty() || m.At != 0 || m.Horizon < 0 {
				t.Fatalf("a marks message carried more: %+v", m)
			}
			again, err = EncodeMarks(m.Marks, m.Horizon)
		default:
			t.Fatalf("accepted message type %d", m.Type)
		}
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		m2, err := Decode(again, MaxFullState)
		if err != nil {
			t.Fatalf("a re-encoded message is refused: %v\nfirst: % x\nagain: % x", err, msg, again)
		}
		if m2.Type != m.Type || m2.Horizon != m.Horizon || m2.At != m.At || m2.Origin != m.Origin || m2.Datacenter != m.Datacenter || !sameDelta(m.Delta, m2.Delta) || !reflect.DeepEqual(m.Marks, m2.Marks) {
			t.Fatalf("the delta changed on re-encoding:\n%+v\n%+v", m, m2)
		}
		var third []byte
		switch m2.Type {
		case msgEntries:
			third, _ = EncodeEntries(m2.Delta.Entries)
		case msgStampedEntries:
			third, _ = EncodeStampedEntries(m2.Delta.Entries, m2.At)
		case msgBeat:
			third, _ = EncodeBeat(m2.Origin, m2.At)
		case msgRegisters:
			third, _ = EncodeRegisters(m2.Delta.Registers)
		case msgFull:
			third, _ = EncodeFull(m2.Delta, m2.Horizon)
		case msgFullDC:
			third, _ = encodeFullDC(m2.Delta, m2.Horizon)
		case msgFigures:
			third, _ = EncodeFigures(m2.Datacenter, m2.Delta.Aggregates[0].Key.Room, m2.Delta.Groups, m2.Delta.Aggregates)
		case msgMarks:
			third, _ = EncodeMarks(m2.Marks, m2.Horizon)
		}
		if !bytes.Equal(again, third) {
			t.Fatalf("encoding is not stable:\n% x\n% x", again, third)
		}
		// What a node would do with it must not panic either.
		st := crdt.New()
		st.Prune(m.Horizon)
		st.Merge(m.Delta)
		var ms crdt.Marks
		ms.Prune(m.Horizon)
		ms.Merge(m.Marks)
	})
}

// FuzzDecodeNodeInfo feeds arbitrary bytes to DecodeNodeInfo, the decoder of
// the node announcements (and leaves) peers publish. It must never panic nor
// allocate without bound; what it accepts has a name and re-encodes to an
// announcement that decodes the same.
//
//	go test -run '^$' -fuzz '^FuzzDecodeNodeInfo$' -fuzztime 30s ./gossip/
func FuzzDecodeNodeInfo(f *testing.F) {
	f.Add(must(encodeNodeInfo(crdt.NodeInfo{Name: "pop-1", Incarnation: 1_700_000_000_000_000_000, Addr: "127.0.0.1:7946"})))
	f.Add(must(encodeNodeInfo(crdt.NodeInfo{Name: "pop-2", Incarnation: 2, Left: true})))
	f.Add([]byte{0x81, 0xa1, 'n', 0xdb, 0xff, 0xff, 0xff, 0xff})     // a name claiming four gigabytes
	f.Add([]byte{0x82, 0xa1, 'n', 0xa1, 'x', 0xa1, 'z', 0x91, 0x01}) // an unknown key holding an array
	f.Fuzz(func(t *testing.T, b []byte) {
		ni, err := DecodeNodeInfo(b)
		if err != nil {
			if ni != (crdt.NodeInfo{}) {
				t.Fatalf("refused (%v) but returned %+v", err, ni)
			}
			return
		}
		if ni.Name == "" || len(ni.Name) > maxRoomName {
			t.Fatalf("accepted a name of %d bytes", len(ni.Name))
		}
		again, err := encodeNodeInfo(ni)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		ni2, err := DecodeNodeInfo(again)
		if err != nil || ni2 != ni {
			t.Fatalf("re-encoded announcement decodes to %+v (%v), want %+v", ni2, err, ni)
		}
	})
}
