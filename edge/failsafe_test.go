package edge_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/edge"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/gossip/testkit"
	"github.com/waitroom/waitroom/policy"
)

// poisonArrivals is the mark of the poisoned state of these tests: a node
// counts this many arrivals in one minute, and every node that merges that
// count meets a policy that panics on it.
const poisonArrivals = 1_000_000

// poisonAt returns the poison test hook: a room's snapshot holding the
// poisoned count panics the policy at where.
func poisonAt(where string) func(string, *crdt.RoomSnapshot) string {
	return func(_ string, snap *crdt.RoomSnapshot) string {
		if snap.ArrivalsIn(snap.Minute).Total >= poisonArrivals {
			return where
		}
		return ""
	}
}

// panics is the node's waitroom_panics_total summed over where.
func panics(t *testing.T, admin http.Handler) float64 {
	t.Helper()
	var sum float64
	for _, where := range []string{"allocation", "request", "allocation_loop", "console", "webhooks", "admin"} {
		sum += metric(t, admin, `waitroom_panics_total{where="`+where+`"}`)
	}
	return sum
}

// Every node merges the same state, so a state that makes the policy panic
// reaches every node of the ring: one node writes it, gossip carries it, and
// each node must stay up, go on serving its visitors in the failure mode its
// stale_state names, and come back once the state no longer panics.
func TestAPoisonedStateTakesNoNodeDown(t *testing.T) {
	cases := []struct {
		name  string
		stale string // the nodes' stale_state
		where string // where the poisoned state panics the policy
	}{
		{"a state that panics the allocation leaves every node serving, deciding as before", "open", "allocation"},
		{"a state that panics the allocation leaves every node serving, queueing new visitors", "closed", "allocation"},
		{"a state that panics the estimates leaves every node serving, with the wait unknown", "open", "estimate"},
		{"a state that panics a visitor's estimate on the request path still answers the page", "closed", "request"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rc := room("shop", 1, 1)
			c := clusterOf(t, clusterOpts{Rooms: []config.Room{rc}})
			c.Edit = func(_ *clusterNode, cfg *config.Config) { cfg.StaleState = tc.stale }
			for i := range 3 {
				c.Add(fmt.Sprintf("pop-%c", 'a'+i), 0)
			}
			c.WaitRing(c.Nodes, 15*time.Second)
			a := c.Nodes[0]
			url := "http://shop.example/"
			win := policy.Room{}.Windows()

			// Before the poison: one visitor in, which fills the room, so
			// that the next ones wait.
			in := newVisitor()
			if resp := in.Get(a.Server, url); resp.StatusCode != http.StatusOK || resp.Header.Get("Refresh") != "" {
				t.Fatalf("a visitor before the poison: %d (Refresh %q), want let in", resp.StatusCode, resp.Header.Get("Refresh"))
			}
			testkit.Eventually(t, testkit.Wait{What: "every node counting the admission", Timeout: 15 * time.Second}, func() bool {
				for _, n := range c.Nodes {
					if n.Server.Node().Snapshot("shop", n.Now().Unix(), win).Active != 1 {
						return false
					}
				}
				return true
			})
			c.Recompute()
			restore := edge.PoisonPolicy(poisonAt(tc.where))
			t.Cleanup(restore)

			// One node counts the poison; gossip takes it everywhere.
			now := a.Now()
			a.Server.Node().Add(crdt.Inc{Key: crdt.Key{Room: "shop", Kind: crdt.Arrivals, Minute: now.Unix() / 60}, N: poisonArrivals})
			testkit.Eventually(t, testkit.Wait{What: "every node merging the poisoned state", Timeout: 15 * time.Second}, func() bool {
				for _, n := range c.Nodes {
					snap := n.Server.Node().Snapshot("shop", n.Now().Unix(), win)
					if snap.ArrivalsIn(snap.Minute).Total < poisonArrivals {
						return false
					}
				}
				return true
			})
			c.Recompute()

			for _, n := range c.Nodes {
				// The admitted visitor keeps its session at every node.
				if resp := in.Get(n.Server, url); resp.StatusCode != http.StatusOK || resp.Header.Get("Refresh") != "" {
					t.Errorf("%s: the admitted visitor got %d (Refresh %q), want the origin's page", n.Name, resp.StatusCode, resp.Header.Get("Refresh"))
				}
				// A new visitor gets an answer, never an error.
				nv := newVisitor()
				resp := nv.Queue(t, n.Server, c.Clock, url)
				if resp.StatusCode != http.StatusOK {
					t.Errorf("%s: a new visitor got %d: %s", n.Name, resp.StatusCode, body(t, resp))
				}
				if resp.Header.Get("Refresh") == "" {
					t.Errorf("%s: a new visitor was let in by a full room", n.Name)
				}
				if b := body(t, resp); tc.where != "allocation" && strings.Contains(b, "minute") {
					t.Errorf("%s: a failing room's page shows a wait: %s", n.Name, b)
				}
				if got := panics(t, n.Admin); got < 1 {
					t.Errorf("%s: waitroom_panics_total is %v, want the panic counted", n.Name, got)
				}
				if resp := adminGet(t, n.Admin, "/state"); resp.StatusCode != http.StatusOK {
					t.Errorf("%s: GET /state answered %d", n.Name, resp.StatusCode)
				}
				if !roomStatus(t, n.Admin, "shop").AllocationFailing {
					t.Errorf("%s: the room's status does not say its allocation fails", n.Name)
				}
			}

			// The state no longer panics: allocations are computed again,
			// and no panic follows.
			restore()
			c.Recompute()
			for _, n := range c.Nodes {
				before := panics(t, n.Admin)
				if roomStatus(t, n.Admin, "shop").AllocationFailing {
					t.Errorf("%s: the room's allocation still fails once the state no longer panics", n.Name)
				}
				resp := newVisitor().Queue(t, n.Server, c.Clock, url)
				if resp.StatusCode != http.StatusOK {
					t.Errorf("%s: after the poison, a new visitor got %d", n.Name, resp.StatusCode)
				}
				if after := panics(t, n.Admin); after != before {
					t.Errorf("%s: %v panics after the poison, want none", n.Name, after-before)
				}
			}
		})
	}
}

// A room whose allocation cannot be computed decides as its node's
// stale_state says for a node cut off from the ring: open keeps deciding
// from the last allocation computed, closed queues new visitors; admitted
// visitors keep their sessions either way.
func TestAFailingRoomDecidesByStaleState(t *testing.T) {
	cases := []struct {
		name, stale string
		letIn       bool
	}{
		{"with stale_state open a new visitor is let in on the last allocation's free slots", "open", true},
		{"with stale_state closed a new visitor is queued though slots are free", "closed", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixtureWith(t, func(cfg *config.Config) { cfg.StaleState = tc.stale }, room("shop", 10, 10))
			url := "http://shop.example/"
			in := newVisitor()
			if resp := in.Get(f.Server, url); resp.Header.Get("Refresh") != "" {
				t.Fatalf("a visitor before the failure was queued")
			}
			t.Cleanup(edge.PoisonPolicy(func(string, *crdt.RoomSnapshot) string { return "allocation" }))
			f.Server.RefreshAllocations()
			if !roomStatus(t, f.Admin, "shop").AllocationFailing {
				t.Fatal("the room's status does not say its allocation fails")
			}
			if resp := in.Get(f.Server, url); resp.StatusCode != http.StatusOK || resp.Header.Get("Refresh") != "" {
				t.Errorf("the admitted visitor got %d (Refresh %q), want the origin's page", resp.StatusCode, resp.Header.Get("Refresh"))
			}
			resp := newVisitor().Get(f.Server, url)
			if got := resp.Header.Get("Refresh") == ""; got != tc.letIn || resp.StatusCode != http.StatusOK {
				t.Errorf("a new visitor: %d, let in %v, want let in %v", resp.StatusCode, got, tc.letIn)
			}
			if got := metric(t, f.Admin, `waitroom_panics_total{where="allocation"}`); got < 1 {
				t.Errorf("waitroom_panics_total{where=\"allocation\"} is %v, want the failure counted", got)
			}
		})
	}
}
