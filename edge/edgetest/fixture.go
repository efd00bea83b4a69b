package edgetest

import (
	"net/http"
	"testing"

	"github.com/waitroom/waitroom/edge/agent"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/gossip/testkit"
)

// Fixture is one node in front of one test origin, on a fake clock: what
// most tests of the request path need, without a ring or listeners.
type Fixture struct {
	// Server is the node as `waitroom serve` runs it (see Node.Server).
	Server *agent.Agent
	Clock  *testkit.Clock
	Origin *Origin
	// Admin is the node's admin handler, each request after a round of
	// the allocation loop (see AdminAfterLoop).
	Admin http.Handler
}

// NewFixture starts one node with the given rooms (their origin is the
// test origin unless set) at 5 s into a minute.
func NewFixture(tb testing.TB, rooms ...config.Room) *Fixture {
	tb.Helper()
	return NewFixtureWith(tb, nil, rooms...)
}

// NewFixtureWith is NewFixture with the node's config adjusted by edit
// before it starts (forward_auth, for one).
func NewFixtureWith(tb testing.TB, edit func(*config.Config), rooms ...config.Room) *Fixture {
	tb.Helper()
	o := NewOrigin(tb)
	clock := NewClock(5)
	cfg := NodeConfig("node-a", KeyFile(tb, tb.TempDir()), o.URL, rooms...)
	if edit != nil {
		edit(cfg)
	}
	srv := StartServer(tb, cfg, clock)
	return &Fixture{Server: srv, Clock: clock, Origin: o, Admin: AdminAfterLoop(srv)}
}

// AdmitFirst sends a first visitor into the room at url, checks that it
// reached the origin, and runs a round of the allocation loop, as the loop
// would within 250 ms.
func (f *Fixture) AdmitFirst(tb testing.TB, url string) *Visitor {
	tb.Helper()
	v := NewVisitor()
	resp := v.Get(f.Server, url)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Origin") != "yes" {
		tb.Fatalf("first visitor: %d, X-Origin %q, want the origin's 200", resp.StatusCode, resp.Header.Get("X-Origin"))
	}
	f.Server.RefreshAllocations()
	return v
}
