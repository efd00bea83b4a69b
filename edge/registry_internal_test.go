package edge

import (
	"testing"

	"github.com/waitroom/waitroom/crdt"
)

func TestSameRegisters(t *testing.T) {
	a, b := crdt.NewReplicaID("pop-a", 1), crdt.NewReplicaID("pop-b", 1)
	stamp := crdt.HLC{Wall: 1_906_545_605_000}
	reg := func(v string, s crdt.HLC, r crdt.ReplicaID) crdt.LWW[[]byte] {
		return crdt.LWW[[]byte]{Value: []byte(v), Stamp: s, Replica: r}
	}
	base := map[string]crdt.LWW[[]byte]{"room/shop": reg(`{"total_active_users":100}`, stamp, a)}
	tests := []struct {
		name  string
		other map[string]crdt.LWW[[]byte]
		same  bool
	}{
		{"the same register is the same", map[string]crdt.LWW[[]byte]{"room/shop": reg(`{"total_active_users":100}`, stamp, a)}, true},
		{"a newer stamp is a change", map[string]crdt.LWW[[]byte]{"room/shop": reg(`{"total_active_users":100}`, crdt.HLC{Wall: stamp.Wall + 1}, a)}, false},
		{"another replica is a change", map[string]crdt.LWW[[]byte]{"room/shop": reg(`{"total_active_users":100}`, stamp, b)}, false},
		{"new settings under the old stamp and replica are a change", map[string]crdt.LWW[[]byte]{"room/shop": reg(`{"total_active_users":70}`, stamp, a)}, false},
		{"another room is a change", map[string]crdt.LWW[[]byte]{"room/sale": reg(`{"total_active_users":100}`, stamp, a)}, false},
		{"a room more is a change", map[string]crdt.LWW[[]byte]{"room/shop": base["room/shop"], "room/sale": base["room/shop"]}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := sameRegisters(base, tc.other); got != tc.same {
				t.Fatalf("sameRegisters = %v, want %v", got, tc.same)
			}
		})
	}
}
