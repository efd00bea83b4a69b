package roomreg_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/edge/roomreg"
)

func TestRegistersAreTheSameOnlyWithTheSameStampReplicaAndValue(t *testing.T) {
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
			if got := roomreg.Same(base, tc.other); got != tc.same {
				t.Fatalf("Same = %v, want %v", got, tc.same)
			}
		})
	}
}

func TestDecodeReadsTheRoomTheRegisterIsNamedFor(t *testing.T) {
	tests := []struct {
		name, room, value, err string
	}{
		{"a room's settings decode with their defaults", "shop", `{"name":"shop","total_active_users":100,"new_users_per_minute":50}`, ""},
		{"a register holding another room is refused", "shop", `{"name":"sale","total_active_users":100}`, `holds room "sale"`},
		{"bytes that are not JSON are refused", "shop", `{"name":"shop",`, `decode room "shop"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc, err := roomreg.Decode(tc.room, []byte(tc.value))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rc.Name != tc.room || rc.TotalActiveUsers != 100 || rc.QueueingMethod == "" {
				t.Errorf("decoded %+v: want the room's settings with the defaults filled in", rc)
			}
		})
	}
}

func TestStripSecretsLeavesEverythingButTheSecret(t *testing.T) {
	tests := []struct {
		name, register, value string
		gone, kept            string
	}{
		{"a room loses its turnstile secret", roomreg.Name("shop"), `{"name":"shop","turnstile_secret":"s3","secret":"x"}`, "turnstile_secret", "secret"},
		{"another register loses its secret", "webhook/alerts", `{"url":"http://x","secret":"s3","turnstile_secret":"x"}`, "secret", "turnstile_secret"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var fields map[string]any
			if err := json.Unmarshal(roomreg.StripSecrets(tc.register, []byte(tc.value)), &fields); err != nil {
				t.Fatal(err)
			}
			if _, ok := fields[tc.gone]; ok {
				t.Errorf("%s left in %v", tc.gone, fields)
			}
			if _, ok := fields[tc.kept]; !ok {
				t.Errorf("%s taken from %v", tc.kept, fields)
			}
		})
	}
	for _, v := range []string{`{"name":"shop"}`, `not json`, ``} {
		if got := roomreg.StripSecrets(roomreg.Name("shop"), []byte(v)); string(got) != v {
			t.Errorf("StripSecrets(%q) = %q, want it unchanged", v, got)
		}
	}
}
