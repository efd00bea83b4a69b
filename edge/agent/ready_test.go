package agent_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/edgetest"
	"github.com/waitroom/waitroom/gossip/testkit"
)

// readyStatus asks the admin handler for /readyz as a probe from outside
// does (another host, no token) and checks that it tells nothing but ok.
func readyStatus(t *testing.T, admin http.Handler) int {
	t.Helper()
	rec := httptest.NewRecorder()
	admin.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://10.1.2.3:9090/readyz", nil))
	var doc map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil || len(doc) != 1 || doc["ok"] != (rec.Code == http.StatusOK) {
		t.Errorf("/readyz answered %d %q; want only {\"ok\": ...}", rec.Code, rec.Body.String())
	}
	return rec.Code
}

func TestReadiness(t *testing.T) {
	t.Run("a node without seeds is ready once ready_alone_after has passed without a peer", func(t *testing.T) {
		clock := edgetest.NewClock(5)
		cfg := edgetest.NodeConfig("pop-a", edgetest.KeyFile(t, t.TempDir()), "http://127.0.0.1:1", edgetest.Room("shop", 10, 10))
		srv := edgetest.StartServer(t, cfg, clock)
		admin := srv.AdminHandler()
		if got := readyStatus(t, admin); got != http.StatusServiceUnavailable {
			t.Errorf("at start: %d, want 503", got)
		}
		clock.Advance(config.DefaultReadyAloneAfter - time.Millisecond)
		if got := readyStatus(t, admin); got != http.StatusServiceUnavailable {
			t.Errorf("just before ready_alone_after: %d, want 503", got)
		}
		clock.Advance(time.Millisecond)
		if got := readyStatus(t, admin); got != http.StatusOK {
			t.Errorf("after ready_alone_after: %d, want 200", got)
		}
	})

	t.Run("a node whose seeds never answer is never ready", func(t *testing.T) {
		clock := edgetest.NewClock(5)
		cfg := edgetest.NodeConfig("pop-a", edgetest.KeyFile(t, t.TempDir()), "http://127.0.0.1:1", edgetest.Room("shop", 10, 10))
		cfg.Seeds = []string{"127.0.0.1:1"}
		srv := edgetest.StartServer(t, cfg, clock)
		clock.Advance(time.Hour)
		if got := readyStatus(t, srv.AdminHandler()); got != http.StatusServiceUnavailable {
			t.Errorf("an hour without meeting a seed: %d, want 503", got)
		}
	})

	t.Run("a node that met the ring stays ready when its peers leave, asked or not before", func(t *testing.T) {
		c := edgetest.NewCluster(t, 2, edgetest.ClusterOptions{Rooms: []config.Room{edgetest.Room("shop", 10, 10)}})
		// pop-b has pop-a as its seed; pop-a leaves.
		a, b := c.Nodes[0], c.Nodes[1]
		a.Stop()
		testkit.Eventually(t, testkit.Wait{What: "pop-b alone", Timeout: 10 * time.Second, Seen: func() string { return c.Membership([]*edgetest.Node{b}) }}, func() bool { return b.Members() == 1 })
		if got := readyStatus(t, b.Server.AdminHandler()); got != http.StatusOK {
			t.Errorf("after its peer left: %d, want 200 (stale_state open keeps serving)", got)
		}
	})

	t.Run("the readiness endpoint is open even where the admin endpoint needs a token", func(t *testing.T) {
		dir := t.TempDir()
		tok := filepath.Join(dir, "admin.token")
		if err := os.WriteFile(tok, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := edgetest.NodeConfig("pop-a", edgetest.KeyFile(t, dir), "http://127.0.0.1:1", edgetest.Room("shop", 10, 10))
		cfg.AdminTokenFile = tok
		cfg.ReadyAloneAfter = config.Duration(100 * time.Millisecond)
		clock := edgetest.NewClock(5)
		srv := edgetest.StartServer(t, cfg, clock)
		clock.Advance(time.Second)
		if got := readyStatus(t, srv.AdminHandler()); got != http.StatusOK {
			t.Errorf("without a token: %d, want 200", got)
		}
	})
}
