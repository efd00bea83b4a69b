package edgetest

import (
	"net/http"
	"testing"

	"github.com/waitroom/waitroom/edge"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/gossip/testkit"
)

// Fixture is one node in front of one test origin, on a fake clock: what
// most tests of the request path need, without a ring or listeners.
type Fixture struct {
	Server *edge.Server
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
