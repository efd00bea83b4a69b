package edge_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/edge/agent"
	"github.com/waitroom/waitroom/edge/api"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/crowd"
	"github.com/waitroom/waitroom/policy"
)

// forwardOn turns forward-auth on, on loopback, for newFixtureWith.
func forwardOn(cfg *config.Config) { cfg.ForwardAuth.Listen = "127.0.0.1:0" }

// trustedProxyAddr is where the tests' auth requests come from: loopback,
// which forward_auth trusts by default.
const trustedProxyAddr = "127.0.0.1:40000"

// sendFn sends one visitor request to a node and returns the answer the
// visitor gets, as one way of putting waitroom in front of a site does.
type sendFn func(v *visitor, target string, hdr ...string) *http.Response

// proxyMode sends the request to the node's public handler.
func proxyMode(srv *agent.Agent) sendFn {
	return func(v *visitor, target string, hdr ...string) *http.Response { return v.Get(srv, target, hdr...) }
}

// askedVia sends the request as a proxy in front asks the forward-auth
// endpoint about it, on path: "/auth" (Caddy, Traefik), "/envoy" (Envoy's
// ext_authz with that path prefix) or "/nginx/auth" (nginx auth_request,
// whose 401 is followed by the fetch of the kept answer, as the shipped
// nginx configuration's error_page does). The visitor keeps the cookies
// of the answer the proxy would pass on.
func askedVia(fa http.Handler, path string) sendFn {
	return func(v *visitor, target string, hdr ...string) *http.Response {
		u, err := url.Parse(target)
		if err != nil {
			panic(err)
		}
		var r *http.Request
		if path == "/envoy" {
			r = v.Req(http.MethodGet, "http://"+u.Host+"/envoy"+u.RequestURI(), hdr...)
			r.RequestURI = "/envoy" + u.RequestURI() // as a server reads it
			r.Header.Set("X-Forwarded-Proto", u.Scheme)
		} else {
			r = v.Req(http.MethodGet, "http://127.0.0.1:9091"+path)
			r.Header.Set("X-Forwarded-Method", http.MethodGet)
			r.Header.Set("X-Forwarded-Host", u.Host)
			r.Header.Set("X-Forwarded-Uri", u.RequestURI())
			r.Header.Set("X-Forwarded-Proto", u.Scheme)
			for i := 0; i+1 < len(hdr); i += 2 {
				r.Header.Set(hdr[i], hdr[i+1])
			}
		}
		r.RemoteAddr = trustedProxyAddr
		r.Header.Set("X-Forwarded-For", "198.51.100.7")
		resp := v.Do(fa, r)
		if path == "/nginx/auth" && resp.StatusCode == http.StatusUnauthorized {
			fetch := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:9091/nginx/answer/"+resp.Header.Get("X-Waitroom-Answer"), nil)
			fetch.RemoteAddr = trustedProxyAddr
			resp = v.Do(fa, fetch)
		}
		resp.Request = v.Req(http.MethodGet, target) // what a Refresh resolves against
		return resp
	}
}

// send2handler turns a sendFn into the handler the visitor helpers call
// (v.prove, v.queue): the request's URL, headers and cookies are the
// visitor's.
func send2handler(send sendFn) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := newVisitor()
		for _, c := range r.Cookies() {
			v.Cookies[c.Name] = c
		}
		var hdr []string
		for k := range r.Header {
			if k != "Cookie" {
				hdr = append(hdr, k, r.Header.Get(k))
			}
		}
		resp := send(v, r.URL.String(), hdr...)
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	})
}

// outcome is what a visitor's answer was: admitted, queued, rejected or
// failed (edge/crowd's reading), with the answer's status in forward-auth
// modes left out, since a proxy needs a non-2xx for a queue page.
func outcome(resp *http.Response) string {
	o, _ := crowd.Classify(resp)
	return o.String()
}

// TestForwardAuthDecidesAsTheProxyDoes drives the same visitors through
// proxy mode and each forward-auth flavour of a node alike, step by step
// on the fake clock, and holds every answer's outcome and the room's counts
// to be the same: the two modes share every step but the last.
func TestForwardAuthDecidesAsTheProxyDoes(t *testing.T) {
	type step struct {
		name string
		run  func(t *testing.T, f *fixture, send sendFn, vs []*visitor) string
	}
	get := func(i int, path string) func(t *testing.T, f *fixture, send sendFn, vs []*visitor) string {
		return func(t *testing.T, f *fixture, send sendFn, vs []*visitor) string {
			return outcome(send(vs[i], "http://shop.test"+path))
		}
	}
	// follow loads the address the visitor's last queue page named.
	var last = map[*visitor]*http.Response{}
	follow := func(i int, wait time.Duration) func(t *testing.T, f *fixture, send sendFn, vs []*visitor) string {
		return func(t *testing.T, f *fixture, send sendFn, vs []*visitor) string {
			f.Clock.Advance(wait)
			f.Server.RefreshAllocations()
			resp := send(vs[i], refreshTarget(t, last[vs[i]]))
			last[vs[i]] = resp
			return outcome(resp)
		}
	}
	first := func(i int) func(t *testing.T, f *fixture, send sendFn, vs []*visitor) string {
		return func(t *testing.T, f *fixture, send sendFn, vs []*visitor) string {
			resp := send(vs[i], "http://shop.test/")
			last[vs[i]] = resp
			return outcome(resp)
		}
	}
	steps := []step{
		{"the first visitor is admitted", get(0, "/")},
		{"the second visitor is admitted", get(1, "/a")},
		{"the third visitor is queued", first(2)},
		{"the third visitor proves it keeps its cookie and is still queued", follow(2, policy.ProofRefresh*time.Second)},
		{"the fourth visitor is queued", first(3)},
		{"the fourth visitor proves it keeps its cookie", follow(3, policy.ProofRefresh*time.Second)},
		{"an admitted visitor browses on", get(0, "/b")},
		{"the third visitor is admitted in the next minute", follow(2, time.Minute)},
		{"the fourth visitor, who came later, is admitted after it", follow(3, time.Minute)},
		{"a static asset passes the bypass rule", get(4, "/static/app.css")},
	}
	rc := room("shop", 100, 2)
	rc.Bypass = []config.BypassRule{{PathPrefix: "/static/"}}
	modes := []struct {
		name string
		send func(f *fixture) sendFn
	}{
		{"proxy mode", func(f *fixture) sendFn { return proxyMode(f.Server) }},
		{"forward-auth as Caddy and Traefik ask", func(f *fixture) sendFn { return askedVia(f.Server.ForwardAuthHandler(), "/auth") }},
		{"forward-auth as nginx asks", func(f *fixture) sendFn { return askedVia(f.Server.ForwardAuthHandler(), "/nginx/auth") }},
		{"forward-auth as Envoy asks", func(f *fixture) sendFn { return askedVia(f.Server.ForwardAuthHandler(), "/envoy") }},
	}
	var want []string
	var wantStatus api.RoomStatus
	for mi, m := range modes {
		t.Run(m.name+" gives every visitor the same answer", func(t *testing.T) {
			f := newFixtureWith(t, forwardOn, rc)
			send := m.send(f)
			vs := []*visitor{newVisitor(), newVisitor(), newVisitor(), newVisitor(), newVisitor()}
			var got []string
			for _, s := range steps {
				got = append(got, s.name+": "+s.run(t, f, send, vs))
			}
			rs := roomStatus(t, f.Admin, "shop")
			if mi == 0 {
				want, wantStatus = got, rs
				for _, g := range got {
					t.Log(g)
				}
				return
			}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("got %q, proxy mode gave %q", got[i], want[i])
				}
			}
			if rs.EstimatedTotalActiveUsers != wantStatus.EstimatedTotalActiveUsers || rs.EstimatedQueuedUsers != wantStatus.EstimatedQueuedUsers || rs.NewUsersThisMinute != wantStatus.NewUsersThisMinute {
				t.Errorf("room counts active %d, queued %d, new this minute %d; proxy mode: %d, %d, %d",
					rs.EstimatedTotalActiveUsers, rs.EstimatedQueuedUsers, rs.NewUsersThisMinute,
					wantStatus.EstimatedTotalActiveUsers, wantStatus.EstimatedQueuedUsers, wantStatus.NewUsersThisMinute)
			}
		})
	}
	if want[2] != "the third visitor is queued: queued" || want[7] != "the third visitor is admitted in the next minute: admitted" {
		t.Errorf("proxy mode itself went another way: %q", want)
	}
}

func TestForwardAuthAnswers(t *testing.T) {
	t.Run("an admitted visitor gets 200 and the cookie for the proxy to pass on", func(t *testing.T) {
		f := newFixtureWith(t, forwardOn, room("shop", 10, 10))
		resp := askedVia(f.Server.ForwardAuthHandler(), "/auth")(newVisitor(), "http://shop.test/")
		if resp.StatusCode != http.StatusOK || setCookie(resp, cookieName) == "" || resp.Header.Get("Refresh") != "" {
			t.Fatalf("status %d, Set-Cookie %q, Refresh %q; want 200 with the cookie", resp.StatusCode, setCookie(resp, cookieName), resp.Header.Get("Refresh"))
		}
		if f.Origin.Hits() != 0 {
			t.Error("the node itself went to the origin")
		}
	})
	t.Run("a queue page under status 200 goes out as 429 where any 2xx would let the request through", func(t *testing.T) {
		f := newFixtureWith(t, forwardOn, fullRoom("shop"))
		askedVia(f.Server.ForwardAuthHandler(), "/auth")(newVisitor(), "http://shop.test/")
		resp := askedVia(f.Server.ForwardAuthHandler(), "/auth")(newVisitor(), "http://shop.test/")
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Refresh") == "" || setCookie(resp, cookieName) == "" {
			t.Fatalf("status %d, Refresh %q; want 429 with Refresh and the cookie", resp.StatusCode, resp.Header.Get("Refresh"))
		}
		if b := body(t, resp); !strings.Contains(b, "<html") {
			t.Errorf("no queue page: %s", b)
		}
	})
	t.Run("through nginx the queue page keeps the room's own status", func(t *testing.T) {
		rc := fullRoom("shop")
		rc.QueueingStatusCode = 202
		f := newFixtureWith(t, forwardOn, rc)
		askedVia(f.Server.ForwardAuthHandler(), "/nginx/auth")(newVisitor(), "http://shop.test/")
		resp := askedVia(f.Server.ForwardAuthHandler(), "/nginx/auth")(newVisitor(), "http://shop.test/")
		if resp.StatusCode != http.StatusAccepted || resp.Header.Get("Refresh") == "" || setCookie(resp, cookieName) == "" {
			t.Fatalf("status %d, Refresh %q; want 202 with Refresh and the cookie", resp.StatusCode, resp.Header.Get("Refresh"))
		}
	})
	t.Run("an app asking for JSON gets the JSON", func(t *testing.T) {
		rc := fullRoom("shop")
		rc.JSONResponseEnabled = true
		f := newFixtureWith(t, forwardOn, rc)
		askedVia(f.Server.ForwardAuthHandler(), "/auth")(newVisitor(), "http://shop.test/")
		resp := askedVia(f.Server.ForwardAuthHandler(), "/auth")(newVisitor(), "http://shop.test/", "Accept", "application/json")
		if obj := queueJSON(t, resp); obj["inWaitingRoom"] != true {
			t.Errorf("JSON %v", obj)
		}
	})
	t.Run("a kept answer is served once", func(t *testing.T) {
		f := newFixtureWith(t, forwardOn, fullRoom("shop"))
		fa := f.Server.ForwardAuthHandler()
		askedVia(fa, "/auth")(newVisitor(), "http://shop.test/")
		r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:9091/nginx/auth", nil)
		r.RemoteAddr = trustedProxyAddr
		r.Header.Set("X-Forwarded-Method", "GET")
		r.Header.Set("X-Forwarded-Host", "shop.test")
		r.Header.Set("X-Forwarded-Uri", "/")
		rec := httptest.NewRecorder()
		fa.ServeHTTP(rec, r)
		id := rec.Header().Get("X-Waitroom-Answer")
		if rec.Code != http.StatusUnauthorized || id == "" {
			t.Fatalf("status %d, answer %q; want 401 with an answer id", rec.Code, id)
		}
		for i, want := range []int{http.StatusOK, http.StatusServiceUnavailable} {
			fetch := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:9091/nginx/answer/"+id, nil)
			fetch.RemoteAddr = trustedProxyAddr
			rec := httptest.NewRecorder()
			fa.ServeHTTP(rec, fetch)
			if rec.Code != want {
				t.Errorf("fetch %d: status %d, want %d", i+1, rec.Code, want)
			}
		}
		if n := metric(t, f.Admin, `waitroom_forward_auth_refused_total{reason="answer_missing"}`); n != 1 {
			t.Errorf("answer_missing counted %v, want 1", n)
		}
	})
	t.Run("the challenge runs as in proxy mode, and its solution never reaches the origin", func(t *testing.T) {
		sv := newSiteverify(t, "the-secret")
		rc := challengedRoom(sv, "infinite_queue", "allow")
		rc.TotalActiveUsers = 10 // one new user a minute
		f := newFixtureWith(t, forwardOn, rc)
		send := askedVia(f.Server.ForwardAuthHandler(), "/auth")
		send(newVisitor(), "http://shop.test/") // takes the minute's slot
		f.Server.RefreshAllocations()
		v := newVisitor()
		first := send(v, "http://shop.test/")
		if b := body(t, first); first.StatusCode != http.StatusTooManyRequests || !strings.Contains(b, "cf-turnstile") {
			t.Fatalf("status %d %v; want the queue page with the challenge:\n%s", first.StatusCode, first.Header, b)
		}
		v.Prove(t, send2handler(send), f.Clock, first)
		f.Clock.Advance(25 * time.Second) // the page's refresh interval
		if resp := send(v, "http://shop.test/?__waitroom_challenge=human"); outcome(resp) != "queued" || sv.Calls.Load() != 1 {
			t.Fatalf("with a solution: %s, %d verifier calls; want queued after one call", outcome(resp), sv.Calls.Load())
		}
		f.Clock.Advance(time.Minute)
		f.Server.RefreshAllocations()
		resp := send(v, "http://shop.test/?__waitroom_challenge=human")
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" || setCookie(resp, cookieName) == "" {
			t.Fatalf("admitted on the solution's address: status %d, Location %q; want 303 to / with the cookie", resp.StatusCode, resp.Header.Get("Location"))
		}
		if resp := send(v, "http://shop.test/"); resp.StatusCode != http.StatusOK || sv.Calls.Load() != 1 {
			t.Fatalf("at the clean address: status %d, %d verifier calls; want 200, still one", resp.StatusCode, sv.Calls.Load())
		}
	})
	t.Run("in proxy mode a solved visitor's reload of the solution's address reaches the origin without it", func(t *testing.T) {
		sv := newSiteverify(t, "the-secret")
		rc := challengedRoom(sv, "infinite_queue", "allow")
		rc.TotalActiveUsers = 10
		f := newFixture(t, rc)
		newVisitor().Get(f.Server, "http://shop.test/")
		f.Server.RefreshAllocations()
		v := newVisitor()
		v.Queue(t, f.Server, f.Clock, "http://shop.test/")
		f.Clock.Advance(25 * time.Second)
		if resp := v.Get(f.Server, "http://shop.test/?x=1&__waitroom_challenge=human"); outcome(resp) != "queued" || sv.Calls.Load() != 1 {
			t.Fatalf("with a solution: %s, %d verifier calls", outcome(resp), sv.Calls.Load())
		}
		f.Clock.Advance(time.Minute)
		f.Server.RefreshAllocations()
		if resp := v.Get(f.Server, "http://shop.test/?x=1&__waitroom_challenge=human"); resp.Header.Get("X-Origin") != "yes" {
			t.Fatalf("status %d, want proxied", resp.StatusCode)
		}
		if uris := f.Origin.URIs(); uris[len(uris)-1] != "/?x=1" {
			t.Errorf("the origin saw %q, want /?x=1", uris[len(uris)-1])
		}
	})
	t.Run("an event's pre-queue holds everyone until the start, then lets them in", func(t *testing.T) {
		rc := room("shop", 100, 100)
		rc.JSONResponseEnabled = true
		start := newFakeClock(5).Now().Add(10 * time.Minute).Truncate(time.Minute)
		pre := start.Add(-30 * time.Minute)
		rc.Events = []config.Event{{Name: "launch", PrequeueStartTime: &pre, EventStartTime: start, EventEndTime: start.Add(time.Hour)}}
		f := newFixtureWith(t, forwardOn, rc)
		send := askedVia(f.Server.ForwardAuthHandler(), "/auth")
		v := newVisitor()
		if obj := queueJSON(t, v.Queue(t, send2handler(send), f.Clock, "http://shop.test/", "Accept", "application/json")); obj["isEventPrequeueing"] != true {
			t.Fatalf("before the start: %v, want the pre-queue", obj)
		}
		f.Clock.Set(start.Add(time.Second))
		f.Server.RefreshAllocations()
		if resp := send(v, "http://shop.test/"); resp.StatusCode != http.StatusOK || resp.Header.Get("Refresh") != "" {
			t.Fatalf("after the start: status %d, Refresh %q; want let through", resp.StatusCode, resp.Header.Get("Refresh"))
		}
	})
	t.Run("a bypass rule by address matches the visitor's, which the proxy names, never the proxy's own", func(t *testing.T) {
		rc := fullRoom("shop")
		rc.Bypass = []config.BypassRule{{CIDR: "127.0.0.0/8"}, {CIDR: "203.0.113.0/24"}}
		f := newFixtureWith(t, forwardOn, rc)
		fa := f.Server.ForwardAuthHandler()
		ask := func(xff string) int {
			r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:9091/auth", nil)
			r.RemoteAddr = trustedProxyAddr
			r.Header.Set("X-Forwarded-Method", "GET")
			r.Header.Set("X-Forwarded-Host", "shop.test")
			r.Header.Set("X-Forwarded-Uri", "/")
			if xff != "" {
				r.Header.Set("X-Forwarded-For", xff)
			}
			rec := httptest.NewRecorder()
			fa.ServeHTTP(rec, r)
			return len(rec.Result().Cookies())
		}
		if ask("198.51.100.1, 203.0.113.9") != 0 {
			t.Error("a visitor in the bypassed range, as the proxy named it, got a cookie: not bypassed")
		}
		if ask("") == 0 || ask("203.0.113.9, 198.51.100.1") == 0 {
			t.Error("the proxy's own address, or an address the visitor claimed before the proxy's, was bypassed")
		}
	})
	t.Run("a suspended room lets everyone through uncounted", func(t *testing.T) {
		rc := fullRoom("shop")
		rc.Suspended = true
		f := newFixtureWith(t, forwardOn, rc)
		resp := askedVia(f.Server.ForwardAuthHandler(), "/auth")(newVisitor(), "http://shop.test/")
		if resp.StatusCode != http.StatusOK || len(resp.Header.Values("Set-Cookie")) != 0 {
			t.Fatalf("status %d, cookies %q; want 200 without a cookie", resp.StatusCode, resp.Header.Values("Set-Cookie"))
		}
	})
	t.Run("the emergency stop holds an admitted visitor", func(t *testing.T) {
		rc := room("shop", 10, 10)
		f := newFixtureWith(t, forwardOn, rc)
		send := askedVia(f.Server.ForwardAuthHandler(), "/auth")
		v := newVisitor()
		if outcome(send(v, "http://shop.test/")) != "admitted" {
			t.Fatal("not admitted")
		}
		if resp := adminSend(t, f.Admin, http.MethodPost, "/rooms/shop/stop", map[string]string{}); resp.StatusCode != http.StatusOK {
			t.Fatalf("stop: %d", resp.StatusCode)
		}
		f.Server.RefreshAllocations()
		if resp := send(v, "http://shop.test/"); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Refresh") == "" {
			t.Fatalf("status %d, Refresh %q; want the queue page as 429", resp.StatusCode, resp.Header.Get("Refresh"))
		}
	})
	t.Run("an unrouted request is refused, and passed with unrouted pass", func(t *testing.T) {
		rc := room("shop", 10, 10)
		rc.Host = "shop.test"
		f := newFixtureWith(t, forwardOn, rc)
		if resp := askedVia(f.Server.ForwardAuthHandler(), "/auth")(newVisitor(), "http://other.test/"); resp.StatusCode != http.StatusNotFound {
			t.Errorf("refuse: status %d, want 404", resp.StatusCode)
		}
		f = newFixtureWith(t, func(c *config.Config) { forwardOn(c); c.Unrouted = "pass" }, rc)
		if resp := askedVia(f.Server.ForwardAuthHandler(), "/auth")(newVisitor(), "http://other.test/"); resp.StatusCode != http.StatusOK {
			t.Errorf("pass: status %d, want 200", resp.StatusCode)
		}
	})
	t.Run("a path spelt another way is routed as the proxy mode routes it", func(t *testing.T) {
		rc := fullRoom("shop")
		rc.Path = "/shop"
		f := newFixtureWith(t, func(c *config.Config) { forwardOn(c); c.Unrouted = "pass" }, rc)
		askedVia(f.Server.ForwardAuthHandler(), "/auth")(newVisitor(), "http://shop.test/shop")
		for _, p := range []string{"/sh%6Fp", "//shop/", "/shop;x=1"} {
			if resp := askedVia(f.Server.ForwardAuthHandler(), "/auth")(newVisitor(), "http://shop.test"+p); outcome(resp) != "queued" {
				t.Errorf("%s: %s (status %d), want queued", p, outcome(resp), resp.StatusCode)
			}
		}
		if resp := askedVia(f.Server.ForwardAuthHandler(), "/auth")(newVisitor(), "http://shop.test/sh%252fop"); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("double encoding: status %d, want 400", resp.StatusCode)
		}
	})
}

func TestForwardAuthTrust(t *testing.T) {
	ask := func(fa http.Handler, from string, hdr map[string]string) int {
		r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:9091/auth", nil)
		r.RemoteAddr = from
		for k, v := range hdr {
			r.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		fa.ServeHTTP(rec, r)
		return rec.Code
	}
	good := map[string]string{"X-Forwarded-Method": "GET", "X-Forwarded-Host": "shop.test", "X-Forwarded-Uri": "/"}
	tests := []struct {
		name    string
		trusted []string
		from    string
		hdr     map[string]string
		want    int
	}{
		{"loopback is trusted by default", nil, "127.0.0.1:5000", good, http.StatusOK},
		{"IPv6 loopback is trusted by default", nil, "[::1]:5000", good, http.StatusOK},
		{"any other address is refused by default", nil, "192.0.2.10:5000", good, http.StatusForbidden},
		{"a listed prefix is trusted", []string{"192.0.2.0/24"}, "192.0.2.10:5000", good, http.StatusOK},
		{"a listed address is trusted", []string{"192.0.2.10"}, "192.0.2.10:5000", good, http.StatusOK},
		{"loopback is refused once the list names others", []string{"192.0.2.10"}, "127.0.0.1:5000", good, http.StatusForbidden},
		{"a request without the original host is refused", nil, "127.0.0.1:5000", map[string]string{"X-Forwarded-Method": "GET", "X-Forwarded-Uri": "/"}, http.StatusBadRequest},
		{"a request without the original address is refused", nil, "127.0.0.1:5000", map[string]string{"X-Forwarded-Method": "GET", "X-Forwarded-Host": "shop.test"}, http.StatusBadRequest},
		{"a full URL is not an address", nil, "127.0.0.1:5000", map[string]string{"X-Forwarded-Method": "GET", "X-Forwarded-Host": "shop.test", "X-Forwarded-Uri": "http://evil.test/"}, http.StatusBadRequest},
		{"a request without the original method is refused", nil, "127.0.0.1:5000", map[string]string{"X-Forwarded-Host": "shop.test", "X-Forwarded-Uri": "/"}, http.StatusBadRequest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixtureWith(t, func(c *config.Config) { forwardOn(c); c.ForwardAuth.TrustedProxies = tc.trusted }, room("shop", 10, 10))
			if got := ask(f.Server.ForwardAuthHandler(), tc.from, tc.hdr); got != tc.want {
				t.Errorf("status %d, want %d", got, tc.want)
			}
		})
	}
}

func TestForwardAuthConfig(t *testing.T) {
	tests := []struct {
		name string
		fa   config.ForwardAuthConfig
		want string // "" for a valid config
	}{
		{"a loopback listener needs no list", config.ForwardAuthConfig{Listen: "127.0.0.1:9091"}, ""},
		{"a listener open to a network needs the list of proxies", config.ForwardAuthConfig{Listen: ":9091"}, "forward_auth.trusted_proxies: is required"},
		{"with the list it is accepted", config.ForwardAuthConfig{Listen: ":9091", TrustedProxies: []string{"10.0.0.0/8", "192.0.2.7"}}, ""},
		{"a malformed entry is named", config.ForwardAuthConfig{Listen: ":9091", TrustedProxies: []string{"10.0.0.0/8", "proxy.internal"}}, "forward_auth.trusted_proxies[1]"},
		{"the listener may not share the admin port", config.ForwardAuthConfig{Listen: "127.0.0.1:9090"}, "forward_auth.listen: 127.0.0.1:9090 overlaps admin"},
		{"a list without a listener is a mistake", config.ForwardAuthConfig{TrustedProxies: []string{"10.0.0.0/8"}}, "forward_auth.trusted_proxies: is set but forward_auth.listen is not"},
		{"a malformed listener is named", config.ForwardAuthConfig{Listen: "9091"}, "forward_auth.listen"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := nodeConfig("node-a", "cookie.key", "http://127.0.0.1:1", room("shop", 10, 10))
			cfg.Admin = "127.0.0.1:9090"
			cfg.ForwardAuth = tc.fa
			err := cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
	t.Run("the flags alone make one room behind the proxy", func(t *testing.T) {
		c := &config.Config{CookieKeyFile: "cookie.key"}
		o := config.Overrides{ForwardAuth: "10.0.0.5:9091", TrustedProxies: []string{"10.0.0.0/24"}, TotalActiveUsers: 5}
		o.Set = func(f string) bool { return f == "forward-auth" || f == "trusted-proxy" || f == "total-active-users" }
		if err := o.Apply(c); err != nil {
			t.Fatal(err)
		}
		if c.ForwardAuth.Listen != "10.0.0.5:9091" || len(c.Rooms) != 1 || c.Rooms[0].Origin != "" {
			t.Errorf("forward_auth %+v, rooms %+v", c.ForwardAuth, c.Rooms)
		}
		o.Set = func(f string) bool { return f == "forward-auth" || f == "total-active-users" }
		if err := o.Apply(&config.Config{}); err == nil || !strings.Contains(err.Error(), "forward_auth.trusted_proxies") {
			t.Errorf("a listener open to a network without --trusted-proxy: %v", err)
		}
	})
	t.Run("a room needs no origin in forward-auth mode", func(t *testing.T) {
		cfg := nodeConfig("node-a", "cookie.key", "", room("shop", 10, 10))
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "origin") {
			t.Fatalf("without forward-auth: %v, want origin required", err)
		}
		cfg.ForwardAuth.Listen = "127.0.0.1:9091"
		if err := cfg.Validate(); err != nil {
			t.Fatalf("with forward-auth: %v", err)
		}
	})
}

// The origin's revoke, in forward-auth mode, is a POST to the endpoint with
// the visitor's cookie: the session ends at once, the slot is free, and
// the cookie no longer lets the visitor in.
func TestForwardAuthRevoke(t *testing.T) {
	revoke := func(fa http.Handler, v *visitor, query string) (*http.Response, map[string][]string) {
		r := v.Req(http.MethodPost, "http://127.0.0.1:9091/revoke"+query)
		r.RemoteAddr = trustedProxyAddr
		rec := httptest.NewRecorder()
		fa.ServeHTTP(rec, r)
		var res map[string][]string
		_ = json.Unmarshal(rec.Body.Bytes(), &res)
		return rec.Result(), res
	}
	t.Run("a revoked session frees its slot and its cookie is a new visitor's", func(t *testing.T) {
		rc := room("shop", 1, 1)
		rc.EnabledOriginCommands = []string{"revoke"}
		f := newFixtureWith(t, forwardOn, rc)
		fa := f.Server.ForwardAuthHandler()
		send := askedVia(fa, "/auth")
		v := newVisitor()
		if outcome(send(v, "http://shop.test/")) != "admitted" {
			t.Fatal("first visitor not admitted")
		}
		old := *v.Cookies[cookieName]
		if outcome(send(newVisitor(), "http://shop.test/")) != "queued" {
			t.Fatal("the room is not full")
		}
		resp, res := revoke(fa, v, "")
		if len(res["revoked"]) != 1 || res["revoked"][0] != "shop" {
			t.Fatalf("revoke answered %d %v", resp.StatusCode, res)
		}
		if line := setCookie(resp, cookieName); maxAge(t, line) != 0 {
			t.Errorf("the answer does not clear the cookie: %q", line)
		}
		if rs := roomStatus(t, f.Admin, "shop"); rs.EstimatedTotalActiveUsers != 0 {
			t.Errorf("%d active after the revoke, want 0", rs.EstimatedTotalActiveUsers)
		}
		f.Clock.Advance(time.Minute) // the minute's one new user came and went
		f.Server.RefreshAllocations()
		replay := newVisitor()
		replay.Cookies[cookieName] = &old
		if outcome(send(replay, "http://shop.test/")) != "admitted" || replay.Cookies[cookieName].Value == old.Value {
			t.Error("the revoked cookie was not a new visitor's")
		}
		// The origin sends the old cookie again: its slot was freed once
		// already, and nothing more is taken off.
		revoke(fa, v, "")
		if rs := roomStatus(t, f.Admin, "shop"); rs.EstimatedTotalActiveUsers != 1 {
			t.Errorf("%d active after a second revoke of one session, want 1 (the replay's)", rs.EstimatedTotalActiveUsers)
		}
	})
	t.Run("a room without revoke among its origin commands revokes nothing", func(t *testing.T) {
		f := newFixtureWith(t, forwardOn, room("shop", 1, 1))
		fa := f.Server.ForwardAuthHandler()
		v := newVisitor()
		askedVia(fa, "/auth")(v, "http://shop.test/")
		if _, res := revoke(fa, v, ""); len(res["revoked"]) != 0 || len(res["not_enabled"]) != 1 {
			t.Fatalf("revoke answered %v", res)
		}
		if rs := roomStatus(t, f.Admin, "shop"); rs.EstimatedTotalActiveUsers != 1 {
			t.Errorf("%d active, want 1", rs.EstimatedTotalActiveUsers)
		}
	})
	t.Run("only POST revokes", func(t *testing.T) {
		f := newFixtureWith(t, forwardOn, room("shop", 1, 1))
		r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:9091/revoke", nil)
		r.RemoteAddr = trustedProxyAddr
		rec := httptest.NewRecorder()
		f.Server.ForwardAuthHandler().ServeHTTP(rec, r)
		if rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("status %d, want 405", rec.Code)
		}
	})
}

// FuzzForwardAuthRequest: whatever a proxy (or someone who reached the
// endpoint) says about a request, the endpoint answers without a panic and
// without a 5xx: a malformed description is a 400, anything else a
// decision.
func FuzzForwardAuthRequest(f *testing.F) {
	f.Add("GET", "shop.test", "/", "/auth", "__waitroom=x")
	f.Add("POST", "shop.test:8443", "/a?b=c&__waitroom_cc=17", "/nginx/auth", "")
	f.Add("", "", "", "/envoy/x?y", "a=b")
	f.Add("GET", "[::1]:80", "//x/../%2e%2e/%252f", "/auth", "__waitroom=")
	f.Add("G ET", "shop.test, other.test", "http://evil.test/", "/auth", "")
	fx := newFixtureWith(f, forwardOn, room("shop", 1, 1))
	fa := fx.Server.ForwardAuthHandler()
	f.Fuzz(func(t *testing.T, method, host, uri, path, cookie string) {
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \t\r\n#") {
			return // not a request line a server would read
		}
		r, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:9091"+path, nil)
		if err != nil {
			return
		}
		r.RequestURI = path
		r.RemoteAddr = trustedProxyAddr
		r.Host = host
		r.Header.Set("X-Forwarded-Method", method)
		r.Header.Set("X-Forwarded-Host", host)
		r.Header.Set("X-Forwarded-Uri", uri)
		r.Header.Set("Cookie", cookie)
		rec := httptest.NewRecorder()
		fa.ServeHTTP(rec, r)
		if rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("%s %q %q on %s: status %d", method, host, uri, path, rec.Code)
		}
	})
}
