package edge_test

// TestMeasureProxyThroughput measures the throughput of admitted requests
// through a real waitroom node (edge.Run on loopback, as `waitroom serve`
// runs it, with limits so high that everyone is admitted) against a plain
// httputil.ReverseProxy with the same transport, in front of the same
// origin, under the same closed-loop load: N keep-alive clients, each with
// its own connection and cookie jar, for a fixed time, alternating
// A/B/A/B. It prints requests per second and the ratio. It runs only with
// WAITROOM_MEASURE=1:
//
//	WAITROOM_MEASURE=1 go test -run TestMeasureProxyThroughput -v ./edge/
//
// WAITROOM_MEASURE_CLIENTS (default 32), WAITROOM_MEASURE_SECONDS (per
// round and side, default 3) and WAITROOM_MEASURE_ROUNDS (default 4) tune
// it.

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/waitroom/waitroom/edge"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// loadResult is one run of the load generator.
type loadResult struct {
	requests int64
	errors   int64
	elapsed  time.Duration
	p50, p99 time.Duration
}

func (r loadResult) rps() float64 { return float64(r.requests) / r.elapsed.Seconds() }

// loadClients are the generator's clients: each its own transport (one
// keep-alive connection) and cookie jar, kept across rounds like a browser.
type loadClients []*http.Client

func newLoadClients(t *testing.T, n int) loadClients {
	cs := make(loadClients, n)
	for i := range cs {
		jar, err := cookiejar.New(nil)
		if err != nil {
			t.Fatal(err)
		}
		cs[i] = &http.Client{
			Jar:       jar,
			Transport: &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true, IdleConnTimeout: time.Minute},
			Timeout:   10 * time.Second,
		}
	}
	return cs
}

func (cs loadClients) close() {
	for _, c := range cs {
		c.Transport.(*http.Transport).CloseIdleConnections()
	}
}

// run drives url with every client in a closed loop for d.
func (cs loadClients) run(url string, d time.Duration) loadResult {
	var n, errs atomic.Int64
	lat := make([][]time.Duration, len(cs))
	stop := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := make([]time.Duration, 0, 4096)
			for time.Now().Before(stop) {
				t0 := time.Now()
				resp, err := c.Get(url)
				if err != nil {
					errs.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					errs.Add(1)
					continue
				}
				n.Add(1)
				l = append(l, time.Since(t0))
			}
			lat[i] = l
		}()
	}
	wg.Wait()
	r := loadResult{requests: n.Load(), errors: errs.Load(), elapsed: time.Since(start)}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	if len(all) > 0 {
		r.p50, r.p99 = all[len(all)/2], all[len(all)*99/100]
	}
	return r
}

func TestMeasureProxyThroughput(t *testing.T) {
	if os.Getenv("WAITROOM_MEASURE") == "" {
		t.Skip("set WAITROOM_MEASURE=1 to measure proxy throughput")
	}
	clients := envInt("WAITROOM_MEASURE_CLIENTS", 32)
	perRound := time.Duration(envInt("WAITROOM_MEASURE_SECONDS", 3)) * time.Second
	rounds := envInt("WAITROOM_MEASURE_ROUNDS", 4)

	origin := benchOrigin(t)

	// A: a waitroom node, run as `waitroom serve` runs it.
	dir := t.TempDir()
	rc := room("measure", 2147483647, 2147483647)
	rc.SessionDuration = 30
	cfg := nodeConfig("measure", keyFile(t, dir), origin.URL, rc)
	cfg.LogLevel = "error"
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan *edge.Server, 1)
	done := make(chan error, 1)
	go func() {
		done <- edge.Run(ctx, cfg, edge.RunOptions{Log: zerolog.Nop(), Ready: func(s *edge.Server) { ready <- s }})
	}()
	var node *edge.Server
	select {
	case node = <-ready:
	case err := <-done:
		t.Fatalf("edge.Run: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("edge.Run did not start")
	}
	t.Cleanup(func() {
		cancel()
		<-done
	})
	waitroomURL := "http://" + node.PublicAddr() + "/page"

	// B: a plain reverse proxy with the same transport and server settings.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	plain := &http.Server{Handler: plainProxy(t, origin.URL), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second, MaxHeaderBytes: 64 << 10}
	go func() { _ = plain.Serve(ln) }()
	t.Cleanup(func() { _ = plain.Close() })
	plainURL := "http://" + ln.Addr().String() + "/page"

	ca, cb := newLoadClients(t, clients), newLoadClients(t, clients)
	defer ca.close()
	defer cb.close()
	// Warm up both: connections, the waitroom cookie of every client (its
	// admission), the origin transport's idle pool.
	if r := ca.run(waitroomURL, time.Second); r.errors > 0 || r.requests == 0 {
		t.Fatalf("waitroom warm-up: %d ok, %d errors", r.requests, r.errors)
	}
	if r := cb.run(plainURL, time.Second); r.errors > 0 || r.requests == 0 {
		t.Fatalf("plain warm-up: %d ok, %d errors", r.requests, r.errors)
	}

	var sumA, sumB float64
	var ratios []float64
	for i := 1; i <= rounds; i++ {
		a := ca.run(waitroomURL, perRound)
		b := cb.run(plainURL, perRound)
		if a.errors > 0 || b.errors > 0 {
			t.Errorf("round %d: %d waitroom errors, %d plain errors", i, a.errors, b.errors)
		}
		sumA += a.rps()
		sumB += b.rps()
		ratios = append(ratios, a.rps()/b.rps())
		line := fmt.Sprintf("round %d: waitroom %8.0f req/s (p50 %v, p99 %v)   plain proxy %8.0f req/s (p50 %v, p99 %v)   ratio %.3f",
			i, a.rps(), a.p50.Round(time.Microsecond), a.p99.Round(time.Microsecond), b.rps(), b.p50.Round(time.Microsecond), b.p99.Round(time.Microsecond), a.rps()/b.rps())
		t.Log(line)
	}
	sort.Float64s(ratios)
	summary := fmt.Sprintf("%d clients, %d rounds of %v each side, GOMAXPROCS %d: waitroom %.0f req/s, plain %.0f req/s, ratio of means %.3f, median round ratio %.3f (goal ≥ 0.95)",
		clients, rounds, perRound, runtime.GOMAXPROCS(0), sumA/float64(rounds), sumB/float64(rounds), sumA/sumB, ratios[len(ratios)/2])
	t.Log(summary)
	fmt.Println(summary)
	// The node counted every client once and then only its sessions.
	if rs := node.StateDoc().Rooms[0]; rs.EstimatedQueuedUsers != 0 || rs.EstimatedTotalActiveUsers != int64(clients) {
		t.Errorf("after the run: %d active, %d queued; want every client admitted once (%d)", rs.EstimatedTotalActiveUsers, rs.EstimatedQueuedUsers, clients)
	}
}
