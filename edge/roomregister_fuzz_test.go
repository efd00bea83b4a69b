package edge

import (
	"testing"

	"github.com/rs/zerolog"

	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/roomreg"
)

// FuzzRoomRegister feeds arbitrary bytes, as a peer could gossip them, to
// the check room settings from peers pass before they merge. It must never
// panic; settings it accepts must build a room, as the node will do when it
// rebuilds its room table; and the secret stripped from a register for
// unencrypted gossip must leave every other setting as it was.
//
//	go test -run '^$' -fuzz '^FuzzRoomRegister$' -fuzztime 30s ./edge/
func FuzzRoomRegister(f *testing.F) {
	f.Add([]byte(`{"name":"shop","total_active_users":100,"new_users_per_minute":50}`))
	f.Add([]byte(`{"name":"shop","total_active_users":100,"new_users_per_minute":50,"turnstile_mode":"invisible","turnstile_site_key":"k","turnstile_secret":"s"}`))
	f.Add([]byte(`{"name":"shop","total_active_users":-1}`))
	f.Add([]byte(`{"name":"other","total_active_users":5,"new_users_per_minute":5}`))
	f.Add([]byte(`{"name":"shop",`))
	s := &Server{cfg: &config.Config{Origin: "http://127.0.0.1:3000"}, log: zerolog.Nop(), metrics: newMetrics()}
	f.Fuzz(func(t *testing.T, value []byte) {
		stripped := roomreg.StripSecrets(roomreg.Name("shop"), value)
		if err := s.checkRoomRegister("room/shop", value); err != nil {
			return
		}
		if len(value) == 0 {
			return // a deleted room
		}
		rc, err := s.decodeRoom("shop", value)
		if err != nil {
			t.Fatalf("accepted settings decodeRoom refuses: %v", err)
		}
		if _, err := newRoom(s, rc); err != nil {
			t.Fatalf("accepted settings that do not build a room: %v", err)
		}
		if rs, err := s.decodeRoom("shop", stripped); err == nil && rs.TotalActiveUsers != rc.TotalActiveUsers {
			t.Fatalf("stripping the secret changed total_active_users %d → %d", rc.TotalActiveUsers, rs.TotalActiveUsers)
		}
	})
}
