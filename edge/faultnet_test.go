package edge_test

// The harness of the fault suite (faults_test.go): real
// edge nodes in this process, each gossiping over memberlist on loopback
// through a gossip.FaultNet transport that the test can make lose, delay,
// duplicate and partition packets while the nodes run.
//
// Gossip runs on real time with memberlist timings shortened about five
// times from the LAN profile (faultTune), so that a node is declared dead in
// about a second and push-pull runs every two seconds. Admission minutes run
// on fake clocks: one base clock the test moves, and per node an offset from
// it (clock skew).

import (
	"cmp"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/rs/zerolog"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/edge"
	"github.com/waitroom/waitroom/gossip"
	"github.com/waitroom/waitroom/gossip/testkit"
)

// faultLong reports whether the long variants run (WAITROOM_LONG=1): the
// full durations instead of the scaled-down ones of the default
// suite.
func faultLong() bool { return os.Getenv("WAITROOM_LONG") == "1" }

// faultLog is the nodes' log: silent, unless WAITROOM_FAULT_LOG=1 sends it
// to the test's log (with -v).
func faultLog(t *testing.T) zerolog.Logger {
	if os.Getenv("WAITROOM_FAULT_LOG") == "1" {
		return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.DebugLevel).With().Timestamp().Logger()
	}
	return zerolog.Nop()
}

// faultTune shortens memberlist's timings for the fault suite: probes every
// 200 ms (LAN: 1 s), suspicion over in about a second, push-pull every two
// seconds (LAN: 30 s). The dead are gossiped to for six seconds, the LAN
// profile's 30 s scaled like the probe interval.
func faultTune(mc *memberlist.Config) {
	mc.ProbeInterval = 200 * time.Millisecond
	mc.ProbeTimeout = 100 * time.Millisecond
	mc.SuspicionMult = 2
	mc.SuspicionMaxTimeoutMult = 3
	mc.GossipInterval = 50 * time.Millisecond
	mc.PushPullInterval = 2 * time.Second
	mc.TCPTimeout = time.Second
	mc.GossipToTheDeadTime = 6 * time.Second
}

// faultWindows are snapshot windows wide enough for every count the fault
// tests make.
var faultWindows = crdt.Windows{Session: 30, Waiting: crdt.DefaultWaitingWindow, History: 10}

// faultCluster is a set of edge nodes on one FaultNet.
type faultCluster struct {
	t      *testing.T
	net    *gossip.FaultNet
	base   *testkit.Clock
	origin *origin
	key    string // cookie key file, shared by every node
	rooms  []edge.RoomConfig
	nodes  []*faultNode
	// edit adjusts a node's config before it starts (keys, label).
	edit func(n *faultNode, cfg *edge.Config)
	// tune runs after faultTune on each node's memberlist config.
	tune func(n *faultNode, mc *memberlist.Config)
}

// faultNode is one node of a faultCluster. It keeps its name and gossip
// address across restarts.
type faultNode struct {
	c     *faultCluster
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
	bound func(tr *gossip.FaultTransport)
}

func (n *faultNode) now() time.Time { return n.c.base.Now().Add(n.skew) }

// newFaultCluster starts n nodes (skews, if given, offset their clocks) and
// waits until they form one ring.
func newFaultCluster(t *testing.T, seed uint64, n int, skews []time.Duration, rooms ...edge.RoomConfig) *faultCluster {
	t.Helper()
	c := faultClusterOf(t, seed, rooms...)
	for i := 0; i < n; i++ {
		var skew time.Duration
		if i < len(skews) {
			skew = skews[i]
		}
		c.add(fmt.Sprintf("pop-%c", 'a'+i), skew)
	}
	c.waitRing(c.nodes, 15*time.Second)
	return c
}

// faultClusterOf makes an empty cluster; add nodes with add.
func faultClusterOf(t *testing.T, seed uint64, rooms ...edge.RoomConfig) *faultCluster {
	t.Helper()
	c := &faultCluster{
		t:      t,
		net:    gossip.NewFaultNet(seed),
		base:   newFakeClock(5),
		origin: newOrigin(t),
		key:    keyFile(t, t.TempDir()),
		rooms:  rooms,
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
func (c *faultCluster) add(name string, skew time.Duration) *faultNode {
	c.t.Helper()
	n := &faultNode{c: c, name: name, skew: skew}
	c.nodes = append(c.nodes, n)
	n.start()
	return n
}

// start starts the node (again): same name and gossip address, a new
// incarnation, the seeds being every other node's address.
func (n *faultNode) start() {
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
	// A restarted node may need its old port back while the kernel still
	// holds it for a moment; retry briefly.
	var tr *gossip.FaultTransport
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
	srv, err := edge.New(cfg, edge.RunOptions{
		Log:   faultLog(t),
		Clock: n.now,
		// The incarnation comes from the real clock: the fake clocks stand
		// still, and a restart at the same fake instant would otherwise
		// take the same replica id (production passes time.Now).
		Incarnation: uint64(time.Now().UnixNano()),
		GossipKeys:  testGossipKeys,
		GossipTune: func(g *gossip.Config) {
			g.Transport = tr
			g.Tune = func(mc *memberlist.Config) {
				faultTune(mc)
				if n.c.tune != nil {
					n.c.tune(n, mc)
				}
				n.mc = mc
			}
		},
	})
	if err != nil {
		_ = tr.Shutdown()
		t.Fatalf("%s: edge.New: %v", n.name, err)
	}
	n.srv, n.admin, n.addr, n.up = srv, srv.AdminHandler(), tr.Addr(), true
	n.starts++
}

// kill stops the node as a crash would: gossip stops without a leave, the
// counts it held in memory are gone.
func (n *faultNode) kill() {
	_ = n.srv.Node().Kill()
	_ = n.srv.Close()
	n.up = false
}

// stop shuts the node down cleanly: it leaves the ring.
func (n *faultNode) stop() {
	_ = n.srv.Close()
	n.up = false
}

// advance moves the base clock on by d and has every live node recompute
// its allocations at the new time. A node's allocation loop does so at least
// every 250 ms of real time; fake time jumps, and the visits right after a
// jump must not be decided on an allocation from before it.
func (c *faultCluster) advance(d time.Duration) {
	c.base.Advance(d)
	c.recompute()
}

// setTime moves the base clock forward to t, then recomputes like advance.
func (c *faultCluster) setTime(t time.Time) {
	c.base.Set(t)
	c.recompute()
}

func (c *faultCluster) recompute() {
	for _, n := range c.live() {
		n.srv.StateDoc()
	}
}

// live returns the nodes that are up.
func (c *faultCluster) live() []*faultNode {
	var out []*faultNode
	for _, n := range c.nodes {
		if n.up {
			out = append(out, n)
		}
	}
	return out
}

// addrs returns the gossip addresses of nodes.
func faultAddrs(nodes []*faultNode) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.addr)
	}
	return out
}

// members is the number of live members node n sees, itself included.
func (n *faultNode) members() int { return n.srv.Node().NumMembers() }

// waitRing waits until every one of nodes sees exactly them as members.
func (c *faultCluster) waitRing(nodes []*faultNode, d time.Duration) time.Duration {
	c.t.Helper()
	return testkit.Eventually(c.t, d, 0, fmt.Sprintf("a ring of %d", len(nodes)), func() bool {
		for _, n := range nodes {
			if n.members() != len(nodes) {
				return false
			}
		}
		return true
	}, func() string { return c.membership(nodes) })
}

func (c *faultCluster) membership(nodes []*faultNode) string {
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

// cells returns the node's counter cells of room, sorted: the replicated
// state itself, to compare nodes by.
func (n *faultNode) cells(room string) []crdt.Entry {
	var out []crdt.Entry
	n.srv.Node().Read(func(s *crdt.State) {
		for _, e := range s.Full().Entries {
			if e.Key.Room == room {
				out = append(out, e)
			}
		}
	})
	slices.SortFunc(out, func(a, b crdt.Entry) int {
		return cmp.Or(cmp.Compare(a.Key.Kind, b.Key.Kind), cmp.Compare(a.Key.Bucket, b.Key.Bucket),
			cmp.Compare(a.Key.Minute, b.Key.Minute), cmp.Compare(a.Replica, b.Replica))
	})
	return out
}

// sameCells reports whether every one of nodes holds the same cells of room.
func faultSameCells(room string, nodes []*faultNode) bool {
	first := nodes[0].cells(room)
	for _, n := range nodes[1:] {
		if !slices.Equal(first, n.cells(room)) {
			return false
		}
	}
	return true
}

// waitConverged waits until nodes hold the same cells of room and returns
// how long it took.
func (c *faultCluster) waitConverged(room string, nodes []*faultNode, d time.Duration) time.Duration {
	c.t.Helper()
	return testkit.Eventually(c.t, d, 0, "replicas converge", func() bool { return faultSameCells(room, nodes) }, func() string {
		var b strings.Builder
		m := c.base.Now().Unix() / 60
		for _, n := range nodes {
			fmt.Fprintf(&b, "\n  %s: %d cells, %s", n.name, len(n.cells(room)), faultTotalsOf(n.snap(room, m)))
		}
		return b.String() + c.membership(nodes)
	})
}

// snap is the node's snapshot of room at unix minute m, over faultWindows.
func (n *faultNode) snap(room string, m int64) crdt.RoomSnapshot {
	return n.srv.Node().Snapshot(room, m, faultWindows)
}

// faultTotals are the figures the fault tests compare with the truth.
type faultTotals struct {
	Admitted uint64 // admissions over the history window
	Arrivals uint64
	Active   int64 // sessions, the expiring minute included
	Waiting  int64
}

func (ft faultTotals) String() string {
	return fmt.Sprintf("admitted %d, active %d, waiting %d, arrivals %d", ft.Admitted, ft.Active, ft.Waiting, ft.Arrivals)
}

func faultTotalsOf(s crdt.RoomSnapshot) faultTotals {
	ft := faultTotals{Active: s.Active + s.ActiveExpiring, Waiting: s.TotalWaiting}
	for _, mc := range s.Admitted {
		ft.Admitted += mc.Total
	}
	for _, mc := range s.Arrivals {
		ft.Arrivals += mc.Total
	}
	return ft
}

// faultCrowd is the test's record of what visitors were told: the truth the
// replicated counts must match.
type faultCrowd struct {
	mu       sync.Mutex
	visitors []*faultVisitor
}

// faultVisitor is one browser and what happened to it.
type faultVisitor struct {
	*visitor
	id         int
	home       int   // index of the node it first reached
	bucket     int64 // minute of its first request, on the node it reached
	admitted   bool
	admittedAt time.Time // base clock
	admittedIn int64     // the minute of the admitting node's clock
	queued     bool      // held on the queue page at its last counted check-in
	next       time.Time // base clock: when its queue page says to come back
	node       string    // where it was admitted
}

func (cr *faultCrowd) add(n int) []*faultVisitor {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	out := make([]*faultVisitor, n)
	for i := range out {
		out[i] = &faultVisitor{visitor: newVisitor(), id: len(cr.visitors)}
		cr.visitors = append(cr.visitors, out[i])
	}
	return out
}

// counts returns how many visitors are admitted and how many wait.
func (cr *faultCrowd) counts() (admitted, waiting int) {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	for _, v := range cr.visitors {
		switch {
		case v.admitted:
			admitted++
		case v.queued:
			waiting++
		}
	}
	return admitted, waiting
}

// due reports whether a queued visitor's page would come back by now.
func (v *faultVisitor) due(now time.Time) bool {
	return v.queued && !v.admitted && !now.Before(v.next)
}

// faultOutcome is what one request got.
type faultOutcome int

const (
	faultAdmitted faultOutcome = iota + 1
	faultQueued
	faultEarly // the queue page again, for a check-in before its time
)

// visit sends v to node n for room's page and records the outcome. A
// visitor already admitted must stay admitted, and no answer may be an
// error page.
func (v *faultVisitor) visit(t *testing.T, n *faultNode) faultOutcome {
	t.Helper()
	first := len(v.cookies) == 0
	resp := v.get(n.srv, "http://shop.test/")
	_ = body(t, resp)
	switch {
	case resp.Header.Get("X-Origin") == "yes":
		if !v.admitted {
			v.admitted, v.admittedAt, v.node, v.queued = true, n.c.base.Now(), n.name, false
			v.admittedIn = n.now().Unix() / 60
		}
		if first {
			v.bucket = n.now().Unix() / 60
		}
		return faultAdmitted
	case resp.Header.Get("Refresh") != "":
		if v.admitted {
			t.Errorf("visitor %d, admitted at %s, was queued at %s", v.id, v.node, n.name)
		}
		// The visitor comes back to the room's own address, as a client
		// that ignores a Refresh url would; the cookie check is covered
		// by TestCookieCheck.
		secs, err := refreshSeconds(resp)
		if err != nil || secs < 1 {
			t.Errorf("visitor %d at %s: Refresh %q", v.id, n.name, resp.Header.Get("Refresh"))
		}
		v.next = n.c.base.Now().Add(time.Duration(secs) * time.Second)
		if first {
			v.bucket = n.now().Unix() / 60
		}
		if len(resp.Header.Values("Set-Cookie")) == 0 {
			return faultEarly
		}
		v.queued = true
		return faultQueued
	default:
		t.Errorf("visitor %d at %s: status %d, neither admitted nor queued", v.id, n.name, resp.StatusCode)
		return 0
	}
}

// faultPair is two transports on one FaultNet, with b's packets counted.
// memberlist's NetTransport hands packets and streams over unbuffered
// channels, so something must read them for as long as it runs, shutdown
// included.
type faultPair struct {
	net  *gossip.FaultNet
	a, b *gossip.FaultTransport

	mu    sync.Mutex
	got   int
	first time.Time
}

func newFaultPair(t *testing.T, seed uint64) *faultPair {
	t.Helper()
	p := &faultPair{net: gossip.NewFaultNet(seed)}
	var err error
	if p.a, err = p.net.Transport("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	if p.b, err = p.net.Transport("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, tr := range []*gossip.FaultTransport{p.a, p.b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-tr.PacketCh():
					if tr == p.b {
						p.mu.Lock()
						if p.got == 0 {
							p.first = time.Now()
						}
						p.got++
						p.mu.Unlock()
					}
				case conn := <-tr.StreamCh():
					conn.Close()
				case <-done:
					return
				}
			}
		}()
	}
	t.Cleanup(func() {
		_ = p.a.Shutdown()
		_ = p.b.Shutdown()
		close(done)
		wg.Wait()
	})
	return p
}

// send sends n packets from a to b and returns how many b received within
// wait, and how long after the first send the first arrived.
func (p *faultPair) send(t *testing.T, n int, wait time.Duration) (got int, first time.Duration) {
	t.Helper()
	p.mu.Lock()
	p.got = 0
	p.mu.Unlock()
	start := time.Now()
	for i := 0; i < n; i++ {
		if _, err := p.a.WriteTo([]byte(fmt.Sprintf("packet %d", i)), p.b.Addr()); err != nil {
			t.Fatal(err)
		}
		if i%20 == 19 {
			time.Sleep(time.Millisecond) // leave the reader time to drain
		}
	}
	time.Sleep(wait)
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.got, p.first.Sub(start)
}

func TestFaultNet(t *testing.T) {
	t.Run("a loss probability of 30% loses about 30% of packets", func(t *testing.T) {
		p := newFaultPair(t, 1)
		p.net.SetLoss(0.3)
		got, _ := p.send(t, 2000, 300*time.Millisecond)
		st := p.net.Stats()
		frac := float64(st.Lost) / float64(st.Sent)
		if frac < 0.26 || frac > 0.34 {
			t.Errorf("lost %d of %d (%.3f), want about 0.30", st.Lost, st.Sent, frac)
		}
		if int64(got) != st.Sent-st.Lost {
			t.Errorf("received %d, want the %d not lost", got, st.Sent-st.Lost)
		}
	})

	t.Run("duplication sends packets twice", func(t *testing.T) {
		p := newFaultPair(t, 2)
		p.net.SetDuplication(1)
		if got, _ := p.send(t, 100, 300*time.Millisecond); got != 200 {
			t.Errorf("received %d copies of 100 packets, want 200", got)
		}
	})

	t.Run("delay holds packets back", func(t *testing.T) {
		p := newFaultPair(t, 3)
		p.net.SetDelay(150*time.Millisecond, 50*time.Millisecond)
		got, first := p.send(t, 20, 500*time.Millisecond)
		if got != 20 || first < 150*time.Millisecond {
			t.Errorf("received %d of 20, the first after %s; want all, none before 150 ms", got, first)
		}
	})

	t.Run("a partition drops packets and refuses streams both ways until healed", func(t *testing.T) {
		p := newFaultPair(t, 4)
		p.net.Partition([]string{p.a.Addr()}, []string{p.b.Addr()})
		if got, _ := p.send(t, 20, 200*time.Millisecond); got != 0 {
			t.Errorf("received %d packets across the partition", got)
		}
		for _, d := range [][2]*gossip.FaultTransport{{p.a, p.b}, {p.b, p.a}} {
			if conn, err := d[0].DialTimeout(d[1].Addr(), time.Second); err == nil {
				conn.Close()
				t.Errorf("dial from %s to %s crossed the partition", d[0].Addr(), d[1].Addr())
			}
		}
		p.net.Heal()
		if got, _ := p.send(t, 20, 200*time.Millisecond); got != 20 {
			t.Errorf("received %d of 20 packets after the heal", got)
		}
		conn, err := p.a.DialTimeout(p.b.Addr(), time.Second)
		if err != nil {
			t.Fatalf("dial after the heal: %v", err)
		}
		conn.Close()
		if st := p.net.Stats(); st.Blocked != 20 || st.RefusedDials != 2 {
			t.Errorf("stats %+v: want 20 packets blocked and 2 dials refused", st)
		}
	})

}
