package admin_test

// Who may use the admin endpoint: its operator's tools, not the web pages
// the operator's browser happens to open, and not a page whose domain was
// rebound to 127.0.0.1.

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/edge/api"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/edgetest"
)

func TestAdminRefusesOtherSites(t *testing.T) {
	rc := edgetest.Room("shop", 10, 5)
	rc.Host = "shop.test"
	f := edgetest.NewFixture(t, rc)
	evil := `{"name":"evil","host":"shop.test","path":"/login","total_active_users":1,"new_users_per_minute":1,"origin":"http://127.0.0.2:1"}`
	for _, tc := range []struct {
		name         string
		method, path string
		body         string
		hdr          []string
		want         int
	}{
		{"a cross-site form posting text/plain cannot stop a room", "POST", "/rooms/shop/stop", `{"page_html":""}`,
			[]string{"Content-Type", "text/plain"}, http.StatusUnsupportedMediaType},
		{"a form posting url-encoded fields cannot stop a room", "POST", "/rooms/shop/stop", "page_html=x",
			[]string{"Content-Type", "application/x-www-form-urlencoded"}, http.StatusUnsupportedMediaType},
		{"a multipart form cannot create a room", "POST", "/rooms/evil", evil,
			[]string{"Content-Type", "multipart/form-data; boundary=x"}, http.StatusUnsupportedMediaType},
		{"a change without a Content-Type is refused", "DELETE", "/rooms/shop", "", nil, http.StatusUnsupportedMediaType},
		{"JSON from a page of another origin is refused", "POST", "/rooms/evil", evil,
			[]string{"Content-Type", "application/json", "Origin", "https://evil.example"}, http.StatusForbidden},
		{"JSON from a sandboxed page (Origin null) is refused", "POST", "/rooms/shop/stop", `{}`,
			[]string{"Content-Type", "application/json", "Origin", "null"}, http.StatusForbidden},
		{"JSON from another port of the same host is refused", "POST", "/rooms/shop/stop", `{}`,
			[]string{"Content-Type", "application/json", "Origin", "http://127.0.0.1:3000"}, http.StatusForbidden},
		{"a request a browser marks cross-site is refused", "POST", "/rooms/shop/stop", `{}`,
			[]string{"Content-Type", "application/json", "Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"a request a browser marks same-site is refused", "POST", "/rooms/shop/stop", `{}`,
			[]string{"Content-Type", "application/json", "Sec-Fetch-Site", "same-site"}, http.StatusForbidden},
		{"a cross-site read is refused too", "GET", "/rooms", "",
			[]string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"a rebound domain cannot read the rooms", "GET", "/rooms", "",
			[]string{"Host", "evil.example:9090"}, http.StatusMisdirectedRequest},
		{"a rebound domain cannot read the state", "GET", "/state", "",
			[]string{"Host", "evil.example"}, http.StatusMisdirectedRequest},
		{"a rebound domain cannot create a room, JSON or not", "POST", "/rooms/evil", evil,
			[]string{"Host", "evil.example", "Content-Type", "application/json"}, http.StatusMisdirectedRequest},
		{"a name that merely starts with localhost is refused", "GET", "/rooms", "",
			[]string{"Host", "localhost.evil.example"}, http.StatusMisdirectedRequest},
		{"a request without a Host is refused", "GET", "/rooms", "",
			[]string{"Host", ""}, http.StatusMisdirectedRequest},

		{"the operator's own page (same origin) may read", "GET", "/rooms", "",
			[]string{"Sec-Fetch-Site", "same-origin", "Origin", edgetest.AdminURL}, http.StatusOK},
		{"a page typed into the address bar may read", "GET", "/state", "",
			[]string{"Sec-Fetch-Site", "none"}, http.StatusOK},
		{"localhost with any port may read (an ssh tunnel)", "GET", "/rooms", "",
			[]string{"Host", "LocalHost.:8000"}, http.StatusOK},
		{"an IPv6 loopback address may read", "GET", "/rooms", "",
			[]string{"Host", "[::1]:9090"}, http.StatusOK},
		{"another loopback address may read", "GET", "/rooms", "",
			[]string{"Host", "127.0.0.2"}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := edgetest.AdminSend(f.Admin, tc.method, tc.path, tc.body, tc.hdr...)
			if resp.StatusCode != tc.want {
				t.Errorf("%s %s: %d %s, want %d", tc.method, tc.path, resp.StatusCode, edgetest.Body(t, resp), tc.want)
			}
		})
	}
	t.Run("the address a client connected to is a host the listener answers to, no other", func(t *testing.T) {
		// As on a listener bound to every address: the connection's own
		// address (a documentation address here; nothing is dialled).
		local := &net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 9090}
		for host, want := range map[string]int{"192.0.2.7:9090": http.StatusOK, "192.0.2.7": http.StatusOK, "192.0.2.8:9090": http.StatusMisdirectedRequest} {
			req := httptest.NewRequest(http.MethodGet, "http://"+host+"/rooms", nil)
			req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, local))
			rec := httptest.NewRecorder()
			f.Admin.ServeHTTP(rec, req)
			if rec.Code != want {
				t.Errorf("Host %s on a connection to %s: %d, want %d", host, local, rec.Code, want)
			}
		}
	})
	t.Run("after all that the room runs and no other room was made", func(t *testing.T) {
		if rc := edgetest.GetRoom(t, f.Admin, "shop"); rc == nil || rc.Stopped {
			t.Errorf("shop: %+v, want running", rc)
		}
		if rc := edgetest.GetRoom(t, f.Admin, "evil"); rc != nil {
			t.Errorf("room evil exists: %+v", rc)
		}
	})
	t.Run("the same change sent as the CLI sends it is applied", func(t *testing.T) {
		resp := edgetest.AdminSend(f.Admin, "POST", "/rooms/shop/stop", `{}`, "Content-Type", "application/json; charset=utf-8")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stop: %d %s", resp.StatusCode, edgetest.Body(t, resp))
		}
		if rc := edgetest.GetRoom(t, f.Admin, "shop"); rc == nil || !rc.Stopped {
			t.Errorf("shop: %+v, want stopped", rc)
		}
	})
}

// adminTokenFile writes a token file into dir and returns its path.
func adminTokenFile(t *testing.T, dir, token string) string {
	t.Helper()
	path := filepath.Join(dir, "admin.token")
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestAdminListener(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef"
	o := edgetest.NewOrigin(t)
	cfg := edgetest.NodeConfig("adm", edgetest.KeyFile(t, t.TempDir()), o.URL, edgetest.Room("shop", 10, 5))
	cfg.AdminTokenFile = adminTokenFile(t, t.TempDir(), token)
	cfg.AdminHosts = []string{"waitroom-admin.internal"}
	srv := edgetest.ServeNode(t, cfg, edgetest.NewClock(5))
	addr := srv.AdminAddr()
	_, port, _ := net.SplitHostPort(addr)

	send := func(t *testing.T, method, path, host string, hdr ...string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}

	for _, tc := range []struct {
		name, host string
		want       int
	}{
		{"the bound address is a host the listener answers to", addr, http.StatusOK},
		{"a configured admin host is answered", "Waitroom-Admin.Internal:" + port, http.StatusOK},
		{"a rebound domain is refused before the token is even asked", "evil.example:" + port, http.StatusMisdirectedRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := send(t, http.MethodGet, "/state", tc.host, "Authorization", "Bearer "+token)
			if resp.StatusCode != tc.want {
				t.Errorf("GET /state with Host %q: %d %s, want %d", tc.host, resp.StatusCode, edgetest.Body(t, resp), tc.want)
			}
		})
	}
	t.Run("healthz is open without the token, on any host, and says only ok", func(t *testing.T) {
		for _, host := range []string{addr, "lb-probe.example"} {
			resp := send(t, http.MethodGet, "/healthz", host)
			var h map[string]any
			if err := json.NewDecoder(resp.Body).Decode(&h); err != nil || resp.StatusCode != http.StatusOK || len(h) != 1 || h["ok"] != true {
				t.Errorf("GET /healthz with Host %q: %d %v %v", host, resp.StatusCode, h, err)
			}
		}
	})
	t.Run("the console's page loads without the token, but only on the listener's own host", func(t *testing.T) {
		for _, path := range []string{"/dashboard", "/dashboard/console.js"} {
			if resp := send(t, http.MethodGet, path, addr); resp.StatusCode != http.StatusOK {
				t.Errorf("GET %s without the token: %d, want 200", path, resp.StatusCode)
			}
			if resp := send(t, http.MethodGet, path, "evil.example:"+port); resp.StatusCode != http.StatusMisdirectedRequest {
				t.Errorf("GET %s from a rebound host: %d, want 421", path, resp.StatusCode)
			}
		}
	})
	t.Run("everything else still needs the token", func(t *testing.T) {
		for _, path := range []string{"/state", "/rooms", "/metrics", "/rooms/shop/status", "/dashboard/events"} {
			if resp := send(t, http.MethodGet, path, addr); resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("GET %s without the token: %d, want 401", path, resp.StatusCode)
			}
		}
	})
	t.Run("the CLI's client reads, changes and reads the state", func(t *testing.T) {
		c := &api.Client{URL: "http://" + addr, Token: token, Timeout: 5 * time.Second}
		ctx := context.Background()
		if _, err := c.Stop(ctx, "shop", ""); err != nil {
			t.Fatalf("stop: %v", err)
		}
		if _, err := c.Resume(ctx, "shop"); err != nil {
			t.Fatalf("resume: %v", err)
		}
		sale := edgetest.Room("sale", 5, 5)
		sale.Path = "/sale"
		sale.CookieSuffix = "sale"
		if _, err := c.Apply(ctx, sale); err != nil {
			t.Fatalf("apply: %v", err)
		}
		rooms, err := c.Rooms(ctx)
		if err != nil || len(rooms) != 2 {
			t.Fatalf("rooms: %d, %v", len(rooms), err)
		}
		if st, err := c.RoomStatus(ctx, "sale"); err != nil || st.Name != "sale" || st.TotalActiveUsers != 5 {
			t.Fatalf("room status: %+v, %v", st, err)
		}
		if _, err := c.RoomStatus(ctx, "nope"); err == nil {
			t.Fatal("the status of a room that does not exist was read")
		}
		if err := c.Delete(ctx, "sale"); err != nil {
			t.Fatalf("delete: %v", err)
		}
		doc, _, err := (&api.Client{URL: addr, Token: token, Timeout: 5 * time.Second}).State(ctx)
		if err != nil || len(doc.Rooms) != 1 || doc.Rooms[0].Name != "shop" {
			t.Fatalf("state: %+v, %v", doc, err)
		}
	})
}

func TestAdminNeverShowsSecrets(t *testing.T) {
	sv := edgetest.NewSiteverify(t, "the-secret")
	f := edgetest.NewFixture(t, edgetest.ChallengedRoom(sv, "infinite_queue", "deny"))
	for _, path := range []string{"/rooms", "/rooms/shop", "/rooms/shop/status", "/state"} {
		t.Run("GET "+path+" does not contain the secret", func(t *testing.T) {
			if b := edgetest.Body(t, edgetest.AdminGet(t, f.Admin, path)); strings.Contains(b, "the-secret") {
				t.Errorf("GET %s shows the secret:\n%s", path, b)
			}
		})
	}
	t.Run("the room shows that a secret is set", func(t *testing.T) {
		if rc := edgetest.GetRoom(t, f.Admin, "shop"); rc.TurnstileSecret != api.RedactedSecret {
			t.Errorf("turnstile_secret %q, want %q", rc.TurnstileSecret, api.RedactedSecret)
		}
	})
	t.Run("the answer to a change does not contain the secret", func(t *testing.T) {
		resp := edgetest.AdminJSON(t, f.Admin, http.MethodPatch, "/rooms/shop", map[string]any{"new_users_per_minute": 1})
		if b := edgetest.Body(t, resp); resp.StatusCode != http.StatusOK || strings.Contains(b, "the-secret") {
			t.Errorf("PATCH: %d %s", resp.StatusCode, b)
		}
	})
	t.Run("a room read, edited and applied back keeps its secret", func(t *testing.T) {
		rc := edgetest.GetRoom(t, f.Admin, "shop")
		rc.TotalActiveUsers = 1
		if resp := edgetest.AdminJSON(t, f.Admin, http.MethodPut, "/rooms/shop", rc); resp.StatusCode != http.StatusOK {
			t.Fatalf("PUT: %d %s", resp.StatusCode, edgetest.Body(t, resp))
		}
		// The verifier accepts a solved challenge only with the real
		// secret: a edgetest.Visitor who solves it is no longer challenged.
		f.AdmitFirst(t, "http://shop.test/")
		v := edgetest.NewVisitor()
		if !strings.Contains(edgetest.Body(t, v.Get(f.Server, "http://shop.test/")), "cf-turnstile") {
			t.Fatal("the queue page carries no challenge")
		}
		f.Clock.Advance(25 * time.Second)
		calls := sv.Calls.Load()
		if page := edgetest.Body(t, v.Get(f.Server, "http://shop.test/?__waitroom_challenge=human")); strings.Contains(page, "cf-turnstile") || sv.Calls.Load() == calls {
			t.Errorf("a solved challenge was not accepted after the round trip (verifier called %d times)", sv.Calls.Load()-calls)
		}
	})
	t.Run("the placeholder cannot stand for a secret a room does not have", func(t *testing.T) {
		rc := edgetest.ChallengedRoom(sv, "log", "allow")
		rc.Name, rc.Path, rc.CookieSuffix, rc.TurnstileSecret = "other", "/other", "other", api.RedactedSecret
		resp := edgetest.AdminJSON(t, f.Admin, http.MethodPost, "/rooms/other", rc)
		if b := edgetest.Body(t, resp); resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(b, "turnstile_secret") {
			t.Errorf("POST with the placeholder: %d %s, want 422 naming turnstile_secret", resp.StatusCode, b)
		}
	})
}

func TestAdminNeverShowsURLCredentials(t *testing.T) {
	rc := edgetest.Room("shop", 10, 10)
	f := edgetest.NewFixture(t, rc)
	origin := strings.Replace(f.Origin.URL, "http://", "http://user:origin-pw@", 1) + "/?token=origin-tok"
	rc.Origin = origin
	if resp := edgetest.AdminJSON(t, f.Admin, http.MethodPut, "/rooms/shop", rc); resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT: %d %s", resp.StatusCode, edgetest.Body(t, resp))
	}
	hook := map[string]any{"url": "http://hook:hook-pw@127.0.0.1:1/w?token=hook-tok", "secret": "whsec-0123456789abcdef"}
	if resp := edgetest.AdminJSON(t, f.Admin, http.MethodPut, "/webhooks/chat", hook); resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT /webhooks/chat: %d %s", resp.StatusCode, edgetest.Body(t, resp))
	} else if b := edgetest.Body(t, resp); strings.Contains(b, "hook-pw") || strings.Contains(b, "hook-tok") {
		t.Errorf("the answer to PUT /webhooks/chat shows its credentials: %s", b)
	}
	secrets := []string{"origin-pw", "origin-tok", "hook-pw", "hook-tok", "whsec-"}
	for _, path := range []string{"/rooms", "/rooms/shop", "/state", "/webhooks"} {
		t.Run("GET "+path+" shows no credential of a URL", func(t *testing.T) {
			b := edgetest.Body(t, edgetest.AdminGet(t, f.Admin, path))
			for _, s := range secrets {
				if strings.Contains(b, s) {
					t.Errorf("GET %s shows %q:\n%s", path, s, b)
				}
			}
		})
	}
	t.Run("a room read, edited and applied back keeps its origin's credentials", func(t *testing.T) {
		got := edgetest.GetRoom(t, f.Admin, "shop")
		if !strings.Contains(got.Origin, config.RedactedURLPart) {
			t.Fatalf("origin shown as %q, want its credentials redacted", got.Origin)
		}
		got.TotalActiveUsers = 50
		if resp := edgetest.AdminJSON(t, f.Admin, http.MethodPut, "/rooms/shop", got); resp.StatusCode != http.StatusOK {
			t.Fatalf("PUT: %d %s", resp.StatusCode, edgetest.Body(t, resp))
		}
		if cur := f.Server.Room("shop"); cur.Origin != origin || cur.TotalActiveUsers != 50 {
			t.Errorf("origin %q, total %d; want %q kept and 50", cur.Origin, cur.TotalActiveUsers, origin)
		}
	})
}

func TestHealthzSaysNotOKWhenFailingClosed(t *testing.T) {
	o := edgetest.NewOrigin(t)
	for _, tc := range []struct {
		name  string
		state string
		want  int
	}{
		{"a node cut off from its seed that fails closed is not ok", "closed", http.StatusServiceUnavailable},
		{"a node cut off from its seed that keeps deciding alone is ok", "open", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := edgetest.NodeConfig("alone", edgetest.KeyFile(t, t.TempDir()), o.URL, edgetest.Room("shop", 10, 5))
			cfg.Seeds = []string{"127.0.0.1:1"} // nobody there
			cfg.StaleState = tc.state
			admin := edgetest.StartServer(t, cfg, edgetest.NewClock(5)).AdminHandler()
			resp := edgetest.AdminGet(t, admin, "/healthz")
			var h map[string]any
			if err := json.NewDecoder(resp.Body).Decode(&h); err != nil || resp.StatusCode != tc.want || len(h) != 1 || h["ok"] != (tc.want == http.StatusOK) {
				t.Errorf("GET /healthz: %d %v %v, want %d", resp.StatusCode, h, err, tc.want)
			}
		})
	}
}
