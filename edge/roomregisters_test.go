package edge_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/edgetest"
	"github.com/waitroom/waitroom/gossip"
	"github.com/waitroom/waitroom/gossip/testkit"
)

func TestRoomsFromPeersAreValidatedBeforeTheyMerge(t *testing.T) {
	r := newRing(t, 1, room("shop", 100, 50))
	// A peer holding the ring's key, writing room settings directly.
	peer, err := gossip.Start(gossip.Config{Name: "peer", Bind: "127.0.0.1:0", Profile: gossip.Local, Keys: testGossipKeys, Clock: r.clock.Now, Seeds: []string{r.nodes[0].Node().Addr()}, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Kill()
	testkit.Eventually(t, testkit.Wait{What: "the peer joins", Timeout: 10 * time.Second}, func() bool { return r.nodes[0].Node().NumMembers() == 2 })

	refused := func() int64 { return r.nodes[0].Node().Stats().Dropped[gossip.RefusedRegister] }
	for _, tc := range []struct {
		name  string
		value string
	}{
		{"settings that are not JSON are refused", `{"name":"shop",`},
		{"settings of another room under this room's name are refused", `{"name":"other","total_active_users":5,"new_users_per_minute":5}`},
		{"settings the admin API would refuse are refused", `{"name":"shop","total_active_users":-5,"new_users_per_minute":5}`},
		{"an origin that is not a URL is refused", `{"name":"shop","total_active_users":5,"new_users_per_minute":5,"origin":"javascript:alert(1)"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			was := refused()
			peer.SetRegister("room/shop", []byte(tc.value))
			testkit.Eventually(t, testkit.Wait{What: "the refusal is counted", Timeout: 10 * time.Second}, func() bool { return refused() > was })
			rc := getRoom(t, r.admins[0], "shop")
			if rc == nil || rc.TotalActiveUsers != 100 {
				t.Fatalf("room %+v, want the last valid settings (100 active users)", rc)
			}
			if reg, _ := r.nodes[0].Node().Register("room/shop"); bytes.Equal(reg.Value, []byte(tc.value)) {
				t.Fatal("the refused settings are in the node's state")
			}
		})
	}
	t.Run("valid settings from the same peer take effect", func(t *testing.T) {
		peer.SetRegister("room/shop", []byte(`{"name":"shop","total_active_users":70,"new_users_per_minute":5}`))
		testkit.Eventually(t, testkit.Wait{What: "the change", Timeout: 10 * time.Second}, func() bool {
			rc := getRoom(t, r.admins[0], "shop")
			return rc != nil && rc.TotalActiveUsers == 70
		})
	})
}

func TestInsecureGossipKeepsTurnstileSecretsHome(t *testing.T) {
	key := keyFile(t, t.TempDir())
	rc := room("shop", 100, 50)
	rc.TurnstileMode, rc.TurnstileSiteKey, rc.TurnstileSecret = "invisible", "site-key", "s3cret-of-the-room"
	cfg := nodeConfig("a-node", key, edgetest.NewOrigin(t).URL, rc)
	cfg.InsecureGossip = true
	a := startServer(t, cfg, nil)

	// A process on the same unauthenticated ring reads what a-node gossips.
	listener, err := gossip.Start(gossip.Config{Name: "listener", Bind: "127.0.0.1:0", Profile: gossip.Local, Insecure: true, Seeds: []string{a.Node().Addr()}, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Kill()
	var heard []byte
	testkit.Eventually(t, testkit.Wait{What: "the room reaches the listener", Timeout: 10 * time.Second}, func() bool {
		reg, ok := listener.Register("room/shop")
		heard = reg.Value
		return ok
	})
	if bytes.Contains(heard, []byte("s3cret")) {
		t.Fatalf("the secret went out in plaintext gossip: %s", heard)
	}
	var got config.Room
	if err := json.Unmarshal(heard, &got); err != nil || got.TurnstileSiteKey != "site-key" || got.TotalActiveUsers != 100 {
		t.Fatalf("the room arrived as %s (%v), want its other settings", heard, err)
	}
	if own, _ := a.Node().Register("room/shop"); !bytes.Contains(own.Value, []byte("s3cret")) {
		t.Fatal("the node lost its own secret")
	}

	t.Run("a node with the room in its own config takes the secret from there", func(t *testing.T) {
		cfg := nodeConfig("b-node", key, edgetest.NewOrigin(t).URL, rc)
		cfg.InsecureGossip = true
		cfg.Seeds = []string{a.Node().Addr()}
		b := startServer(t, cfg, nil)
		testkit.Eventually(t, testkit.Wait{What: "b joins", Timeout: 10 * time.Second}, func() bool { return b.Node().NumMembers() >= 2 })
		if n := b.Node().Stats().Dropped[gossip.RefusedRegister]; n != 0 {
			t.Fatalf("b refused %d room registers", n)
		}
	})
}

func TestTheAdminAPIOverwritesARoomStampedInTheFarFuture(t *testing.T) {
	r := newRing(t, 2, room("shop", 100, 50))
	// Both nodes hold settings stamped at the largest stamp there is, as
	// a ring attacked before peers' stamps were bounded would, restored
	// from its snapshots: by last-writer-wins, nothing could follow them.
	hostile := crdt.RegisterEntry{Name: "room/shop", Reg: crdt.LWW[[]byte]{
		Value:   []byte(`{"name":"shop","total_active_users":1,"new_users_per_minute":1}`),
		Stamp:   crdt.MaxHLC,
		Replica: crdt.NewReplicaID("intruder", 1),
	}}
	for _, n := range r.nodes {
		n.Node().Read(func(s *crdt.State) { s.ApplyRegister(hostile) })
	}
	resp := adminSend(t, r.admins[0], http.MethodPatch, "/rooms/shop", map[string]any{"total_active_users": 70, "new_users_per_minute": 30})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PATCH: %d %s", resp.StatusCode, body(t, resp))
	}
	testkit.Eventually(t, testkit.Wait{What: "the operator's settings on every node", Timeout: 10 * time.Second}, func() bool {
		for _, n := range r.nodes {
			reg, _ := n.Node().Register("room/shop")
			var rc config.Room
			if json.Unmarshal(reg.Value, &rc) != nil || rc.TotalActiveUsers != 70 {
				return false
			}
		}
		return true
	})
	if rc := getRoom(t, r.admins[1], "shop"); rc == nil || rc.TotalActiveUsers != 70 {
		t.Fatalf("b-node serves %+v, want the operator's settings", rc)
	}
}
