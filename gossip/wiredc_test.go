package gossip

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/waitroom/waitroom/crdt"
)

func TestFiguresRoundTrip(t *testing.T) {
	a, b := crdt.NewReplicaID("a", 1), crdt.NewReplicaID("b", 2)
	east := crdt.NewGroup("east", []crdt.ReplicaID{a, b})
	lost := crdt.NewGroup("east", []crdt.ReplicaID{b})
	for _, tc := range []struct {
		name   string
		groups []crdt.Group
		es     []crdt.Entry
	}{
		{"a busy minute's cells survive the trip", []crdt.Group{east}, []crdt.Entry{
			entry(crdt.Key{Room: "shop", Kind: crdt.Admitted, Minute: testMinute}, east.ID(), 120),
			entry(crdt.Key{Room: "shop", Kind: crdt.WaitingMinus, Bucket: testMinute - 30, Minute: testMinute}, east.ID(), 40),
			entry(crdt.Key{Room: "shop", Kind: crdt.SessionPlus, Bucket: testMinute*60 + 1800, Minute: testMinute + 30}, lost.ID(), 3),
		}},
		{"figures without their groups survive the trip", nil, []crdt.Entry{entry(crdt.Key{Room: "shop", Kind: crdt.Arrivals, Minute: testMinute}, east.ID(), 1)}},
		{"extreme keys keep every bit", []crdt.Group{east}, []crdt.Entry{
			entry(crdt.Key{Room: "shop", Kind: 255, Bucket: math.MinInt64, Minute: math.MaxInt64}, east.ID(), math.MaxUint64),
			entry(crdt.Key{Room: "shop", Kind: 1, Bucket: math.MaxInt64, Minute: math.MinInt64}, lost.ID(), 1),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg, err := EncodeFigures("east", "shop", tc.groups, tc.es)
			if err != nil {
				t.Fatal(err)
			}
			m, err := Decode(msg, MaxPacketMessage)
			if err != nil {
				t.Fatalf("decode: %v (% x)", err, msg)
			}
			if m.Type != msgFigures || m.Datacenter != "east" || !sameDelta(m.Delta, crdt.Delta{Aggregates: tc.es, Groups: tc.groups}) {
				t.Fatalf("got %+v, want the figures %+v and groups %+v of east", m, tc.es, tc.groups)
			}
		})
	}
	t.Run("a cell's figure takes a few bytes where an entry message takes dozens", func(t *testing.T) {
		var es []crdt.Entry
		for i := range 20 {
			es = append(es, entry(crdt.Key{Room: "shop", Kind: crdt.WaitingMinus, Bucket: testMinute - int64(i), Minute: testMinute}, east.ID(), uint64(100+i)))
		}
		batch := must(EncodeFigures("east", "shop", nil, es))
		one := must(EncodeEntries(es[:1]))
		if per := (len(batch) - 20) / len(es); per > 10 || len(one) < 40 {
			t.Fatalf("%d bytes for %d figures (%d each), an entry message %d bytes", len(batch), len(es), per, len(one))
		}
	})
}

func TestFullStateOfADatacenter(t *testing.T) {
	a := crdt.NewReplicaID("a", 1)
	east := crdt.NewGroup("east", []crdt.ReplicaID{a})
	s := roomState(2, 2)
	t.Run("a state without figures is sent as it always was", func(t *testing.T) {
		if msg := must(EncodeFull(s.Full(), s.Horizon())); msg[0] != header(msgFull) {
			t.Fatalf("type %d", msg[0]&0x0f)
		}
	})
	s.Merge(crdt.Delta{Groups: []crdt.Group{east}, Aggregates: []crdt.Entry{entry(crdt.Key{Room: "shop", Kind: crdt.Admitted, Minute: testMinute}, east.ID(), 7)}})
	t.Run("a state with figures survives the trip whole", func(t *testing.T) {
		full := s.Full()
		m, err := Decode(must(EncodeFull(full, s.Horizon())), MaxFullState)
		if err != nil {
			t.Fatal(err)
		}
		if m.Type != msgFullDC || !sameDelta(m.Delta, full) {
			t.Fatalf("got type %d, %+v; want %+v", m.Type, m.Delta, full)
		}
	})
}

func TestDecodeRejectsFigures(t *testing.T) {
	a := uint64(crdt.NewReplicaID("a", 1))
	fig := func(dc, room string, groups [][]uint64, ids []uint64, rows ...[]any) []byte {
		return raw(t, msgFigures, []any{dc, room, groups, ids, rows})
	}
	row := func(idx uint64, value uint64) []any { return []any{2, 0, testMinute, idx, value} }
	for _, tc := range []struct {
		name string
		msg  []byte
		want error
	}{
		{"figures of no data center are refused", fig("", "shop", nil, []uint64{a}, row(0, 1)), errValidation},
		{"figures of a data center's name past the bound are refused", fig(strings.Repeat("d", crdt.MaxDatacenterName+1), "shop", nil, []uint64{a}, row(0, 1)), errValidation},
		{"figures of no room are refused", fig("east", "", nil, []uint64{a}, row(0, 1)), errValidation},
		{"a batch of no figure is refused", fig("east", "shop", nil, []uint64{a}), errMalformed},
		{"a figure naming a group past the ids is refused", fig("east", "shop", nil, []uint64{a}, row(1, 1)), errValidation},
		{"a figure of value zero is refused", fig("east", "shop", nil, []uint64{a}, row(0, 0)), errValidation},
		{"a figure of kind zero is refused", fig("east", "shop", nil, []uint64{a}, []any{0, 0, testMinute, 0, 1}), errValidation},
		{"a group of no replica is refused", fig("east", "shop", [][]uint64{{}}, []uint64{a}, row(0, 1)), errValidation},
		{"a group whose replicas are out of order is refused", fig("east", "shop", [][]uint64{{3, 2}}, []uint64{a}, row(0, 1)), errValidation},
		{"a figure whose kind does not fit a byte is refused, not truncated", fig("east", "shop", nil, []uint64{a}, []any{257, 0, testMinute, 0, 1}), errMalformed},
		{"a batch claiming four billion figures is refused", []byte{header(msgFigures), 0x95, 0xa1, 'e', 0xa1, 's', 0x90, 0x90, 0xdd, 0xff, 0xff, 0xff, 0xff}, errMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Decode(tc.msg, MaxPacketMessage)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Decode = %v, want %v", err, tc.want)
			}
			if m.Type != 0 || !m.Delta.Empty() {
				t.Fatalf("refused but returned %+v", m)
			}
		})
	}
}

// TestNodeInfoOfARingWithoutDatacenters holds a node's announcement, when
// it names no data center, to the bytes it always had: the fields a data
// center adds are left out when empty.
func TestNodeInfoOfARingWithoutDatacenters(t *testing.T) {
	before, err := msgpack.Marshal(struct {
		Name        string `msgpack:"n"`
		Incarnation uint64 `msgpack:"i"`
		Addr        string `msgpack:"a,omitempty"`
		Left        bool   `msgpack:"l,omitempty"`
	}{"pop-1", 1_700_000_000_000_000_000, "10.0.0.1:7946", false})
	if err != nil {
		t.Fatal(err)
	}
	now := must(EncodeNodeInfo(crdt.NodeInfo{Name: "pop-1", Incarnation: 1_700_000_000_000_000_000, Addr: "10.0.0.1:7946"}))
	if !bytes.Equal(before, now) {
		t.Fatalf("announcement % x, was % x", now, before)
	}
	withDC := crdt.NodeInfo{Name: "pop-1", Incarnation: 1, Datacenter: "east", WAN: "10.0.0.1:7947"}
	if got, err := DecodeNodeInfo(must(EncodeNodeInfo(withDC))); err != nil || got != withDC {
		t.Fatalf("announcement with a data center decodes to %+v (%v)", got, err)
	}
}
