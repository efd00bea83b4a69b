package bench_test

// Benchmarks of the request path through the full handler (httptest
// recorder in front, a real loopback origin behind), and of a plain
// httputil.ReverseProxy with the same transport to the same origin, so the
// cost waitroom adds can be read from one run:
//
//	go test -run '^$' -bench 'AdmittedRequest|QueuedRequest|PlainProxy' -benchmem ./cmd/waitroom/internal/bench/

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/waitroom/waitroom/cmd/waitroom/internal/bench"
	"github.com/waitroom/waitroom/cookie"
	"github.com/waitroom/waitroom/edge/agent"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/edgetest"
)

// originBody is what the benchmark origin answers: a small page.
var originBody = []byte("<!doctype html><title>ok</title><p>hello from the origin</p>\n")

// benchOrigin is the test origin serving one small page, unrecorded.
func benchOrigin(tb testing.TB) *edgetest.Origin {
	tb.Helper()
	return edgetest.NewOrigin(tb, edgetest.Unrecorded(), edgetest.Serving(bench.Page(originBody)))
}

// plainProxy is what an operator would write without a waiting room,
// flushing every write as edge does.
func plainProxy(tb testing.TB, origin string) *httputil.ReverseProxy {
	tb.Helper()
	target, err := url.Parse(origin)
	if err != nil {
		tb.Fatal(err)
	}
	p := bench.PlainProxy(target)
	p.FlushInterval = -1
	return p
}

// benchServer is one node with one room in front of origin, on the real
// clock.
func benchServer(tb testing.TB, origin string, total int) (*agent.Agent, *cookie.Keyring) {
	tb.Helper()
	dir := tb.TempDir()
	key := edgetest.KeyFile(tb, dir)
	rc := edgetest.Room("bench", total, total)
	rc.JSONResponseEnabled = true
	cfg := edgetest.NodeConfig("bench", key, origin, rc)
	cfg.LogLevel = "error"
	srv := edgetest.StartServer(tb, cfg, nil)
	ring, err := agent.LoadCookieKeys(filepath.Join(dir, "cookie.key"))
	if err != nil {
		tb.Fatal(err)
	}
	return srv, ring
}

// serve sends r through h and drains the answer, as a client would.
func serve(b *testing.B, h http.Handler, r *http.Request, want int) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != want {
		b.Fatalf("status %d, want %d: %s", rec.Code, want, rec.Body.String())
	}
	_, _ = io.Copy(io.Discard, rec.Body)
}

// BenchmarkAdmittedRequest is an admitted visitor's request: open the
// cookie, renew it, proxy to the origin, seal the renewed cookie.
func BenchmarkAdmittedRequest(b *testing.B) {
	o := benchOrigin(b)
	srv, _ := benchServer(b, o.URL, 1_000_000)
	v := edgetest.NewVisitor()
	if resp := v.Get(srv, "http://shop.test/"); resp.StatusCode != http.StatusOK {
		b.Fatalf("first request: %d", resp.StatusCode)
	}
	c := v.Cookies[config.CookieBaseName]
	req := httptest.NewRequest(http.MethodGet, "http://shop.test/page", nil)
	req.AddCookie(c)
	b.ReportAllocs()
	for b.Loop() {
		serve(b, srv, req, http.StatusOK)
	}
}

// BenchmarkPlainProxy is the same request through a plain ReverseProxy with
// the same transport to the same origin: the floor BenchmarkAdmittedRequest
// is compared with.
func BenchmarkPlainProxy(b *testing.B) {
	o := benchOrigin(b)
	p := plainProxy(b, o.URL)
	req := httptest.NewRequest(http.MethodGet, "http://shop.test/page", nil)
	req.AddCookie(&http.Cookie{Name: config.CookieBaseName, Value: "AQHTqIoobIaFC6I05Rs0bIGMZdLpKzqkVsbp7mqsvFVUwesuR2NztHskL7tAdI_9a20e7wry2-VXqrI"})
	b.ReportAllocs()
	for b.Loop() {
		serve(b, p, req, http.StatusOK)
	}
}

// BenchmarkQueuedRequest is a request answered with the queue page, in a
// room of one that is full.
func BenchmarkQueuedRequest(b *testing.B) {
	o := benchOrigin(b)
	srv, ring := benchServer(b, o.URL, 1)
	if resp := edgetest.NewVisitor().Get(srv, "http://shop.test/"); resp.StatusCode != http.StatusOK {
		b.Fatalf("first visitor: %d", resp.StatusCode)
	}
	now := time.Now().Unix()
	queued := func(lastCheckIn int64) *http.Request {
		tok := cookie.Token{Bucket: now / 60, LastCheckIn: lastCheckIn, RefreshInterval: 20, CountedMinute: now / 60, ExpiresAt: now + 300}
		r := httptest.NewRequest(http.MethodGet, "http://shop.test/", nil)
		r.AddCookie(&http.Cookie{Name: config.CookieBaseName, Value: ring.Seal("bench", tok)})
		return r
	}
	cases := []struct {
		name string
		req  func() *http.Request
	}{
		// A check-in due: an attempt, queued again, a new token sealed.
		{"checkin", func() *http.Request { return queued(now - 60) }},
		// A reload before the interval: the page again, no attempt.
		{"early_checkin", func() *http.Request { return queued(now) }},
		// A first request: queued, its arrival counted at its proof.
		{"new_visitor", func() *http.Request { return httptest.NewRequest(http.MethodGet, "http://shop.test/", nil) }},
		// The same with the JSON answer.
		{"new_visitor_json", func() *http.Request {
			r := httptest.NewRequest(http.MethodGet, "http://shop.test/", nil)
			r.Header.Set("Accept", "application/json")
			return r
		}},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			req := bc.req()
			b.ReportAllocs()
			for b.Loop() {
				serve(b, srv, req, http.StatusOK)
			}
		})
	}
}
