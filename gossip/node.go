package gossip

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/rs/zerolog"

	"github.com/waitroom/waitroom/crdt"
)

// Profile names a set of memberlist timings.
type Profile string

// Timing profiles: LAN is the production default; Local is memberlist's
// loopback profile, for tests and the demo; WAN suits nodes far apart.
const (
	LAN   Profile = "lan"
	Local Profile = "local"
	WAN   Profile = "wan"
)

// DefaultRetention is how many minutes of counters a node keeps: the longest
// session window (30 minutes) plus the current minute, the expiring minute and
// a margin for clock skew between nodes.
const DefaultRetention = 35

// Config sets up a node.
type Config struct {
	Name        string   // node name, unique in the cluster
	Incarnation uint64   // 0: the start time in nanoseconds
	Bind        string   // gossip address host:port; port 0 picks a free one
	Advertise   string   // address peers should use, if not the bound one
	Seeds       []string // addresses to join
	// LookupHost resolves a seed's host name to its addresses
	// (net.DefaultResolver.LookupHost when nil); tests give a name several
	// loopback addresses with it.
	LookupHost func(ctx context.Context, host string) ([]string, error)
	// Keys are the gossip encryption keys (16, 24 or 32 bytes), the first
	// encrypting. They also authenticate: a packet or stream that no key
	// opens is refused, so only holders of a key are part of the ring. A
	// node refuses to start without one unless Insecure is set.
	Keys [][]byte
	// Insecure runs the node without keys: anyone who reaches its gossip
	// address can rewrite rooms and counts. The node says so in its log at
	// start and every minute while it runs. Ignored when Keys are given.
	Insecure  bool
	Label     string  // cluster label, checked on every packet and stream
	Profile   Profile // timings; LAN when empty
	Retention int     // minutes of counters kept; DefaultRetention when 0
	Clock     func() time.Time
	Log       zerolog.Logger
	// SearchInterval is how often a node whose ring looks whole looks for
	// members it lost and seeds outside the ring (0: 30 s), so that sides
	// of a partition that forgot each other still merge when it heals.
	SearchInterval time.Duration
	// BeatInterval is how long a node without counts of its own to send
	// waits before it beats, so its peers can still measure how late its
	// news reaches them (0: BeatInterval).
	BeatInterval time.Duration

	// OnChange is called after a merge from a peer changed the state. It
	// must not block (coalesce on a channel of size one).
	OnChange func()
	// CheckRegister, when set, vets every register a peer sends before it
	// is merged (room settings, say): a register it returns an error for is
	// refused, counted and logged, and the node keeps what it had. It runs
	// on memberlist's goroutines and must not block.
	CheckRegister func(name string, value []byte) error
	// CheckEntry, when set, vets every counter entry a peer sends that
	// crdt.CheckEntry passed, against what the node knows of its room
	// (its limits, say): an entry it returns an *crdt.OutOfBounds or
	// other error for is refused, counted under the error's reason and
	// logged. It runs on memberlist's goroutines and must not block.
	CheckEntry func(e crdt.Entry) error
	// Redact, when set, rewrites a register's value before it leaves the
	// node (to keep secrets out of unencrypted gossip); the node's own
	// state keeps the value as written. It must be deterministic.
	Redact func(name string, value []byte) []byte
	// OnPanic, when set, is called once per panic the node recovers from
	// in memberlist's callbacks or in its own goroutines, from the
	// goroutine that panicked, after recovery: where names the place (one
	// of the Panic constants, fit for a metric label), recovered is the
	// value recovered and stack that goroutine's stack. The node keeps
	// running: a message whose merge panicked is dropped whole and counted
	// under DroppedPanic, a push-pull state that could not be built is sent
	// empty, and a loop goes on with its next tick. When nil, the node logs
	// one error line with the fields where, panic and stack. It must not
	// block.
	OnPanic func(where string, recovered any, stack []byte)

	// Datacenter names the data center (the point of presence, the
	// machines of one site) the node belongs to: its members share their
	// cells in a pool of their own, and a few of them carry the data
	// center's figures to the other data centers (datacenter.go). Empty,
	// or the node's own name, makes the node a data center of its own:
	// one pool, every replica's cells to every node, as a ring that names
	// no data center has always run. Every node of a ring names one, or
	// none does.
	Datacenter string
	// Carriers is how many members of the data center carry its figures
	// between data centers (DefaultCarriers when 0).
	Carriers int
	// WANBind is the address of the pool between data centers, bound
	// while the node carries (host:port; port 0 picks a free one each
	// time), WANAdvertise the one peers should use, if not the bound one.
	WANBind, WANAdvertise string
	// WANSeeds are addresses in the pool between data centers: carriers
	// of other data centers, or the WANBind of nodes that may carry. A
	// node that starts carrying also joins by the addresses its data
	// center's other carriers announce.
	WANSeeds []string
	// WANProfile is the timings of the pool between data centers (WAN
	// when empty).
	WANProfile Profile
	// WANTransport, when set, makes the transport of the pool between
	// data centers each time the node starts carrying (tests, the scale
	// harness); WANTune adjusts that pool's configuration last.
	WANTransport func() (memberlist.Transport, error)
	WANTune      func(*memberlist.Config)
	// WANFaults, for tests only, delays (and loses) what the pool between
	// data centers sends, on whatever transport it has: the distances
	// between data centers for a ring of real processes on one machine
	// (see LinkFaults). The zero value injects nothing.
	WANFaults LinkFaults

	// Transport replaces memberlist's UDP/TCP transport, for fault
	// injection in tests.
	Transport memberlist.Transport
	// Tune adjusts the memberlist configuration last, for tests.
	Tune func(*memberlist.Config)
	// Restore, when set, is a saved state (Save, DecodeSaved) taken back
	// before the node joins (see persist.go).
	Restore *Saved

	// testHook, set by tests only, is called with a Panic constant where
	// the node recovers from panics, so that a test can make it panic there.
	testHook func(where string)
}

// Inc is a local increment of the node's own entry in one cell.
type Inc = crdt.Inc

type cellID struct {
	key     crdt.Key
	replica crdt.ReplicaID
}

// Node is one member of the gossip ring holding the replicated state.
type Node struct {
	cfg     Config
	replica crdt.ReplicaID
	ml      *memberlist.Memberlist
	queue   *memberlist.TransmitLimitedQueue
	clock   func() time.Time
	steps   *stepWatch // steps of clock, which no offset or delay sample may span
	log     zerolog.Logger

	mu        sync.Mutex
	state     *crdt.State
	dirty     map[cellID]struct{}
	dirtyRegs map[string]struct{}
	// dirtyAt holds, for dirty cells whose time is known, the origin's
	// wall-clock time (unix ms) of the oldest change not yet queued: the
	// stamp of the broadcast (see lag.go).
	dirtyAt map[cellID]int64
	// marks is the ring's set of ids that each expire (marks.go).
	marks crdt.Marks

	// flushMu serialises flushes: memberlist asks for broadcasts from
	// several goroutines at once, and a flush that read an older value must
	// not queue it after another queued a newer one under the same name.
	flushMu sync.Mutex
	// recentOwn holds when (unix ns, node clock) each of the node's own
	// cells was last queued, for the cells queued within handOverWindow:
	// what a clean leave hands over (leave.go). Guarded by flushMu.
	recentOwn map[cellID]int64
	// recentSwept is when (unix ns) recentOwn was last swept of old cells.
	recentSwept int64
	// unpushed holds the node's own cells that a gossip round flushed while
	// a push was armed, with their stamps: the push still owes them to
	// every peer (push.go). Guarded by flushMu.
	unpushed map[cellID]stampedEntry
	// pushMu guards push, the push of own changes to every peer (push.go).
	pushMu sync.Mutex
	push   pusher

	// addr is the advertised gossip address, fixed at start; bound is the
	// address it listens on (host as configured, port as bound).
	addr, bound string
	// peers holds copies of the members memberlist reported through its
	// events (which it calls under its node lock). The *memberlist.Node
	// values Members() returns are rewritten in place by alive messages, so
	// reading their fields races (a race known upstream in memberlist).
	peersMu sync.Mutex
	peers   map[string]memberlist.Node
	// gone holds the nodes whose latest announcement said they were
	// leaving for good (NodeInfo.Left), by name; guarded by peersMu.
	gone map[string]goneNode
	// lost holds the addresses of members that failed or were cut off
	// (unix nanoseconds when), so the join loop keeps looking for them
	// after they are no longer expected; guarded by peersMu.
	lost map[string]int64
	// acked holds when each member last acked one of this node's probes
	// (or joined); guarded by peersMu.
	acked map[string]time.Time
	// probeInterval and probeTimeout are memberlist's, for the suspicion
	// threshold (SuspectAfter).
	probeInterval, probeTimeout time.Duration
	// seeds are the seeds other than this node's own address; set before
	// the join loop starts, never changed.
	seeds []string
	// gossipInterval is memberlist's, for the wait on a clean leave, and
	// gossipNodes how many peers a gossip round reaches.
	gossipInterval time.Duration
	gossipNodes    int

	stats    stats
	refusals refusalLog
	// lag holds the delay and clock-offset samples of the peers (lag.go);
	// names maps the replicas of peers to their names, for the delay of
	// a stamped broadcast (guarded by peersMu); stampPeers is set while
	// every peer reads stamped broadcasts.
	lag        lagBook
	names      map[crdt.ReplicaID]string
	stampPeers atomic.Bool
	lagCache   atomic.Pointer[cachedLag]
	// ringCache is the ring offset in use and ringLast the last ring time
	// handed out (unix ns), for RingNow.
	ringCache atomic.Pointer[cachedRing]
	ringLast  atomic.Int64
	// lastOwn is when (unix ns, node clock) the node last queued counts of
	// its own or a beat (beat.go).
	lastOwn atomic.Int64
	// beats is the latest beat heard from each replica (unix ms, its
	// clock); guarded by peersMu.
	beats      map[crdt.ReplicaID]int64
	skewLogged time.Time                             // guarded by peersMu
	mlReady    atomic.Pointer[memberlist.Memberlist] // n.ml, for callbacks that may run before Start returns
	heardAt    atomic.Int64                          // unix nanoseconds of the last gossip from a peer
	// dc is the node's side of its data center: nil when it names none.
	dc *dcSide
	// peakMembers is the largest ring this node has seen, and when.
	peakMembers, peakAt atomic.Int64
	hadPeers            atomic.Bool
	// synced is set once the node's first join has synced with a seed
	// (or it has none): until then it cannot tell its data center's
	// members, so it does not start carrying.
	synced    atomic.Bool
	started   time.Time
	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// Start creates the node, binds its gossip address and starts joining the
// seeds in the background (with retry and backoff) so that a node whose
// seeds are not up yet still starts.
func Start(cfg Config) (*Node, error) {
	if cfg.Name == "" {
		return nil, errors.New("gossip: node name is empty")
	}
	if len(cfg.Keys) == 0 && !cfg.Insecure {
		return nil, ErrNoKey
	}
	if len(cfg.Keys) > 0 {
		cfg.Insecure = false // a key authenticates whatever else was asked
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Incarnation == 0 {
		cfg.Incarnation = uint64(cfg.Clock().UnixNano())
	}
	if cfg.Retention <= 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.Datacenter == cfg.Name {
		cfg.Datacenter = "" // a data center of its own: today's ring
	}
	if err := CheckDatacenter(cfg.Datacenter, cfg.Label); err != nil {
		return nil, err
	}
	if err := cfg.WANFaults.Check(); err != nil {
		return nil, fmt.Errorf("gossip between data centers: %w", err)
	}
	n := &Node{
		cfg:       cfg,
		replica:   crdt.NewReplicaID(cfg.Name, cfg.Incarnation),
		clock:     cfg.Clock,
		steps:     newStepWatch(cfg.Clock),
		log:       cfg.Log.With().Str("component", "gossip").Str("node", cfg.Name).Logger(),
		state:     crdt.New(),
		dirty:     map[cellID]struct{}{},
		dirtyRegs: map[string]struct{}{},
		dirtyAt:   map[cellID]int64{},
		names:     map[crdt.ReplicaID]string{},
		started:   cfg.Clock(),
		peers:     map[string]memberlist.Node{},
		gone:      map[string]goneNode{},
		lost:      map[string]int64{},
		acked:     map[string]time.Time{},
		stop:      make(chan struct{}),
	}
	if cfg.Datacenter != "" {
		n.dc = newDCSide(cfg)
		n.state.SetDatacenter(cfg.Datacenter)
	}
	if cfg.Restore != nil {
		n.restore(cfg.Restore) // before memberlist runs: nothing from a peer yet
	}
	mc, err := n.memberlistConfig()
	if err != nil {
		return nil, err
	}
	n.gossipInterval, n.gossipNodes = mc.GossipInterval, mc.GossipNodes
	n.queue = &memberlist.TransmitLimitedQueue{NumNodes: n.numNodes, RetransmitMult: mc.RetransmitMult}
	ml, err := memberlist.Create(mc)
	if err != nil {
		return nil, fmt.Errorf("start gossip on %q: %w", cfg.Bind, err)
	}
	n.ml = ml
	n.mlReady.Store(ml)
	if self, ok := n.peer(cfg.Name); ok {
		n.addr = self.Address()
	} else {
		ln := ml.LocalNode() // not yet gossiped about: nothing rewrites it
		n.addr = net.JoinHostPort(ln.Addr.String(), strconv.Itoa(int(ln.Port)))
	}
	// A node given its own address among the seeds (one seed list for the
	// whole cluster is convenient) must not count itself as joined or
	// expected.
	for _, s := range cfg.Seeds {
		if s != n.addr {
			n.seeds = append(n.seeds, s)
		}
	}
	n.publishNodeInfo(false)
	n.wg.Add(3)
	go n.joinLoop()
	go n.pruneLoop()
	go n.beatLoop()
	if n.dc != nil {
		n.wg.Add(1)
		go n.carrierLoop()
	}
	n.log.Info().Str("addr", n.Addr()).Str("replica", n.replica.String()).Bool("authenticated", !cfg.Insecure).Msg("gossip node started")
	if cfg.Insecure {
		n.bound = net.JoinHostPort(mc.BindAddr, strconv.Itoa(mc.BindPort))
		n.wg.Add(1)
		go n.insecureLoop()
	}
	return n, nil
}

// ErrNoKey is Start's error for a node given no gossip key without
// Insecure: a ring never runs unauthenticated unless its operator says so.
var ErrNoKey = errors.New("gossip: no gossip encryption key: every node of the ring needs the same key; run without one only when insecure gossip is asked for")

// InsecureInterval is how often a node without gossip keys repeats its
// warning.
const InsecureInterval = time.Minute

// insecureLoop warns that gossip is unauthenticated, at once and every
// InsecureInterval while the node runs.
func (n *Node) insecureLoop() {
	defer n.wg.Done()
	t := time.NewTicker(InsecureInterval)
	defer t.Stop()
	for {
		n.guarded(PanicInsecureLoop, func() {
			n.log.Warn().Str("gossip", n.bound).Msgf("gossip is unauthenticated: anyone who reaches %s can rewrite rooms and counts", n.bound)
		})
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
	}
}

func (n *Node) memberlistConfig() (*memberlist.Config, error) {
	label := n.cfg.Label
	if n.dc != nil {
		label = lanLabel(n.cfg.Label, n.dc.name)
	}
	mc, err := n.poolConfig(pool{what: "gossip", profile: n.cfg.Profile, defaultProfile: LAN, name: n.cfg.Name, label: label,
		bind: n.cfg.Bind, advertise: n.cfg.Advertise, transport: n.cfg.Transport, log: n.log})
	if err != nil {
		return nil, err
	}
	// Every node relays what is new to it, and a cell is re-sent whenever
	// it changes, so a few more transmissions per broadcast buy reliable
	// spread on small rings (where log(N+1) rounds down to one) at little
	// cost: memberlist caps a round at GossipNodes packets anyway.
	mc.RetransmitMult = max(mc.RetransmitMult, 4)
	mc.Delegate = (*delegate)(n)
	mc.Events = (*events)(n)
	mc.Merge = (*nameGuard)(n)
	mc.Ping = (*pinger)(n)
	if n.cfg.Tune != nil {
		n.cfg.Tune(mc)
	}
	n.probeInterval, n.probeTimeout = mc.ProbeInterval, mc.ProbeTimeout
	return mc, nil
}

// pool says what sets one of the node's memberlist pools apart: its own,
// and the pool between data centers.
type pool struct {
	what                    string // the pool, for errors: "gossip", "gossip between data centers"
	profile, defaultProfile Profile
	name, label             string
	bind, advertise         string
	transport               memberlist.Transport // nil: a counted network transport at bind
	faults                  LinkFaults           // injected into the transport, whichever it is (tests)
	log                     zerolog.Logger
}

// poolConfig is the memberlist configuration of pool p: its profile's
// timings with the fan-out and reclaim rules of every pool, its name,
// label, addresses and transport, and the ring's keys.
func (n *Node) poolConfig(p pool) (*memberlist.Config, error) {
	var mc *memberlist.Config
	profile := p.profile
	if profile == "" {
		profile = p.defaultProfile
	}
	switch profile {
	case Local:
		mc = memberlist.DefaultLocalConfig()
	case WAN:
		mc = memberlist.DefaultWANConfig()
	case LAN:
		mc = memberlist.DefaultLANConfig()
	default:
		return nil, fmt.Errorf("%s profile %q: must be lan, local or wan", p.what, p.profile)
	}
	mc.Name = p.name
	// A node that crashed and comes back at another address (a new
	// container, say) may take its name back once it has been dead this
	// long; memberlist's default refuses it until the dead entry is purged.
	if mc.DeadNodeReclaimTime == 0 {
		mc.DeadNodeReclaimTime = 10 * time.Second
	}
	// A gossip round reaches four peers instead of three (WAN's fan-out):
	// at 50 nodes with LAN timings that takes the p99 time for a write to
	// reach every node from about 1.2-1.7 s to about 0.7 s, for about a
	// third more gossip bytes (9 → 12 kB/s per node at 1,000 admissions/s
	// over 10 nodes). See measure_test.go.
	mc.GossipNodes = max(mc.GossipNodes, 4)
	host, port, err := splitHostPort(p.bind)
	if err != nil {
		return nil, fmt.Errorf("%s bind address %q: %w", p.what, p.bind, err)
	}
	mc.BindAddr, mc.BindPort = host, port
	mc.AdvertisePort = port
	if p.advertise != "" {
		ah, ap, err := splitHostPort(p.advertise)
		if err != nil {
			return nil, fmt.Errorf("%s advertise address %q: %w", p.what, p.advertise, err)
		}
		mc.AdvertiseAddr, mc.AdvertisePort = ah, ap
	}
	mc.Logger = log.New(logWriter{log: p.log, refuse: n.refuse, stopping: n.stopping}, "", 0)
	mc.Label = p.label
	if len(n.cfg.Keys) > 0 {
		kr, err := memberlist.NewKeyring(n.cfg.Keys, n.cfg.Keys[0])
		if err != nil {
			return nil, fmt.Errorf("gossip keyring: %w", err)
		}
		mc.Keyring = kr
		mc.GossipVerifyIncoming = true
		mc.GossipVerifyOutgoing = true
	}
	mc.Transport = p.transport
	if mc.Transport == nil {
		nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{BindAddrs: []string{host}, BindPort: port, Logger: mc.Logger})
		if err != nil {
			return nil, fmt.Errorf("%s listen on %q: %w", p.what, p.bind, err)
		}
		if port == 0 {
			// memberlist advertises the configured port; with port 0 it
			// must learn the one the transport picked.
			mc.BindPort = nt.GetAutoBindPort()
			if p.advertise == "" {
				mc.AdvertisePort = mc.BindPort
			}
		}
		mc.Transport = &countingTransport{NetTransport: nt, stats: &n.stats}
	}
	if !p.faults.None() {
		mc.Transport = p.faults.wrap(mc.Transport)
	}
	return mc, nil
}

func splitHostPort(addr string) (string, int, error) {
	if addr == "" {
		return "0.0.0.0", 7946, nil
	}
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("port %q: must be 0–65535", p)
	}
	if h == "" {
		h = "0.0.0.0"
	}
	return h, port, nil
}

// numNodes sizes the broadcast queue's retransmissions. memberlist may call
// it (through GetBroadcasts) from its listeners before Create has returned,
// so it reads the memberlist through an atomic, not n.ml.
func (n *Node) numNodes() int {
	ml := n.mlReady.Load()
	if ml == nil {
		return 1
	}
	return ml.NumMembers()
}

// Replica is this node's replica id (name and incarnation).
func (n *Node) Replica() crdt.ReplicaID { return n.replica }

// Name is this node's name.
func (n *Node) Name() string { return n.cfg.Name }

// Incarnation is the incarnation this node started with.
func (n *Node) Incarnation() uint64 { return n.cfg.Incarnation }

// Addr is the gossip address peers reach this node at.
func (n *Node) Addr() string { return n.addr }

// Add raises the node's own entries and queues them for gossip. Encoding is
// deferred to the next gossip round, so a cell that changes a hundred times
// between rounds is encoded and sent once, with its latest value; the push
// (push.go) sends them to every peer within a few milliseconds meanwhile.
func (n *Node) Add(incs ...Inc) {
	if n.addOwn(incs, n.clock().UnixMilli()) {
		n.schedulePush()
	}
}

// addOwn raises the node's own entries, made at now (unix ms, the node's
// clock), marks them dirty and reports whether any changed.
func (n *Node) addOwn(incs []Inc, now int64) bool {
	own := false
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, in := range incs {
		if _, ok := n.state.Add(in.Key, n.replica, in.N); ok {
			own = true
			n.markCarry(in.Key)
			id := cellID{in.Key, n.replica}
			n.dirty[id] = struct{}{}
			if _, ok := n.dirtyAt[id]; !ok {
				n.dirtyAt[id] = now
			}
		}
	}
	return own
}

// Snapshot sums a room's merged counters as seen at unix second now.
func (n *Node) Snapshot(room string, now int64, w crdt.Windows) crdt.RoomSnapshot {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.state.Snapshot(room, now, w)
}

// SnapshotOf sums the entries of the replicas keep accepts (see
// crdt.State.SnapshotOf); keep is called with the node's lock held.
func (n *Node) SnapshotOf(room string, now int64, w crdt.Windows, keep func(crdt.ReplicaID) bool) crdt.RoomSnapshot {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.state.SnapshotOf(room, now, w, keep)
}

// ReplicaNames maps the replicas that announced themselves (NodeInfo
// registers) to their node names. A node that restarted has one replica per
// incarnation, all under its name. Another data center, which appears in
// snapshots as one replica (crdt.DatacenterReplica), maps to its name.
func (n *Node) ReplicaNames() map[crdt.ReplicaID]string {
	out := map[crdt.ReplicaID]string{}
	n.Read(func(st *crdt.State) {
		st.Registers("node/", func(_ string, r crdt.LWW[[]byte]) {
			if ni, err := DecodeNodeInfo(r.Value); err == nil {
				out[r.Replica] = ni.Name
			}
		})
		for _, dc := range st.Datacenters() {
			out[crdt.DatacenterReplica(dc)] = dc
		}
	})
	return out
}

// Reachable returns the replicas whose node is a live member of the ring as
// this node sees it, its own replica always among them. A replica that never
// announced its node is not. Other data centers' replicas
// (crdt.DatacenterReplica) are all among them: a member of a data center
// sees only its own data center's members, and what it last heard of
// another data center stands until it hears more.
func (n *Node) Reachable() map[crdt.ReplicaID]bool {
	names := n.ReplicaNames()
	out := make(map[crdt.ReplicaID]bool, len(names)+1)
	var dcs []string
	n.Read(func(st *crdt.State) { dcs = st.Datacenters() })
	for _, dc := range dcs {
		out[crdt.DatacenterReplica(dc)] = true
	}
	n.peersMu.Lock()
	defer n.peersMu.Unlock()
	for r, name := range names {
		if _, ok := n.peers[name]; ok {
			out[r] = true
		}
	}
	out[n.replica] = true
	return out
}

// Read calls fn with the state under the node's lock. fn must not keep the
// state or call the node.
func (n *Node) Read(fn func(*crdt.State)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	fn(n.state)
}

// SetRegister writes a named register and gossips it.
func (n *Node) SetRegister(name string, value []byte) {
	now := n.RingNow().UnixMilli()
	n.mu.Lock()
	defer n.mu.Unlock()
	n.state.SetRegister(name, value, n.replica, now)
	n.dirtyRegs[name] = struct{}{}
}

// Register reads a named register.
func (n *Node) Register(name string) (crdt.LWW[[]byte], bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.state.Register(name)
}

// NodeInfoRegister is the register name under which a replica publishes its
// NodeInfo.
func NodeInfoRegister(r crdt.ReplicaID) string { return "node/" + r.String() }

func (n *Node) publishNodeInfo(left bool) {
	ni := crdt.NodeInfo{Name: n.cfg.Name, Incarnation: n.cfg.Incarnation, Addr: n.Addr(), Left: left}
	if n.dc != nil {
		ni.Datacenter, ni.WAN = n.dc.name, n.wanAddr()
	}
	b, err := encodeNodeInfo(ni)
	if err != nil {
		n.log.Error().Err(err).Msg("encode node info")
		return
	}
	n.SetRegister(NodeInfoRegister(n.replica), b)
}

// Member is one node of the ring as memberlist sees it.
type Member struct {
	Name  string `json:"name"`
	Addr  string `json:"addr"`
	Alive bool   `json:"alive"`
	// State is "suspect" for a live member not heard from (no probe ack)
	// for longer than SuspectAfter, else memberlist's state.
	State string `json:"state"`
	// LastHeard is when this node last had a probe ack from the member
	// (or saw it join); zero for this node itself.
	LastHeard time.Time `json:"last_heard,omitzero"`
	// Suspected is a live member not heard from for too long.
	Suspected bool `json:"suspected,omitempty"`
	// Datacenter is the data center the member belongs to (its own name
	// in a ring that names none).
	Datacenter string `json:"datacenter,omitempty"`
}

// Members lists the ring, this node included: the members memberlist has
// not declared dead or gone. memberlist v0.7.0 never fills Node.State (it
// keeps the state in a shadowing field of its private nodeState), so this
// node judges suspicion itself from its own probes' acks (Suspected).
func (n *Node) Members() []Member {
	now := n.clock()
	n.peersMu.Lock()
	defer n.peersMu.Unlock()
	after := SuspectAfter(len(n.peers), n.probeInterval, n.probeTimeout)
	out := make([]Member, 0, len(n.peers))
	for _, m := range n.peers {
		mem := Member{Name: m.Name, Addr: m.Address(), Alive: m.State == memberlist.StateAlive, State: stateName(m.State), Datacenter: m.Name}
		if n.dc != nil {
			mem.Datacenter = n.dc.name
		}
		if m.Name != n.cfg.Name {
			mem.LastHeard = n.acked[m.Name]
			if mem.Alive && n.probeInterval > 0 && Suspected(mem.LastHeard, now, after) {
				mem.Suspected, mem.State = true, stateName(memberlist.StateSuspect)
			}
		}
		out = append(out, mem)
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// setPeer records a copy of m; memberlist calls its events with its node
// lock held, the one time m's fields can be read without racing.
func (n *Node) setPeer(m *memberlist.Node) {
	cp := *m
	cp.Addr = slices.Clone(m.Addr)
	cp.Meta = slices.Clone(m.Meta)
	n.peersMu.Lock()
	defer n.peersMu.Unlock()
	if _, had := n.peers[m.Name]; !had {
		n.acked[m.Name] = n.clock()
	}
	n.peers[m.Name] = cp
	delete(n.lost, m.Address())
	n.observeRingLocked(n.clock())
	n.updateStampPeersLocked()
}

// dropPeer forgets a member that left or failed; one that did not announce
// a clean leave is remembered as lost, for the join loop to look for.
func (n *Node) dropPeer(m *memberlist.Node) {
	n.peersMu.Lock()
	defer n.peersMu.Unlock()
	// The ring had its full size until now: that is what a crashed or
	// cut-off member is remembered by.
	n.observeRingLocked(n.clock())
	delete(n.peers, m.Name)
	delete(n.acked, m.Name)
	n.updateStampPeersLocked()
	n.lag.forget(m.Name)
	if g, clean := n.gone[m.Name]; m.Name != n.cfg.Name && (!clean || g.addr != m.Address()) {
		n.lost[m.Address()] = n.clock().UnixNano()
	}
}

func (n *Node) peer(name string) (memberlist.Node, bool) {
	n.peersMu.Lock()
	defer n.peersMu.Unlock()
	m, ok := n.peers[name]
	return m, ok
}

func (n *Node) otherPeers() []memberlist.Node {
	n.peersMu.Lock()
	defer n.peersMu.Unlock()
	out := make([]memberlist.Node, 0, len(n.peers))
	for name, m := range n.peers {
		if name != n.cfg.Name {
			out = append(out, m)
		}
	}
	return out
}

func stateName(s memberlist.NodeStateType) string {
	switch s {
	case memberlist.StateAlive:
		return "alive"
	case memberlist.StateSuspect:
		return "suspect"
	case memberlist.StateDead:
		return "dead"
	case memberlist.StateLeft:
		return "left"
	}
	return "unknown"
}

// NumMembers is the number of live members, this node included.
func (n *Node) NumMembers() int { return n.ml.NumMembers() }

// Join contacts the given addresses and returns how many answered. A name
// that resolves to several addresses contacts each (see seedAddrs).
func (n *Node) Join(addrs []string) (int, error) {
	resolved := n.seedAddrs(addrs)
	if len(resolved) == 0 {
		return 0, fmt.Errorf("join %v: no address other than this node's own", addrs)
	}
	k, err := n.ml.Join(resolved)
	if err != nil && k == 0 {
		return 0, fmt.Errorf("join %v: %w", addrs, err)
	}
	return k, nil
}

// joinLoop joins the seeds, retrying with exponential backoff, and rejoins
// when the node finds itself alone (after a partition it was cut off by).
func (n *Node) joinLoop() {
	defer n.wg.Done()
	seeds := n.seeds
	searchEvery := n.cfg.SearchInterval
	if searchEvery <= 0 {
		searchEvery = defaultSearchInterval
	}
	// Join until one join has synced with a seed (Join runs a full
	// push-pull): counting members is not enough, since a gossip packet can
	// make a freshly restarted node see a peer before it ever synced. After
	// that, join again whenever fewer members are alive than the ring had
	// lately: memberlist never reconnects nodes it declared dead, so two
	// sides of a healed partition would otherwise stay apart for good.
	backoff := 500 * time.Millisecond
	const maxBackoff = 30 * time.Second
	synced := len(seeds) == 0 // nothing to join: the first node of a ring
	n.synced.Store(synced)
	lastSearch := time.Now()
	for {
		// A turn that panics waits as long as one that found the ring whole.
		wait := 5 * time.Second
		n.guarded(PanicJoinLoop, func() {
			n.hook(PanicJoinLoop)
			switch {
			case !synced:
				k, err := n.Join(seeds)
				if err != nil {
					n.log.Warn().Err(err).Dur("retry_in", backoff).Msg("join seeds failed")
					wait, backoff = backoff, min(backoff*2, maxBackoff)
				} else {
					synced = true
					n.synced.Store(true)
					backoff = 500 * time.Millisecond
					n.log.Info().Int("contacted", k).Int("members", n.ml.NumMembers()).Msg("joined cluster")
				}
			case n.ml.NumMembers() < n.ExpectedMembers(n.clock()):
				// Some of the ring is missing: try the seeds and the lost
				// members again, often, so a healed partition merges within
				// seconds.
				if addrs := n.missing(seeds); len(addrs) > 0 {
					if k, err := n.Join(addrs); err == nil && n.ml.NumMembers() >= n.ExpectedMembers(n.clock()) {
						n.log.Info().Int("contacted", k).Int("members", n.ml.NumMembers()).Msg("rejoined the rest of the cluster")
					}
				}
				wait = time.Second
			case time.Since(lastSearch) >= searchEvery:
				// The ring looks whole, but members that failed or were cut off
				// may have been forgotten (ExpectedMembers lets them go after
				// ten minutes): look for them and for seeds outside the ring
				// now and then, so that even a long partition heals.
				lastSearch = time.Now()
				if addrs := n.missing(seeds); len(addrs) > 0 {
					if k, err := n.Join(addrs); err == nil {
						n.log.Info().Int("contacted", k).Int("members", n.ml.NumMembers()).Msg("found members the ring had lost")
					}
				}
			}
		})
		select {
		case <-n.stop:
			return
		case <-time.After(wait):
		}
	}
}

// defaultSearchInterval is how often the join loop looks for lost members
// and seeds outside the ring while the ring looks whole, and lostMemory how
// long a lost member is looked for.
const (
	defaultSearchInterval = 30 * time.Second
	lostMemory            = 24 * time.Hour
)

// missing returns the seeds that are not members and the addresses of
// members lost in the last lostMemory, forgetting older ones.
func (n *Node) missing(seeds []string) []string {
	n.peersMu.Lock()
	defer n.peersMu.Unlock()
	member := map[string]bool{}
	for _, m := range n.peers {
		member[m.Address()] = true
	}
	var out []string
	for _, s := range seeds {
		if !member[s] {
			out = append(out, s)
		}
	}
	now := n.clock().UnixNano()
	for addr, at := range n.lost {
		switch {
		case now-at > lostMemory.Nanoseconds():
			delete(n.lost, addr)
		case !member[addr] && !slices.Contains(out, addr):
			out = append(out, addr)
		}
	}
	return out
}

func (n *Node) pruneLoop() {
	defer n.wg.Done()
	t := time.NewTicker(15 * time.Second)
	defer t.Stop()
	// Each step on its own: one that keeps panicking must not keep the
	// others from running.
	steps := []func(){
		func() {
			n.hook(PanicPruneLoop)
			n.Prune()
		},
		n.pruneMarks,
		n.dropFuture,
		func() { n.checkClock(n.clock()) },
	}
	for {
		for _, step := range steps {
			n.guarded(PanicPruneLoop, step)
		}
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
	}
}

// dropFuture drops counter cells dated beyond what a peer may write (see
// crdt.CheckEntry), kept from before such cells were refused or restored
// from a snapshot: they would count until their far-future minute.
func (n *Node) dropFuture() {
	if dropped := n.dropFutureCells(n.RingNow().UnixMilli()); dropped > 0 {
		n.log.Warn().Int("cells", dropped).Msg("dropped counter cells dated in the future beyond the allowed clock offset")
	}
}

func (n *Node) dropFutureCells(nowMillis int64) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.state.DropFuture(nowMillis)
}

// Prune drops counters older than the retention window of the ring's time.
func (n *Node) Prune() int {
	horizon := n.RingNow().Unix()/60 - int64(n.cfg.Retention)
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.state.Prune(horizon)
}

// Close leaves the cluster (telling peers, so they do not wait for a failure
// timeout) and shuts the node down.
func (n *Node) Close() error {
	var err error
	n.closeOnce.Do(func() {
		n.announceLeave()
		close(n.stop)
		n.stopCarrying(true)
		if lerr := n.ml.Leave(2 * time.Second); lerr != nil {
			n.log.Warn().Err(lerr).Msg("leave cluster")
		}
		err = n.ml.Shutdown()
		n.wg.Wait()
		n.log.Info().Msg("gossip node stopped")
	})
	return err
}

// stopping reports whether Close or Kill has begun.
func (n *Node) stopping() bool {
	select {
	case <-n.stop:
		return true
	default:
		return false
	}
}

// Kill stops the node without telling peers, as a crash would.
func (n *Node) Kill() error {
	var err error
	n.closeOnce.Do(func() {
		close(n.stop)
		n.stopCarrying(false)
		err = n.ml.Shutdown()
		n.wg.Wait()
	})
	return err
}

// flush encodes the dirty cells and registers and queues them as broadcasts.
// A broadcast is named after its cell and replica, so a newer value replaces
// an older one that has not been sent out yet.
func (n *Node) flush() { n.flushWith(nil) }

// flushWith is flush, calling each (when set) with every entry queued and
// its stamp.
func (n *Node) flushWith(each func(crdt.Entry, int64)) {
	var reliable [][]byte
	defer func() {
		for _, msg := range reliable {
			n.sendReliableToAll(msg)
		}
	}()
	// A gossip round's flush may take own cells before the push armed for
	// them runs: the push still sends them (unpushed), or a peer the
	// broadcast queue's few transmissions happened to miss (it picks the
	// peer of each at random) would wait for push-pull.
	owed := each == nil && n.pushArmed()
	n.flushMu.Lock()
	defer n.flushMu.Unlock()
	entries, stamps, regs := n.takeDirty()
	if len(entries) == 0 && len(regs) == 0 && (each == nil || len(n.unpushed) == 0) {
		return
	}

	stamped := n.stampPeers.Load()
	queuedAt := n.clock().UnixNano()
	n.forgetOldOwn(queuedAt)
	for i, e := range entries {
		if e.Replica == n.replica {
			n.lastOwn.Store(queuedAt)
			if n.recentOwn == nil {
				n.recentOwn = map[cellID]int64{}
			}
			n.recentOwn[cellID{e.Key, e.Replica}] = queuedAt
		}
		var msg []byte
		var err error
		if stamped {
			msg, err = EncodeStampedEntries([]crdt.Entry{e}, stamps[i])
		} else {
			msg, err = EncodeEntries([]crdt.Entry{e})
		}
		if err != nil {
			n.log.Error().Err(err).Msg("encode entry")
			continue
		}
		n.queue.QueueBroadcast(&broadcast{name: entryName(e), msg: msg})
		switch {
		case each != nil:
			if e.Replica == n.replica {
				delete(n.unpushed, cellID{e.Key, e.Replica}) // this value is newer
			}
			each(e, stamps[i])
		case e.Replica == n.replica && owed:
			if n.unpushed == nil {
				n.unpushed = map[cellID]stampedEntry{}
			}
			n.unpushed[cellID{e.Key, e.Replica}] = stampedEntry{e, stamps[i]}
		}
	}
	if each != nil {
		for id, u := range n.unpushed {
			each(u.e, u.stamp)
			delete(n.unpushed, id)
		}
	}
	for _, r := range regs {
		r = n.outgoing(r)
		msg, err := EncodeRegisters([]crdt.RegisterEntry{r})
		if err != nil {
			n.log.Error().Err(err).Str("register", r.Name).Msg("encode register")
			continue
		}
		if len(msg) <= MaxPacketMessage {
			n.queue.QueueBroadcast(&broadcast{name: "r|" + r.Name, msg: msg})
			if crossesWAN(r.Name) {
				n.queueWAN("r|"+r.Name, msg)
			}
			continue
		}
		// Too large for a packet (a room's custom page, say): send it over
		// each member's TCP stream; push-pull repairs any member missed.
		if len(msg) > MaxReliableMessage {
			n.log.Error().Str("register", r.Name).Int("bytes", len(msg)).Msg("register too large to gossip; it travels by push-pull only")
			continue
		}
		// Sent once the flush is over, so that slow streams do not hold up
		// other flushes; registers are LWW, so their order does not matter.
		reliable = append(reliable, msg)
	}
}

// takeDirty returns the dirty cells at their current values with their
// stamps, and the dirty registers, and clears the marks.
func (n *Node) takeDirty() ([]crdt.Entry, []int64, []crdt.RegisterEntry) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.dirty) == 0 && len(n.dirtyRegs) == 0 {
		return nil, nil, nil
	}
	entries := make([]crdt.Entry, 0, len(n.dirty))
	stamps := make([]int64, 0, len(n.dirty))
	for id := range n.dirty {
		v := n.state.Get(id.key, id.replica)
		if v == 0 {
			continue // pruned meanwhile
		}
		entries = append(entries, crdt.Entry{Key: id.key, Replica: id.replica, Value: v})
		stamps = append(stamps, n.dirtyAt[id])
	}
	clear(n.dirty)
	clear(n.dirtyAt)
	regs := make([]crdt.RegisterEntry, 0, len(n.dirtyRegs))
	for name := range n.dirtyRegs {
		if r, ok := n.state.Register(name); ok {
			regs = append(regs, crdt.RegisterEntry{Name: name, Reg: r})
		}
	}
	clear(n.dirtyRegs)
	return entries, stamps, regs
}

func (n *Node) sendReliableToAll(msg []byte) {
	ml := n.mlReady.Load()
	if ml == nil {
		return // not started yet; push-pull will carry it
	}
	for _, m := range n.otherPeers() {
		if err := ml.SendReliable(&m, msg); err != nil {
			n.log.Warn().Err(err).Str("peer", m.Name).Msg("send register")
		}
	}
}

func entryName(e crdt.Entry) string {
	b := make([]byte, 0, 64)
	b = append(b, "e|"...)
	b = append(b, e.Key.Room...)
	b = append(b, '|')
	b = strconv.AppendUint(b, uint64(e.Key.Kind), 10)
	b = append(b, '|')
	b = strconv.AppendInt(b, e.Key.Bucket, 10)
	b = append(b, '|')
	b = strconv.AppendInt(b, e.Key.Minute, 10)
	b = append(b, '|')
	b = strconv.AppendUint(b, uint64(e.Replica), 16)
	return string(b)
}

type broadcast struct {
	name string
	msg  []byte
}

func (b *broadcast) Invalidates(o memberlist.Broadcast) bool {
	nb, ok := o.(memberlist.NamedBroadcast)
	return ok && nb.Name() == b.name
}
func (b *broadcast) Name() string    { return b.name }
func (b *broadcast) Message() []byte { return b.msg }
func (b *broadcast) Finished()       {}

// Stats are the node's gossip counters.
type Stats struct {
	Members        int              `json:"members"`
	MessagesIn     uint64           `json:"messages_in"`
	MessagesOut    uint64           `json:"messages_out"`
	BytesIn        uint64           `json:"bytes_in"`
	BytesOut       uint64           `json:"bytes_out"`         // all memberlist traffic sent: gossip, probes, push-pull
	EntriesMerged  uint64           `json:"entries_merged"`    // entries that changed the state
	EntriesRelayed uint64           `json:"entries_relayed"`   // of those, queued again for peers
	PushPulls      uint64           `json:"push_pulls"`        // remote states merged
	Dropped        map[string]int64 `json:"dropped,omitempty"` // messages, and items of them, dropped or refused, by reason
	Queued         int              `json:"queued"`            // broadcasts waiting to go out
	State          crdt.Stats       `json:"state"`
	// Datacenter is the data center the node names (none when it is one
	// of its own); Carrier whether it carries its figures to the others,
	// and WAN the pool between data centers it then belongs to. Bytes
	// sent there count in BytesOut too.
	Datacenter string    `json:"datacenter,omitempty"`
	Carrier    bool      `json:"carrier,omitempty"`
	WAN        *WANStats `json:"wan,omitempty"`
}

type stats struct {
	msgsIn, msgsOut, bytesIn, bytesOut, merged, relayed, pushPulls atomic.Uint64
	dropped                                                        sync.Map // reason → *atomic.Int64
}

func (s *stats) drop(reason string) {
	v, _ := s.dropped.LoadOrStore(reason, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

// Stats returns the node's counters.
func (n *Node) Stats() Stats {
	st := Stats{
		Members:        n.ml.NumMembers(),
		MessagesIn:     n.stats.msgsIn.Load(),
		MessagesOut:    n.stats.msgsOut.Load(),
		BytesIn:        n.stats.bytesIn.Load(),
		BytesOut:       n.stats.bytesOut.Load(),
		EntriesMerged:  n.stats.merged.Load(),
		EntriesRelayed: n.stats.relayed.Load(),
		PushPulls:      n.stats.pushPulls.Load(),
		Queued:         n.queue.NumQueued(),
	}
	n.stats.dropped.Range(func(k, v any) bool {
		if st.Dropped == nil {
			st.Dropped = map[string]int64{}
		}
		st.Dropped[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	st.State = n.stateStats()
	if n.dc != nil {
		st.Datacenter, st.Carrier, st.WAN = n.dc.name, n.dc.carrying.Load(), n.wanStats()
	}
	return st
}

func (n *Node) stateStats() crdt.Stats {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.state.Stats()
}
