package gossip

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/waitroom/waitroom/crdt"
)

// Data centers. A node that names a data center (Config.Datacenter) runs
// two memberlist pools, as Consul does:
//
//   - the data center's own pool (LAN timings from the profile), carrying
//     what a ring without data centers carries: every replica's cells, the
//     push of own changes, beats, registers and marks; the lag a node
//     measures and the ring's time come from this pool's peers only;
//   - the pool between data centers (WAN timings), joined only by a few
//     members of each data center, its carriers, and carrying one
//     aggregate entry per data center per cell (crdt.State.Carry), the
//     groups those name, registers other than node facts, and marks.
//
// The carriers are the Config.Carriers live members of the data center
// that rank highest by rendezvous hashing of their names (carrierRank):
// every member ranks its live peers alike, with no coordinator, and when a
// carrier dies the next in rank takes over as soon as the pool declares it
// gone. A member that stops being chosen keeps carrying for carrierHold, so
// that a member that flaps does not churn the pool between data centers.
// Two members carrying at once write the same groups' entries, which
// max-merge: overlap is harmless.
//
// The first carrier in rank sums the data center's cells when they change
// (its own adds and what it merges from its pool) and sends the figures
// that grew between data centers at the next gossip round there, as
// compact batches (msgFigures), straight to every other data center's
// carriers (sendFiguresDirect) and on the gossip queue, within a budget
// (figureBudget) that keeps what every carrier sends about the same
// however many data centers there are: a data center that counts little sends each change at once, a busy
// one sends larger batches less often. The other carriers stand by; the
// one that becomes first sums every cell, so nothing a carrier that died
// had not sent is lost once its cells reached another member. Every carrier relays between data centers the
// batches new to it, and into its own data center those of the other data
// centers (relayFigures): per-node cells never leave their data center,
// and other data centers' figures reach every node.
//
// Registers cross whole (they are LWW, so two carriers forwarding one
// write is harmless), except node facts (names starting "node/"), which
// describe replicas whose cells stay in their data center; a register too
// large for a packet crosses by push-pull. Marks cross like registers:
// they are a set whose union is the same whatever the path.
//
// The two pools never merge: the data center's pool is labelled
// Label+"/dc/"+Datacenter and the pool between data centers Label+"/wan",
// both with the ring's keys. A ring that names no data center keeps one
// pool with Label, and its wire is as it always was.

// DefaultCarriers is how many members of a data center carry its figures
// to the others when Config.Carriers is 0.
const DefaultCarriers = crdt.DefaultCarriers

// carrierHold is how long a member that is no longer among its data
// center's carriers goes on carrying; carrierCheck is how often a member
// looks at whether it is one.
const (
	carrierHold  = 10 * time.Second
	carrierCheck = time.Second
)

// DroppedWrongPool counts messages that do not belong in the pool they came
// by: a replica's cells, beats or node facts between data centers, or
// aggregates on a node that names no data center.
const DroppedWrongPool = "wrong_pool"

// lanLabel and wanLabel are the labels of a data center's pool and of the
// pool between data centers, derived from the ring's label.
func lanLabel(label, dc string) string { return label + "/dc/" + dc }
func wanLabel(label string) string     { return label + "/wan" }

// CheckDatacenter says why dc cannot name a data center of a ring
// labelled label, or nil: at most crdt.MaxDatacenterName bytes, no spaces
// or control characters, and a pool label memberlist accepts.
func CheckDatacenter(dc, label string) error {
	if len(dc) > crdt.MaxDatacenterName {
		return fmt.Errorf("gossip: data center %q: at most %d bytes", dc, crdt.MaxDatacenterName)
	}
	for _, r := range dc {
		if r <= ' ' || r == 0x7f {
			return fmt.Errorf("gossip: data center %q: no spaces or control characters", dc)
		}
	}
	if l := len(lanLabel(label, dc)); l > 255 {
		return fmt.Errorf("gossip: label %q with data center %q: %d bytes, memberlist allows 255", label, dc, l)
	}
	return nil
}

// dcSide is what a node that names a data center keeps besides its own
// pool: whether it carries, the pool between data centers while it does,
// and the cells to sum at the next round there.
type dcSide struct {
	name     string // the data center
	carriers int
	wanName  string // the node's name in the pool between data centers

	// mu serialises starting and stopping the pool between data centers.
	mu sync.Mutex
	// notChosen is when the node last stopped being among the carriers
	// (zero while it is one); guarded by mu.
	notChosen time.Time
	// ml is the pool between data centers while the node carries.
	ml       atomic.Pointer[memberlist.Memberlist]
	carrying atomic.Bool
	// queue is the broadcast queue of the pool between data centers; it
	// outlives a stint as carrier, emptied at the start of each.
	queue *memberlist.TransmitLimitedQueue
	// budgetMu guards the budget of the carrier's figures (figureBudget):
	// tokens in bytes, refilled at budgetAt; lastBatch is the size of the
	// last batch sent and flushEvery how often such a batch fits the
	// budget; groupsSent holds when the carrier first sent each group.
	budgetMu   sync.Mutex
	tokens     float64
	budgetAt   time.Time
	lastBatch  int
	flushEvery time.Duration
	groupsSent map[crdt.ReplicaID]time.Time
	// joining is set while a join of the pool is under way.
	joining atomic.Bool
	// lastJoin is when (unix ns) the node last tried to join that pool.
	lastJoin atomic.Int64

	// dirty are the cells of the data center changed since its figures
	// were last summed, and all asks for every cell; guarded by Node.mu.
	dirty map[crdt.Key]struct{}
	all   bool

	// peers are the members of the pool between data centers, by their
	// name there, and lost the addresses of those that failed; guarded by
	// peersMu.
	peersMu sync.Mutex
	peers   map[string]wanPeer
	lost    map[string]int64

	bytesIn, msgsIn, msgsOut atomic.Uint64
}

// wanPeer is a member of the pool between data centers.
type wanPeer struct {
	node       memberlist.Node
	datacenter string
}

// wanMetaVersion leads a member's meta in the pool between data centers,
// followed by its data center's name.
const wanMetaVersion = 1

func newDCSide(cfg Config) *dcSide {
	k := cfg.Carriers
	if k <= 0 {
		k = DefaultCarriers
	}
	d := &dcSide{name: cfg.Datacenter, carriers: k, wanName: cfg.Name + "." + cfg.Datacenter, dirty: map[crdt.Key]struct{}{}, peers: map[string]wanPeer{}, lost: map[string]int64{}, groupsSent: map[crdt.ReplicaID]time.Time{}}
	d.queue = &memberlist.TransmitLimitedQueue{NumNodes: d.numNodes, RetransmitMult: wanRetransmitMult}
	return d
}

// wanRetransmitMult sizes how many times a carrier sends each figure it
// queues between data centers: this times log10 of the carriers, rounded
// up (memberlist's rule). Every carrier relays what is new to it, and a
// figure that reached one carrier of a data center reaches the others by
// their own pool, so fewer transmissions than memberlist's default for
// its own messages (4) reach every data center; push-pull repairs the rest.
const wanRetransmitMult = 3

func (d *dcSide) numNodes() int {
	if ml := d.ml.Load(); ml != nil {
		return ml.NumMembers()
	}
	return 1
}

// Datacenter is the data center the node belongs to: Config.Datacenter, or
// the node's name when it names none (a data center of its own).
func (n *Node) Datacenter() string {
	if n.dc != nil {
		return n.dc.name
	}
	return n.cfg.Name
}

// Carrying reports whether the node carries its data center's figures to
// the others now.
func (n *Node) Carrying() bool { return n.dc != nil && n.dc.carrying.Load() }

// carrierRank is the rendezvous score of member name in data center dc:
// the Config.Carriers live members with the highest carry.
func carrierRank(dc, name string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(dc))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(name))
	return h.Sum64()
}

// chosenCarrier reports whether this node ranks among the data center's
// carriers over the live members of its pool.
func (n *Node) chosenCarrier() bool { return n.rank() < n.dc.carriers }

// rank is how many live members of the data center rank above this node
// (carrierRank).
func (n *Node) rank() int { return n.rankOf(n.cfg.Name, n.liveNames()) }

// liveNames are the names of the live members of the node's pool, itself
// included.
func (n *Node) liveNames() []string {
	n.peersMu.Lock()
	defer n.peersMu.Unlock()
	out := make([]string, 0, len(n.peers)+1)
	for name := range n.peers {
		out = append(out, name)
	}
	if _, ok := n.peers[n.cfg.Name]; !ok {
		out = append(out, n.cfg.Name)
	}
	return out
}

// carrierLoop starts and stops the node's carrying as the data center's
// members come and go, and keeps the pool between data centers joined.
func (n *Node) carrierLoop() {
	defer n.wg.Done()
	t := time.NewTicker(carrierCheck)
	defer t.Stop()
	lastSearch := time.Now()
	for {
		n.guarded(PanicCarrier, func() {
			n.hook(PanicCarrier)
			n.checkCarrier(time.Now())
			if ml := n.dc.ml.Load(); ml != nil {
				switch {
				case ml.NumMembers() <= 1:
					n.joinWAN(2 * time.Second)
				case time.Since(lastSearch) >= n.searchInterval():
					lastSearch = time.Now()
					n.joinWAN(0)
				}
			}
		})
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
	}
}

func (n *Node) searchInterval() time.Duration {
	if n.cfg.SearchInterval > 0 {
		return n.cfg.SearchInterval
	}
	return defaultSearchInterval
}

// checkCarrier starts carrying when the node is among the carriers, and
// stops when it has not been for carrierHold.
func (n *Node) checkCarrier(now time.Time) {
	d := n.dc
	chosen := n.synced.Load() && n.chosenCarrier()
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case chosen:
		d.notChosen = time.Time{}
		if !d.carrying.Load() {
			if err := n.startWANLocked(); err != nil {
				n.log.Error().Err(err).Msg("start carrying the data center's figures")
			}
		}
	case d.carrying.Load() && d.notChosen.IsZero():
		d.notChosen = now
	case d.carrying.Load() && now.Sub(d.notChosen) >= carrierHold:
		n.stopWANLocked(true)
	}
}

// startWANLocked joins the pool between data centers and has the next
// round there sum every cell. d.mu must be held.
func (n *Node) startWANLocked() error {
	d := n.dc
	mc, err := n.wanConfig()
	if err != nil {
		return err
	}
	d.queue.Reset()
	ml, err := memberlist.Create(mc)
	if err != nil {
		return fmt.Errorf("start the pool between data centers on %q: %w", n.cfg.WANBind, err)
	}
	d.ml.Store(ml)
	n.mu.Lock()
	d.all = true
	n.mu.Unlock()
	d.carrying.Store(true)
	n.publishNodeInfo(false)
	n.log.Info().Str("datacenter", d.name).Str("wan", wanAddress(ml)).Msg("carrying the data center's figures to the other data centers")
	n.joinWAN(0)
	return nil
}

// stopWANLocked leaves (when leave is set) and shuts down the pool between
// data centers. d.mu must be held.
func (n *Node) stopWANLocked(leave bool) {
	d := n.dc
	ml := d.ml.Swap(nil)
	d.carrying.Store(false)
	if ml == nil {
		return
	}
	if leave {
		if err := ml.Leave(time.Second); err != nil {
			n.log.Warn().Err(err).Msg("leave the pool between data centers")
		}
	}
	if err := ml.Shutdown(); err != nil {
		n.log.Warn().Err(err).Msg("shut down the pool between data centers")
	}
	d.peersMu.Lock()
	clear(d.peers)
	d.peersMu.Unlock()
	n.mu.Lock()
	clear(d.dirty)
	n.mu.Unlock()
	select {
	case <-n.stop:
	default:
		n.publishNodeInfo(false)
		n.log.Info().Str("datacenter", d.name).Msg("no longer carrying the data center's figures")
	}
}

// stopCarrying stops the node's carrying for good (it is closing),
// leaving the pool between data centers when leave is set.
func (n *Node) stopCarrying(leave bool) {
	if n.dc == nil {
		return
	}
	if leave && n.dc.carrying.Load() {
		// The last figures go out with the leave's gossip.
		n.flushWAN()
	}
	n.dc.mu.Lock()
	defer n.dc.mu.Unlock()
	n.stopWANLocked(leave)
}

func wanAddress(ml *memberlist.Memberlist) string {
	ln := ml.LocalNode()
	return net.JoinHostPort(ln.Addr.String(), strconv.Itoa(int(ln.Port)))
}

// wanAddr is the node's address in the pool between data centers while it
// carries, else "".
func (n *Node) wanAddr() string {
	if n.dc == nil {
		return ""
	}
	if ml := n.dc.ml.Load(); ml != nil {
		return wanAddress(ml)
	}
	return ""
}

// wanConfig is the memberlist configuration of the pool between data
// centers.
func (n *Node) wanConfig() (*memberlist.Config, error) {
	var tr memberlist.Transport
	if n.cfg.WANTransport != nil {
		var err error
		if tr, err = n.cfg.WANTransport(); err != nil {
			return nil, fmt.Errorf("gossip transport between data centers: %w", err)
		}
	}
	mc, err := n.poolConfig(pool{what: "gossip between data centers", profile: n.cfg.WANProfile, defaultProfile: WAN, name: n.dc.wanName, label: wanLabel(n.cfg.Label),
		bind: n.cfg.WANBind, advertise: n.cfg.WANAdvertise, transport: tr, faults: n.cfg.WANFaults, log: n.log.With().Str("pool", "wan").Logger()})
	if err != nil {
		return nil, err
	}
	// WAN timings for probes and suspicion, which a distant member needs,
	// but the gossip round of the LAN profile: a figure takes several
	// rounds to reach every carrier, and a count must cross within two
	// seconds. A round with nothing to send sends nothing.
	mc.GossipInterval = min(mc.GossipInterval, 200*time.Millisecond)
	mc.Delegate = (*wanDelegate)(n)
	mc.Events = (*wanEvents)(n)
	if n.cfg.WANTune != nil {
		n.cfg.WANTune(mc)
	}
	return mc, nil
}

// joinWAN joins, in the background, the pool between data centers through
// every address known there that is not a member: Config.WANSeeds, the
// addresses other members of the data center carry at, and members lost.
// It does nothing while a join is under way or within every of the last.
func (n *Node) joinWAN(every time.Duration) {
	d := n.dc
	ml := d.ml.Load()
	if ml == nil || time.Now().UnixNano()-d.lastJoin.Load() < every.Nanoseconds() || !d.joining.CompareAndSwap(false, true) {
		return
	}
	d.lastJoin.Store(time.Now().UnixNano())
	addrs := n.wanSeeds(wanAddress(ml))
	if len(addrs) == 0 {
		d.joining.Store(false)
		return
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		defer d.joining.Store(false)
		defer n.recoverAs(PanicCarrier)
		if k, err := ml.Join(addrs); err != nil && k == 0 {
			n.log.Debug().Err(err).Strs("addrs", addrs).Msg("join the pool between data centers")
		} else {
			n.log.Debug().Int("contacted", k).Int("members", ml.NumMembers()).Msg("joined the pool between data centers")
		}
	}()
}

// wanSeeds are the addresses to join the pool between data centers by,
// but self and the members.
func (n *Node) wanSeeds(self string) []string {
	d := n.dc
	cand := slices.Clone(n.cfg.WANSeeds)
	n.Read(func(st *crdt.State) {
		st.Registers(nodeInfoPrefix, func(_ string, r crdt.LWW[[]byte]) {
			if ni, err := DecodeNodeInfo(r.Value); err == nil && ni.WAN != "" && ni.Name != n.cfg.Name {
				cand = append(cand, ni.WAN)
			}
		})
	})
	d.peersMu.Lock()
	member := map[string]bool{self: true}
	for _, p := range d.peers {
		member[p.node.Address()] = true
	}
	now := time.Now().UnixNano()
	for addr, at := range d.lost {
		if now-at > lostMemory.Nanoseconds() {
			delete(d.lost, addr)
			continue
		}
		cand = append(cand, addr)
	}
	d.peersMu.Unlock()
	var out []string
	for _, a := range cand {
		if !member[a] && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// markCarry records that own cell k changed, to be summed at the next round
// between data centers. n.mu must be held.
func (n *Node) markCarry(k crdt.Key) {
	if n.dc != nil && n.dc.carrying.Load() {
		n.dc.dirty[k] = struct{}{}
	}
}

// carriedReplicasLocked are the replicas of the live members of the data
// center (live names them): the group a carrier sums them under. n.mu
// must be held.
func (n *Node) carriedReplicasLocked(live []string) []crdt.ReplicaID {
	latest := map[string]crdt.NodeInfo{}
	ids := map[string]crdt.ReplicaID{}
	n.state.Registers(nodeInfoPrefix, func(_ string, r crdt.LWW[[]byte]) {
		ni, err := DecodeNodeInfo(r.Value)
		if err != nil || ni.Left {
			return
		}
		if cur, ok := latest[ni.Name]; !ok || ni.Incarnation > cur.Incarnation {
			latest[ni.Name] = ni
			ids[ni.Name] = r.Replica
		}
	})
	out := []crdt.ReplicaID{n.replica}
	for _, name := range live {
		if r, ok := ids[name]; ok && name != n.cfg.Name {
			out = append(out, r)
		}
	}
	return out
}

// carry sums the data center's changed cells (every cell when the node
// just started carrying) and returns what to send between data centers.
func (n *Node) carry() crdt.Delta {
	live := n.liveNames()
	n.mu.Lock()
	defer n.mu.Unlock()
	d := n.dc
	var keys []crdt.Key
	if !d.all {
		if len(d.dirty) == 0 {
			return crdt.Delta{}
		}
		keys = make([]crdt.Key, 0, len(d.dirty))
		for k := range d.dirty {
			keys = append(keys, k)
		}
	}
	clear(d.dirty)
	d.all = false
	return n.state.Carry(d.name, n.carriedReplicasLocked(live), keys)
}

// flushWAN sums the changed cells and queues the figures that grew for the
// pool between data centers, as its budget allows (wanBudget). Only the
// first carrier in rank sends its data center's figures: the others relay
// and stand by, and the one that becomes first (the first died or left)
// sums every cell, as a carrier that starts does.
func (n *Node) flushWAN() {
	if !n.dc.carrying.Load() {
		return
	}
	if n.rank() > 0 {
		n.mu.Lock()
		clear(n.dc.dirty)
		n.dc.all = true
		n.mu.Unlock()
		return
	}
	if !n.figureBudget() {
		return
	}
	msgs := n.figureMessages(n.carry())
	spent := 0
	for _, msg := range msgs {
		n.dc.queue.QueueBroadcast(&broadcast{name: figuresName(msg), msg: msg})
		spent += len(msg)
	}
	n.spendFigureBudget(spent)
	n.sendFiguresDirect(msgs)
}

// sendFiguresDirect sends the data center's new figures straight to every
// carrier of every other data center, as well as queueing them for the
// gossip between data centers. Gossip alone takes a figure a few rounds
// and hops to reach every data center (log of the carriers, in rounds of
// the WAN pool and crossings of 50-150 ms each), and its slowest data
// center sets how long a count takes to be seen everywhere; sent straight,
// a figure reaches nearly every data center in one crossing, and the
// gossip reaches the few whose copies were lost. The budget counts these
// copies (figureBudget).
func (n *Node) sendFiguresDirect(msgs [][]byte) {
	ml := n.dc.ml.Load()
	if ml == nil || len(msgs) == 0 {
		return
	}
	peers := n.otherDatacenterCarriers()
	for i := range peers {
		for _, msg := range msgs {
			if err := ml.SendBestEffort(&peers[i], msg); err != nil {
				n.log.Debug().Err(err).Str("peer", peers[i].Name).Msg("send figures between data centers")
				continue
			}
			n.dc.msgsOut.Add(1)
		}
	}
}

// otherDatacenterCarriers are the members of the pool between data centers
// that carry another data center's figures.
func (n *Node) otherDatacenterCarriers() []memberlist.Node {
	d := n.dc
	d.peersMu.Lock()
	defer d.peersMu.Unlock()
	out := make([]memberlist.Node, 0, len(d.peers))
	for _, p := range d.peers {
		if p.datacenter != d.name {
			out = append(out, p.node)
		}
	}
	return out
}

// The budget of a carrier's figures. Each figure a carrier sends between
// data centers is relayed by every carrier about retransmitLimit times, so
// the bytes every carrier sends grow with the data centers times what each
// sends; and the first carrier sends its own figures straight to every
// other carrier as well (sendFiguresDirect). A carrier therefore sends its
// data center's changed figures at most at wanBudget / (data centers ×
// retransmissions + other carriers) bytes a second, its changes gathered
// meanwhile: when every data center does, each carrier sends about
// wanBudget between data centers however many there are. The budget fills for figureBurst, so a data center that counts
// little sends each change at the next round (a count crosses within the
// goal of two seconds), and one that counts a lot sends its changes in
// larger, rarer batches (its figures lag by the time between them).
const (
	wanBudget   = 12_000
	figureBurst = 30 * time.Second
)

// figureBudget refills the carrier's budget and reports whether it has any
// to send figures with.
func (n *Node) figureBudget() bool {
	d := n.dc
	d.budgetMu.Lock()
	defer d.budgetMu.Unlock()
	now := time.Now()
	dcs, others := n.wanDatacenters()
	rate := float64(wanBudget) / float64(dcs*retransmitLimit(wanRetransmitMult, d.numNodes())+others)
	if d.budgetAt.IsZero() {
		d.tokens = rate * figureBurst.Seconds()
	} else {
		d.tokens = min(rate*figureBurst.Seconds(), d.tokens+now.Sub(d.budgetAt).Seconds()*rate)
	}
	d.budgetAt = now
	d.flushEvery = time.Duration(float64(time.Second) * float64(d.lastBatch) / rate)
	return d.tokens > 0
}

// spendFigureBudget takes bytes sent from the budget (into debt if need
// be).
func (n *Node) spendFigureBudget(bytes int) {
	d := n.dc
	d.budgetMu.Lock()
	defer d.budgetMu.Unlock()
	d.tokens -= float64(bytes)
	if bytes > 0 {
		d.lastBatch = bytes
	}
}

// retransmitLimit is memberlist's rule for how many times a node sends
// each message it queues: mult times log10 of the members plus one,
// rounded up.
func retransmitLimit(mult, members int) int {
	return mult * int(math.Ceil(math.Log10(float64(members+1))))
}

// wanDatacenters is how many data centers the pool between data centers
// holds, as this carrier sees it (at least one: its own), and how many of
// its members carry another data center's figures.
func (n *Node) wanDatacenters() (dcs, others int) {
	d := n.dc
	d.peersMu.Lock()
	defer d.peersMu.Unlock()
	seen := map[string]bool{d.name: true}
	for _, p := range d.peers {
		seen[p.datacenter] = true
		if p.datacenter != d.name {
			others++
		}
	}
	return len(seen), others
}

// figureGroupsFor is how long a carrier sends a group's replicas with the
// figures that name it, after it first did: long enough for every carrier
// and node to hold it; one that missed it gets it by push-pull.
const figureGroupsFor = time.Minute

// figureMessages encodes the data center's figures of d as msgFigures
// messages, a room at a time in packet-sized chunks, with the groups they
// name that the carrier started naming within figureGroupsFor.
func (n *Node) figureMessages(d crdt.Delta) [][]byte {
	if len(d.Aggregates) == 0 {
		return nil
	}
	now := time.Now()
	dc := n.dc
	byID := map[crdt.ReplicaID]crdt.Group{}
	for _, g := range d.Groups {
		byID[g.ID()] = g
	}
	es := slices.Clone(d.Aggregates)
	slices.SortFunc(es, compareEntries)
	var msgs [][]byte
	for len(es) > 0 {
		room := es[0].Key.Room
		end := 1
		for end < len(es) && es[end].Key.Room == room {
			end++
		}
		for _, chunk := range chunks(es[:end], figureChunk) {
			var gs []crdt.Group
			seen := map[crdt.ReplicaID]bool{}
			dc.budgetMu.Lock()
			for _, e := range chunk {
				g, ok := byID[e.Replica]
				if !ok || seen[e.Replica] {
					continue
				}
				seen[e.Replica] = true
				first, sent := dc.groupsSent[e.Replica]
				if !sent {
					first = now
					dc.groupsSent[e.Replica] = now
				}
				if now.Sub(first) < figureGroupsFor {
					gs = append(gs, g)
				}
			}
			dc.budgetMu.Unlock()
			msg, err := EncodeFigures(dc.name, room, gs, chunk)
			if err != nil {
				n.log.Error().Err(err).Msg("encode figures")
				continue
			}
			if len(msg) > MaxPacketMessage && len(chunk) > 1 {
				// Halve a chunk that does not fit a packet (a room with long
				// names, groups of many replicas).
				half := len(chunk) / 2
				msgs = append(msgs, n.figureMessages(crdt.Delta{Aggregates: chunk[:half], Groups: d.Groups})...)
				msgs = append(msgs, n.figureMessages(crdt.Delta{Aggregates: chunk[half:], Groups: d.Groups})...)
				continue
			}
			msgs = append(msgs, msg)
		}
		es = es[end:]
	}
	return msgs
}

// figureChunk is how many figures one message holds at most: well under a
// packet at a few bytes each.
const figureChunk = 80

func chunks[T any](s []T, n int) [][]T {
	var out [][]T
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	if len(s) > 0 {
		out = append(out, s)
	}
	return out
}

// compareEntries orders entries as crdt.State.Full lists them: by room,
// kind, bucket, minute and replica.
func compareEntries(a, b crdt.Entry) int {
	return cmp.Or(strings.Compare(a.Key.Room, b.Key.Room), cmp.Compare(a.Key.Kind, b.Key.Kind), cmp.Compare(a.Key.Bucket, b.Key.Bucket), cmp.Compare(a.Key.Minute, b.Key.Minute), cmp.Compare(a.Replica, b.Replica))
}

// figuresName names a figures message in a broadcast queue by its bytes:
// every node that relays one batch queues it under the same name.
func figuresName(msg []byte) string {
	h := fnv.New64a()
	_, _ = h.Write(msg)
	return "f|" + strconv.FormatUint(h.Sum64(), 16)
}

// queueWAN queues msg under name between data centers while the node
// carries.
func (n *Node) queueWAN(name string, msg []byte) {
	if n.dc != nil && n.dc.carrying.Load() {
		n.dc.queue.QueueBroadcast(&broadcast{name: name, msg: msg})
	}
}

// crossesWAN reports whether register name goes between data centers:
// every register but node facts.
func crossesWAN(name string) bool { return !strings.HasPrefix(name, nodeInfoPrefix) }

// onFigures merges a batch of another data center's figures (msg as
// received, m decoded) that came by the data center's own pool (fromWAN
// false) or between data centers, and relays it when it was new here:
// between data centers while the node carries, and within the data center
// when it came from between data centers or when the data center is too
// large for a carrier's broadcast to reach every member in one round.
func (n *Node) onFigures(msg []byte, m Message, fromWAN bool) {
	now := n.RingNow().UnixMilli()
	delta := n.screenAggregates(m.Delta, now)
	changed := n.mergeFigures(delta, now)
	if changed.Empty() {
		return
	}
	k := uint64(len(changed.Aggregates) + len(changed.Groups))
	n.stats.merged.Add(k)
	name := figuresName(msg)
	if fromWAN || n.dc.carrying.Load() {
		// Every carrier relays between data centers what is new to it,
		// whichever pool it came by: a carrier that heard a batch first
		// from the other carrier of its data center must relay it too, or
		// each data center would relay with one carrier of its carriers.
		n.queueWAN(name, msg)
	}
	if m.Datacenter != n.dc.name {
		n.relayFigures(name, msg, fromWAN)
		n.stats.relayed.Add(k)
	}
	n.changed()
}

// relayFigures relays within the data center a batch of another data
// center's figures that was new here. In a data center of at most
// pushMaxRing members, every carrier sends it straight to every member,
// as the push does a node's own counts (a broadcast waits for a round,
// and under load behind the cells of the data center's own counts): with
// two carriers, each member gets it twice, and the members that do not
// carry relay nothing. In a larger one it goes on the broadcast queue,
// and every member relays it.
func (n *Node) relayFigures(name string, msg []byte, fromWAN bool) {
	ml := n.mlReady.Load()
	peers := n.otherPeers()
	if ml == nil || len(peers)+1 > pushMaxRing {
		n.queue.QueueBroadcast(&broadcast{name: name, msg: msg})
		return
	}
	if !fromWAN && !n.dc.carrying.Load() {
		return
	}
	for i := range peers {
		if err := ml.SendBestEffort(&peers[i], msg); err != nil {
			n.log.Debug().Err(err).Str("peer", peers[i].Name).Msg("relay figures")
			continue
		}
		n.stats.msgsOut.Add(1)
	}
}

// mergeFigures merges the aggregate entries and groups of d at now (ring
// ms) and returns what changed.
func (n *Node) mergeFigures(d crdt.Delta, now int64) crdt.Delta {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.hook(PanicMessage)
	return n.state.MergeAt(crdt.Delta{Aggregates: d.Aggregates, Groups: d.Groups}, now)
}

// screenAggregates drops the aggregate entries the node refuses at
// nowMillis (crdt.CheckAggregate), each checked against its group's size
// when the delta or the state holds the group.
func (n *Node) screenAggregates(d crdt.Delta, nowMillis int64) crdt.Delta {
	if len(d.Aggregates) == 0 {
		return d
	}
	sizes := map[crdt.ReplicaID]int{}
	for _, g := range d.Groups {
		sizes[g.ID()] = len(g.Replicas)
	}
	n.mu.Lock()
	for _, e := range d.Aggregates {
		if _, ok := sizes[e.Replica]; !ok {
			if g, ok := n.state.Group(e.Replica); ok {
				sizes[e.Replica] = len(g.Replicas)
			}
		}
	}
	n.mu.Unlock()
	kept := d.Aggregates[:0]
	for _, e := range d.Aggregates {
		size, ok := sizes[e.Replica]
		if !ok {
			size = crdt.MaxGroupReplicas
		}
		if err := crdt.CheckAggregate(e, size, nowMillis); err != nil {
			n.refuse(boundsReason(err), err)
			continue
		}
		kept = append(kept, e)
	}
	d.Aggregates = kept
	return d
}

// wanDelegate is the node as the delegate of the pool between data
// centers.
type wanDelegate Node

// NodeMeta names the node's data center to the pool between data centers.
func (w *wanDelegate) NodeMeta(limit int) []byte {
	n := (*Node)(w)
	defer n.recoverAs(PanicMeta)
	return append([]byte{wanMetaVersion}, n.dc.name...)
}

// NotifyMsg merges what another carrier sent: figures, groups, registers
// and marks. Anything else is dropped and counted.
func (w *wanDelegate) NotifyMsg(b []byte) {
	n := (*Node)(w)
	defer n.recoverAs(PanicMessage, n.dropPanicked)
	n.dc.msgsIn.Add(1)
	n.dc.bytesIn.Add(uint64(len(b)))
	m, err := Decode(b, MaxReliableMessage)
	if err == nil && (m.Type == msgFigures || m.Type == msgEntries) && len(b) > MaxPacketMessage {
		err = fmt.Errorf("%w: message of %d bytes > %d", errOversize, len(b), MaxPacketMessage)
	}
	if err != nil {
		n.stats.drop(dropReason(err))
		n.log.Debug().Err(err).Int("bytes", len(b)).Msg("dropped gossip message between data centers")
		return
	}
	switch m.Type {
	case msgFigures:
		n.onFigures(b, m, true)
	case msgMarks:
		n.onMarks(m)
	case msgRegisters:
		n.onWANRegisters(m)
	default:
		n.stats.drop(DroppedWrongPool)
	}
}

// onWANRegisters merges registers another carrier sent and relays those
// that were new, within the data center and between data centers (the
// node's flush does both). Node facts never cross.
func (n *Node) onWANRegisters(m Message) {
	regs := m.Delta.Registers[:0]
	for _, r := range m.Delta.Registers {
		if crossesWAN(r.Name) {
			regs = append(regs, r)
		} else {
			n.stats.drop(DroppedWrongPool)
		}
	}
	now := n.RingNow().UnixMilli()
	delta := n.screen(crdt.Delta{Registers: regs}, now)
	changed := n.mergeRelayed(delta, now, 0)
	if !changed.Empty() {
		k := uint64(len(changed.Registers))
		n.stats.merged.Add(k)
		n.stats.relayed.Add(k)
		n.changed()
	}
}

// GetBroadcasts sums the changed cells of the data center and returns the
// next messages for the pool between data centers.
func (w *wanDelegate) GetBroadcasts(overhead, limit int) [][]byte {
	n := (*Node)(w)
	defer n.recoverAs(PanicBroadcasts)
	n.flushWAN()
	out := n.dc.queue.GetBroadcasts(overhead, limit)
	n.dc.msgsOut.Add(uint64(len(out)))
	return out
}

// LocalState is the node's side of a push-pull between data centers: the
// figures it holds (its data center's as last summed, and the other data
// centers'), the groups, and the registers that cross.
func (w *wanDelegate) LocalState(join bool) []byte {
	n := (*Node)(w)
	defer n.recoverAs(PanicLocalState)
	if !n.dc.carrying.Load() {
		return nil
	}
	full, horizon := n.fullState()
	full.Entries = nil
	regs := full.Registers[:0]
	for _, r := range full.Registers {
		if crossesWAN(r.Name) {
			regs = append(regs, n.outgoing(r))
		}
	}
	full.Registers = regs
	b, err := encodeFullDC(full, horizon)
	if err != nil {
		n.log.Error().Err(err).Msg("encode the state between data centers")
		return nil
	}
	return b
}

// MergeRemoteState merges another carrier's state: figures, groups and
// registers. A replica's cells, which never cross, are dropped and counted.
func (w *wanDelegate) MergeRemoteState(buf []byte, join bool) {
	n := (*Node)(w)
	defer n.recoverAs(PanicMergeState, n.dropPanicked)
	m, ok := n.decodeState(buf, "push-pull state between data centers")
	if !ok {
		return
	}
	if len(m.Delta.Entries) > 0 {
		n.stats.drop(DroppedWrongPool)
		m.Delta.Entries = nil
	}
	regs := m.Delta.Registers[:0]
	for _, r := range m.Delta.Registers {
		if crossesWAN(r.Name) {
			regs = append(regs, r)
		}
	}
	m.Delta.Registers = regs
	n.mergeRemote(m.Delta)
}

// wanEvents keeps the node's copy of the members of the pool between data
// centers.
type wanEvents Node

func (e *wanEvents) NotifyJoin(m *memberlist.Node) {
	n := (*Node)(e)
	defer n.recoverAs(PanicEvents)
	n.setWANPeer(m)
	if m.Name != n.dc.wanName && n.hasMarks() {
		if ml := n.dc.ml.Load(); ml != nil {
			go n.sendAllMarksVia(ml, *m)
		}
	}
}

func (e *wanEvents) NotifyLeave(m *memberlist.Node) {
	n := (*Node)(e)
	defer n.recoverAs(PanicEvents)
	d := n.dc
	d.peersMu.Lock()
	defer d.peersMu.Unlock()
	delete(d.peers, m.Name)
	if m.Name != d.wanName {
		d.lost[m.Address()] = time.Now().UnixNano()
	}
}

func (e *wanEvents) NotifyUpdate(m *memberlist.Node) {
	n := (*Node)(e)
	defer n.recoverAs(PanicEvents)
	n.setWANPeer(m)
}

// setWANPeer records a copy of m, read while memberlist holds its lock.
func (n *Node) setWANPeer(m *memberlist.Node) {
	cp := *m
	cp.Addr = slices.Clone(m.Addr)
	cp.Meta = slices.Clone(m.Meta)
	dc := ""
	if len(cp.Meta) > 1 && cp.Meta[0] == wanMetaVersion {
		dc = string(cp.Meta[1:])
	}
	d := n.dc
	d.peersMu.Lock()
	defer d.peersMu.Unlock()
	d.peers[m.Name] = wanPeer{node: cp, datacenter: dc}
	delete(d.lost, cp.Address())
}

// WANMembers lists the pool between data centers as this node sees it
// while it carries (none otherwise): the carriers of every data center,
// itself included.
func (n *Node) WANMembers() []Member {
	if n.dc == nil {
		return nil
	}
	d := n.dc
	d.peersMu.Lock()
	defer d.peersMu.Unlock()
	out := make([]Member, 0, len(d.peers))
	for name, p := range d.peers {
		out = append(out, Member{Name: strings.TrimSuffix(name, "."+p.datacenter), Addr: p.node.Address(), Alive: true, State: stateName(memberlist.StateAlive), Datacenter: p.datacenter})
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.Datacenter+"\x00"+a.Name, b.Datacenter+"\x00"+b.Name) })
	return out
}

// WANStats are the counters of the pool between data centers.
type WANStats struct {
	Members     int    `json:"members"`
	MessagesIn  uint64 `json:"messages_in"`
	MessagesOut uint64 `json:"messages_out"`
	BytesIn     uint64 `json:"bytes_in"` // gossip messages received
	Queued      int    `json:"queued"`
	// FiguresEveryMs is how often, at most, the data center's figures go
	// out at their last batch's size within the carrier's budget: how late
	// the other data centers may learn of its counts under load.
	FiguresEveryMs float64 `json:"figures_every_ms"`
}

func (n *Node) wanStats() *WANStats {
	d := n.dc
	st := &WANStats{MessagesIn: d.msgsIn.Load(), MessagesOut: d.msgsOut.Load(), BytesIn: d.bytesIn.Load(), Queued: d.queue.NumQueued()}
	d.budgetMu.Lock()
	st.FiguresEveryMs = ms(d.flushEvery)
	d.budgetMu.Unlock()
	if ml := d.ml.Load(); ml != nil {
		st.Members = ml.NumMembers()
	}
	return st
}

// DatacenterView is one data center as a node sees it: its own with its
// members by name, another by the figures it reads of it.
type DatacenterView struct {
	Name string `json:"name"`
	// Own is set for the node's own data center.
	Own bool `json:"own,omitempty"`
	// Nodes is how many nodes the data center has: the live members of the
	// node's own pool, or for another data center the replicas of the
	// largest group its carriers summed (its members' names stay there).
	Nodes int `json:"nodes"`
	// Members names the own data center's live members; Carriers those
	// that carry its figures (own), or the members of another data center
	// this node meets between data centers while it carries.
	Members  []string `json:"members,omitempty"`
	Carriers []string `json:"carriers,omitempty"`
}

// Datacenters lists the data centers the node knows, its own first, then
// by name; none when the node names none (it is a data center of its own,
// and every node's cells reach it).
func (n *Node) Datacenters() []DatacenterView {
	if n.dc == nil {
		return nil
	}
	live := n.liveNames()
	slices.Sort(live)
	own := DatacenterView{Name: n.dc.name, Own: true, Nodes: len(live), Members: live}
	for _, name := range live {
		if n.rankOf(name, live) < n.dc.carriers {
			own.Carriers = append(own.Carriers, name)
		}
	}
	others := n.otherDatacenters()
	for _, m := range n.WANMembers() {
		if v := others[m.Datacenter]; v != nil {
			v.Carriers = append(v.Carriers, m.Name)
		}
	}
	out := []DatacenterView{own}
	for _, name := range slices.Sorted(maps.Keys(others)) {
		out = append(out, *others[name])
	}
	return out
}

// OtherDatacenterNodes is how many nodes the other data centers have, as
// Datacenters counts them (crdt.State.OtherDatacenterNodes, the rule the
// simulator counts by too): with the members of the node's own pool, the
// nodes the ring's limits are divided between. Another data center's
// figures stand as last heard, so its nodes count as reachable.
func (n *Node) OtherDatacenterNodes() int {
	if n.dc == nil {
		return 0
	}
	k := 0
	n.Read(func(st *crdt.State) { k = st.OtherDatacenterNodes() })
	return k
}

// otherDatacenters are the other data centers whose groups the node
// holds, each with the replicas of its largest group as its nodes
// (crdt.State.DatacenterNodes).
func (n *Node) otherDatacenters() map[string]*DatacenterView {
	others := map[string]*DatacenterView{}
	n.Read(func(st *crdt.State) {
		for dc, k := range st.DatacenterNodes() {
			others[dc] = &DatacenterView{Name: dc, Nodes: k}
		}
	})
	return others
}

// rankOf is how many of live rank above member name as carrier.
func (n *Node) rankOf(name string, live []string) int {
	self := carrierRank(n.dc.name, name)
	above := 0
	for _, o := range live {
		if o != name && carrierRank(n.dc.name, o) > self {
			above++
		}
	}
	return above
}
