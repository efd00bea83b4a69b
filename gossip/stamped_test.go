package gossip

import (
	"errors"
	"testing"

	"github.com/waitroom/waitroom/crdt"
)

func TestStampedEntries(t *testing.T) {
	a := crdt.NewReplicaID("a", 1)
	es := []crdt.Entry{entry(crdt.Key{Room: "shop", Kind: crdt.Admitted, Bucket: 0, Minute: testMinute}, a, 3)}
	t.Run("a stamped entries message decodes to its entries and its stamp", func(t *testing.T) {
		m, err := Decode(must(EncodeStampedEntries(es, 1_700_000_000_123)), MaxPacketMessage)
		if err != nil || m.Type != msgStampedEntries || m.At != 1_700_000_000_123 || !sameDelta(m.Delta, crdt.Delta{Entries: es}) {
			t.Fatalf("got %+v (%v)", m, err)
		}
	})
	t.Run("a plain entries message from a node that predates stamps still decodes, unstamped", func(t *testing.T) {
		m, err := Decode(must(EncodeEntries(es)), MaxPacketMessage)
		if err != nil || m.Type != msgEntries || m.At != 0 || !sameDelta(m.Delta, crdt.Delta{Entries: es}) {
			t.Fatalf("got %+v (%v)", m, err)
		}
	})
	t.Run("a stamp of zero means unknown and is kept as zero", func(t *testing.T) {
		m, err := Decode(must(EncodeStampedEntries(es, 0)), MaxPacketMessage)
		if err != nil || m.At != 0 {
			t.Fatalf("got %+v (%v)", m, err)
		}
	})
	ok := []any{"shop", 2, 0, testMinute, 1, 1}
	for _, tc := range []struct {
		name string
		body any
		want error
	}{
		{"a stamped message that is not a pair is refused", []any{int64(1)}, errMalformed},
		{"a stamped message with a string for a stamp is refused", []any{"now", []any{ok}}, errMalformed},
		{"a stamped message with a negative stamp is refused", []any{int64(-1), []any{ok}}, errValidation},
		{"a stamped message without an entry list is refused", []any{int64(1), nil}, errMalformed},
		{"a stamped message with a bad entry is refused", []any{int64(1), []any{[]any{"shop", 2, 0, testMinute, 1}}}, errMalformed},
		{"a stamped message with an invalid entry is refused", []any{int64(1), []any{[]any{"", 2, 0, testMinute, 1, 1}}}, errValidation},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Decode(raw(t, msgStampedEntries, tc.body), MaxPacketMessage)
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v (%+v)", err, tc.want, m)
			}
		})
	}
}
