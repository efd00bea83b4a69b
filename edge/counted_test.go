package edge_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/edge/agent"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/edgetest"
	"github.com/waitroom/waitroom/gossip/testkit"
	"github.com/waitroom/waitroom/policy"
)

// counts is what a set of nodes together count in room at the clock's now:
// their states merged, as gossip would.
func counts(t *testing.T, clock *testkit.Clock, roomName string, nodes ...*agent.Agent) crdt.RoomSnapshot {
	t.Helper()
	merged := crdt.New()
	for _, n := range nodes {
		n.Node().Read(func(st *crdt.State) { merged.MergeState(st) })
	}
	return merged.Snapshot(roomName, clock.Now().Unix(), policy.Room{}.Windows())
}

// replay sends one request carrying exactly cookie c (the visitor keeps no
// answer), n times, in parallel when parallel is set.
func replay(t *testing.T, h http.Handler, v *visitor, n int, parallel bool) {
	t.Helper()
	var wg sync.WaitGroup
	for range n {
		r := v.Req(http.MethodGet, "http://shop.test/")
		if !parallel {
			newVisitor().Do(h, r)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			newVisitor().Do(h, r)
		}()
	}
	wg.Wait()
}

// twoNodes starts two nodes with the same cookie key and room in front of
// one origin, both on one fake clock at second 5, so a visitor's cookie from
// one is good at the other; the tests read their counts together (counts).
func twoNodes(t *testing.T, rc config.Room) (*testkit.Clock, *agent.Agent, *agent.Agent) {
	t.Helper()
	clock := newFakeClock(5)
	o := edgetest.NewOrigin(t)
	key := keyFile(t, t.TempDir())
	a := startServer(t, nodeConfig("node-a", key, o.URL, rc), clock)
	b := startServer(t, nodeConfig("node-b", key, o.URL, rc), clock)
	return clock, a, b
}

func TestOneCountPerVisitor(t *testing.T) {
	open := room("shop", 1000, 1000)
	open.Host = "shop.test"
	full := room("shop", 1, 1)
	full.Host = "shop.test"

	for _, c := range []struct {
		name     string
		n        int
		parallel bool
	}{
		{"an admitted cookie replayed 20 times after a slice boundary counts one session", 20, false},
		{"six parallel requests of one browser at a slice boundary count one session", 6, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, open)
			v := admitFirst(t, f, "http://shop.test/")
			f.Clock.Advance(12 * time.Second)
			replay(t, f.Server, v, c.n, c.parallel)
			if a := counts(t, f.Clock, "shop", f.Server).Active; a != 1 {
				t.Errorf("active %d, want 1", a)
			}
		})
	}
	t.Run("a queued cookie replayed 20 times in a later minute counts one waiting visitor", func(t *testing.T) {
		f := newFixture(t, full)
		admitFirst(t, f, "http://shop.test/")
		v := newVisitor()
		if resp := v.Get(f.Server, "http://shop.test/"); resp.Header.Get("Refresh") == "" {
			t.Fatalf("second visitor not queued: %d", resp.StatusCode)
		}
		f.Clock.Advance(70 * time.Second)
		replay(t, f.Server, v, 20, true)
		if w := counts(t, f.Clock, "shop", f.Server).TotalWaiting; w != 1 {
			t.Errorf("waiting %d, want 1", w)
		}
	})
	t.Run("one cookie replayed at two nodes counts at most once per node", func(t *testing.T) {
		clock, a, b := twoNodes(t, open)
		v := newVisitor()
		if resp := v.Get(a, "http://shop.test/"); resp.StatusCode != http.StatusOK {
			t.Fatalf("first visitor: %d", resp.StatusCode)
		}
		clock.Advance(12 * time.Second)
		replay(t, a, v, 10, true)
		replay(t, b, v, 10, true)
		if got := counts(t, clock, "shop", a, b).Active; got < 1 || got > 2 {
			t.Errorf("active %d, want 1 or 2 (at most one per node)", got)
		}
		// Both nodes took the count out of the cookie's cell (admitted at
		// second 5, a 5-minute session: the cell ending at second 310) and
		// put their own in (renewed at second 17: the cell ending at 320).
		// Between the two, each node's one count remains: two, never more.
		clock.Advance(295 * time.Second)
		if got := counts(t, clock, "shop", a, b).Active; got != 2 {
			t.Errorf("active %d after the old slice ended, want 2", got)
		}
	})
	t.Run("a visitor who moves between nodes with its latest cookie counts once", func(t *testing.T) {
		clock, a, b := twoNodes(t, open)
		v := newVisitor()
		for i, n := range []*agent.Agent{a, b, a, b, a} {
			if resp := v.Get(n, "http://shop.test/"); resp.StatusCode != http.StatusOK {
				t.Fatalf("request %d: %d", i, resp.StatusCode)
			}
			clock.Advance(12 * time.Second)
		}
		clock.Advance(5 * time.Minute)
		v.Get(a, "http://shop.test/")
		if got := counts(t, clock, "shop", a, b).Active; got != 1 {
			t.Errorf("active %d, want 1", got)
		}
	})
}
