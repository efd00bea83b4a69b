package edge_test

import (
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/edgetest"
)

// Bad input at the edge: a client may send anything, and a node must survive
// it and stay correct. Every case must
// end as a new visitor or a clear page: never a 500, never a panic.
func TestBadInputIsANewVisitor(t *testing.T) {
	f := newFixture(t, room("shop", 1, 1))
	admitFirst(t, f, "http://shop.test/")
	huge := strings.Repeat("A", 64<<10)
	for _, tc := range []struct {
		name   string
		cookie string
		path   string
		hdr    []string
	}{
		{"an oversized cookie", huge, "/", nil},
		{"a cookie of garbage bytes", "\x00\xff\xfe not base64 at all", "/", nil},
		{"a cookie of valid base64 that is not a token", "AQEAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "/", nil},
		{"an empty cookie", "", "/", nil},
		// (an encoded NUL in the path is refused with 400: see TestRoutingCannotBeDodged)
		{"a path with dot segments and escapes", "", "/../../etc/passwd?x=%zz", nil},
		{"a very long path", "", "/" + strings.Repeat("a/", 8000), nil},
		{"a malformed Accept and odd headers", "", "/", []string{"Accept", "application/json\x7f", "X-Forwarded-Proto", "gopher"}},
		{"a forged challenge solution without a challenge configured", "", "/?__waitroom_challenge=x", nil},
	} {
		t.Run(tc.name+" gets the queue page, not an error", func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "http://shop.test/", nil)
			req.URL.Path = strings.SplitN(tc.path, "?", 2)[0]
			if i := strings.Index(tc.path, "?"); i >= 0 {
				req.URL.RawQuery = tc.path[i+1:]
			}
			if tc.cookie != "" || tc.name == "an empty cookie" {
				req.Header.Set("Cookie", "__waitroom="+tc.cookie)
			}
			for i := 0; i+1 < len(tc.hdr); i += 2 {
				req.Header[tc.hdr[i]] = []string{tc.hdr[i+1]}
			}
			rec := httptest.NewRecorder()
			f.Server.ServeHTTP(rec, req)
			if rec.Code >= 500 {
				t.Fatalf("status %d:\n%s", rec.Code, rec.Body.String())
			}
			if rec.Header().Get("Refresh") == "" {
				t.Errorf("status %d without Refresh: not the queue page", rec.Code)
			}
		})
	}
	t.Run("the bad cookies were counted by reason", func(t *testing.T) {
		if n := metric(t, f.Admin, `waitroom_cookie_errors_total{reason="too_large",room="shop"}`); n < 1 {
			t.Errorf("too_large cookie errors = %v", n)
		}
		if n := metric(t, f.Admin, `waitroom_cookie_errors_total{reason="malformed",room="shop"}`); n < 1 {
			t.Errorf("malformed cookie errors = %v", n)
		}
	})
}

// A client that refreshes every second gains nothing over one that follows
// the page's Refresh header: it makes no more attempts, and over many trials
// it is admitted no sooner.
func TestRefreshSpammingGainsNothing(t *testing.T) {
	const trials = 40
	var spamWait, politeWait time.Duration
	spamFirst, spamAttempts, politeAttempts := 0, 0, 0
	for trial := 0; trial < trials; trial++ {
		rc := room("shop", 1, 1)
		rc.EnabledOriginCommands = []string{"revoke"}
		f := newFixture(t, rc)
		// The refresh intervals are drawn from a source seeded by the
		// trial: random draws, but the same in every run, so the bound
		// below judges the rule and not one run's luck (unseeded, about
		// one run in seventy drew the spammer three attempts more).
		draws := rand.New(rand.NewPCG(uint64(trial), 7))
		var drawMu sync.Mutex
		f.Server.SetJitter(func() float64 {
			drawMu.Lock()
			defer drawMu.Unlock()
			return draws.Float64()
		})
		f.Clock.Set(time.Date(2030, 6, 1, 12, 0, 50, 0, time.UTC))
		holder := admitFirst(t, f, "http://shop.test/")
		spam, polite := newVisitor(), newVisitor()
		start := f.Clock.Now()
		// Both arrive in the same second; the polite one next checks in when
		// its page says, the spammer every second.
		next := map[*visitor]time.Time{}
		for _, v := range []*visitor{spam, polite} {
			resp := v.Get(f.Server, "http://shop.test/")
			next[v] = f.Clock.Now().Add(refreshOf(t, resp))
		}
		// The slot frees at a different second in each trial, in the next
		// minute (new_users_per_minute is 1).
		freeAt := start.Add(time.Duration(20+trial%37) * time.Second)
		attempts := map[*visitor]int{}
		admittedAt := map[*visitor]time.Time{}
		freed := false
		for s := 0; s < 400 && len(admittedAt) < 1; s++ {
			now := f.Clock.Advance(time.Second)
			if !freed && !now.Before(freeAt) {
				holder.Get(f.Server, "http://shop.test/")
				revokeHolder(t, f, holder)
				freed = true
			}
			for _, v := range []*visitor{spam, polite} {
				if _, in := admittedAt[v]; in {
					continue
				}
				if v == polite && now.Before(next[v]) {
					continue
				}
				resp := v.Get(f.Server, "http://shop.test/")
				// An attempt re-seals the token; an early check-in does not.
				if setCookie(resp, "__waitroom") != "" {
					attempts[v]++
				}
				if resp.Header.Get("X-Origin") == "yes" {
					admittedAt[v] = now
					continue
				}
				next[v] = now.Add(refreshOf(t, resp))
			}
		}
		if len(admittedAt) == 0 {
			t.Fatalf("trial %d: nobody was admitted", trial)
		}
		spamAttempts += attempts[spam]
		politeAttempts += attempts[polite]
		if a, b := attempts[spam], attempts[polite]; a > b+4 {
			// Both draw their refresh intervals at random (the rule's,
			// the same for both): over a few cycles one may get an
			// attempt or three more by chance (the totals below judge
			// the rule), never a cycle's worth.
			t.Fatalf("trial %d: the spammer made %d attempts, the polite client %d", trial, a, b)
		}
		if _, ok := admittedAt[spam]; ok {
			spamFirst++
			spamWait += admittedAt[spam].Sub(start)
			politeWait += admittedAt[spam].Sub(start) // the polite one was still waiting
		} else {
			politeWait += admittedAt[polite].Sub(start)
			spamWait += admittedAt[polite].Sub(start)
		}
	}
	t.Logf("over %d trials the spammer got in first %d times and made %d attempts, the polite client %d", trials, spamFirst, spamAttempts, politeAttempts)
	// A spammer that gained would make more attempts trial after trial;
	// chance evens out over the trials.
	if spamAttempts > politeAttempts+politeAttempts/20 {
		t.Errorf("over %d trials the spammer made %d attempts, the polite client %d: more than 5 %% more", trials, spamAttempts, politeAttempts)
	}
	// With equal attempt rates the first admission is a coin toss between
	// them; a spammer that gained would win far more than half.
	if spamFirst > trials*3/4 {
		t.Errorf("the spammer got in first in %d of %d trials", spamFirst, trials)
	}
}

func refreshOf(t *testing.T, resp *http.Response) time.Duration {
	t.Helper()
	_, _ = io.Copy(io.Discard, resp.Body)
	var n int
	for _, c := range resp.Header.Get("Refresh") {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	if n == 0 {
		n = 1
	}
	return time.Duration(n) * time.Second
}

// revokeHolder frees the holder's slot through the origin command.
func revokeHolder(t *testing.T, f *fixture, holder *visitor) {
	t.Helper()
	holder.Get(f.Server, "http://shop.test/revoke-cf")
	settle(t, f)
}

func TestOverload(t *testing.T) {
	t.Run("a full queue says so on the page and does not count the newcomer", func(t *testing.T) {
		rc := room("shop", 1, 1)
		rc.MaxQueue = 2
		f := newFixture(t, rc)
		admitFirst(t, f, "http://shop.test/")
		for i := 0; i < 2; i++ {
			_ = body(t, newVisitor().Queue(t, f.Server, f.Clock, "http://shop.test/"))
		}
		settle(t, f)
		resp := newVisitor().Get(f.Server, "http://shop.test/")
		page := body(t, resp)
		if !strings.Contains(page, "The line is full") || resp.Header.Get("Refresh") == "" {
			t.Errorf("the third waiting visitor did not get the full-queue page with a refresh:\n%s", page)
		}
		settle(t, f)
		if rs := roomStatus(t, f.Admin, "shop"); rs.EstimatedQueuedUsers != 2 {
			t.Errorf("queued = %d, want 2 (the turned-away visitor is not counted)", rs.EstimatedQueuedUsers)
		}
	})

	t.Run("a node cut off from its cluster fails closed when told to", func(t *testing.T) {
		for _, mode := range []string{"open", "closed"} {
			o := edgetest.NewOrigin(t)
			cfg := nodeConfig("lonely-"+mode, keyFile(t, t.TempDir()), o.URL, room("shop", 100, 100))
			cfg.Seeds = []string{"127.0.0.1:1"} // a peer that never answers
			cfg.StaleState = mode
			cfg.StaleAfter = config.Duration(time.Second)
			clock := newFakeClock(5)
			srv := startServer(t, cfg, clock)
			srv.AdminHandler() // registers nothing; status below recomputes
			resp := newVisitor().Get(srv, "http://shop.test/")
			admitted := resp.Header.Get("X-Origin") == "yes"
			if want := mode == "open"; admitted != want {
				t.Errorf("stale_state %s: admitted = %v, want %v (status %d)", mode, admitted, want, resp.StatusCode)
			}
		}
	})
}

// The origin sees the client's real address, never a forged
// X-Forwarded-For, and no hop-by-hop headers; the origin's command header
// never reaches the visitor.
func TestProxyHeaders(t *testing.T) {
	var mu sync.Mutex
	var seen http.Header
	up := edgetest.NewOrigin(t, edgetest.Serving(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = r.Header.Clone()
		mu.Unlock()
		w.Header().Set("Cf-Waiting-Room-Command", "revoke")
		w.Header().Set("X-Origin", "yes")
		_, _ = io.WriteString(w, "hello")
	})))
	rc := room("shop", 10, 10)
	rc.Origin = up.URL
	f := newFixture(t, rc)
	req := httptest.NewRequest(http.MethodGet, "http://shop.test/", nil)
	req.RemoteAddr = "203.0.113.7:4444"
	req.Header.Set("X-Forwarded-For", "6.6.6.6")
	req.Header.Set("X-Forwarded-Host", "evil.test")
	req.Header.Set("X-Real-IP", "6.6.6.6")
	req.Header.Set("Forwarded", "for=6.6.6.6;host=evil.test")
	req.Header.Set("Connection", "X-Secret-Hop, keep-alive")
	req.Header.Set("X-Secret-Hop", "drop me")
	req.Header.Set("Proxy-Authorization", "Basic Zm9vOmJhcg==")
	rec := httptest.NewRecorder()
	f.Server.ServeHTTP(rec, req)
	mu.Lock()
	defer mu.Unlock()
	if seen == nil {
		t.Fatalf("the origin was not reached: %d", rec.Code)
	}
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"the origin sees the client's address, not the forged one", seen.Get("X-Forwarded-For") == "203.0.113.7"},
		{"a forged X-Forwarded-Host is replaced by the real host", seen.Get("X-Forwarded-Host") == "shop.test"},
		{"a forged X-Real-IP does not reach the origin", seen.Get("X-Real-IP") == ""},
		{"a forged Forwarded does not reach the origin", seen.Get("Forwarded") == ""},
		{"headers named in Connection do not reach the origin", seen.Get("X-Secret-Hop") == ""},
		{"Proxy-Authorization does not reach the origin", seen.Get("Proxy-Authorization") == ""},
		{"the origin command header does not reach the visitor", rec.Header().Get("Cf-Waiting-Room-Command") == ""},
		{"the origin's own headers do", rec.Header().Get("X-Origin") == "yes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.ok {
				t.Errorf("origin saw %v; visitor got %v", seen, rec.Header())
			}
		})
	}
}
