package bench_test

// TestMeasureProxyThroughput measures the throughput of admitted requests
// through a real waitroom node (agent.Run on loopback, as `waitroom serve`
// runs it, with limits so high that everyone is admitted) against a plain
// httputil.ReverseProxy with the same transport, in front of the same
// origin, under the same closed-loop load: N keep-alive clients, each with
// its own connection and cookies, for a fixed time, alternating
// A/B/A/B. It prints requests per second and the ratio. It runs only with
// WAITROOM_MEASURE=1:
//
//	WAITROOM_MEASURE=1 go test -run TestMeasureProxyThroughput -v ./cmd/waitroom/internal/bench/
//
// WAITROOM_MEASURE_CLIENTS (default 32), WAITROOM_MEASURE_SECONDS (per
// round and side, default 3) and WAITROOM_MEASURE_ROUNDS (default 4) tune
// it.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/waitroom/waitroom/cmd/waitroom/internal/bench"
	"github.com/waitroom/waitroom/edge/agent"
	"github.com/waitroom/waitroom/edge/edgetest"
)

// needEnv skips a test that runs only on request: unless the environment
// variable name is set, t is skipped with why (which says how to ask).
func needEnv(t *testing.T, name, why string) {
	t.Helper()
	if os.Getenv(name) == "" {
		t.Skip(why)
	}
}

// envInt is the positive integer in the environment variable name, or def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// envString is the environment variable name, or def when it is unset or empty.
func envString(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// envDuration is the duration in the environment variable name, or def when
// it is unset or not a duration.
func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil {
		return d
	}
	return def
}

// loadResult is one run of the load generator.
type loadResult struct {
	requests int64
	errors   int64
	elapsed  time.Duration
	cpu      time.Duration // the proxy process's CPU during the run
	p50, p99 time.Duration
}

// cpuPerRequest is the proxy process's CPU time per request.
func (r loadResult) cpuPerRequest() time.Duration {
	if r.requests == 0 {
		return 0
	}
	return r.cpu / time.Duration(r.requests)
}

func (r loadResult) rps() float64 { return float64(r.requests) / r.elapsed.Seconds() }

// loadClient is one client of the generator: its own transport (one
// keep-alive connection) and the cookies the server set, kept across
// requests and rounds like a browser's. It keeps them by name, without
// net/http/cookiejar, whose parsing and locking would charge the client's
// work to the side that sets cookies: client and servers share the CPUs.
type loadClient struct {
	hc      *http.Client
	cookies map[string]string // name → "name=value"
}

type loadClients []*loadClient

func newLoadClients(t *testing.T, n int) loadClients {
	cs := make(loadClients, n)
	for i := range cs {
		cs[i] = &loadClient{
			hc: &http.Client{
				Transport: &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true, IdleConnTimeout: time.Minute},
				Timeout:   10 * time.Second,
			},
			cookies: map[string]string{},
		}
	}
	return cs
}

// get sends one request with the client's cookies and keeps those the
// answer sets (Max-Age=0 deletes).
func (c *loadClient) get(url string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	for _, kv := range c.cookies {
		req.Header.Add("Cookie", kv)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	for _, line := range resp.Header.Values("Set-Cookie") {
		kv, attrs, _ := strings.Cut(line, ";")
		name, _, _ := strings.Cut(kv, "=")
		if strings.Contains(attrs, "Max-Age=0") {
			delete(c.cookies, name)
		} else {
			c.cookies[name] = kv
		}
	}
	return resp, nil
}

func (cs loadClients) close() {
	for _, c := range cs {
		c.hc.Transport.(*http.Transport).CloseIdleConnections()
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
				resp, err := c.get(url)
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

// loadGenerator is the load generator and the origin, run in a child
// process (this test binary again, see TestMeasureLoadGeneratorChild), so
// that the CPU this process uses during a round is the proxy's alone.
type loadGenerator struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	origin string
}

func startLoadGenerator(t *testing.T, clients int) *loadGenerator {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestMeasureLoadGeneratorChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "WAITROOM_LOADGEN_CHILD=1", "WAITROOM_MEASURE_CLIENTS="+strconv.Itoa(clients))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	g := &loadGenerator{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	t.Cleanup(func() {
		_, _ = io.WriteString(g.in, "quit\n")
		_ = g.in.Close()
		_ = g.cmd.Wait()
	})
	g.origin = g.expect(t, "origin ")
	return g
}

// expect returns the rest of the next line starting with prefix.
func (g *loadGenerator) expect(t *testing.T, prefix string) string {
	t.Helper()
	for g.out.Scan() {
		if rest, ok := strings.CutPrefix(g.out.Text(), prefix); ok {
			return rest
		}
	}
	t.Fatalf("load generator: no %q line: %v", prefix, g.out.Err())
	return ""
}

// run has the child's client set side drive url for d, and measures this
// process's CPU meanwhile.
func (g *loadGenerator) run(t *testing.T, side, url string, d time.Duration) loadResult {
	t.Helper()
	cpu0 := bench.ProcessCPU()
	if _, err := fmt.Fprintf(g.in, "run %s %s %d\n", side, url, d.Milliseconds()); err != nil {
		t.Fatal(err)
	}
	var r loadResult
	var elapsed, p50, p99 int64
	if _, err := fmt.Sscan(g.expect(t, "result "), &r.requests, &r.errors, &elapsed, &p50, &p99); err != nil {
		t.Fatal(err)
	}
	r.cpu = bench.ProcessCPU() - cpu0
	r.elapsed, r.p50, r.p99 = time.Duration(elapsed), time.Duration(p50), time.Duration(p99)
	return r
}

// TestMeasureLoadGeneratorChild is the child side of loadGenerator: it
// serves the origin and runs the load the parent asks for.
func TestMeasureLoadGeneratorChild(t *testing.T) {
	needEnv(t, "WAITROOM_LOADGEN_CHILD", "the load generator of TestMeasureProxyThroughput")
	clients := envInt("WAITROOM_MEASURE_CLIENTS", 32)
	origin := benchOrigin(t)
	fmt.Printf("origin %s\n", origin.URL)
	sides := map[string]loadClients{}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		if len(f) != 4 || f[0] != "run" {
			break
		}
		cs := sides[f[1]]
		if cs == nil {
			cs = newLoadClients(t, clients)
			sides[f[1]] = cs
			defer cs.close()
		}
		ms, _ := strconv.Atoi(f[3])
		r := cs.run(f[2], time.Duration(ms)*time.Millisecond)
		fmt.Printf("result %d %d %d %d %d\n", r.requests, r.errors, int64(r.elapsed), int64(r.p50), int64(r.p99))
	}
}

func TestMeasureProxyThroughput(t *testing.T) {
	needEnv(t, "WAITROOM_MEASURE", "set WAITROOM_MEASURE=1 to measure proxy throughput")
	clients := envInt("WAITROOM_MEASURE_CLIENTS", 32)
	perRound := time.Duration(envInt("WAITROOM_MEASURE_SECONDS", 2)) * time.Second
	rounds := envInt("WAITROOM_MEASURE_ROUNDS", 10)

	gen := startLoadGenerator(t, clients)

	// A: a waitroom node, run as `waitroom serve` runs it.
	dir := t.TempDir()
	rc := edgetest.Room("measure", 2147483647, 2147483647)
	rc.SessionDuration = 30
	cfg := edgetest.NodeConfig("measure", edgetest.KeyFile(t, dir), gen.origin, rc)
	cfg.LogLevel = "error"
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan *agent.Agent, 1)
	done := make(chan error, 1)
	go func() {
		done <- agent.Run(ctx, cfg, agent.Options{Log: zerolog.Nop(), Ready: func(s *agent.Agent) { ready <- s }})
	}()
	var node *agent.Agent
	select {
	case node = <-ready:
	case err := <-done:
		t.Fatalf("agent.Run: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("agent.Run did not start")
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
	plain := &http.Server{Handler: plainProxy(t, gen.origin), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second, MaxHeaderBytes: 64 << 10}
	go func() { _ = plain.Serve(ln) }()
	t.Cleanup(func() { _ = plain.Close() })
	plainURL := "http://" + ln.Addr().String() + "/page"

	// Warm up both: connections, the waitroom cookie of every client (its
	// admission), the origin transport's idle pool.
	if r := gen.run(t, "A", waitroomURL, time.Second); r.errors > 0 || r.requests == 0 {
		t.Fatalf("waitroom warm-up: %d ok, %d errors", r.requests, r.errors)
	}
	if r := gen.run(t, "B", plainURL, time.Second); r.errors > 0 || r.requests == 0 {
		t.Fatalf("plain warm-up: %d ok, %d errors", r.requests, r.errors)
	}

	var sumA, sumB float64
	var cpuA, cpuB time.Duration
	var nA, nB int64
	var ratios []float64
	for i := 1; i <= rounds; i++ {
		a := gen.run(t, "A", waitroomURL, perRound)
		b := gen.run(t, "B", plainURL, perRound)
		if a.errors > 0 || b.errors > 0 {
			t.Errorf("round %d: %d waitroom errors, %d plain errors", i, a.errors, b.errors)
		}
		sumA += a.rps()
		sumB += b.rps()
		cpuA, cpuB, nA, nB = cpuA+a.cpu, cpuB+b.cpu, nA+a.requests, nB+b.requests
		ratios = append(ratios, a.rps()/b.rps())
		t.Logf("round %d: waitroom %6.0f req/s (p50 %v, p99 %v, proxy CPU %v/req)   plain proxy %6.0f req/s (p50 %v, p99 %v, proxy CPU %v/req)   ratio %.3f",
			i, a.rps(), a.p50.Round(time.Microsecond), a.p99.Round(time.Microsecond), a.cpuPerRequest().Round(100*time.Nanosecond),
			b.rps(), b.p50.Round(time.Microsecond), b.p99.Round(time.Microsecond), b.cpuPerRequest().Round(100*time.Nanosecond), a.rps()/b.rps())
	}
	sort.Float64s(ratios)
	summary := fmt.Sprintf("%d clients, %d rounds of %v each side, %d CPUs: waitroom %.0f req/s, plain %.0f req/s, throughput ratio of means %.3f, median round ratio %.3f (goal ≥ 0.95)",
		clients, rounds, perRound, runtime.NumCPU(), sumA/float64(rounds), sumB/float64(rounds), sumA/sumB, ratios[len(ratios)/2])
	if nA > 0 && nB > 0 && cpuA > 0 {
		// Throughput on a shared machine moves with the neighbours' load
		// and the load generator's share of the CPUs; the CPU a request
		// costs the proxy process moves less. plain/waitroom is the
		// throughput ratio a proxy host bound by its CPU would see.
		pa, pb := cpuA/time.Duration(nA), cpuB/time.Duration(nB)
		summary += fmt.Sprintf("; proxy CPU per request: waitroom %v, plain %v, plain/waitroom %.3f", pa.Round(100*time.Nanosecond), pb.Round(100*time.Nanosecond), float64(pb)/float64(pa))
	}
	t.Log(summary)
	fmt.Println(summary)
	// The node counted every client once and then only its sessions.
	node.RefreshAllocations() // as the allocation loop would after the run
	if rs := node.StateDoc().Rooms[0]; rs.EstimatedQueuedUsers != 0 || rs.EstimatedTotalActiveUsers != int64(clients) {
		t.Errorf("after the run: %d active, %d queued; want every client admitted once (%d)", rs.EstimatedTotalActiveUsers, rs.EstimatedQueuedUsers, clients)
	}
}
