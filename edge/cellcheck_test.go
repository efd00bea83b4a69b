package edge_test

import (
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/edge/edgetest"
	"github.com/waitroom/waitroom/gossip"
	"github.com/waitroom/waitroom/gossip/testkit"
)

// TestAKeyHolderIsBelievedOnlyWithinTheRoom has a peer that holds the
// ring's key write counts no node of the room could have made: they are
// refused and counted, and the room is not queued by them, while counts
// within the room's limits merge.
func TestAKeyHolderIsBelievedOnlyWithinTheRoom(t *testing.T) {
	cfg := nodeConfig("a-node", keyFile(t, t.TempDir()), edgetest.NewOrigin(t).URL, room("shop", 100, 50))
	a := startServer(t, cfg, nil)
	intruder, err := gossip.Start(gossip.Config{Name: "intruder", Bind: "127.0.0.1:0", Profile: gossip.Local, Keys: testGossipKeys, Seeds: []string{a.Node().Addr()}, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer intruder.Kill()
	m := time.Now().Unix() / 60
	intruder.Add(
		crdt.Inc{Key: crdt.Key{Room: "shop", Kind: crdt.Admitted, Minute: m}, N: 11_999_999},
		crdt.Inc{Key: crdt.Key{Room: "shop", Kind: crdt.SessionPlus, Bucket: (m + 5) * 60, Minute: m + 5}, N: 11_999_999},
		crdt.Inc{Key: crdt.Key{Room: "shop", Kind: crdt.Arrivals, Minute: m}, N: 40},
	)
	testkit.Eventually(t, testkit.Wait{What: "the impossible counts refused", Timeout: 10 * time.Second}, func() bool {
		return a.Node().Stats().Dropped[crdt.RefusedBeyondRoom] >= 2
	})
	var admitted, sessions, arrivals uint64
	a.Node().Read(func(s *crdt.State) {
		admitted = s.Value(crdt.Key{Room: "shop", Kind: crdt.Admitted, Minute: m})
		sessions = s.Value(crdt.Key{Room: "shop", Kind: crdt.SessionPlus, Bucket: (m + 5) * 60, Minute: m + 5})
		arrivals = s.Value(crdt.Key{Room: "shop", Kind: crdt.Arrivals, Minute: m})
	})
	if admitted != 0 || sessions != 0 {
		t.Errorf("the node holds %d admissions and %d sessions from the intruder, want none", admitted, sessions)
	}
	if arrivals != 40 {
		t.Errorf("the node holds %d arrivals, want the intruder's 40: counts within the room's limits merge", arrivals)
	}
}
