package edgetest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/waitroom/waitroom/cookie"
	"github.com/waitroom/waitroom/edge/agent"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/gossip/testkit"
)

// NewClock is the fake clock of a test's nodes, standing at sec seconds
// into a fixed minute until the test moves it. Every node of a test shares
// one, so time moves for all of them at once.
func NewClock(sec int) *testkit.Clock {
	return testkit.NewClock(time.Date(2030, 6, 1, 12, 0, sec, 0, time.UTC))
}

// WriteKeyFile writes a fresh cookie key file into dir and returns its
// path: every node of a ring seals with the same key, or a visitor moving
// between nodes would be new at each.
func WriteKeyFile(dir string) (string, error) {
	data, err := cookie.GenerateKeyFile(nil)
	if err != nil {
		return "", fmt.Errorf("cookie key: %w", err)
	}
	path := filepath.Join(dir, "cookie.key")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("cookie key: %w", err)
	}
	return path, nil
}

// KeyFile is WriteKeyFile for a test: a failure fails it.
func KeyFile(tb testing.TB, dir string) string {
	tb.Helper()
	path, err := WriteKeyFile(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return path
}

// Room returns a room named name with the given limits and defaults for
// the rest.
func Room(name string, total, perMinute int) config.Room {
	return config.Room{
		Name:              name,
		TotalActiveUsers:  total,
		NewUsersPerMinute: perMinute,
	}
}

// NodeConfig is a loopback config for one node with the given rooms: every
// listener on a port the system chooses, gossip timed for loopback.
func NodeConfig(name, keyPath, origin string, rooms ...config.Room) *config.Config {
	return &config.Config{
		Node:          name,
		Listen:        "127.0.0.1:0",
		Admin:         "127.0.0.1:0",
		Gossip:        "127.0.0.1:0",
		GossipProfile: "local",
		CookieKeyFile: keyPath,
		Origin:        origin,
		Rooms:         rooms,
	}
}

// GossipKeys is the gossip key of the test rings, given to every node the
// harness starts unless told otherwise (a key file in the config wins over
// it): a ring never runs unauthenticated unless a test asks for insecure
// gossip.
var GossipKeys = [][]byte{[]byte("waitroom-edge-test-gossip-key-32")}

// StartServer validates cfg and builds a node as `waitroom serve` builds
// it (agent.New) on clock (the wall clock when nil), with the test rings'
// gossip key and a silent log; the node is closed when the test ends.
func StartServer(tb testing.TB, cfg *config.Config, clock *testkit.Clock) *agent.Agent {
	tb.Helper()
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		tb.Fatalf("config: %v", err)
	}
	opts := agent.Options{Log: zerolog.Nop(), GossipKeys: GossipKeys}
	if clock != nil {
		opts.Clock = clock.Now
	}
	srv, err := agent.New(cfg, opts)
	if err != nil {
		tb.Fatalf("agent.New: %v", err)
	}
	tb.Cleanup(func() { _ = srv.Close() })
	return srv
}

// ServeNode builds a node as StartServer does and serves it on its real
// listeners (loopback, ports chosen by the system) until the test ends, for
// tests of what only a listener does: Host headers, connection limits and
// timeouts.
func ServeNode(tb testing.TB, cfg *config.Config, clock *testkit.Clock) *agent.Agent {
	tb.Helper()
	srv := StartServer(tb, cfg, clock)
	stop, err := Serve(srv)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := stop(); err != nil {
			tb.Error(err)
		}
	})
	return srv
}

// serveTimeout bounds how long a node may take to open its listeners.
const serveTimeout = 10 * time.Second

// Serve serves srv on its listeners and returns once it serves; stop ends
// the serving and returns how it ended. Closing the node stays the
// caller's.
func Serve(srv *agent.Agent) (stop func() error, err error) {
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() { done <- srv.Serve(ctx, func(*agent.Agent) { close(ready) }) }()
	select {
	case <-ready:
	case err := <-done:
		cancel()
		return nil, fmt.Errorf("serve: %w", err)
	case <-time.After(serveTimeout):
		cancel()
		return nil, fmt.Errorf("not serving after %v", serveTimeout)
	}
	return func() error {
		cancel()
		if err := <-done; err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		return nil
	}, nil
}

// AdminAfterLoop is the node's admin handler with every request preceded by
// a round of the node's allocation loop (Server.RefreshAllocations). GET
// /state and the room status only read the last allocation, which the loop
// recomputes within 250 ms; a test reads what an operator would see a
// quarter of a second after the requests it made, without sleeping for the
// loop.
func AdminAfterLoop(srv *agent.Agent) http.Handler {
	admin := srv.AdminHandler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv.RefreshAllocations()
		admin.ServeHTTP(w, r)
	})
}
