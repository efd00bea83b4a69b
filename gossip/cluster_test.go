package gossip_test

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/rs/zerolog"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/gossip"
	"github.com/waitroom/waitroom/gossip/testkit"
)

// cluster is N real memberlist nodes on loopback in this process.
type cluster struct {
	t     testing.TB
	nodes []*gossip.Node
	// dcs holds each node's data center when the cluster names them, and
	// wanAddrs the address each node binds between data centers while it
	// carries.
	dcs      []string
	wanAddrs []string
}

// testKey is the gossip key of the test rings: a ring never runs without
// one unless a test asks for insecure gossip.
var testKey = []byte("waitroom-test-gossip-key-32bytes")

type clusterOpts struct {
	profile gossip.Profile
	keys    [][]byte // testKey when nil, unless insecure
	// insecure runs the nodes without a key.
	insecure bool
	label    string
	tune     func(*memberlist.Config)
	// onChange, when set, is called with the index of the node whose state
	// a merge from a peer changed. It runs on
	// memberlist's goroutines and must not block.
	onChange func(i int)
	// transport, when set, builds the node's transport (fault injection).
	transport func(t testing.TB, name string) memberlist.Transport
	// quiet discards the nodes' logs even under -v (measurements).
	quiet bool
	// logTo, when set, receives the nodes' JSON log lines (a logWatcher).
	logTo io.Writer
	// checkRegister and redact are Config.CheckRegister and Config.Redact.
	checkRegister func(name string, value []byte) error
	redact        func(name string, value []byte) []byte
	// clock, when set, is the nodes' clock (memberlist keeps real time).
	clock func() time.Time
	// search is Config.SearchInterval.
	search time.Duration
	// hook, when set, is called with the index of the node and a Panic
	// constant where the node recovers from panics (gossip.SetTestHook).
	hook func(i int, where string)
	// onPanic, when set, is Config.OnPanic, with the index of the node.
	onPanic func(i int, where string, recovered any, stack []byte)

	// datacenter, when set, names the data center of the node of each
	// index; a node's seed is then the first node of its data center, and
	// the nodes meet between data centers at addresses picked for them at
	// start (wanTransport, when set, builds those transports instead).
	datacenter func(i int) string
	carriers   int
	wanProfile gossip.Profile
	wanTune    func(*memberlist.Config)
	// wanTransport, when set, is Config.WANTransport of each node, and
	// wanSeeds its Config.WANSeeds.
	wanTransport func(t testing.TB, name string) func() (memberlist.Transport, error)
	wanSeeds     []string
	// wanFaults is Config.WANFaults of each node.
	wanFaults gossip.LinkFaults
}

func newCluster(t testing.TB, n int, o clusterOpts) *cluster {
	t.Helper()
	c := &cluster{t: t}
	if o.datacenter != nil && o.wanTransport == nil {
		for range n {
			c.wanAddrs = append(c.wanAddrs, fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t)))
		}
	}
	for i := 0; i < n; i++ {
		c.add(t, fmt.Sprintf("node-%02d", i), o)
	}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			if n != nil {
				_ = n.Kill()
			}
		}
	})
	return c
}

func (c *cluster) add(t testing.TB, name string, o clusterOpts) *gossip.Node {
	t.Helper()
	if o.profile == "" {
		o.profile = gossip.Local
	}
	idx := len(c.nodes)
	var tr memberlist.Transport
	if o.transport != nil {
		tr = o.transport(t, name)
	}
	dc := ""
	if o.datacenter != nil {
		dc = o.datacenter(idx)
	}
	c.dcs = append(c.dcs, dc)
	var seeds []string
	for i, n := range c.nodes {
		if n != nil && c.dcs[i] == dc {
			seeds = append(seeds, n.Addr())
			break
		}
	}
	keys := o.keys
	if keys == nil && !o.insecure {
		keys = [][]byte{testKey}
	}
	lg := testLog(t)
	if o.quiet {
		lg = zerolog.Nop()
	}
	if o.logTo != nil {
		lg = zerolog.New(o.logTo)
	}
	cfg := gossip.Config{
		Name:     name,
		Bind:     "127.0.0.1:0",
		Seeds:    seeds,
		Keys:     keys,
		Insecure: o.insecure,
		Label:    o.label,
		Profile:  o.profile,
		Log:      lg,
		OnChange: func() {
			if o.onChange != nil {
				o.onChange(idx)
			}
		},
		Transport:      tr,
		Tune:           o.tune,
		Datacenter:     dc,
		Carriers:       o.carriers,
		WANProfile:     o.wanProfile,
		WANTune:        o.wanTune,
		WANSeeds:       o.wanSeeds,
		WANFaults:      o.wanFaults,
		Clock:          o.clock,
		CheckRegister:  o.checkRegister,
		Redact:         o.redact,
		SearchInterval: o.search,
	}
	if dc != "" {
		switch {
		case o.wanTransport != nil:
			cfg.WANTransport = o.wanTransport(t, name)
		case idx < len(c.wanAddrs):
			cfg.WANBind, cfg.WANSeeds = c.wanAddrs[idx], c.wanAddrs
		default:
			cfg.WANBind, cfg.WANSeeds = "127.0.0.1:0", c.wanAddrs
		}
		if cfg.WANProfile == "" {
			cfg.WANProfile = gossip.Local
		}
	}
	if o.hook != nil {
		gossip.SetTestHook(&cfg, func(where string) { o.hook(idx, where) })
	}
	if o.onPanic != nil {
		cfg.OnPanic = func(where string, recovered any, stack []byte) { o.onPanic(idx, where, recovered, stack) }
	}
	node, err := gossip.Start(cfg)
	if err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	c.nodes = append(c.nodes, node)
	return node
}

// waitMembers waits until every live node sees want alive members.
func (c *cluster) waitMembers(want int, timeout time.Duration) {
	c.t.Helper()
	testkit.Eventually(c.t, testkit.Wait{What: fmt.Sprintf("every node seeing %d alive members", want), Timeout: timeout, Seen: func() string {
		var b strings.Builder
		for i, n := range c.nodes {
			if n != nil {
				fmt.Fprintf(&b, "\n  node %d (%s) sees %+v", i, n.Addr(), n.Members())
			}
		}
		return b.String()
	}}, func() bool {
		for _, n := range c.nodes {
			if n == nil {
				continue
			}
			alive := 0
			for _, m := range n.Members() {
				if m.Alive {
					alive++
				}
			}
			if alive != want {
				return false
			}
		}
		return true
	})
}

// waitValue waits up to timeout until node i sees value want in cell k,
// and reports whether it did.
func (c *cluster) waitValue(i int, k crdt.Key, want uint64, timeout time.Duration) bool {
	_, ok := testkit.Poll(timeout, 0, func() bool {
		var got uint64
		c.nodes[i].Read(func(s *crdt.State) { got = s.Value(k) })
		return got == want
	})
	return ok
}

func minuteKey(room string, kind crdt.Kind, minute int64) crdt.Key {
	return crdt.Key{Room: room, Kind: kind, Minute: minute}
}

func nowMinute() int64 { return time.Now().Unix() / 60 }

func TestCluster(t *testing.T) {
	t.Run("a write on any node is visible on every node", func(t *testing.T) {
		c := newCluster(t, 5, clusterOpts{})
		c.waitMembers(5, 10*time.Second)
		m := nowMinute()
		for i, n := range c.nodes {
			n.Add(gossip.Inc{Key: minuteKey("shop", crdt.Admitted, m), N: uint64(i + 1)})
		}
		for i := range c.nodes {
			if !c.waitValue(i, minuteKey("shop", crdt.Admitted, m), 15, 10*time.Second) {
				t.Fatalf("node %d did not converge to 15", i)
			}
		}
	})

	t.Run("a node that joins late gets the full state by push-pull", func(t *testing.T) {
		c := newCluster(t, 3, clusterOpts{})
		c.waitMembers(3, 10*time.Second)
		m := nowMinute()
		c.nodes[0].Add(gossip.Inc{Key: minuteKey("shop", crdt.ActivePlus, m), N: 7})
		c.nodes[1].Add(gossip.Inc{Key: minuteKey("shop", crdt.ActivePlus, m), N: 5})
		for i := 0; i < 3; i++ {
			if !c.waitValue(i, minuteKey("shop", crdt.ActivePlus, m), 12, 10*time.Second) {
				t.Fatalf("node %d did not converge", i)
			}
		}
		// The late node joins after every broadcast has been sent: only the
		// join's push-pull can bring it the counts.
		c.add(t, "late", clusterOpts{})
		if !c.waitValue(3, minuteKey("shop", crdt.ActivePlus, m), 12, 10*time.Second) {
			t.Fatal("late node did not receive the full state")
		}
	})

	t.Run("a node killed and restarted with a new incarnation neither double counts nor loses counts", func(t *testing.T) {
		c := newCluster(t, 3, clusterOpts{})
		c.waitMembers(3, 10*time.Second)
		m := nowMinute()
		k := minuteKey("shop", crdt.Admitted, m)
		c.nodes[0].Add(gossip.Inc{Key: k, N: 10})
		c.nodes[2].Add(gossip.Inc{Key: k, N: 4})
		for i := 0; i < 3; i++ {
			if !c.waitValue(i, k, 14, 10*time.Second) {
				t.Fatalf("node %d did not converge before the crash", i)
			}
		}
		_ = c.nodes[2].Kill()
		c.nodes[2] = nil
		restarted := c.add(t, "node-02", clusterOpts{}) // same name, new incarnation
		restarted.Add(gossip.Inc{Key: k, N: 1})
		last := len(c.nodes) - 1
		for _, i := range []int{0, 1, last} {
			if !c.waitValue(i, k, 15, 10*time.Second) {
				var got uint64
				c.nodes[i].Read(func(s *crdt.State) { got = s.Value(k) })
				t.Fatalf("node %d holds %d, want 10 + 4 (old incarnation) + 1 (new)", i, got)
			}
		}
	})

	t.Run("encrypted nodes with a label converge and refuse a node without the key", func(t *testing.T) {
		key := []byte("0123456789abcdef0123456789abcdef")
		c := newCluster(t, 3, clusterOpts{keys: [][]byte{key}, label: "waitroom-test"})
		c.waitMembers(3, 10*time.Second)
		m := nowMinute()
		c.nodes[1].Add(gossip.Inc{Key: minuteKey("shop", crdt.Arrivals, m), N: 3})
		for i := 0; i < 3; i++ {
			if !c.waitValue(i, minuteKey("shop", crdt.Arrivals, m), 3, 10*time.Second) {
				t.Fatalf("node %d did not converge", i)
			}
		}
		intruder, err := gossip.Start(gossip.Config{Name: "intruder", Bind: "127.0.0.1:0", Profile: gossip.Local, Log: zerolog.New(io.Discard), Label: "waitroom-test", Insecure: true})
		if err != nil {
			t.Fatal(err)
		}
		defer intruder.Kill()
		if _, err := intruder.Join([]string{c.nodes[0].Addr()}); err == nil {
			t.Fatal("a node without the key joined an encrypted cluster")
		}
	})
}

func testLog(t testing.TB) zerolog.Logger {
	if testing.Verbose() {
		w := &doneWriter{w: zerolog.NewTestWriter(t)}
		t.Cleanup(w.close)
		return zerolog.New(w).Level(zerolog.InfoLevel)
	}
	return zerolog.New(io.Discard)
}

// doneWriter drops what memberlist's goroutines log after the test ended
// (Shutdown does not wait for them), which testing would turn into a panic.
type doneWriter struct {
	mu   sync.Mutex
	w    io.Writer
	done bool
}

func (d *doneWriter) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done {
		return len(p), nil
	}
	return d.w.Write(p)
}

func (d *doneWriter) close() {
	d.mu.Lock()
	d.done = true
	d.mu.Unlock()
}
