package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/policy"
	"github.com/waitroom/waitroom/policy/truth"
)

// The strategies a scenario can run.
const (
	// StrategyOurs is policy.Continuous, the project's allocation.
	StrategyOurs = "ours"
	// StrategyReference is policy.ReferencePerMinute, the reference's
	// per-minute split by the traffic two minutes earlier.
	StrategyReference = "reference"
)

func policyStrategy(s string) policy.Strategy {
	if s == StrategyReference {
		return policy.ReferencePerMinute
	}
	return policy.Continuous
}

// Epoch is t = 0 of every run: a minute boundary. Node clocks are Epoch +
// virtual time + their skew, read through the ring's correction (run.clock).
var Epoch = time.Date(2030, time.January, 1, 0, 0, 0, 0, time.UTC)

// roomName is the one room every run simulates.
const roomName = "sim"

// The queue page's refresh interval is the counter rule's, the one a node
// gives (policy.Request's decision counted by Decision.Count):
// policy.Allocation.RefreshInterval, short near the front of the line and
// 17–23 s behind it. A new visitor's first page refreshes after the proof
// interval instead (policy.Count gives its token policy.ProofRefresh, and
// visitors follow their token's interval). What counts as early, and how
// long a queued token lives, are the counter rule's too
// (policy.EarlyCheckIn, policy.QueuedTokenLife).

type evKind uint8

const (
	evRequest    evKind = iota // a visitor's next request
	evDeliver                  // a gossip message reaches a node
	evFlush                    // a node ships its gathered entries
	evTick                     // the allocation loop's periodic recompute
	evKick                     // the allocation loop's throttled recompute after a change
	evPushPull                 // a node starts a full-state exchange
	evCrash                    // a node stops
	evDetect                   // the others notice a crashed node
	evSample                   // the recorder takes its once-a-second sample
	evLeave                    // a node closes cleanly
	evLeftNotice               // a node hears that peer left cleanly
	evCut                      // a partition starts
	evCutDetect                // every node notices the far side of the cut
	evHeal                     // a partition ends
	evRejoin                   // a node rejoins peer after a heal
	evRestart                  // a node that crashed or left starts again
	evBeat                     // a node checks whether it is idle enough to beat
	evCarry                    // a data center's carrier sends its changed figures
	evFigures                  // another data center's figures reach a data center's carrier
)

type event struct {
	at   time.Duration
	seq  uint64
	kind evKind
	node int32
	vis  int32 // the visitor, or the peer of evLeftNotice and evRejoin, or the partition of evCut…
	msg  *message
}

// eventQueue is a binary min-heap ordered by (at, seq): equal times keep
// the order they were scheduled in, so a run is deterministic.
type eventQueue []event

func (q eventQueue) less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}

func (q *eventQueue) push(e event) {
	*q = append(*q, e)
	h := *q
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (q *eventQueue) pop() event {
	h := *q
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	i := 0
	for {
		l, r := 2*i+1, 2*i+2
		m := i
		if l < len(h) && h.less(l, m) {
			m = l
		}
		if r < len(h) && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return top
}

// message is a gossip message: a node's own new entries, or a whole state
// for push-pull.
type message struct {
	entries  []crdt.Entry
	from     int32
	pushPull bool // the initiator's state: answer with ours
	rejoin   bool // a push-pull of the join after a heal: the peers count each other live again
	// at is the origin's clock (unix ms) when the oldest change the
	// message carries was made, or the beat's time (0: not stamped).
	at   int64
	beat bool // a beat: no state, a delay sample only
	// figs are aggregate entries and the groups they name: another data
	// center's figures, or the aggregates of a whole state's push-pull.
	figs *crdt.Delta
}

// node is one virtual waitroom node: its own replica of the state, its own
// clock and its own allocation chain.
type node struct {
	id      int
	replica crdt.ReplicaID
	// peers are the nodes this one can count live, itself excluded: every
	// other node, or its data center's other members.
	peers []int
	state *crdt.State
	skew  time.Duration
	up    bool

	// Membership as this node's gossip layer sees it: sees[j] while it
	// counts node j a live member (itself always), live how many it does,
	// left[j] once j announced a clean leave. rings are the member sets it
	// saw before, each with when it stopped seeing it, for the largest ring
	// of the last ten minutes (gossip.Node.ExpectedMembers).
	sees     []bool
	live     int
	left     []bool
	rings    []ring
	expected int           // expectedMembers' last answer
	expUntil time.Duration // when it may change by a ring ageing out; -1: stale
	reach    func(crdt.ReplicaID) bool

	chain       policy.Chain
	alloc       *policy.Allocation // the chain's latest
	allocMinute int64
	lastAlloc   time.Duration
	kicked      bool

	outbox  []crdt.Entry
	outIdx  map[crdt.Key]int
	outAt   int64 // the own clock (unix ms) of the outbox's first entry
	flushAt bool
	horizon int64
	// ringLast is the last ring time the node read (crdt.RingNow).
	ringLast time.Time

	// The measured gossip delay (lag.go): delays[j] are the samples of
	// peer j, beats[j] the time of the latest beat heard from it; the
	// ring's delay as last read (at lagAt, its own clock); lastOwn when it
	// last shipped counts of its own or beat.
	delays    []crdt.Delays
	beats     []int64
	lagAt     time.Time
	lagSet    bool
	ringDelay time.Duration
	measured  bool
	lastOwn   time.Time
	ownSet    bool
	beatLoop  int32 // the beat loop's generation: one per process

	// dirty are the cells that changed here since this node, its data
	// center's carrier, last summed them (gossip's markCarry), in the
	// order they first changed.
	dirty    []crdt.Key
	dirtySet map[crdt.Key]struct{}
}

// clock is node n's time at virtual time t, its gossip.Node.RingNow:
// its own clock (Epoch + t + its skew) corrected by the median of the clock
// offsets of the peers it counts live (crdt.RingOffset; the sim measures
// them without error), never stepping back by a few seconds (crdt.RingNow).
// With nodes.clock "own", its own clock.
func (r *run) clock(n *node, t time.Duration) time.Time {
	local := Epoch.Add(t + n.skew)
	if r.sc.Nodes.Clock == ClockOwn {
		return local
	}
	offs := r.offs[:0]
	for _, j := range n.peers {
		if n.sees[j] {
			offs = append(offs, r.nodes[j].skew-n.skew)
		}
	}
	r.offs = offs
	now := crdt.RingNow(local, crdt.RingOffset(offs), n.ringLast)
	n.ringLast = now
	return now
}

// peakMemory is how long the largest ring a node saw keeps it expecting
// that many nodes (gossip's peakMemory).
const peakMemory = 10 * time.Minute

// ring is a member set a node saw, until when.
type ring struct {
	members []int32
	until   time.Duration
}

// setSees records that n counts node j live, or no longer, at now.
func (n *node) setSees(j int, live bool, now time.Duration) {
	if n.sees[j] == live || j == n.id {
		return
	}
	was := make([]int32, 0, n.live)
	for k, ok := range n.sees {
		if ok {
			was = append(was, int32(k))
		}
	}
	n.rings = append(n.rings, ring{members: was, until: now})
	n.sees[j] = live
	if !live {
		// gossip forgets what it measured of a peer that left its ring.
		n.forgetDelays(j)
	}
	if live {
		n.live++
	} else {
		n.live--
	}
	n.expUntil = -1
}

// markLeft records j's clean leave: j is neither live nor expected.
func (n *node) markLeft(j int, now time.Duration) {
	if n.left[j] || j == n.id {
		return
	}
	n.setSees(j, false, now)
	n.left[j] = true
	n.expUntil = -1
}

// expectedMembers is gossip.Node.ExpectedMembers: the live members, but
// never fewer than the largest ring this node saw in the last ten minutes,
// less the nodes that announced a clean leave since. (The sim has no seed
// lists, so the floor of seeds + 1 is not modelled.)
func (n *node) expectedMembers(now time.Duration) int {
	if n.expUntil >= 0 && now < n.expUntil {
		return n.expected
	}
	kept := n.rings[:0]
	want, next := n.live, time.Duration(math.MaxInt64)
	for _, rg := range n.rings {
		end := rg.until + peakMemory
		if end <= now {
			continue
		}
		kept = append(kept, rg)
		next = min(next, end)
		c := 0
		for _, k := range rg.members {
			if !n.left[k] {
				c++
			}
		}
		want = max(want, c)
	}
	clear(n.rings[len(kept):])
	n.rings = kept
	n.expected, n.expUntil = want, next
	return want
}

type vstate uint8

const (
	vsNew vstate = iota
	vsQueued
	vsBrowsing
	vsGone
)

// visitor is one person: their token (the state a node keeps in the
// cookie), where they are and what happened to them.
type visitor struct {
	arr    *arrival
	node   int
	tok    policy.Counting
	hasTok bool
	st     vstate

	firstQueued time.Duration // -1 until queued
	admitted    time.Duration // first admission, -1 until then
	abandoned   time.Duration // -1 unless they gave up
	bucket      int64         // arrival bucket of the first token

	sessionStart time.Duration
	sessionNode  int32 // the node that admitted the session
	lastReq      time.Duration
	inSession    bool
	browseUntil  time.Duration

	// held: the visitor's request is held for the node's next allocation
	// (policy.Allocation.Held), first since heldSince by the node's clock.
	held      bool
	heldSince time.Time
	// group is the priority group its token carries (an index into the
	// room's groups plus one, 0 for none); coded once it presented its
	// code.
	group int
	coded bool
}

// run is one simulation of one scenario with one strategy.
type run struct {
	sc       *Scenario
	strategy policy.Strategy
	name     string
	rng      *rand.Rand
	room     policy.Room
	groups   []policy.Group // the room's priority groups
	win      crdt.Windows
	session  time.Duration
	retain   int64

	now   time.Duration
	end   time.Duration
	q     eventQueue
	seq   uint64
	nodes []*node
	live  []bool
	// byReplica maps a replica to its node; group is each node's side of
	// the partition in force (nil when the ring is whole) and cut that
	// partition's index in parts, plus one.
	byReplica map[crdt.ReplicaID]int
	replicas  []crdt.ReplicaID // by node, its current incarnation
	retired   []crdt.ReplicaID // earlier incarnations of restarted nodes
	retiredOf []int            // their nodes
	group     []int
	cut       int
	offs      []time.Duration // scratch for clock
	// peerDelays is scratch for lagFor.
	peerDelays []crdt.PeerDelay
	parts      []*Partition
	// Data centers (nodes.datacenters; nil without): each one's name, its
	// nodes, and the replicas other data centers appear as.
	dcNames   []string
	dcMembers [][]int
	dcReplica map[crdt.ReplicaID]bool
	wan       WAN
	arr       []arrival
	vis       []visitor
	next      int // next arrival to inject
	rec       *recorder
	counts    Counts

	// debug, when set, sees every decision (tests and investigations).
	debug func(r *run, n *node, v *visitor, out policy.Outcome, bucket int64, fresh bool)
}

// NewRNG returns the run's one random source: PCG seeded from the scenario
// seed. Everything random in a run draws from it, in event order.
func NewRNG(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// Run simulates the scenario with one strategy ("ours" or "reference").
func Run(sc *Scenario, strategy string) (*Result, error) { return runWith(sc, strategy, nil) }

func runWith(sc *Scenario, strategy string, debug func(r *run, n *node, v *visitor, out policy.Outcome, bucket int64, fresh bool)) (*Result, error) {
	r, err := newRun(sc, strategy, debug)
	if err != nil {
		return nil, err
	}
	r.loop()
	return r.rec.result(), nil
}

// newRun sets up a run of the scenario up to its first event.
func newRun(sc *Scenario, strategy string, debug func(r *run, n *node, v *visitor, out policy.Outcome, bucket int64, fresh bool)) (*run, error) {
	if strategy != StrategyOurs && strategy != StrategyReference {
		return nil, fmt.Errorf("strategy %q: must be ours or reference", strategy)
	}
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	r := &run{
		sc: sc, strategy: policyStrategy(strategy), name: strategy,
		rng: NewRNG(sc.Seed), room: sc.policyRoom(), session: sc.session(),
		end: sc.Duration.D(), debug: debug,
	}
	r.win = r.room.Windows()
	r.groups = sc.Room.policyGroups()
	// Keep the minutes a gossip node keeps (its default retention): the
	// order inside a bucket (QueuedAt) is dated by the bucket's minute and
	// read for as long as the bucket waits, so pruning at the waiting
	// window, as the simulator once did, left every bucket older than
	// that unordered where a node orders it.
	r.retain = max(int64(max(r.win.Waiting, r.win.History))+2, gossipRetention)
	r.arr = sc.arrivals(r.rng)
	r.vis = make([]visitor, len(r.arr))
	for i := range r.vis {
		r.vis[i] = visitor{arr: &r.arr[i], node: -1, firstQueued: -1, admitted: -1, abandoned: -1}
	}
	r.rec = newRecorder(r)
	skews := sc.skews()
	r.live = make([]bool, sc.Nodes.Count)
	r.byReplica = make(map[crdt.ReplicaID]int, sc.Nodes.Count)
	if d := sc.Nodes.Datacenters; d > 0 {
		r.wan = sc.Gossip.wan()
		r.dcMembers = make([][]int, d)
		r.dcReplica = map[crdt.ReplicaID]bool{}
		for k := range d {
			name := fmt.Sprintf("dc-%d", k)
			r.dcNames = append(r.dcNames, name)
			r.dcReplica[crdt.DatacenterReplica(name)] = true
		}
		for i := range sc.Nodes.Count {
			k := sc.datacenterOf(i)
			r.dcMembers[k] = append(r.dcMembers[k], i)
		}
	}
	for i := range sc.Nodes.Count {
		// The ring is formed at t = 0: every node sees every other (of its
		// data center, with data centers).
		n := &node{
			id: i, replica: crdt.NewReplicaID(fmt.Sprintf("node-%d", i), 1),
			state: crdt.New(), skew: skews[i], up: true,
			sees: make([]bool, sc.Nodes.Count), live: sc.Nodes.Count, left: make([]bool, sc.Nodes.Count),
			expUntil: -1, outIdx: map[crdt.Key]int{},
			delays: make([]crdt.Delays, sc.Nodes.Count), beats: make([]int64, sc.Nodes.Count),
		}
		ring := make([]int, sc.Nodes.Count)
		for j := range ring {
			ring[j] = j
		}
		if r.dcMembers != nil {
			// A node that names a data center: its pool is its data
			// center's members, its state sums their entries and reads
			// the other data centers' figures.
			ring = r.dcMembers[sc.datacenterOf(i)]
			n.live = len(ring)
			n.state.SetDatacenter(r.dcNames[sc.datacenterOf(i)])
			if ring[0] == i {
				// Its carrier notes the cells to sum (markCarry).
				n.dirtySet = map[crdt.Key]struct{}{}
			}
		}
		for _, j := range ring {
			n.sees[j] = true
			if j != i {
				n.peers = append(n.peers, j)
			}
		}
		n.chain = policy.NewChain(n.replica, r.strategy)
		n.reach = func(rep crdt.ReplicaID) bool {
			if j := r.nodeOf(rep); j >= 0 {
				return n.sees[j]
			}
			// Another data center's figures stand as last heard
			// (gossip.Node.Reachable).
			return r.dcReplica[rep]
		}
		r.nodes = append(r.nodes, n)
		r.live[i] = true
		r.byReplica[n.replica] = i
		r.replicas = append(r.replicas, n.replica)
	}
	for _, n := range r.nodes {
		r.recompute(n)
		// Each node's loop starts at its own phase.
		every := sc.Nodes.RecomputeEvery.D()
		r.schedule(event{at: every * time.Duration(n.id+1) / time.Duration(len(r.nodes)), kind: evTick, node: int32(n.id)})
		if pp := sc.Gossip.PushPull.D(); pp > 0 && len(r.nodes) > 1 {
			r.schedule(event{at: pp * time.Duration(n.id+1) / time.Duration(len(r.nodes)), kind: evPushPull, node: int32(n.id)})
		}
		r.startBeats(n)
	}
	for k, members := range r.dcMembers {
		if len(r.dcMembers) > 1 {
			// Each carrier's rounds start at their own phase.
			r.schedule(event{at: r.wan.Round.D() * time.Duration(k+1) / time.Duration(len(r.dcMembers)), kind: evCarry, node: int32(members[0])})
		}
	}
	for _, e := range sc.Events {
		switch {
		case e.Crash != nil:
			r.schedule(event{at: e.At.D(), kind: evCrash, node: int32(*e.Crash)})
		case e.Leave != nil:
			r.schedule(event{at: e.At.D(), kind: evLeave, node: int32(*e.Leave)})
		case e.Restart != nil:
			r.schedule(event{at: e.At.D(), kind: evRestart, node: int32(*e.Restart)})
		case e.Partition != nil:
			r.parts = append(r.parts, e.Partition)
			r.schedule(event{at: e.At.D(), kind: evCut, vis: int32(len(r.parts) - 1)})
			r.schedule(event{at: e.At.D() + e.Partition.For.D(), kind: evHeal, vis: int32(len(r.parts) - 1)})
		}
	}
	if sc.Visitors.Arrival.SpoofBuckets {
		r.seedQueue()
	}
	r.schedule(event{at: 0, kind: evSample})
	return r, nil
}

func (r *run) schedule(e event) {
	e.seq = r.seq
	r.seq++
	r.q.push(e)
}

// loop runs the arrivals and events before r.end, in time order (an event
// before an arrival at the same time). What lies beyond stays queued, so a
// test may move r.end on and loop again.
func (r *run) loop() {
	for {
		haveArr := r.next < len(r.arr) && r.arr[r.next].at < r.end
		haveEv := len(r.q) > 0 && r.q[0].at < r.end
		if !haveArr && !haveEv {
			break
		}
		if haveArr && (!haveEv || r.arr[r.next].at < r.q[0].at) {
			i := r.next
			r.next++
			r.now = r.arr[i].at
			r.arrive(i)
			continue
		}
		e := r.q.pop()
		r.now = e.at
		r.handle(e)
	}
	r.now = r.end
}

func (r *run) handle(e event) {
	var n *node
	switch e.kind {
	case evRequest, evSample, evCut, evCutDetect, evHeal:
	default:
		n = r.nodes[e.node]
	}
	switch e.kind {
	case evRequest:
		r.request(int(e.vis))
	case evDeliver:
		r.deliver(n, e.msg)
	case evFlush:
		r.flush(n)
	case evTick:
		if n.up {
			r.recompute(n)
			r.schedule(event{at: r.now + r.sc.Nodes.RecomputeEvery.D(), kind: evTick, node: e.node})
		}
	case evKick:
		n.kicked = false
		if n.up {
			r.recompute(n)
		}
	case evPushPull:
		if n.up {
			r.pushPull(n)
			r.schedule(event{at: r.now + r.sc.Gossip.PushPull.D(), kind: evPushPull, node: e.node})
		}
	case evCrash:
		r.crash(n)
	case evDetect:
		// memberlist declares the node dead: the others stop counting it
		// live (but keep expecting it, see expectedMembers). A node that
		// restarted before it was noticed is live again.
		if n.up {
			break
		}
		for _, o := range r.nodes {
			if o.up {
				o.setSees(n.id, false, r.now)
			}
		}
	case evSample:
		r.rec.sample()
		r.schedule(event{at: r.now + time.Second, kind: evSample})
	case evLeave:
		r.leave(n)
	case evLeftNotice:
		if n.up && !r.separated(n.id, int(e.vis)) {
			n.markLeft(int(e.vis), r.now)
		}
	case evCut:
		r.startCut(int(e.vis))
	case evCutDetect:
		if r.cut == int(e.vis)+1 {
			for _, o := range r.nodes {
				if !o.up {
					continue
				}
				for j := range r.nodes {
					if r.separated(o.id, j) {
						o.setSees(j, false, r.now)
					}
				}
			}
		}
	case evHeal:
		r.heal(int(e.vis))
	case evRejoin:
		r.rejoin(n, int(e.vis))
	case evRestart:
		r.restart(n)
	case evBeat:
		if e.vis == n.beatLoop {
			r.beatIfIdle(n)
		}
	case evCarry:
		r.carry(n)
		r.schedule(event{at: r.now + r.wan.Round.D(), kind: evCarry, node: e.node})
	case evFigures:
		r.figures(n, e.msg)
	}
}

// gossipRetention is how many minutes of counters a gossip node keeps by
// default (gossip.DefaultRetention).
const gossipRetention = 35

// recompute computes node n's next allocation (policy.Chain.Step): Room.Nodes
// is the node's expected members and Room.Lag the lag it assumes; while it
// counts fewer live, it runs on the reachable replicas' entries and its part
// of the limits (policy.Sight), unless the scenario's cut_handling is whole.
func (r *run) recompute(n *node) {
	now := r.clock(n, r.now)
	minute := now.Unix() / 60
	if h := minute - r.retain; h > n.horizon {
		n.state.Prune(h)
		n.horizon = h
	}
	pol := r.room
	// The nodes the Anywhere part is divided between: the node's expected
	// members and the other data centers' nodes (crdt's count, the one a
	// gossip node gives), each of those data centers one replica of the
	// snapshot.
	others := n.state.OtherDatacenterNodes()
	pol.Nodes = n.expectedMembers(r.now) + others
	pol.Lag = r.lagFor(n)
	if pol.Lag < r.configuredLag() {
		r.counts.MeasuredLag++
	}
	n.alloc, n.chain = n.chain.Step(pol, policy.Sight{
		Live:      n.live + others,
		Reachable: func() func(crdt.ReplicaID) bool { return n.reach },
		Snapshot: func(keep func(crdt.ReplicaID) bool) crdt.RoomSnapshot {
			if keep == nil {
				return n.state.Snapshot(roomName, now.Unix(), r.win)
			}
			return n.state.SnapshotOf(roomName, now.Unix(), r.win, keep)
		},
		Whole: r.sc.Nodes.CutHandling == CutWhole,
	}, now)
	n.allocMinute = minute
	n.lastAlloc = r.now
	r.counts.Allocations++
}

// add records one increment of the node's own cell and queues the entry for
// gossip, as gossip.Node.Add does.
func (r *run) add(n *node, k crdt.Key) {
	e, ok := n.state.Add(k, n.replica, 1)
	if !ok {
		return
	}
	n.markCarry(k)
	if len(n.outbox) == 0 {
		// The stamp of the message: its oldest change (gossip.Node.Add).
		n.outAt = n.local(r.now).UnixMilli()
	}
	if i, ok := n.outIdx[k]; ok {
		n.outbox[i] = e
	} else {
		n.outIdx[k] = len(n.outbox)
		n.outbox = append(n.outbox, e)
	}
	if !n.flushAt {
		n.flushAt = true
		r.schedule(event{at: r.now + r.sc.Gossip.Batch.D(), kind: evFlush, node: int32(n.id)})
	}
}

func (r *run) gossipDelay() time.Duration {
	g := r.sc.Gossip
	d := g.Delay.D()
	if g.Jitter > 0 {
		d += time.Duration((2*r.rng.Float64() - 1) * float64(g.Jitter))
	}
	return max(d, 0)
}

// flush ships the node's gathered entries to every other node it counts
// live (memberlist gossips to its members), each copy delayed and possibly
// lost on its own; a copy across a partition is lost on delivery.
func (r *run) flush(n *node) {
	n.flushAt = false
	if !n.up || len(n.outbox) == 0 {
		n.outbox, n.outIdx = n.outbox[:0], map[crdt.Key]int{}
		return
	}
	m := &message{entries: n.outbox, from: int32(n.id), at: n.outAt}
	n.outbox, n.outIdx = nil, map[crdt.Key]int{}
	n.lastOwn, n.ownSet = n.local(r.now), true
	for _, j := range n.peers {
		o := r.nodes[j]
		if !o.up || !n.sees[o.id] {
			continue
		}
		r.counts.Messages++
		if r.sc.Gossip.Loss > 0 && r.rng.Float64() < r.sc.Gossip.Loss {
			r.counts.MessagesLost++
			continue
		}
		r.schedule(event{at: r.now + r.gossipDelay(), kind: evDeliver, node: int32(o.id), msg: m})
	}
}

// deliver merges a message; a change kicks the allocation loop, which
// recomputes at once or, within the throttle, as soon as it may. A message
// across a partition is lost, in flight or not.
func (r *run) deliver(n *node, m *message) {
	if !n.up {
		return
	}
	if r.separated(int(m.from), n.id) {
		r.counts.MessagesCut++
		return
	}
	if m.beat {
		r.onBeat(n, m)
		return
	}
	changed := false
	for _, e := range m.entries {
		if n.state.Apply(e) {
			changed = true
			n.markCarry(e.Key)
		}
	}
	if m.figs != nil && !n.state.MergeAt(*m.figs, r.clock(n, r.now).UnixMilli()).Empty() {
		changed = true
	}
	if changed && !m.pushPull && !m.rejoin {
		r.noteDelay(n, int(m.from), m.at)
	}
	if m.rejoin {
		// The join's push-pull carries the membership: the state first,
		// then the peer counts live, so its column is never read stale as
		// live. What the peer knew of clean leaves comes with it (the
		// NodeInfo registers).
		from := r.nodes[m.from]
		for j, gone := range from.left {
			if gone {
				n.markLeft(j, r.now)
			}
		}
		if n.left[from.id] {
			// A node that left and started again: a new incarnation,
			// expected again.
			n.left[from.id], n.expUntil = false, -1
		}
		n.setSees(from.id, true, r.now)
		changed = true
	}
	if m.pushPull {
		// The answer of push-pull: our whole state back to the initiator.
		r.counts.PushPulls++
		back := r.fullMessage(n)
		back.rejoin = m.rejoin
		r.schedule(event{at: r.now + r.gossipDelay(), kind: evDeliver, node: m.from, msg: back})
	}
	if changed {
		r.kick(n)
	}
}

// kick asks node n's allocation loop to recompute after a change: at once,
// or within the throttle as soon as it may.
func (r *run) kick(n *node) {
	if n.kicked {
		return
	}
	n.kicked = true
	at := max(r.now, n.lastAlloc+r.sc.Nodes.RecomputeThrottle.D())
	r.schedule(event{at: at, kind: evKick, node: int32(n.id)})
}

// pushPull starts a full-state exchange with one random peer among those
// the node counts live. It runs over TCP in memberlist, so it is never lost
// (but fails across a partition, or with a peer that crashed).
func (r *run) pushPull(n *node) {
	var peers []int
	for _, j := range n.peers {
		if n.sees[j] {
			peers = append(peers, j)
		}
	}
	if len(peers) == 0 {
		return
	}
	p := peers[r.rng.IntN(len(peers))]
	m := r.fullMessage(n)
	m.pushPull = true
	r.schedule(event{at: r.now + r.gossipDelay(), kind: evDeliver, node: int32(p), msg: m})
}

func (r *run) crash(n *node) {
	if !n.up {
		return
	}
	n.up = false
	r.live[n.id] = false
	n.outbox, n.outIdx = nil, map[crdt.Key]int{}
	r.rec.crashes = append(r.rec.crashes, r.now)
	r.schedule(event{at: r.now + r.sc.Nodes.FailureDetection.D(), kind: evDetect, node: int32(n.id)})
}

// leave is gossip.Node.Close: the node ships its last counts and announces
// its leave (over TCP to every peer: not lost, but not across a partition),
// then stops. A peer that hears the announcement stops expecting it at
// once; one that does not notices it gone after failure detection, like a
// crash, and learns of the leave when it rejoins the node's side.
func (r *run) leave(n *node) {
	if !n.up {
		return
	}
	r.flush(n)
	n.up = false
	r.live[n.id] = false
	r.rec.leaves = append(r.rec.leaves, r.now)
	for _, o := range r.nodes {
		if o.up && n.sees[o.id] {
			r.schedule(event{at: r.now + r.gossipDelay(), kind: evLeftNotice, node: int32(o.id), vis: int32(n.id)})
		}
	}
	r.schedule(event{at: r.now + r.sc.Nodes.FailureDetection.D(), kind: evDetect, node: int32(n.id)})
}

// restart starts a node that crashed or left as a new process: a new
// incarnation (a new replica, under the same name, so that its earlier
// columns still count as its own), an empty state and no allocation ledger.
// It expects the ring it is configured with (its seeds: every node) and
// counts only itself live until it has joined each live peer by a
// full-state exchange, which it starts at once.
func (r *run) restart(n *node) {
	if n.up {
		return
	}
	r.retired = append(r.retired, n.replica)
	r.retiredOf = append(r.retiredOf, n.id)
	n.replica = crdt.NewReplicaID(fmt.Sprintf("node-%d", n.id), uint64(len(r.retired)+1))
	r.replicas[n.id] = n.replica
	r.byReplica[n.replica] = n.id
	n.state = crdt.New()
	n.chain, n.alloc, n.allocMinute, n.kicked, n.horizon = policy.NewChain(n.replica, r.strategy), nil, 0, false, 0
	n.outbox, n.outIdx, n.flushAt = nil, map[crdt.Key]int{}, false
	// A new process: nothing measured, nothing heard.
	n.delays, n.beats = make([]crdt.Delays, len(r.nodes)), make([]int64, len(r.nodes))
	n.lagSet, n.ownSet = false, false
	all := make([]int32, len(r.nodes))
	for j := range n.sees {
		n.sees[j], n.left[j] = j == n.id, false
		all[j] = int32(j)
	}
	n.live = 1
	n.rings = []ring{{members: all, until: r.now}}
	n.expUntil = -1
	n.up = true
	r.live[n.id] = true
	r.rec.restarts = append(r.rec.restarts, r.now)
	r.recompute(n)
	r.schedule(event{at: r.now + r.sc.Nodes.RecomputeEvery.D(), kind: evTick, node: int32(n.id)})
	if pp := r.sc.Gossip.PushPull.D(); pp > 0 && len(r.nodes) > 1 {
		r.schedule(event{at: r.now + pp, kind: evPushPull, node: int32(n.id)})
	}
	r.startBeats(n)
	for _, o := range r.nodes {
		if o != n && o.up {
			r.rejoin(n, o.id)
		}
	}
}

// nodeOf returns the node of a replica, or -1. A snapshot of a cut ring
// asks for every count of every cell, so a short list is scanned rather
// than hashed.
func (r *run) nodeOf(rep crdt.ReplicaID) int {
	if len(r.replicas) <= 32 {
		for j, x := range r.replicas {
			if x == rep {
				return j
			}
		}
		for k, x := range r.retired {
			if x == rep {
				return r.retiredOf[k]
			}
		}
		return -1
	}
	if j, ok := r.byReplica[rep]; ok {
		return j
	}
	return -1
}

// separated reports whether the partition in force keeps nodes a and b
// apart.
func (r *run) separated(a, b int) bool { return r.group != nil && r.group[a] != r.group[b] }

// startCut puts partition p in force: from now on, gossip between its
// groups is lost; after failure detection every node counts only its own
// group live.
func (r *run) startCut(p int) {
	pt := r.parts[p]
	r.group = make([]int, len(r.nodes))
	for g, grp := range pt.Groups {
		for _, id := range grp {
			r.group[id] = g
		}
	}
	r.cut = p + 1
	r.rec.cuts = append(r.rec.cuts, cutSpan{from: r.now, to: r.now + pt.For.D(), groups: slices.Clone(r.group)})
	r.schedule(event{at: r.now + r.sc.Nodes.FailureDetection.D(), kind: evCutDetect, vis: int32(p)})
}

// heal ends partition p: messages flow again, and every node rejoins the
// peers it stopped counting live, as the gossip join loop does while it
// sees fewer members than it expects (it retries every second).
func (r *run) heal(p int) {
	if r.cut != p+1 {
		return
	}
	r.group, r.cut = nil, 0
	for _, n := range r.nodes {
		if !n.up {
			continue
		}
		for _, o := range r.nodes {
			if o != n && o.up && !n.sees[o.id] && !n.left[o.id] {
				r.schedule(event{at: r.now + time.Duration(r.rng.Float64()*float64(time.Second)), kind: evRejoin, node: int32(n.id), vis: int32(o.id)})
			}
		}
	}
}

// rejoin is one join after a heal: a push-pull of the whole state with
// peer, after which each counts the other live (see deliver).
func (r *run) rejoin(n *node, peer int) {
	if !n.up || n.sees[peer] || !r.nodes[peer].up {
		return
	}
	r.schedule(event{at: r.now + r.gossipDelay(), kind: evDeliver, node: int32(peer),
		msg: &message{entries: n.state.Full().Entries, from: int32(n.id), pushPull: true, rejoin: true}})
}

// seedQueue sets up the experiment of Cloudflare's "Waiting Room: Random
// Queueing and Custom Web/Mobile Apps": "we spoofed the bucketIds
// of the users and let them all join the Waiting Room at once". Every
// visitor already holds a queued token for the bucket of their claimed
// arrival minute and is counted as waiting at their node, and every node
// has merged those counts, as if the queue had formed before t = 0 with an
// empty origin. (Without the counts, 10,000 queued tokens that no node has
// counted would look like token replay: a bucket covered by its counted
// visitors would admit uncounted ones too.)
func (r *run) seedQueue() {
	for i := range r.vis {
		v := &r.vis[i]
		a := &r.arr[i]
		w := a.weights
		if w == nil {
			w = r.sc.weightsAt(0)
		}
		v.node = pickNode(w, r.live, a.pick)
		n := r.nodes[v.node]
		now := r.clock(n, 0)
		// The spoofed token claims its arrival minute, and when in it.
		var incs [3]crdt.Inc
		k, tok := policy.Count(incs[:0], r.room, roomName, policy.NewCounting(Epoch.Add(a.claimed)), policy.Event{Step: policy.StepSeed, At: now.Unix()})
		for _, in := range k {
			n.state.Add(in.Key, n.replica, in.N)
		}
		v.tok, v.hasTok = tok, true
	}
	for _, n := range r.nodes {
		for _, o := range r.nodes {
			if o != n {
				n.state.Merge(o.state.Full())
			}
		}
	}
	for _, n := range r.nodes {
		r.recompute(n)
	}
}

// arrive routes a new visitor to a node by the arrival split and makes
// their first request.
func (r *run) arrive(i int) {
	a := &r.arr[i]
	v := &r.vis[i]
	w := a.weights
	if w == nil {
		w = r.sc.weightsAt(r.now)
	}
	if !v.hasTok { // a spoofed visitor was placed by seedQueue
		v.node = pickNode(w, r.live, a.pick)
	}
	if v.node < 0 || !r.live[v.node] {
		return
	}
	r.counts.Visitors++
	r.request(i)
}

// request is one request of visitor i, taken through the steps of every
// request (policy.TurnOf, then policy.Request for one that is decided on):
// what it counts is the counter rule's (policy.Count).
func (r *run) request(i int) {
	v := &r.vis[i]
	if v.st == vsGone || r.outOfPatience(v) {
		return
	}
	if !r.live[v.node] {
		// Their node is gone: the next request reaches another one, with
		// the same cookie.
		v.node = pickNode(r.sc.weightsAt(r.now), r.live, r.rng.Float64())
		if v.node < 0 {
			return
		}
		r.counts.Rerouted++
	}
	n := r.nodes[v.node]
	now := r.clock(n, r.now)
	nowSec := now.Unix()
	nowMin := nowSec / 60
	if !v.held {
		r.counts.Requests++
	}
	if n.allocMinute != nowMin {
		// A node allocates again when the minute has turned, so a budget is
		// never spent in a minute it was not computed for.
		r.recompute(n)
	}
	fresh := !v.hasTok || nowSec > v.tok.ExpiresAt
	if fresh && v.inSession {
		// The session lapsed between two requests: it ended at its last
		// request plus session_duration.
		r.rec.endSession(v)
	}
	if fresh {
		// A lapsed token takes its priority group with it.
		v.group = 0
	}
	if g := v.arr.group; g > 0 && !v.coded {
		// The first request presents the visitor's priority code: a use
		// is counted, and the token carries the group from now on.
		v.coded, v.group = true, g
		r.count(n, v, policy.Event{Step: policy.StepCodeUse, Group: r.groups[g-1].Name}, nowSec)
	}

	switch policy.TurnOf(v.tok, fresh, false, nowSec) {
	case policy.TurnSession:
		// An admitted visitor within its session: to the origin. Its
		// session's count follows its expiry.
		r.count(n, v, policy.Event{Step: policy.StepSession}, nowSec)
		v.lastReq = r.now
		r.browse(i)
		return
	case policy.TurnEarly:
		// Earlier than the token's refresh interval: the page again, no
		// attempt. The page says when the next check-in will count.
		r.counts.EarlyCheckIns++
		r.checkInAfter(i, time.Duration(policy.NextCheckIn(v.tok, nowSec))*time.Second)
		return
	}
	r.attempt(i, n, fresh, now)
}

// outOfPatience reports whether queued visitor v gives up now, and if so
// marks it gone.
func (r *run) outOfPatience(v *visitor) bool {
	if v.st == vsQueued && v.arr.patience > 0 && v.firstQueued >= 0 && r.now-v.firstQueued >= v.arr.patience {
		// Out of patience: the visitor closes the tab. Their waiting count
		// stays in the state until the queued cookie's window passes.
		v.st = vsGone
		v.abandoned = r.now
		r.counts.Abandoned++
		return true
	}
	return false
}

// attempt is a request that asks the allocation: visitor i, new (fresh) or
// with a queued cookie, at node n, admitted, queued or turned away.
func (r *run) attempt(i int, n *node, fresh bool, now time.Time) {
	v := &r.vis[i]
	nowSec := now.Unix()
	tok, out, held := r.decide(i, n, fresh, now)
	if held {
		return
	}
	if v.arr.cookieless && (out == policy.Queue || out == policy.Reject) {
		// A client that keeps no cookie would be a new visitor at its next
		// request; a cookieless flood's never comes. Nobody waits.
		r.counts.Cookieless++
		v.st = vsGone
		return
	}
	switch out {
	case policy.Admit, policy.Bypass:
		if out == policy.Bypass {
			// Passed through uncounted: the visitor browses as if admitted.
			tok.AcceptedAt, tok.LastCheckIn, tok.ExpiresAt = nowSec, nowSec, nowSec+int64(r.session/time.Second)
		}
		r.admitted(i, tok, fresh)
	case policy.Queue:
		r.queued(i, n, tok, fresh)
	case policy.Reject:
		r.rejected(i, tok)
	}
}

// decide asks node n's allocation about visitor i (policy.Request) and
// counts the decision by the counter rule; it returns the visitor's cookie
// after it (before it for a bypass) and the outcome, or held when the
// request is held to be decided again (nothing counted): the same request
// again after the allocation loop's shortest period, on whatever allocation
// the node has then.
func (r *run) decide(i int, n *node, fresh bool, now time.Time) (tok policy.Counting, out policy.Outcome, held bool) {
	v := &r.vis[i]
	tok = v.tok
	if fresh {
		tok = policy.NewCounting(now)
		if v.held {
			tok = policy.HeldArrival(v.heldSince, now)
		}
	}
	if !v.held {
		r.counts.Attempts++
	}
	q := policy.Request{Fresh: fresh, Before: tok, At: now}
	if v.held {
		q.HeldSince = v.heldSince
	}
	if v.group > 0 {
		q.Group = r.groups[v.group-1]
		if q.Group.NewUsersPerMinute > 0 {
			q.GroupAdmitted = n.state.Value(policy.GroupAdmittedKey(roomName, q.Group.Name, now.Unix()/60))
		}
	}
	d := q.Decide(n.alloc)
	if d.Hold {
		if !v.held {
			r.counts.Held++
			v.held, v.heldSince = true, now
		}
		r.schedule(event{at: r.now + policy.AllocationFollow, kind: evRequest, vis: int32(i)})
		return tok, d.Outcome, true
	}
	v.held = false
	if r.debug != nil {
		r.debug(r, n, v, d.Outcome, d.Bucket(), fresh)
	}
	var incs [12]crdt.Inc
	k, after := d.Count(incs[:0], n.alloc, r.room, roomName, r.rng.Float64)
	for _, in := range k {
		r.add(n, in.Key)
	}
	if d.Outcome != policy.Bypass {
		tok = after
	}
	if d.Outcome == policy.Admit && v.group > 0 {
		r.rec.groupAdmit(v.group, d.Ahead)
	}
	return tok, d.Outcome, false
}

// admitted lets visitor i in with cookie tok: a session begins and it
// browses.
func (r *run) admitted(i int, tok policy.Counting, fresh bool) {
	v := &r.vis[i]
	v.tok, v.hasTok = tok, true
	r.rec.admit(i, tok.Bucket, fresh)
	v.sessionStart, v.lastReq, v.inSession, v.sessionNode = r.now, r.now, true, int32(v.node)
	if v.admitted < 0 {
		v.admitted = r.now
		v.browseUntil = r.now + v.arr.onSite
	}
	v.st = vsBrowsing
	r.browse(i)
}

// queued queues visitor i at node n with cookie tok until its next
// check-in, noting what its page shows: the estimate and the place in line,
// on every page, the first included, as truth.JudgeShown judges them.
func (r *run) queued(i int, n *node, tok policy.Counting, fresh bool) {
	v := &r.vis[i]
	v.tok, v.hasTok = tok, true
	if v.firstQueued < 0 && v.admitted < 0 {
		v.firstQueued = r.now
		v.bucket = tok.Bucket
	}
	v.st = vsQueued
	r.rec.queue(i, tok.Bucket, fresh)
	est := n.alloc.EstimateAt(tok.Bucket, tok.Arrived)
	if fresh {
		est = est.ForNewVisitor()
	}
	r.rec.shown = append(r.rec.shown, truth.Shown{
		At: r.now, Visitor: i, Arrived: r.rec.try[i], First: fresh,
		WaitKnown: est.WaitTimeKnown, Wait: time.Duration(est.WaitSeconds50) * time.Second,
		Wait25: time.Duration(est.WaitSeconds25) * time.Second, Wait75: time.Duration(est.WaitSeconds75) * time.Second,
		Random:        r.room.QueueingMethod == policy.Random,
		PositionKnown: est.PositionKnown, Position: est.Position,
	})
	r.checkInAfter(i, time.Duration(tok.RefreshInterval)*time.Second)
}

// rejected turns visitor i away: gone for good in a room that rejects, or
// back to the page later when the queue is full.
func (r *run) rejected(i int, tok policy.Counting) {
	v := &r.vis[i]
	if v.hasTok {
		// The node remembers that the visitor no longer waits (its table
		// of counted tokens); the visitor keeps its cookie.
		v.tok = tok
	}
	r.counts.Rejected++
	if r.room.QueueingMethod == policy.MethodReject {
		v.st = vsGone
		return
	}
	// A full queue: the page again, no new cookie, after the refresh
	// interval the decision gave.
	r.checkInAfter(i, time.Duration(tok.RefreshInterval)*time.Second)
}

// count applies the counter rule to visitor v's state at node n and records
// the increments.
func (r *run) count(n *node, v *visitor, ev policy.Event, nowSec int64) {
	ev.At = nowSec
	var incs [12]crdt.Inc
	k, after := policy.Count(incs[:0], r.room, roomName, v.tok, ev)
	for _, in := range k {
		r.add(n, in.Key)
	}
	v.tok = after
}

// checkInAfter schedules a queued visitor's next check-in: after the page's
// Refresh interval plus some latency, or sooner for a refresh spammer.
func (r *run) checkInAfter(i int, refresh time.Duration) {
	v := &r.vis[i]
	if v.arr.spam {
		refresh = min(refresh, r.sc.Visitors.Refresh.SpamInterval.D())
	}
	at := r.now + refresh + r.sc.Visitors.Refresh.Latency.draw(r.rng)
	r.schedule(event{at: at, kind: evRequest, vis: int32(i)})
}

// browse follows a request that reached the origin (the admission's own or
// a later one): the truth sees it, and the visitor's next request is
// scheduled while their time on the origin lasts; after the last one their
// session runs out session_duration later.
func (r *run) browse(i int) {
	v := &r.vis[i]
	r.rec.origin(i)
	next := r.now + max(r.sc.Visitors.RequestInterval.draw(r.rng), 100*time.Millisecond)
	if next >= v.browseUntil {
		r.rec.endSession(v)
		v.st = vsGone
		return
	}
	r.schedule(event{at: next, kind: evRequest, vis: int32(i)})
}
