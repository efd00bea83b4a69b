package bench_test

// Benchmarks of the request path as a whole, through exported APIs only:
// one decision (open + decide + seal), and the node's handler for admitted
// and queued requests against the plain proxy and the bare server. The
// packages' own benchmarks (cookie, policy, crdt, gossip) cover the parts;
// docs/PERFORMANCE.md lists them all.

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/cmd/waitroom/internal/bench"
	"github.com/waitroom/waitroom/cookie"
	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/edge"
	"github.com/waitroom/waitroom/policy"
)

// BenchmarkDecision is one visitor's decision as the edge makes it: open the
// token, decide from the cached allocation, seal the renewed token (goal:
// ≤ 1 µs, ≤ 3 allocations).
func BenchmarkDecision(b *testing.B) {
	k, err := cookie.GenerateKey(nil, 1)
	if err != nil {
		b.Fatal(err)
	}
	ring, err := cookie.NewKeyring(k)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	m := now.Unix() / 60
	self := crdt.NewReplicaID("bench", 1)
	st := crdt.New()
	for i := range int64(5) {
		st.Add(crdt.Key{Room: "shop", Kind: crdt.WaitingPlus, Bucket: m - i, Minute: m}, self, 100)
		st.Add(crdt.Key{Room: "shop", Kind: crdt.Arrivals, Minute: m - i}, self, 500)
		st.Add(crdt.Key{Room: "shop", Kind: crdt.Admitted, Minute: m - i}, self, 50)
	}
	for _, c := range []struct {
		name  string
		total int
	}{{"admit", 1 << 40}, {"queue", 10}} {
		b.Run(c.name, func(b *testing.B) {
			room := policy.Room{TotalActiveUsers: c.total, NewUsersPerMinute: c.total, SessionDuration: 5, Nodes: 1}
			snap := st.Snapshot("shop", now.Unix(), room.Windows())
			a := policy.Allocate(room, &snap, self, now, policy.Continuous)
			value := ring.Seal("shop", cookie.Token{Bucket: m - 1, LastCheckIn: now.Unix() - 30, RefreshInterval: 20, CountedMinute: m - 1, ExpiresAt: now.Unix() + 300, ID: 42})
			buf := make([]byte, 0, 256)
			b.ReportAllocs()
			for b.Loop() {
				tok, err := ring.Open(value, "shop", now)
				if err != nil {
					b.Fatal(err)
				}
				a.Decide(policy.Visitor{Bucket: tok.Bucket, Queued: true}, nil)
				tok.LastCheckIn = now.Unix()
				buf = ring.AppendSeal(buf[:0], "shop", tok)
			}
		})
	}
}

// BenchmarkHandler serves one request with the node's handler (and, for
// comparison, the plain proxy's and the bare server's) into a recorder: the
// server's own cost, without the HTTP server and the client. Admitted and
// plain-proxy requests go to the origin over loopback.
func BenchmarkHandler(b *testing.B) {
	env, err := bench.StartEnv(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer env.Close()
	now := time.Now()
	m := now.Unix() / 60
	admitted := "__waitroom=" + env.Keys.Seal("open", cookie.Token{Bucket: m, AcceptedAt: now.Unix(), LastCheckIn: now.Unix(), CountedMinute: m, ExpiresAt: now.Unix() + 3600, ID: 7})
	early := "__waitroom_full=" + env.Keys.Seal("full", cookie.Token{Bucket: m, LastCheckIn: now.Unix(), RefreshInterval: 20, CountedMinute: m, ExpiresAt: now.Unix() + 300, ID: 8})
	due := "__waitroom_full=" + env.Keys.Seal("full", cookie.Token{Bucket: m, LastCheckIn: now.Unix() - 25, RefreshInterval: 20, CountedMinute: m, ExpiresAt: now.Unix() + 300, ID: 9})

	// Two variants of the plain proxy, to size proposed changes to edge's:
	// flushing after every write as edge does (FlushInterval -1), and a
	// pool of copy buffers (ReverseProxy otherwise allocates 32 KiB per
	// response).
	target, _ := url.Parse(env.OriginURL)
	variant := func(flush time.Duration, pool httputil.BufferPool) http.Handler {
		p := bench.PlainProxy(target)
		p.FlushInterval, p.BufferPool = flush, pool
		return p
	}
	cases := []struct {
		name, path, cookie string
		h                  http.Handler
		want               int
		refresh            bool
		// keep: the request's cookie follows the answers' Set-Cookie, as
		// a browser's does.
		keep bool
		// forward: asked as nginx asks the forward-auth endpoint.
		forward bool
	}{
		{"plain proxy", "/open/", "", env.Proxy, 200, false, false, false},
		{"plain proxy, flush every write", "/open/", "", variant(-1, nil), 200, false, false, false},
		{"plain proxy, buffer pool", "/open/", "", variant(0, edge.NewCopyBufferPool()), 200, false, false, false},
		{"admitted", "/open/", admitted, env.Node, 200, false, false, false},
		{"admitted, cookie kept", "/open/", admitted, env.Node, 200, false, true, false},
		{"forward-auth admitted, cookie kept", "/nginx/auth", admitted, env.Node.ForwardAuthHandler(), 200, false, true, true},
		{"bare queue page", "/full/", "", env.Bare, 200, true, false, false},
		{"queued new visitor", "/full/", "", env.Node, 200, true, false, false},
		{"queued check-in", "/full/", due, env.Node, 200, true, false, false},
		{"queued early check-in", "/full/", early, env.Node, 200, true, false, false},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "http://bench"+c.path, nil)
			req.RemoteAddr = "127.0.0.1:5555"
			if c.cookie != "" {
				req.Header.Set("Cookie", c.cookie)
			}
			if c.forward {
				req.Header.Set("X-Forwarded-Method", http.MethodGet)
				req.Header.Set("X-Forwarded-Host", "bench")
				req.Header.Set("X-Forwarded-Uri", "/open/")
				req.Header.Set("X-Forwarded-Proto", "http")
			}
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				c.h.ServeHTTP(w, req)
				if w.Code != c.want || (w.Header().Get("Refresh") != "") != c.refresh {
					b.Fatalf("status %d, Refresh %q", w.Code, w.Header().Get("Refresh"))
				}
				if sc := w.Header().Get("Set-Cookie"); c.keep && sc != "" {
					kv, _, _ := strings.Cut(sc, ";")
					req.Header.Set("Cookie", kv)
				}
			}
		})
	}
}
