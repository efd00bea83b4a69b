package edge_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/waitroom/waitroom/gossip/testkit"
)

// A revoked session's cookie, replayed at any node, is a new visitor there
// and frees no second slot: revocations are replicated.
func TestRevocationReachesEveryNode(t *testing.T) {
	rc := room("shop", 10, 10)
	rc.EnabledOriginCommands = []string{"revoke"}
	r := newRing(t, 3, rc)
	v := newVisitor()
	if resp := v.Get(r.nodes[0], "http://shop.test/"); resp.Header.Get("X-Origin") != "yes" {
		t.Fatal("not admitted")
	}
	old := *v.Cookies["__waitroom"] // what a misbehaving client keeps
	testkit.Eventually(t, testkit.Wait{What: "the session counted on every node", Timeout: 2 * time.Second}, func() bool {
		for _, a := range r.admins {
			if roomStatus(t, a, "shop").EstimatedTotalActiveUsers != 1 {
				return false
			}
		}
		return true
	})
	v.Get(r.nodes[0], "http://shop.test/revoke-cf")

	for i := 1; i < 3; i++ {
		t.Run("a replay of the revoked cookie at another node is a new visitor", func(t *testing.T) {
			testkit.Eventually(t, testkit.Wait{What: "revocation known at the node", Timeout: 2 * time.Second}, func() bool {
				return len(revokedKnown(t, r, i)) > 0
			})
			// The node adds what it learned to its revoked set on its
			// allocation loop's next round (every 250 ms): run it now.
			r.nodes[i].RefreshAllocations()
			req := newVisitor().Req(http.MethodGet, "http://shop.test/")
			req.AddCookie(&old)
			rec := newVisitor()
			resp := rec.Do(r.nodes[i], req)
			if resp.Header.Get("X-Origin") != "yes" || setCookie(resp, "__waitroom") == "" {
				t.Fatalf("the replay was not admitted as a new visitor with a new token (status %d)", resp.StatusCode)
			}
			if metric(t, r.admins[i], `waitroom_cookie_errors_total{reason="revoked",room="shop"}`) != 1 {
				t.Errorf("node %d did not count the revoked cookie", i)
			}
		})
	}
	t.Run("the revoked session freed exactly one slot, and the two replays are two new sessions, on every node", func(t *testing.T) {
		testkit.Eventually(t, testkit.Wait{What: "two active users everywhere", Timeout: 2 * time.Second}, func() bool {
			for _, a := range r.admins {
				if roomStatus(t, a, "shop").EstimatedTotalActiveUsers != 2 {
					return false
				}
			}
			return true
		})
	})
}

// revokedKnown reads the node's revocation count from /metrics' analytics:
// any non-zero sessions_revoked there means the revocation reached it.
func revokedKnown(t *testing.T, r *ring, i int) []float64 {
	t.Helper()
	if n := metric(t, r.admins[i], `waitroom_room_analytics_10m{counter="sessions_revoked",room="shop"}`); n > 0 {
		return []float64{n}
	}
	return nil
}
