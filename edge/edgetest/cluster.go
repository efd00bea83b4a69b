package edgetest

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/rs/zerolog"

	"github.com/waitroom/waitroom/edge/agent"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/gossip"
	"github.com/waitroom/waitroom/gossip/testkit"
)

// Cluster is the one in-process cluster: real nodes (agent.New) in this
// process, on loopback, joined into one gossip ring in front of one
// origin, sharing one cookie key. Admission minutes run on one fake base
// clock the caller moves (each node may be offset from it: clock skew), or
// on the wall clock. Gossip runs on real time, over memberlist's own
// transport or, when the options give one, through a gossip.MemNet that
// the caller makes lose, delay, duplicate and partition packets while the
// nodes run. Nodes can be killed, stopped and restarted at their old
// address.
//
// A test's cluster (NewCluster, ClusterOf) fails the test when a node does
// not start or the ring does not form, and kills its nodes when the test
// ends. A tool's (OpenCluster) returns those errors, and Close stops it.
type Cluster struct {
	Nodes []*Node
	// Clock is the fake base clock; nil when the nodes run on the wall
	// clock.
	Clock *testkit.Clock
	// Net carries the nodes' gossip with its faults; nil: gossip without
	// injected faults.
	Net    *gossip.MemNet
	Origin *Origin
	// KeyFile is the cookie key file every node shares.
	KeyFile string
	// Edit adjusts a node's config before it starts (keys, label, a
	// listener).
	Edit func(n *Node, cfg *config.Config)
	// Tune runs after the options' Tune on each node's memberlist config.
	Tune func(n *Node, mc *memberlist.Config)

	opts ClusterOptions
	// tb is the test the cluster belongs to; nil for a tool's.
	tb testing.TB
	// cleanup undoes what a tool's cluster made for itself (the key's
	// folder, an origin of its own), once its nodes are stopped.
	cleanup []func()
	// errs are a tool's cluster's failures to stop serving, for Close.
	errs []error
}

// ClusterOptions say what cluster to build; the zero value is a ring on a
// fake clock at 5 s into a minute, in front of the test origin, without
// faults and without listeners.
type ClusterOptions struct {
	Rooms []config.Room // every node's rooms, seeded from its config
	// Faults, when set, carries the nodes' gossip with its faults.
	Faults *gossip.MemNet
	// Tune adjusts memberlist's timings (the fault suite shortens them).
	Tune func(mc *memberlist.Config)
	// Clock is the fake base clock; a new one at 5 s into a minute when
	// nil.
	Clock *testkit.Clock
	// WallClock runs the nodes on the wall clock instead of a fake one.
	WallClock bool
	// Serve serves each node on its real listeners (loopback, ports
	// chosen by the system unless Edit says), for callers that speak HTTP
	// to them.
	Serve bool
	// Origin is the origin the nodes front; a new test origin when nil.
	Origin *Origin
	// Name is node i's name; "pop-a", "pop-b", … when nil.
	Name func(i int) string
	// Log is the nodes' log. When nil it is silent, unless
	// WAITROOM_FAULT_LOG=1 sends a test's nodes' log to the test's log
	// (with -v).
	Log *zerolog.Logger
	// GossipKeys is the ring's gossip key; GossipKeys (the test rings')
	// when nil.
	GossipKeys [][]byte
	// Datacenter is node i's data center; nil: none names one. Nodes of
	// one data center seed each other only, and carry its figures between
	// data centers over loopback addresses the cluster picks, each node
	// seeding the other data centers' nodes there (local timings).
	Datacenter func(i int) string
}

// Node is one node of a cluster. It keeps its name and gossip address
// across restarts.
type Node struct {
	Name string
	// Server is the node as `waitroom serve` runs it: the edge.Server
	// with its admin API, webhooks and listeners.
	Server *agent.Agent
	// Admin is the node's admin handler, each request after a round of
	// the allocation loop (see AdminAfterLoop).
	Admin http.Handler
	// KeyFile is the node's cookie key file; the cluster's when "".
	KeyFile string
	// Memberlist is memberlist's config, captured at start.
	Memberlist *memberlist.Config
	Up         bool
	// Starts counts the node's incarnations.
	Starts int
	// Bound, when set, runs once the node's gossip address is bound and
	// before the node starts: packets sent to it then wait in its queue.
	// Only with faults (the MemNet holds the address).
	Bound func(tr *gossip.MemTransport)

	c    *Cluster
	addr string // gossip address, "" until first started
	// dc is the node's data center ("" for none) and wanAddr its address
	// between data centers, picked when it is added.
	dc, wanAddr string
	skew        time.Duration // clock offset from the cluster's base clock
	// stopServing ends Serve and waits for it, when the node serves.
	stopServing func() error
}

// ringTimeout bounds how long a new cluster's nodes may take to form one
// ring.
const ringTimeout = 15 * time.Second

// NewCluster starts n nodes for the test tb and waits until they form one
// ring.
func NewCluster(tb testing.TB, n int, o ClusterOptions) *Cluster {
	tb.Helper()
	c := ClusterOf(tb, o)
	c.must(c.Grow(n))
	return c
}

// ClusterOf makes an empty cluster for the test tb; add nodes with Add.
func ClusterOf(tb testing.TB, o ClusterOptions) *Cluster {
	tb.Helper()
	c := newCluster(o, tb)
	c.KeyFile = KeyFile(tb, tb.TempDir())
	if c.Origin == nil {
		c.Origin = NewOrigin(tb)
	}
	// Kill rather than leave: a leave under injected faults can wait for
	// its full timeout, and the test is over anyway.
	tb.Cleanup(c.killAll)
	return c
}

// OpenCluster makes an empty cluster outside a test, for a tool that runs
// nodes in one process: add nodes with Grow, stop them all with Close.
func OpenCluster(o ClusterOptions) (_ *Cluster, err error) {
	c := newCluster(o, nil)
	defer func() {
		if err != nil {
			_ = c.Close()
		}
	}()
	dir, err := os.MkdirTemp("", "waitroom-cluster-")
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	c.cleanup = append(c.cleanup, func() { _ = os.RemoveAll(dir) })
	if c.KeyFile, err = WriteKeyFile(dir); err != nil {
		return nil, err
	}
	if c.Origin == nil {
		if c.Origin, err = StartOrigin(); err != nil {
			return nil, err
		}
		c.cleanup = append(c.cleanup, c.Origin.Close)
	}
	return c, nil
}

func newCluster(o ClusterOptions, tb testing.TB) *Cluster {
	c := &Cluster{opts: o, tb: tb, Net: o.Faults, Origin: o.Origin}
	switch {
	case o.Clock != nil:
		c.Clock = o.Clock
	case !o.WallClock:
		c.Clock = NewClock(5)
	}
	return c
}

// Grow starts n more nodes, named by the options, and waits until every
// node forms one ring.
func (c *Cluster) Grow(n int) error {
	for range n {
		i := len(c.Nodes)
		name := fmt.Sprintf("pop-%c", 'a'+i)
		if c.opts.Name != nil {
			name = c.opts.Name(i)
		}
		if _, err := c.add(name, 0); err != nil {
			return err
		}
	}
	_, err := c.waitRing(c.Nodes, ringTimeout)
	return err
}

// Close stops every node as a crash would (see Node.Kill), then what the
// cluster started for itself, and reports a node that failed to stop
// serving.
func (c *Cluster) Close() error {
	c.killAll()
	for i := len(c.cleanup) - 1; i >= 0; i-- {
		c.cleanup[i]()
	}
	c.cleanup = nil
	err := errors.Join(c.errs...)
	c.errs = nil
	return err
}

func (c *Cluster) killAll() {
	for _, n := range c.Nodes {
		if n.Up {
			n.Kill()
		}
	}
}

// must fails the cluster's test with err, when there is one. A tool's
// cluster has no test to fail: its Add, Start and WaitRing panic instead,
// and a tool starts its nodes with Grow, which returns the error.
func (c *Cluster) must(err error) {
	if err == nil {
		return
	}
	if c.tb == nil {
		panic(err)
	}
	c.tb.Helper()
	c.tb.Fatal(err)
}

// report notes an error that does not stop the caller: a test's fails the
// test, a tool's is returned by Close.
func (c *Cluster) report(err error) {
	if err == nil {
		return
	}
	if c.tb == nil {
		c.errs = append(c.errs, err)
		return
	}
	c.tb.Helper()
	c.tb.Error(err)
}

// Add starts a new node, offset by skew from the base clock; a node that
// does not start fails the test.
func (c *Cluster) Add(name string, skew time.Duration) *Node {
	if c.tb != nil {
		c.tb.Helper()
	}
	n, err := c.add(name, skew)
	c.must(err)
	return n
}

func (c *Cluster) add(name string, skew time.Duration) (*Node, error) {
	n := &Node{c: c, Name: name, skew: skew}
	if c.opts.Datacenter != nil {
		n.dc = c.opts.Datacenter(len(c.Nodes))
		addr, err := freeLoopbackPort()
		if err != nil {
			return nil, fmt.Errorf("%s: an address between data centers: %w", name, err)
		}
		n.wanAddr = addr
	}
	c.Nodes = append(c.Nodes, n)
	return n, n.start()
}

// freeLoopbackPort is a loopback address whose port was free for both TCP
// and UDP a moment ago, as memberlist binds both.
func freeLoopbackPort() (string, error) {
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		addr := l.Addr().String()
		u, err := net.ListenPacket("udp", addr)
		_ = l.Close()
		if err == nil {
			_ = u.Close()
			return addr, nil
		}
	}
	return "", errors.New("no port free for both TCP and UDP on loopback")
}

// Datacenter is the node's data center; "" when the cluster names none.
func (n *Node) Datacenter() string { return n.dc }

// Now is the node's clock: the base clock plus its skew.
func (n *Node) Now() time.Time {
	if n.c.Clock == nil {
		return time.Now().Add(n.skew)
	}
	return n.c.Clock.Now().Add(n.skew)
}

// Start starts the node (again): same name and gossip address, a new
// incarnation, the seeds being every other node's address. A node that
// does not start fails the test.
func (n *Node) Start() {
	if n.c.tb != nil {
		n.c.tb.Helper()
	}
	n.c.must(n.start())
}

func (n *Node) start() error {
	keys := n.KeyFile
	if keys == "" {
		keys = n.c.KeyFile
	}
	cfg := NodeConfig(n.Name, keys, n.c.Origin.URL, n.c.opts.Rooms...)
	bind := "127.0.0.1:0"
	if n.addr != "" {
		bind = n.addr
		cfg.Gossip = n.addr
	}
	for _, o := range n.c.Nodes {
		if o != n && o.addr != "" && o.dc == n.dc {
			cfg.Seeds = append(cfg.Seeds, o.addr)
		}
	}
	if n.dc != "" {
		cfg.Datacenter, cfg.WANGossip, cfg.WANGossipProfile = n.dc, n.wanAddr, "local"
		for _, o := range n.c.Nodes {
			if o.dc != n.dc {
				cfg.WANSeeds = append(cfg.WANSeeds, o.wanAddr)
			}
		}
	}
	if n.c.Edit != nil {
		n.c.Edit(n, cfg)
	}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%s config: %w", n.Name, err)
	}
	var tr *gossip.MemTransport
	if n.c.Net != nil {
		// A restarted node takes its old address back: the one before it
		// gave it up when its memberlist shut down.
		var err error
		if tr, err = n.c.Net.Transport(bind); err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
		if n.Bound != nil {
			n.Bound(tr)
		}
	}
	keyring := n.c.opts.GossipKeys
	if keyring == nil {
		keyring = GossipKeys
	}
	srv, err := agent.New(cfg, agent.Options{
		Log:   n.c.log(),
		Clock: n.Now,
		// The incarnation comes from the real clock: the fake clocks stand
		// still, and a restart at the same fake instant would otherwise
		// take the same replica id (production passes time.Now).
		Incarnation: uint64(time.Now().UnixNano()),
		GossipKeys:  keyring,
		GossipTune: func(g *gossip.Config) {
			if tr != nil {
				g.Transport = tr
			}
			g.Tune = func(mc *memberlist.Config) {
				if n.c.opts.Tune != nil {
					n.c.opts.Tune(mc)
				}
				if n.c.Tune != nil {
					n.c.Tune(n, mc)
				}
				n.Memberlist = mc
			}
		},
	})
	if err != nil {
		if tr != nil {
			_ = tr.Shutdown()
		}
		return fmt.Errorf("%s: agent.New: %w", n.Name, err)
	}
	n.Server, n.Admin, n.Up = srv, AdminAfterLoop(srv), true
	n.addr = srv.Node().Addr()
	if tr != nil {
		n.addr = tr.Addr()
	}
	n.Starts++
	if n.c.opts.Serve {
		stop, err := Serve(srv)
		if err != nil {
			n.Kill()
			return fmt.Errorf("%s: %w", n.Name, err)
		}
		n.stopServing = func() error {
			if err := stop(); err != nil {
				return fmt.Errorf("%s: %w", n.Name, err)
			}
			return nil
		}
	}
	return nil
}

// log is the nodes' log: the options', or silent unless
// WAITROOM_FAULT_LOG=1 sends a test's to the test's log (with -v).
func (c *Cluster) log() zerolog.Logger {
	switch {
	case c.opts.Log != nil:
		return *c.opts.Log
	case c.tb != nil && os.Getenv("WAITROOM_FAULT_LOG") == "1":
		return zerolog.New(zerolog.NewTestWriter(c.tb)).Level(zerolog.DebugLevel).With().Timestamp().Logger()
	}
	return zerolog.Nop()
}

// Cluster is the cluster the node belongs to.
func (n *Node) Cluster() *Cluster { return n.c }

// URL is the address of the node's public listener (when it serves).
func (n *Node) URL() string { return "http://" + n.Server.PublicAddr() }

// GossipAddr is the node's gossip address, kept across restarts.
func (n *Node) GossipAddr() string { return n.addr }

// Kill stops the node as a crash would: gossip stops without a leave, the
// counts it held in memory are gone.
func (n *Node) Kill() {
	_ = n.Server.Node().Kill()
	n.halt()
}

// Stop shuts the node down cleanly: it leaves the ring.
func (n *Node) Stop() { n.halt() }

func (n *Node) halt() {
	n.StopServing()
	_ = n.Server.Close()
	n.Up = false
}

// StopServing ends the node's serving on its listeners, as a SIGTERM does
// (it stops accepting and lets the requests in flight finish), and waits
// for it; the node stays in the ring until Stop or Kill.
func (n *Node) StopServing() {
	if n.stopServing != nil {
		n.c.report(n.stopServing())
		n.stopServing = nil
	}
}

// Advance moves the base clock on by d and has every live node recompute
// its allocations at the new time: a node's allocation loop would do so
// within 250 ms of real time, but fake time jumps, and the visits right
// after a jump must not be decided on an allocation from before it.
func (c *Cluster) Advance(d time.Duration) {
	c.Clock.Advance(d)
	c.Recompute()
}

// SetTime moves the base clock forward to t, then recomputes like Advance.
func (c *Cluster) SetTime(t time.Time) {
	c.Clock.Set(t)
	c.Recompute()
}

// Recompute has every live node run a round of its allocation loop now.
func (c *Cluster) Recompute() {
	for _, n := range c.Live() {
		n.Server.RefreshAllocations()
	}
}

// Live returns the nodes that are up.
func (c *Cluster) Live() []*Node {
	var out []*Node
	for _, n := range c.Nodes {
		if n.Up {
			out = append(out, n)
		}
	}
	return out
}

// Servers returns the nodes, in order.
func (c *Cluster) Servers() []*agent.Agent {
	out := make([]*agent.Agent, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Server
	}
	return out
}

// GossipAddrs returns the gossip addresses of nodes: what a MemNet's
// partitions are drawn between.
func GossipAddrs(nodes []*Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.addr)
	}
	return out
}

// Members is the number of live members node n sees, itself included.
func (n *Node) Members() int { return n.Server.Node().NumMembers() }

// WaitRing waits until every one of nodes sees exactly them as members
// (those of its own data center, when the cluster names data centers), and
// returns how long that took; a ring that does not form within d fails the
// test, saying who sees whom.
func (c *Cluster) WaitRing(nodes []*Node, d time.Duration) time.Duration {
	if c.tb != nil {
		c.tb.Helper()
	}
	took, err := c.waitRing(nodes, d)
	c.must(err)
	return took
}

func (c *Cluster) waitRing(nodes []*Node, d time.Duration) (time.Duration, error) {
	took, ok := testkit.Poll(d, 0, func() bool {
		for _, n := range nodes {
			if n.Members() != poolOf(n, nodes) {
				return false
			}
		}
		return true
	})
	if !ok {
		return took, fmt.Errorf("a ring of %d: not within %s; last seen: %s", len(nodes), d, c.Membership(nodes))
	}
	return took, nil
}

// poolOf is how many of nodes n should see as members: those of its data
// center (all of them when none names one).
func poolOf(n *Node, nodes []*Node) int {
	k := 0
	for _, o := range nodes {
		if o.dc == n.dc {
			k++
		}
	}
	return k
}

// Membership says which members each of nodes sees: what a test shows when
// a ring does not form or split as it should.
func (c *Cluster) Membership(nodes []*Node) string {
	var b strings.Builder
	for _, n := range nodes {
		var names []string
		for _, m := range n.Server.Node().Members() {
			names = append(names, m.Name)
		}
		fmt.Fprintf(&b, "\n  %s sees %d: %v", n.Name, n.Members(), names)
	}
	return b.String()
}

// FastGossip shortens memberlist's timings for the tests of a ring under
// faults: probes every
// 200 ms (LAN: 1 s), suspicion over in about a second, push-pull every two
// seconds (LAN: 30 s). The dead are gossiped to for six seconds, the LAN
// profile's 30 s scaled like the probe interval.
func FastGossip(mc *memberlist.Config) {
	mc.ProbeInterval = 200 * time.Millisecond
	mc.ProbeTimeout = 100 * time.Millisecond
	mc.SuspicionMult = 2
	mc.SuspicionMaxTimeoutMult = 3
	mc.GossipInterval = 50 * time.Millisecond
	mc.PushPullInterval = 2 * time.Second
	mc.TCPTimeout = time.Second
	mc.GossipToTheDeadTime = 6 * time.Second
}
