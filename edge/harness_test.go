package edge_test

// The test harness every edge test shares: the fake clock (testkit.Clock),
// one node built with edge.New on loopback (startServer, serveNode,
// newFixture), the one in-process cluster (newCluster: N nodes, fake or wall
// clock, optionally gossiping through a gossip.FaultNet) in front of the
// one test origin (edgetest.Origin), and small helpers to send requests
// and read cookies, Refresh (with edge/crowd's parser), JSON and the admin
// endpoint. Waiting is done with testkit.Eventually; the allocation loop is
// run with Server.RefreshAllocations rather than slept for.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/rs/zerolog"

	"github.com/waitroom/waitroom/cookie"
	"github.com/waitroom/waitroom/edge"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/crowd"
	"github.com/waitroom/waitroom/edge/edgetest"
	"github.com/waitroom/waitroom/gossip"
	"github.com/waitroom/waitroom/gossip/testkit"
	"github.com/waitroom/waitroom/policy"
)

// newFakeClock is the clock of a test's nodes, standing at sec seconds into
// a fixed minute until the test moves it. Every node of a test shares one,
// so time moves for all of them at once.
func newFakeClock(sec int) *testkit.Clock {
	return testkit.NewClock(time.Date(2030, 6, 1, 12, 0, sec, 0, time.UTC))
}

// keyFile writes a fresh cookie key file into dir and returns its path.
func keyFile(tb testing.TB, dir string) string {
	tb.Helper()
	data, err := cookie.GenerateKeyFile(nil)
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(dir, "cookie.key")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// room returns a room named name with the given limits and defaults for
// the rest.
func room(name string, total, perMinute int) config.Room {
	return config.Room{
		Name:              name,
		TotalActiveUsers:  total,
		NewUsersPerMinute: perMinute,
	}
}

// nodeConfig is a loopback config for one node with the given rooms.
func nodeConfig(name, keyPath, origin string, rooms ...config.Room) *config.Config {
	return &config.Config{
		Node:          name,
		Listen:        "127.0.0.1:0",
		Admin:         "127.0.0.1:0",
		Gossip:        "127.0.0.1:0",
		GossipProfile: "local",
		CookieKeyFile: keyPath,
		Origin:        origin,
		Rooms:         rooms,
	}
}

// testGossipKeys is the gossip key of the test rings, given to every node
// the harnesses start (a key file in the config wins over it): a ring never
// runs unauthenticated unless a test asks for insecure gossip.
var testGossipKeys = [][]byte{[]byte("waitroom-edge-test-gossip-key-32")}

// startServer validates cfg and builds a node on clock; the node is closed
// when the test ends.
func startServer(tb testing.TB, cfg *config.Config, clock *testkit.Clock) *edge.Server {
	tb.Helper()
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		tb.Fatalf("config: %v", err)
	}
	opts := edge.RunOptions{Log: zerolog.Nop(), GossipKeys: testGossipKeys}
	if clock != nil {
		opts.Clock = clock.Now
	}
	srv, err := edge.New(cfg, opts)
	if err != nil {
		tb.Fatalf("edge.New: %v", err)
	}
	tb.Cleanup(func() { _ = srv.Close() })
	return srv
}

// serveNode builds a node as startServer does and serves it on its real
// listeners (loopback, ports chosen by the system) until the test ends, for
// tests of what only a listener does: Host headers, connection limits and
// timeouts.
func serveNode(tb testing.TB, cfg *config.Config, clock *testkit.Clock) *edge.Server {
	tb.Helper()
	srv := startServer(tb, cfg, clock)
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() { done <- srv.Serve(ctx, func(*edge.Server) { close(ready) }) }()
	select {
	case <-ready:
	case err := <-done:
		cancel()
		tb.Fatalf("serve: %v", err)
	}
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("serve: %v", err)
		}
	})
	return srv
}

// fixture is one node in front of one test origin, on a fake clock.
type fixture struct {
	srv    *edge.Server
	clock  *testkit.Clock
	origin *edgetest.Origin
	admin  http.Handler
}

// newFixture starts one node with the given rooms (their origin is the test
// origin unless set) at 5 s into a minute.
func newFixture(tb testing.TB, rooms ...config.Room) *fixture {
	tb.Helper()
	return newFixtureWith(tb, nil, rooms...)
}

// newFixtureWith is newFixture with the node's config adjusted by edit
// before it starts (forward_auth, for one).
func newFixtureWith(tb testing.TB, edit func(*config.Config), rooms ...config.Room) *fixture {
	tb.Helper()
	o := edgetest.NewOrigin(tb)
	clock := newFakeClock(5)
	cfg := nodeConfig("node-a", keyFile(tb, tb.TempDir()), o.URL, rooms...)
	if edit != nil {
		edit(cfg)
	}
	srv := startServer(tb, cfg, clock)
	return &fixture{srv: srv, clock: clock, origin: o, admin: adminAfterLoop(srv)}
}

// adminAfterLoop is the node's admin handler with every request preceded by
// a round of the node's allocation loop (Server.RefreshAllocations). GET
// /state and the room status only read the last allocation, which the loop
// recomputes within 250 ms; a test reads what an operator would see a
// quarter of a second after the requests it made, without sleeping for the
// loop.
func adminAfterLoop(srv *edge.Server) http.Handler {
	admin := srv.AdminHandler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv.RefreshAllocations()
		admin.ServeHTTP(w, r)
	})
}

// visitor is one browser: its cookies, kept by name.
type visitor struct {
	cookies map[string]*http.Cookie
}

func newVisitor() *visitor { return &visitor{cookies: map[string]*http.Cookie{}} }

// req builds a request to url (host taken from it) carrying the visitor's
// cookies.
func (v *visitor) req(method, url string, hdr ...string) *http.Request {
	r := httptest.NewRequest(method, url, nil)
	for _, c := range v.cookies {
		r.AddCookie(c)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	return r
}

// do sends a request through h and keeps the cookies the answer sets, as a
// browser would (Max-Age 0 deletes).
func (v *visitor) do(h http.Handler, r *http.Request) *http.Response {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	resp := rec.Result()
	resp.Request = r // as http.Client does: what a Refresh url resolves against
	for _, c := range resp.Cookies() {
		if c.MaxAge < 0 {
			delete(v.cookies, c.Name)
			continue
		}
		v.cookies[c.Name] = c
	}
	return resp
}

// get is do with a GET to url.
func (v *visitor) get(h http.Handler, url string, hdr ...string) *http.Response {
	return v.do(h, v.req(http.MethodGet, url, hdr...))
}

// prove brings a new visitor that was just queued back for its proof, as
// its browser (or app) would: its first queue page refreshes after
// policy.ProofRefresh (a page to the cookie check's address), and only
// that request, with the cookie, counts it as waiting. The clock moves on
// by the proof interval first; answers other than a new visitor's first
// queue page are returned as they are.
func (v *visitor) prove(tb testing.TB, h http.Handler, clock *testkit.Clock, first *http.Response, hdr ...string) *http.Response {
	tb.Helper()
	if n, err := refreshSeconds(first); err != nil || n != policy.ProofRefresh || len(first.Cookies()) == 0 {
		return first
	}
	clock.Advance(policy.ProofRefresh * time.Second)
	return v.get(h, refreshTarget(tb, first), hdr...)
}

// queue is a new visitor's first request and its proof: what makes it
// count as waiting.
func (v *visitor) queue(tb testing.TB, h http.Handler, clock *testkit.Clock, url string, hdr ...string) *http.Response {
	tb.Helper()
	return v.prove(tb, h, clock, v.get(h, url, hdr...), hdr...)
}

func body(tb testing.TB, resp *http.Response) string {
	tb.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// setCookie returns the raw Set-Cookie line for cookie name, or "".
func setCookie(resp *http.Response, name string) string {
	for _, line := range resp.Header.Values("Set-Cookie") {
		if strings.HasPrefix(line, name+"=") {
			return line
		}
	}
	return ""
}

// cookieAttr returns the value of attribute attr ("Max-Age") in a raw
// Set-Cookie line, and whether it is there at all.
func cookieAttr(line, attr string) (string, bool) {
	for _, part := range strings.Split(line, ";")[1:] {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		if strings.EqualFold(k, attr) {
			return v, true
		}
	}
	return "", false
}

func maxAge(tb testing.TB, line string) int {
	tb.Helper()
	v, ok := cookieAttr(line, "Max-Age")
	if !ok {
		tb.Fatalf("Set-Cookie %q has no Max-Age", line)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		tb.Fatalf("Set-Cookie %q: Max-Age %q", line, v)
	}
	return n
}

// adminURL is the address admin requests built in tests are sent to: a
// loopback one, as the CLI's are (the endpoint refuses other hosts).
const adminURL = "http://127.0.0.1:9090"

// adminGet fetches path from the admin handler.
func adminGet(tb testing.TB, admin http.Handler, path string) *http.Response {
	tb.Helper()
	rec := httptest.NewRecorder()
	admin.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, adminURL+path, nil))
	return rec.Result()
}

// roomStatus decodes GET /rooms/{name}/status.
func roomStatus(tb testing.TB, admin http.Handler, name string) edge.RoomStatus {
	tb.Helper()
	resp := adminGet(tb, admin, "/rooms/"+name+"/status")
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("status of room %s: %d %s", name, resp.StatusCode, body(tb, resp))
	}
	var rs edge.RoomStatus
	if err := json.NewDecoder(resp.Body).Decode(&rs); err != nil {
		tb.Fatal(err)
	}
	return rs
}

// metric returns the value of the sample whose line starts with prefix (a
// metric name with its labels, as the text format writes them) in /metrics,
// or 0 when there is none.
func metric(tb testing.TB, admin http.Handler, prefix string) float64 {
	tb.Helper()
	text := body(tb, adminGet(tb, admin, "/metrics"))
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, prefix+" ") {
			v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimPrefix(line, prefix)), 64)
			if err != nil {
				tb.Fatalf("metric line %q: %v", line, err)
			}
			return v
		}
	}
	return 0
}

// refreshSeconds is the interval of resp's Refresh header, whatever address
// it names.
func refreshSeconds(resp *http.Response) (int, error) {
	h := resp.Header.Get("Refresh")
	r, ok := crowd.ParseRefresh(h)
	if !ok {
		return 0, fmt.Errorf("Refresh %q does not parse", h)
	}
	return int(r.After / time.Second), nil
}

// refreshTarget is the absolute URL a browser loads when resp's Refresh
// fires: the url it names, resolved against the request's, or the request's
// own.
func refreshTarget(tb testing.TB, resp *http.Response) string {
	tb.Helper()
	h := resp.Header.Get("Refresh")
	r, ok := crowd.ParseRefresh(h)
	if !ok {
		tb.Fatalf("Refresh %q does not parse", h)
	}
	u := r.URL
	if u == "" {
		return resp.Request.URL.String()
	}
	ref, err := url.Parse(u)
	if err != nil {
		tb.Fatalf("Refresh url %q: %v", u, err)
	}
	return resp.Request.URL.ResolveReference(ref).String()
}

// cluster is the one in-process cluster of the edge tests: real nodes
// (edge.New) in this process, on loopback, joined into one gossip ring in
// front of one origin, sharing one cookie key. Admission minutes run on one
// fake base clock the test moves (each node may be offset from it: clock
// skew), or on the wall clock. Gossip runs on real time, over memberlist's
// own transport or, when the options give one, through a gossip.FaultNet
// that the test makes lose, delay, duplicate and partition packets while
// the nodes run. Nodes can be killed, stopped and restarted at their old
// address.
type cluster struct {
	t      *testing.T
	opts   clusterOpts
	net    *gossip.FaultNet // nil: gossip without injected faults
	base   *testkit.Clock   // nil: the nodes run on the wall clock
	origin *edgetest.Origin
	key    string // cookie key file, shared by every node
	rooms  []config.Room
	nodes  []*clusterNode
	// edit adjusts a node's config before it starts (keys, label).
	edit func(n *clusterNode, cfg *config.Config)
	// tune runs after the options' tune on each node's memberlist config.
	tune func(n *clusterNode, mc *memberlist.Config)
}

// clusterOpts says what cluster to build; the zero value is a ring on a
// fake clock at 5 s into a minute, in front of the test origin, without
// faults and without listeners.
type clusterOpts struct {
	rooms []config.Room // every node's rooms, seeded from its config
	// faults, when set, carries the nodes' gossip with its faults.
	faults *gossip.FaultNet
	// tune adjusts memberlist's timings (faultTune for the fault suite).
	tune func(mc *memberlist.Config)
	// clock is the fake base clock; a new one at 5 s into a minute when
	// nil.
	clock *testkit.Clock
	// wallClock runs the nodes on the wall clock instead of a fake one.
	wallClock bool
	// serve serves each node on its real listeners (loopback, ports
	// chosen by the system), for tests that speak HTTP to them.
	serve bool
	// origin is the origin the nodes front; a new test origin when nil.
	origin *edgetest.Origin
	// name is node i's name; "pop-a", "pop-b", … when nil.
	name func(i int) string
}

// clusterNode is one node of a cluster. It keeps its name and gossip
// address across restarts.
type clusterNode struct {
	c     *cluster
	name  string
	addr  string        // gossip address, "" until first started
	skew  time.Duration // clock offset from the cluster's base clock
	keys  string        // cookie key file; the cluster's when ""
	srv   *edge.Server
	admin http.Handler
	mc    *memberlist.Config // memberlist's config, captured at start
	up    bool
	// starts counts the node's incarnations.
	starts int
	// bound, when set, runs once the node's gossip address is bound and
	// before the node starts: packets sent to it then wait in its socket.
	// Only with faults (the FaultNet binds the address).
	bound func(tr *gossip.FaultTransport)
	// stopServing ends Serve and waits for it, when the node serves.
	stopServing func()
}

// now is the node's clock: the base clock plus its skew.
func (n *clusterNode) now() time.Time {
	if n.c.base == nil {
		return time.Now().Add(n.skew)
	}
	return n.c.base.Now().Add(n.skew)
}

// newCluster starts n nodes and waits until they form one ring.
func newCluster(t *testing.T, n int, o clusterOpts) *cluster {
	t.Helper()
	c := clusterOf(t, o)
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("pop-%c", 'a'+i)
		if o.name != nil {
			name = o.name(i)
		}
		c.add(name, 0)
	}
	c.waitRing(c.nodes, 15*time.Second)
	return c
}

// clusterOf makes an empty cluster; add nodes with add.
func clusterOf(t *testing.T, o clusterOpts) *cluster {
	t.Helper()
	c := &cluster{
		t:      t,
		opts:   o,
		net:    o.faults,
		origin: o.origin,
		key:    keyFile(t, t.TempDir()),
		rooms:  o.rooms,
	}
	switch {
	case o.clock != nil:
		c.base = o.clock
	case !o.wallClock:
		c.base = newFakeClock(5)
	}
	if c.origin == nil {
		c.origin = edgetest.NewOrigin(t)
	}
	t.Cleanup(func() {
		// Kill rather than leave: a leave under injected faults can wait
		// for its full timeout, and the test is over anyway.
		for _, n := range c.nodes {
			if n.up {
				n.kill()
			}
		}
	})
	return c
}

// add starts a new node.
func (c *cluster) add(name string, skew time.Duration) *clusterNode {
	c.t.Helper()
	n := &clusterNode{c: c, name: name, skew: skew}
	c.nodes = append(c.nodes, n)
	n.start()
	return n
}

// start starts the node (again): same name and gossip address, a new
// incarnation, the seeds being every other node's address.
func (n *clusterNode) start() {
	t := n.c.t
	t.Helper()
	keys := n.keys
	if keys == "" {
		keys = n.c.key
	}
	cfg := nodeConfig(n.name, keys, n.c.origin.URL, n.c.rooms...)
	bind := "127.0.0.1:0"
	if n.addr != "" {
		bind = n.addr
		cfg.Gossip = n.addr
	}
	for _, o := range n.c.nodes {
		if o != n && o.addr != "" {
			cfg.Seeds = append(cfg.Seeds, o.addr)
		}
	}
	if n.c.edit != nil {
		n.c.edit(n, cfg)
	}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("%s config: %v", n.name, err)
	}
	var tr *gossip.FaultTransport
	if n.c.net != nil {
		// A restarted node may need its old port back while the kernel
		// still holds it for a moment; retry briefly.
		var err error
		testkit.Poll(time.Second, 20*time.Millisecond, func() bool {
			tr, err = n.c.net.Transport(bind)
			return err == nil
		})
		if err != nil {
			t.Fatalf("%s: %v", n.name, err)
		}
		if n.bound != nil {
			n.bound(tr)
		}
	}
	srv, err := edge.New(cfg, edge.RunOptions{
		Log:   clusterLog(t),
		Clock: n.now,
		// The incarnation comes from the real clock: the fake clocks stand
		// still, and a restart at the same fake instant would otherwise
		// take the same replica id (production passes time.Now).
		Incarnation: uint64(time.Now().UnixNano()),
		GossipKeys:  testGossipKeys,
		GossipTune: func(g *gossip.Config) {
			if tr != nil {
				g.Transport = tr
			}
			g.Tune = func(mc *memberlist.Config) {
				if n.c.opts.tune != nil {
					n.c.opts.tune(mc)
				}
				if n.c.tune != nil {
					n.c.tune(n, mc)
				}
				n.mc = mc
			}
		},
	})
	if err != nil {
		if tr != nil {
			_ = tr.Shutdown()
		}
		t.Fatalf("%s: edge.New: %v", n.name, err)
	}
	n.srv, n.admin, n.up = srv, adminAfterLoop(srv), true
	n.addr = srv.Node().Addr()
	if tr != nil {
		n.addr = tr.Addr()
	}
	n.starts++
	if n.c.opts.serve {
		n.serve()
	}
}

// serve serves the node on its real listeners until it stops.
func (n *clusterNode) serve() {
	t := n.c.t
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan error, 1)
	srv := n.srv
	go func() { done <- srv.Serve(ctx, func(*edge.Server) { close(ready) }) }()
	select {
	case <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("%s: serve: %v", n.name, err)
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatalf("%s did not start serving", n.name)
	}
	n.stopServing = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%s: serve: %v", n.name, err)
		}
	}
}

// url is the address of the node's public listener (when it serves).
func (n *clusterNode) url() string { return "http://" + n.srv.PublicAddr() }

// kill stops the node as a crash would: gossip stops without a leave, the
// counts it held in memory are gone.
func (n *clusterNode) kill() {
	_ = n.srv.Node().Kill()
	n.halt()
}

// stop shuts the node down cleanly: it leaves the ring.
func (n *clusterNode) stop() { n.halt() }

func (n *clusterNode) halt() {
	if n.stopServing != nil {
		n.stopServing()
		n.stopServing = nil
	}
	_ = n.srv.Close()
	n.up = false
}

// advance moves the base clock on by d and has every live node recompute
// its allocations at the new time: a node's allocation loop would do so
// within 250 ms of real time, but fake time jumps, and the visits right
// after a jump must not be decided on an allocation from before it.
func (c *cluster) advance(d time.Duration) {
	c.base.Advance(d)
	c.recompute()
}

// setTime moves the base clock forward to t, then recomputes like advance.
func (c *cluster) setTime(t time.Time) {
	c.base.Set(t)
	c.recompute()
}

// recompute has every live node run a round of its allocation loop now.
func (c *cluster) recompute() {
	for _, n := range c.live() {
		n.srv.RefreshAllocations()
	}
}

// live returns the nodes that are up.
func (c *cluster) live() []*clusterNode {
	var out []*clusterNode
	for _, n := range c.nodes {
		if n.up {
			out = append(out, n)
		}
	}
	return out
}

// servers returns the nodes' servers, in order.
func (c *cluster) servers() []*edge.Server {
	out := make([]*edge.Server, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.srv
	}
	return out
}

// faultAddrs returns the gossip addresses of nodes.
func faultAddrs(nodes []*clusterNode) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.addr)
	}
	return out
}

// members is the number of live members node n sees, itself included.
func (n *clusterNode) members() int { return n.srv.Node().NumMembers() }

// waitRing waits until every one of nodes sees exactly them as members.
func (c *cluster) waitRing(nodes []*clusterNode, d time.Duration) time.Duration {
	c.t.Helper()
	return testkit.Eventually(c.t, testkit.Wait{What: fmt.Sprintf("a ring of %d", len(nodes)), Timeout: d, Seen: func() string { return c.membership(nodes) }}, func() bool {
		for _, n := range nodes {
			if n.members() != len(nodes) {
				return false
			}
		}
		return true
	})
}

func (c *cluster) membership(nodes []*clusterNode) string {
	var b strings.Builder
	for _, n := range nodes {
		var names []string
		for _, m := range n.srv.Node().Members() {
			names = append(names, m.Name)
		}
		fmt.Fprintf(&b, "\n  %s sees %d: %v", n.name, n.members(), names)
	}
	return b.String()
}

// clusterLog is the nodes' log: silent, unless WAITROOM_FAULT_LOG=1 sends
// it to the test's log (with -v).
func clusterLog(t *testing.T) zerolog.Logger {
	if os.Getenv("WAITROOM_FAULT_LOG") == "1" {
		return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.DebugLevel).With().Timestamp().Logger()
	}
	return zerolog.Nop()
}

// checkParse parses a node's config and holds the outcome: taken when want
// is empty, else refused with an error that contains want.
func checkParse(t *testing.T, yaml, want string) {
	t.Helper()
	_, err := config.Parse([]byte(yaml))
	switch {
	case want == "" && err != nil:
		t.Errorf("refused: %v", err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("error %v, want one containing %q", err, want)
	}
}
