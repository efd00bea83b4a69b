package edge_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/cookie"
	"github.com/waitroom/waitroom/edge/agent"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/edgetest"
	"github.com/waitroom/waitroom/gossip/testkit"
)

// ring is the harness's cluster as the rooms tests use it: n nodes on one
// fake clock and one cookie key, joined into a gossip ring without faults,
// each with the given rooms seeded from its config; their servers and admin
// handlers by index.
type ring struct {
	c      *cluster
	nodes  []*agent.Agent
	admins []http.Handler
	clock  *testkit.Clock
	origin *edgetest.Origin
	key    string
}

func newRing(t *testing.T, n int, rooms ...config.Room) *ring {
	t.Helper()
	c := newCluster(t, n, clusterOpts{Rooms: rooms})
	r := &ring{c: c, nodes: c.Servers(), clock: c.Clock, origin: c.Origin, key: c.KeyFile}
	for _, n := range c.Nodes {
		r.admins = append(r.admins, n.Admin)
	}
	return r
}

// withBearer is the admin handler h reached with the bearer token token,
// as `waitroom rooms --token` reaches it.
func withBearer(h http.Handler, token string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set("Authorization", "Bearer "+token)
		h.ServeHTTP(w, r)
	})
}

func TestRoomsAreReplicated(t *testing.T) {
	r := newRing(t, 3, room("shop", 100, 50))

	t.Run("a room created on one node is in force on the others within two seconds", func(t *testing.T) {
		rc := room("sale", 40, 20)
		rc.Path = "/sale"
		rc.CookieSuffix = "sale"
		resp := adminSend(t, r.admins[0], http.MethodPost, "/rooms/sale", rc)
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("POST: %d %s", resp.StatusCode, body(t, resp))
		}
		took := testkit.Eventually(t, testkit.Wait{What: "room on every node", Timeout: 2 * time.Second}, func() bool {
			for _, a := range r.admins {
				if getRoom(t, a, "sale") == nil {
					return false
				}
			}
			return true
		})
		t.Logf("created on a-node, in force everywhere after %s", took)
		// And it serves: a visitor at node c gets the sale room's cookie.
		v := newVisitor()
		resp = v.Get(r.nodes[2], "http://shop.test/sale/item")
		if setCookie(resp, "__waitroom_sale") == "" {
			t.Fatalf("node c did not route /sale to the new room: %v", resp.Header)
		}
	})

	t.Run("a change made on one node is in force on the others within two seconds", func(t *testing.T) {
		resp := adminSend(t, r.admins[1], http.MethodPatch, "/rooms/shop", map[string]any{"total_active_users": 70, "new_users_per_minute": 30})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("PATCH: %d %s", resp.StatusCode, body(t, resp))
		}
		took := testkit.Eventually(t, testkit.Wait{What: "change on every node", Timeout: 2 * time.Second}, func() bool {
			for _, a := range r.admins {
				if rs := roomStatus(t, a, "shop"); rs.TotalActiveUsers != 70 || rs.NewUsersPerMinute != 30 {
					return false
				}
			}
			return true
		})
		t.Logf("changed on b-node, in force everywhere after %s", took)
	})

	t.Run("an invalid change is refused with the field and the range, and nothing changes", func(t *testing.T) {
		resp := adminSend(t, r.admins[0], http.MethodPatch, "/rooms/shop", map[string]any{"new_users_per_minute": 500})
		if resp.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("PATCH: %d, want 422", resp.StatusCode)
		}
		if msg := body(t, resp); !strings.Contains(msg, "new_users_per_minute") || !strings.Contains(msg, "total_active_users") {
			t.Errorf("error does not name the field and its bound: %s", msg)
		}
		if rs := roomStatus(t, r.admins[0], "shop"); rs.NewUsersPerMinute != 30 {
			t.Errorf("new_users_per_minute = %d after a refused change", rs.NewUsersPerMinute)
		}
	})

	t.Run("concurrent conflicting changes settle to the same value on every node", func(t *testing.T) {
		var wg sync.WaitGroup
		for i, total := range []int{55, 66, 77} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp := adminSend(t, r.admins[i], http.MethodPatch, "/rooms/shop", map[string]any{"total_active_users": total})
				if resp.StatusCode != http.StatusOK {
					t.Errorf("PATCH %d: %d", total, resp.StatusCode)
				}
			}()
		}
		wg.Wait()
		var settled int
		testkit.Eventually(t, testkit.Wait{What: "one value everywhere", Timeout: 3 * time.Second}, func() bool {
			first := getRoom(t, r.admins[0], "shop").TotalActiveUsers
			for _, a := range r.admins[1:] {
				if getRoom(t, a, "shop").TotalActiveUsers != first {
					return false
				}
			}
			settled = first
			return true
		})
		if settled != 55 && settled != 66 && settled != 77 {
			t.Errorf("settled on %d, which nobody wrote", settled)
		}
	})

	t.Run("a room deleted on one node is gone from the others within two seconds", func(t *testing.T) {
		resp := adminSend(t, r.admins[2], http.MethodDelete, "/rooms/sale", nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("DELETE: %d %s", resp.StatusCode, body(t, resp))
		}
		testkit.Eventually(t, testkit.Wait{What: "deletion everywhere", Timeout: 2 * time.Second}, func() bool {
			for _, a := range r.admins {
				if getRoom(t, a, "sale") != nil {
					return false
				}
			}
			return true
		})
	})
}

func TestEmergencyStop(t *testing.T) {
	r := newRing(t, 3, room("shop", 100, 50))
	v := newVisitor()
	if resp := v.Get(r.nodes[2], "http://shop.test/"); resp.Header.Get("X-Origin") != "yes" {
		t.Fatalf("the visitor was not admitted before the stop")
	}

	t.Run("a stop on one node holds admitted visitors on every node within two seconds", func(t *testing.T) {
		resp := adminSend(t, r.admins[0], http.MethodPost, "/rooms/shop/stop", map[string]string{"page_html": "<h1>Back soon</h1> {{refreshIntervalSeconds}}"})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stop: %d %s", resp.StatusCode, body(t, resp))
		}
		hits := r.origin.Hits()
		took := testkit.Eventually(t, testkit.Wait{What: "stop page at node c", Timeout: 2 * time.Second}, func() bool {
			resp := v.Get(r.nodes[2], "http://shop.test/")
			return strings.Contains(body(t, resp), "Back soon") && resp.Header.Get("Refresh") != ""
		})
		t.Logf("stopped on a-node, admitted visitor at c-node held after %s", took)
		// Held means held: a few more requests do not reach the origin.
		before := r.origin.Hits()
		for i := 0; i < 3; i++ {
			v.Get(r.nodes[2], "http://shop.test/")
		}
		if r.origin.Hits() != before {
			t.Errorf("the origin saw %d requests during the stop", r.origin.Hits()-before)
		}
		_ = hits
		// A newcomer is queued too, and keeps a place, at every node once the
		// stop has reached it.
		for i := range r.nodes {
			testkit.Eventually(t, testkit.Wait{What: "stop in force everywhere", Timeout: 2 * time.Second}, func() bool {
				return getRoom(t, r.admins[i], "shop").Stopped
			})
			n := newVisitor()
			if resp := n.Get(r.nodes[i], "http://shop.test/"); resp.Header.Get("X-Origin") != "" || setCookie(resp, "__waitroom") == "" {
				t.Errorf("a newcomer at node %d during the stop was not queued with a token", i)
			}
		}
	})

	t.Run("resume lets the admitted visitor back in on every node", func(t *testing.T) {
		resp := adminSend(t, r.admins[1], http.MethodPost, "/rooms/shop/resume", nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("resume: %d %s", resp.StatusCode, body(t, resp))
		}
		testkit.Eventually(t, testkit.Wait{What: "origin again at node c", Timeout: 2 * time.Second}, func() bool {
			return v.Get(r.nodes[2], "http://shop.test/").Header.Get("X-Origin") == "yes"
		})
	})
}

// openBucket reads a visitor's arrival bucket from its sealed token.
func openBucket(t *testing.T, keyPath, roomName string, c *http.Cookie, now time.Time) int64 {
	t.Helper()
	data, err := os.ReadFile(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := cookie.ParseKeys(data)
	if err != nil {
		t.Fatal(err)
	}
	kr, err := cookie.NewKeyring(keys...)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := kr.Open(c.Value, roomName, now)
	if err != nil {
		t.Fatalf("open token: %v", err)
	}
	return tok.Bucket
}

func TestScheduledEvent(t *testing.T) {
	// The clock starts at 12:00:05. Pre-queue 12:02, start 12:05, end 12:20.
	base := time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)
	pre := base.Add(2 * time.Minute)
	start := base.Add(5 * time.Minute)
	end := base.Add(20 * time.Minute)
	five, two := 5, 2
	rc := room("launch", 1000, 1000)
	rc.Events = []config.Event{{
		ID: "drop", Name: "Sneaker drop",
		PrequeueStartTime: &pre, EventStartTime: start, EventEndTime: end,
		ShuffleAtEventStart: true,
		TotalActiveUsers:    &five, NewUsersPerMinute: &two,
	}}
	r := newRing(t, 2, rc)
	node, admin := r.nodes[0], r.admins[0]

	t.Run("before the pre-queue the room runs on its own settings", func(t *testing.T) {
		v := newVisitor()
		if resp := v.Get(node, "http://shop.test/"); resp.Header.Get("X-Origin") != "yes" {
			t.Fatalf("not admitted before the event: %d", resp.StatusCode)
		}
		if rs := roomStatus(t, admin, "launch"); rs.TotalActiveUsers != 1000 {
			t.Errorf("total_active_users = %d, want the room's 1000", rs.TotalActiveUsers)
		}
	})

	var prequeued []*visitor
	arrival := map[*visitor]int64{}
	t.Run("during the pre-queue everyone waits on a countdown, whatever the capacity", func(t *testing.T) {
		r.clock.Set(pre.Add(10 * time.Second))
		for i := 0; i < 24; i++ {
			if i == 12 {
				r.clock.Set(pre.Add(70 * time.Second)) // half arrive a minute later
			}
			v := newVisitor()
			resp := v.Get(r.nodes[i%2], "http://shop.test/")
			page := body(t, resp)
			if resp.Header.Get("X-Origin") != "" {
				t.Fatalf("visitor %d reached the origin during the pre-queue", i)
			}
			if !strings.Contains(page, "Starting soon") {
				t.Fatalf("visitor %d did not get the countdown page:\n%s", i, page)
			}
			prequeued = append(prequeued, v)
			arrival[v] = r.clock.Now().Unix() / 60
		}
		details := body(t, adminGet(t, admin, "/rooms/launch/events/drop/details"))
		if !strings.Contains(details, `"phase_now": "prequeueing"`) || !strings.Contains(details, `"total_active_users": 5`) {
			t.Errorf("event details do not show the pre-queue and the event's limits:\n%s", details)
		}
	})

	t.Run("at the start pre-queued visitors are shuffled the same way on every node", func(t *testing.T) {
		r.clock.Set(start.Add(25 * time.Second))
		moved := 0
		for i, v := range prequeued {
			// Check in at the other node than the one the visitor joined.
			resp := v.Get(r.nodes[(i+1)%2], "http://shop.test/")
			_ = body(t, resp)
			c := v.Cookies["__waitroom"]
			if c == nil {
				t.Fatalf("visitor %d lost its token", i)
			}
			b := openBucket(t, r.key, "launch", c, r.clock.Now())
			if b < pre.Unix()/60 || b >= start.Unix()/60 {
				t.Fatalf("visitor %d shuffled to bucket %d, outside the pre-queue", i, b)
			}
			if b != arrival[v] {
				moved++
			}
			// The same visitor at the first node again: the same bucket.
			if resp := v.Get(r.nodes[i%2], "http://shop.test/"); resp != nil {
				if b2 := openBucket(t, r.key, "launch", v.Cookies["__waitroom"], r.clock.Now()); b2 != b {
					t.Fatalf("visitor %d: bucket %d at one node, %d at the other", i, b, b2)
				}
			}
		}
		if moved == 0 {
			t.Errorf("nobody changed place: the pre-queue was not shuffled")
		}
		t.Logf("%d of %d pre-queued visitors changed bucket in the shuffle", moved, len(prequeued))
	})

	t.Run("during the event its limits apply", func(t *testing.T) {
		rs := roomStatus(t, admin, "launch")
		if rs.TotalActiveUsers != 5 || rs.NewUsersPerMinute != 2 {
			t.Errorf("limits = %d/%d, want the event's 5/2", rs.TotalActiveUsers, rs.NewUsersPerMinute)
		}
	})

	t.Run("after the end the room's own settings are back", func(t *testing.T) {
		r.clock.Set(end.Add(time.Minute))
		testkit.Eventually(t, testkit.Wait{What: "room settings back", Timeout: 2 * time.Second}, func() bool {
			return roomStatus(t, admin, "launch").TotalActiveUsers == 1000
		})
	})
}

func TestBypass(t *testing.T) {
	rc := room("shop", 1, 1)
	rc.Bypass = []config.BypassRule{
		{PathSuffix: ".css"},
		{Header: "X-Staff", Value: "yes"},
		{CIDR: "192.0.2.0/24", PathPrefix: "/health"}, // httptest's client address
		{UserAgent: "kube-probe"},
	}
	f := newFixture(t, rc)
	admitFirst(t, f, "http://shop.test/")
	for _, tc := range []struct {
		name, path string
		hdr        []string
		bypass     bool
	}{
		{"a static asset goes straight to the origin", "/app.css", nil, true},
		{"staff with the header go straight to the origin", "/", []string{"X-Staff", "yes"}, true},
		{"a wrong header value does not bypass", "/", []string{"X-Staff", "no"}, false},
		{"a health check from the allowed range goes straight to the origin", "/health", nil, true},
		{"a probe's user agent goes straight to the origin", "/", []string{"User-Agent", "kube-probe/1.29"}, true},
		{"an ordinary page is queued", "/", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newVisitor()
			resp := v.Get(f.Server, "http://shop.test"+tc.path, tc.hdr...)
			v.Prove(t, f.Server, f.Clock, resp, tc.hdr...)
			got := resp.Header.Get("X-Origin") == "yes" && setCookie(resp, "__waitroom") == ""
			if got != tc.bypass {
				t.Errorf("bypassed = %v, want %v (status %d, Set-Cookie %q)", got, tc.bypass, resp.StatusCode, setCookie(resp, "__waitroom"))
			}
		})
	}
	t.Run("bypassed requests are not counted", func(t *testing.T) {
		if rs := roomStatus(t, f.Admin, "shop"); rs.EstimatedQueuedUsers != 2 {
			t.Errorf("queued = %d, want only the two ordinary visitors", rs.EstimatedQueuedUsers)
		}
	})
}

func TestAdminToken(t *testing.T) {
	dir := t.TempDir()
	tokenPath := filepath.Join(dir, "admin.token")
	const token = "0123456789abcdef0123456789abcdef"
	if err := os.WriteFile(tokenPath, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := edgetest.NewOrigin(t)
	for _, readOpen := range []bool{false, true} {
		cfg := nodeConfig("tok", keyFile(t, t.TempDir()), o.URL, room("shop", 10, 5))
		cfg.AdminTokenFile = tokenPath
		cfg.AdminReadOpen = readOpen
		admin := startServer(t, cfg, newFakeClock(5)).AdminHandler()
		name := map[bool]string{false: "with reads closed", true: "with reads left open"}[readOpen]
		t.Run("a change without the token is refused, "+name, func(t *testing.T) {
			if resp := adminSend(t, admin, http.MethodPatch, "/rooms/shop", map[string]any{"total_active_users": 9}); resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("PATCH without token: %d, want 401", resp.StatusCode)
			}
			if resp := adminSend(t, withBearer(admin, "wrong-token-wrong-token"), http.MethodPatch, "/rooms/shop", map[string]any{"total_active_users": 9}); resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("PATCH with a wrong token: %d, want 401", resp.StatusCode)
			}
		})
		t.Run("a change with the token is accepted, "+name, func(t *testing.T) {
			if resp := adminSend(t, withBearer(admin, token), http.MethodPatch, "/rooms/shop", map[string]any{"total_active_users": 9}); resp.StatusCode != http.StatusOK {
				t.Errorf("PATCH with the token: %d %s", resp.StatusCode, body(t, resp))
			}
		})
		t.Run("reading without the token follows admin_read_open, "+name, func(t *testing.T) {
			want := http.StatusUnauthorized
			if readOpen {
				want = http.StatusOK
			}
			if resp := adminGet(t, admin, "/state"); resp.StatusCode != want {
				t.Errorf("GET /state without token: %d, want %d", resp.StatusCode, want)
			}
		})
	}
	t.Run("an admin listener off loopback without a token is refused at start", func(t *testing.T) {
		cfg := nodeConfig("open", keyFile(t, t.TempDir()), o.URL, room("shop", 10, 5))
		cfg.Admin = "0.0.0.0:9999"
		cfg.ApplyDefaults()
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), "admin_token_file") {
			t.Errorf("Validate = %v, want an error naming admin_token_file", err)
		}
	})
}
