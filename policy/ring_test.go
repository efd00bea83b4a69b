package policy_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/policy"
)

// ring is the one model of several waitroom nodes in front of one origin
// that the policy's cluster tests judge by: every node keeps its own crdt
// state and allocation chain (policy.Chain), sees its own counters at once
// and the others' one gossip delay late (or, while the ring is cut, only its
// own part's), and steps its chain every step, as a node does when the
// merged state changes. Visitors keep their home node, as cookie-keeping
// visitors of one region do, come back for the cookie check's proof
// policy.ProofRefresh after a first queue page, and check in every refresh
// interval after that (the one the decision gives them) until admitted; let
// in, they browse the origin for a while when the ring has browse set, each
// page renewing the session. Every request takes a node's steps
// (policy.Request) and counts what the counter rule (policy.Count) says.
//
// What it reports is the truth as the origin sees it, by wall-clock time:
// admissions per wall-clock minute, sessions active from the admission
// until session_duration after the visitor's last page, the
// utilisation when the first visitor is queued, FIFO inversions and how long
// open slots stayed free while someone waited.
type ring struct {
	room   policy.Room
	parts  [][]int // node indexes of each part
	ids    []crdt.ReplicaID
	states []*crdt.State
	chains []policy.Chain
	allocs []*policy.Allocation // each chain's latest
	start  time.Time
	step   time.Duration // 0: one second
	delay  time.Duration // gossip delay, a whole number of steps; 0: at the end of each step
	// lags, when set, is the lag each node assumes (Room.Lag), as each
	// node derives its own from the delays it measures; nil: room.Lag at
	// every node.
	lags   []time.Duration
	cutAt  time.Duration // from start; the cut lasts to the end (0 with one part: never)
	whole  bool          // read the whole snapshot while cut (what nodes did before Side; Sight.Whole)
	noHold bool          // queue at once where a node would hold the request (Allocation.Held)
	// strategy is how the nodes divide the slots (Continuous unless set).
	strategy policy.Strategy
	// warm, when set, starts every node's chain that long before start,
	// as nodes that have been running; prior is how many visitors each
	// node let in in each of the two minutes before start (seedPrior).
	warm  time.Duration
	prior int
	// leave: a visitor not let in at its first request goes away at once
	// and is forgotten (nobody queues), so the new-user slots are all there
	// is to divide.
	leave bool
	// newPer says how many new visitors reach a node in the step that
	// begins at at.
	newPer func(node int, at time.Duration) int
	// browse, when set, says how long the kth visitor stays on the origin
	// once let in and how often it requests a page meanwhile, each request
	// renewing its session; nil: one request, at the admission.
	browse   func(k int) (stay, every time.Duration)
	visitors []*ringVisitor
	sent     [][]*crdt.State // per step still in flight, per node: its state as sent

	admitted  map[int64]int   // truth: admissions per wall-clock minute, all nodes
	byPart    []map[int64]int // per part
	byNode    []int           // admissions of the whole run, per node
	worstLive float64         // the most active sessions at any step, as the policy counts them
	truth     ringTruth
}

type ringVisitor struct {
	home       int
	arrived    time.Time
	bucket     int64
	tok        policy.Counting // zero before the first request
	next       time.Time
	admitted   bool
	admittedAt time.Time
	lastPage   time.Time     // its latest request to the origin
	stay       time.Duration // how long it browses once let in
	every      time.Duration // between its pages
	checkIns   []time.Time   // its requests answered with the queue page
	heldSince  time.Time     // while its request is held (Allocation.Held): since when
}

// ringTruth is what the origin saw.
type ringTruth struct {
	firstQueue     time.Time // zero while nobody was queued
	utilAtQueue    float64   // utilisation when the first visitor was queued
	peakActive     int       // sessions active at once
	peakPerMinute  int       // admissions in one wall-clock minute
	admissions     int
	inversions     int           // admissions while an earlier minute's visitor waited, let in > 2 s later
	longestFree    time.Duration // the longest one slot stayed free while someone queued over a refresh interval ago waited
	slots          []time.Time   // the free slots, oldest first: when each one's wait began (zero: nobody waits)
	queued, waited int           // queue outcomes; visitors who were queued at least once
	held           int           // decisions held for the next allocation instead of queued
	pairs          []string      // each inversion: who went before whom, where and when
}

const ringRoom = "shop"

func newRing(room policy.Room, sizes ...int) *ring {
	c := &ring{room: room, start: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)}
	i := 0
	for p, size := range sizes {
		var part []int
		for range size {
			part = append(part, i)
			c.ids = append(c.ids, crdt.NewReplicaID(fmt.Sprintf("part%d-node%d", p, i), 1))
			c.states = append(c.states, crdt.New())
			i++
		}
		c.parts = append(c.parts, part)
	}
	return c
}

func (c *ring) partOf(node int) int {
	for p, ns := range c.parts {
		if slices.Contains(ns, node) {
			return p
		}
	}
	panic("node in no part")
}

// gossip delivers to every node the states that reachable nodes sent one
// delay ago (at once when there is no delay): within a part while the ring
// is cut, across the whole ring before.
func (c *ring) gossip(cut bool) {
	snapshot := make([]*crdt.State, len(c.states))
	for i, s := range c.states {
		snapshot[i] = s.Clone()
	}
	c.sent = append(c.sent, snapshot)
	// What a node sent at the end of a step is read from the step that is
	// one delay after that one's start: no admission stays unseen longer
	// than the delay (a step, at least).
	lagSteps := max(1, int(c.delay/c.stepSize()))
	if len(c.sent) < lagSteps {
		return
	}
	arrived := c.sent[0]
	c.sent = c.sent[1:]
	for i := range c.states {
		for j, s := range arrived {
			if i != j && (!cut || c.partOf(i) == c.partOf(j)) {
				c.states[i].MergeState(s)
			}
		}
	}
}

func (c *ring) stepSize() time.Duration {
	if c.step <= 0 {
		return time.Second
	}
	return c.step
}

func (c *ring) run(t *testing.T, d time.Duration) {
	t.Helper()
	n := len(c.ids)
	c.room.Nodes = n
	if c.room.Lag == 0 {
		c.room.Lag = time.Second
	}
	c.admitted = map[int64]int{}
	c.byPart = make([]map[int64]int, len(c.parts))
	for p := range c.byPart {
		c.byPart[p] = map[int64]int{}
	}
	c.allocs = make([]*policy.Allocation, n)
	c.chains = make([]policy.Chain, n)
	c.byNode = make([]int, n)
	for i, id := range c.ids {
		c.chains[i] = policy.NewChain(id, c.strategy)
	}
	c.seedPrior()
	if c.warm > 0 {
		for i := range n {
			c.allocate(i, c.start.Add(-c.warm), false)
		}
	}
	for step := time.Duration(0); step < d; step += c.stepSize() {
		now := c.start.Add(step)
		m := now.Unix() / 60
		cut := len(c.parts) > 1 && step >= c.cutAt
		for i := range n {
			c.allocate(i, now, cut)
			for range c.newPer(i, step) {
				v := &ringVisitor{home: i, arrived: now, bucket: m, next: now}
				if c.leave {
					// Decided at once, and kept only if let in.
					if c.visit(i, len(c.visitors), v, now, m); v.admitted {
						c.visitors = append(c.visitors, v)
					}
					continue
				}
				c.visitors = append(c.visitors, v)
			}
			for k, v := range c.visitors {
				if v.home != i || now.Before(v.next) {
					continue
				}
				if v.admitted {
					c.page(i, v, now)
					continue
				}
				c.visit(i, k, v, now, m)
			}
		}
		c.gossip(cut)
		c.worstLive = max(c.worstLive, c.liveAt(now))
		c.observe(now)
	}
	c.judge()
}

// allocate steps node i's allocation chain at now, from its own state:
// while the ring is cut, from its part's replicas and its part of the
// limits (unless whole is set).
func (c *ring) allocate(i int, now time.Time, cut bool) {
	part := c.parts[c.partOf(i)]
	room := c.room
	if c.lags != nil {
		room.Lag = c.lags[i]
	}
	live := len(c.ids)
	if cut {
		live = len(part)
	}
	w := room.Windows()
	c.allocs[i], c.chains[i] = c.chains[i].Step(room, policy.Sight{
		Live: live,
		Reachable: func() func(crdt.ReplicaID) bool {
			return func(r crdt.ReplicaID) bool {
				return slices.ContainsFunc(part, func(j int) bool { return c.ids[j] == r })
			}
		},
		Snapshot: func(keep func(crdt.ReplicaID) bool) crdt.RoomSnapshot {
			if keep == nil {
				return c.states[i].Snapshot(ringRoom, now.Unix(), w)
			}
			return c.states[i].SnapshotOf(ringRoom, now.Unix(), w, keep)
		},
		Whole: c.whole,
	}, now)
}

// seedPrior counts, at every node, c.prior visitors let in at their first
// request in each of the two minutes before the start, as the counter rule
// counts them, and gives every node every other's counts: the history of a
// ring that has been admitting at that pace.
func (c *ring) seedPrior() {
	if c.prior == 0 {
		return
	}
	m := c.start.Unix() / 60
	for i := range c.states {
		for _, minute := range []int64{m - 2, m - 1} {
			for range c.prior {
				incs, _ := policy.Count(nil, c.room, ringRoom, policy.Counting{}, policy.Event{Step: policy.StepDecided, Fresh: true, Outcome: policy.Admit, At: minute * 60})
				for _, in := range incs {
					c.states[i].Add(in.Key, c.ids[i], in.N)
				}
			}
		}
	}
	for i := range c.states {
		for j := range c.states {
			if i != j {
				c.states[i].MergeState(c.states[j])
			}
		}
	}
}

func (c *ring) visit(i, k int, v *ringVisitor, now time.Time, m int64) {
	fresh := v.tok == policy.Counting{}
	before := v.tok
	if fresh {
		before = policy.NewCounting(now)
	}
	var a policy.Decider = c.allocs[i]
	if c.noHold {
		a = neverHolds{c.allocs[i]}
	}
	d := policy.Request{Fresh: fresh, Before: before, At: now, HeldSince: v.heldSince}.Decide(a)
	if d.Hold {
		// Queued only for the slots the node keeps back for what the
		// others may have admitted unheard: the node holds the request and
		// decides again on its next allocation, the next step here.
		if v.heldSince.IsZero() {
			v.heldSince = now
		}
		v.next = now.Add(c.stepSize())
		c.truth.held++
		return
	}
	v.heldSince = time.Time{}
	out := d.Outcome
	// The page's refresh is jittered per visitor (spread by k here).
	incs, tok := d.Count(nil, a, c.room, ringRoom, func() float64 { return float64(k*5%7) / 7 })
	for _, in := range incs {
		c.states[i].Add(in.Key, c.ids[i], in.N)
	}
	wasWaiting := v.tok.Waiting()
	v.tok = tok
	switch out {
	case policy.Admit:
		v.admitted, v.admittedAt, v.lastPage = true, now, now
		v.next = now.Add(gone)
		if c.browse != nil {
			v.stay, v.every = c.browse(k)
			v.next = now.Add(v.every)
		}
		c.admitted[m]++
		c.byPart[c.partOf(i)][m]++
		c.byNode[i]++
		c.truth.admissions++
	case policy.Queue:
		if c.truth.firstQueue.IsZero() {
			c.truth.firstQueue = now
			c.truth.utilAtQueue = c.utilisation(now)
		}
		c.truth.queued++
		if !wasWaiting {
			c.truth.waited++
		}
		// The page's refresh is the token's: the short proof interval on
		// a new visitor's first page, the jittered one after.
		v.next = now.Add(time.Duration(tok.RefreshInterval) * time.Second)
		v.checkIns = append(v.checkIns, now)
	}
}

// neverHolds is an allocation that holds nobody: a node as it was before it
// held requests (ring.noHold).
type neverHolds struct{ *policy.Allocation }

func (neverHolds) Held(policy.Visitor, time.Time) bool { return false }

// gone is how long until a visitor who has left the origin asks again:
// never, within any run (a century and more).
const gone = time.Duration(1 << 62)

// page is an admitted visitor's request to the origin while it browses:
// the counter rule renews its session.
func (c *ring) page(i int, v *ringVisitor, now time.Time) {
	if now.Sub(v.admittedAt) > v.stay {
		v.next = now.Add(gone)
		return
	}
	incs, tok := policy.Count(nil, c.room, ringRoom, v.tok, policy.Event{Step: policy.StepSession, At: now.Unix()})
	for _, in := range incs {
		c.states[i].Add(in.Key, c.ids[i], in.N)
	}
	v.tok, v.lastPage, v.next = tok, now, now.Add(v.every)
}

// activeAt is the true number of sessions active at now: admitted, and
// within session_duration of the visitor's last page.
func (c *ring) activeAt(now time.Time) int {
	session := time.Duration(c.room.Session()) * time.Minute
	n := 0
	for _, v := range c.visitors {
		if v.admitted && !v.admittedAt.After(now) && now.Sub(v.lastPage) < session {
			n++
		}
	}
	return n
}

// utilisation is the binding limit's use at now: active sessions over
// total_active_users or this wall-clock minute's admissions over
// new_users_per_minute, whichever is larger.
func (c *ring) utilisation(now time.Time) float64 {
	a := float64(c.activeAt(now)) / float64(c.room.TotalActiveUsers)
	m := float64(c.admitted[now.Unix()/60]) / float64(c.room.NewUsersPerMinute)
	return max(a, m)
}

// observe follows, at the end of each step, the peaks and how long an open
// slot has stayed free while someone waited.
func (c *ring) observe(now time.Time) {
	active := c.activeAt(now)
	c.truth.peakActive = max(c.truth.peakActive, active)
	c.truth.peakPerMinute = max(c.truth.peakPerMinute, c.admitted[now.Unix()/60])
	// Someone waits who was first queued more than a refresh interval ago:
	// a slot that opened since has had that visitor's check-in.
	waiting := false
	for _, v := range c.visitors {
		if !v.admitted && v.tok.Waiting() && len(v.checkIns) > 0 && now.Sub(v.checkIns[0]) > policy.DefaultCheckIn {
			waiting = true
			break
		}
	}
	// The free slots, oldest first, each with when its wait began (zero
	// while nobody waits); the oldest is taken first, as the fidelity
	// run's judge follows them.
	free := max(0, min(c.room.TotalActiveUsers-active, c.room.NewUsersPerMinute-c.admitted[now.Unix()/60]))
	waited := func(since time.Time) {
		if !since.IsZero() {
			c.truth.longestFree = max(c.truth.longestFree, now.Sub(since))
		}
	}
	if free < len(c.truth.slots) {
		for _, since := range c.truth.slots[:len(c.truth.slots)-free] {
			waited(since)
		}
		c.truth.slots = c.truth.slots[len(c.truth.slots)-free:]
	}
	for len(c.truth.slots) < free {
		c.truth.slots = append(c.truth.slots, time.Time{})
	}
	for i, since := range c.truth.slots {
		switch {
		case waiting && since.IsZero():
			c.truth.slots[i] = now
		case !waiting && !since.IsZero():
			waited(since)
			c.truth.slots[i] = time.Time{}
		}
	}
}

// judge counts the FIFO inversions: admissions while someone who arrived in
// an earlier wall-clock minute still waited and was let in more than 2 s
// later (or never, within the run).
func (c *ring) judge() {
	for _, v := range c.visitors {
		if !v.admitted {
			continue
		}
		for _, w := range c.visitors {
			if w.bucket >= v.bucket || w.arrived.After(v.admittedAt) {
				continue
			}
			if !w.admitted || w.admittedAt.Sub(v.admittedAt) > 2*time.Second {
				c.truth.inversions++
				c.truth.pairs = append(c.truth.pairs, c.pair(v, w))
				break
			}
		}
	}
}

// pair says who went before whom in an inversion: v let in before w.
func (c *ring) pair(v, w *ringVisitor) string {
	at := func(t time.Time) string { return t.Sub(c.start).String() }
	in := "never"
	if w.admitted {
		in = at(w.admittedAt)
	}
	var last []string
	for _, t := range w.checkIns {
		if !t.After(v.admittedAt.Add(30*time.Second)) && t.After(v.admittedAt.Add(-30*time.Second)) {
			last = append(last, at(t))
		}
	}
	return fmt.Sprintf("node %d (minute %d) let in at %s before node %d (minute %d, arrived %s, queued at %v, let in %s)",
		v.home, v.bucket-c.start.Unix()/60, at(v.admittedAt), w.home, w.bucket-c.start.Unix()/60, at(w.arrived), last, in)
}

// liveAt is the number of active sessions at now as the policy counts
// them: sessions whose session cell (their expiry, rounded up to the
// room's session slice) is after now.
func (c *ring) liveAt(now time.Time) float64 {
	var live float64
	for _, v := range c.visitors {
		if v.admitted && v.tok.Counted > now.Unix() {
			live++
		}
	}
	return live
}
