package edge

import (
	"encoding/json"
	"fmt"
	"net/http/httputil"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cbroglie/mustache"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/edge/challenge"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/queuepage"
	"github.com/waitroom/waitroom/edge/visitors"
	"github.com/waitroom/waitroom/policy"
)

// A queued visitor's token lives five minutes, as Cloudflare's Waiting Room's
// does in the outside analysis "Cloudflare Waiting Room internals: the JWT,
// the estimated wait, and edge coordination"; the page's refresh interval
// is the counter rule's (policy.Allocation.RefreshInterval).
const queuedTokenLife = policy.QueuedTokenLife * time.Second

// room is one waiting room at run time. Its settings are immutable: a change
// builds a new room that takes over the old one's allocation chain.
type room struct {
	s          *Server
	name       string
	cfg        *config.Room // as configured; what is in force at a time is in the view
	raw        []byte       // cfg as stored in the room's register, to tell changes apart
	proxy      *httputil.ReverseProxy
	cookieName string
	revoke     bool // origin command "revoke" enabled
	// cells bounds what a peer may count in the room's cells (checkCell).
	cells     policy.CellLimits
	bypass    []bypassRule
	tmpl      *mustache.Template            // the room's page
	eventTmpl map[string]*mustache.Template // events' custom pages, by event id
	stopTmpl  *mustache.Template            // the emergency stop page, if given
	challenge *challenge.Challenge          // the bot challenge, nil when off
	// counted is the node's one count per visitor (see visitors.Counted),
	// handed on to every later version of the room.
	counted *visitors.Counted
	// codes slows addresses that keep presenting bad priority codes,
	// handed on like counted.
	codes *visitors.Guessers

	// mu orders admissions against allocation: requests hold it shared while
	// they decide and record, the allocator exclusively while it snapshots,
	// so no admission is ever missing from both the old budget and the new
	// snapshot.
	mu    sync.RWMutex
	alloc atomic.Pointer[allocation]
	// failing is set while the room runs in its failure mode after a
	// panic of its allocation (see failsafe.go), and failedCall is the
	// estimate a request asked for when one panicked, which every probe
	// asks for again until the room recovers.
	failing    atomic.Bool
	failedCall atomic.Pointer[estimateCall]
	m          roomMetrics
	pages      queuepage.Cache
}

// allocation is the room's current policy allocation, the minute it was
// computed for, and the settings that were in force.
type allocation struct {
	*policy.Allocation
	// chain is the allocation chain the next one follows (policy.Chain):
	// the one that ends in the Allocation itself, or for a fallback
	// (failsafe.go) in the last one computed, so the node's admission
	// ledger outlives a failure.
	chain  policy.Chain
	rm     *room
	minute int64
	at     time.Time // the ring's time it was made at
	view   *view
	next   chan struct{} // closed when the next allocation replaces this one
	// degraded: the allocation's estimates failed, or it stands in for one
	// that did (failsafe.go); they are not asked for. fallback: it stands in
	// for an allocation that could not be computed or probed.
	degraded, fallback bool
	// fault says where the allocation panics (tests only; see
	// policyFault).
	fault string
}

// view is a room's settings in force at one time: its own, or an event's
// overrides, or the pre-queue, or the emergency stop.
type view struct {
	cfg   config.Room // effective
	pol   policy.Room
	win   crdt.Windows
	phase config.Phase
	event *config.Event
	tmpl  *mustache.Template
	// closed: the room is closed (sold out) at this time; message: the
	// operator's message in force (see config.Room.ClosedAt, MessageAt).
	closed  bool
	message string
}

func newRoom(s *Server, c *config.Room) (*room, error) {
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	rm := &room{
		s:          s,
		name:       c.Name,
		cfg:        c,
		raw:        raw,
		cookieName: c.CookieName(),
		m:          s.metrics.forRoom(c.Name),
		eventTmpl:  map[string]*mustache.Template{},
		counted:    &visitors.Counted{},
		codes:      &visitors.Guessers{},
		cells:      c.CellLimits(),
	}
	for _, cmd := range c.EnabledOriginCommands {
		if cmd == "revoke" {
			rm.revoke = true
		}
	}
	for _, b := range c.Bypass {
		m, err := b.Compile()
		if err != nil {
			return nil, fmt.Errorf("bypass: %w", err)
		}
		rm.bypass = append(rm.bypass, bypassRule{BypassRule: b, match: m})
	}
	if rm.tmpl, err = queuepage.Parse(c.CustomPageHTML); err != nil {
		return nil, fmt.Errorf("custom_page_html: %w", err)
	}
	for i := range c.Events {
		e := &c.Events[i]
		if e.CustomPageHTML == "" {
			continue
		}
		if rm.eventTmpl[e.ID], err = queuepage.Parse(e.CustomPageHTML); err != nil {
			return nil, fmt.Errorf("events[%d].custom_page_html: %w", i, err)
		}
	}
	if rm.challenge, err = challenge.New(c); err != nil {
		return nil, fmt.Errorf("turnstile: %w", err)
	}
	if c.StopPageHTML != "" {
		if rm.stopTmpl, err = queuepage.Parse(c.StopPageHTML); err != nil {
			return nil, fmt.Errorf("stop_page_html: %w", err)
		}
	}
	origin := c.Origin
	if origin == "" {
		origin = s.cfg.Origin
	}
	if origin == "" {
		if s.cfg.ForwardAuth.On() {
			// Served only through the forward-auth endpoint: the proxy
			// in front reaches the origin, and the public listener
			// treats the room's addresses as unrouted.
			return rm, nil
		}
		return nil, fmt.Errorf("origin: the room has none and the node has no default origin")
	}
	p, err := newProxy(s, rm, origin)
	if err != nil {
		return nil, fmt.Errorf("origin: %w", err)
	}
	rm.proxy = p
	return rm, nil
}

// viewAt works out the settings in force at t.
func (rm *room) viewAt(t time.Time) *view {
	v := &view{cfg: rm.cfg.Effective(t), tmpl: rm.tmpl, closed: rm.cfg.ClosedAt(t), message: rm.cfg.MessageAt(t)}
	v.event, v.phase = rm.cfg.At(t)
	if v.event != nil {
		if et := rm.eventTmpl[v.event.ID]; et != nil && v.phase == config.EventActive {
			v.tmpl = et
		}
	}
	v.pol = policy.Room{
		TotalActiveUsers:      v.cfg.TotalActiveUsers,
		NewUsersPerMinute:     v.cfg.NewUsersPerMinute,
		SessionDuration:       v.cfg.SessionDuration,
		DisableSessionRenewal: v.cfg.DisableSessionRenewal,
		QueueingMethod:        policy.Method(v.cfg.QueueingMethod),
		QueueAll:              v.cfg.QueueAll,
		Suspended:             v.cfg.Suspended,
		MaxQueue:              v.cfg.MaxQueue,
	}
	switch {
	case v.cfg.Stopped:
		// The emergency stop queues everyone; positions are kept.
		v.pol.QueueAll, v.pol.Suspended = true, false
		if rm.stopTmpl != nil {
			v.tmpl = rm.stopTmpl
		}
	case v.closed:
		// Closed: nobody new gets in, everyone waiting keeps their place
		// for a reopening, admitted visitors finish their sessions.
		v.pol.QueueAll, v.pol.Suspended, v.cfg.Suspended = true, false, false
	case v.phase == config.Prequeue:
		// Before the event, everyone waits on the countdown.
		v.pol.QueueAll = true
	case rm.s.StaleClosed(rm.s.clock()): // timed on the node's own clock, as its gossip
		// Cut off from the cluster and told to fail closed: queue new
		// visitors rather than admit on a picture that may be far off.
		v.pol.QueueAll = true
	}
	v.win = v.pol.Windows()
	return v
}

// recompute replaces the room's allocation with the one that follows it,
// computed from the merged state at now. Next (rather than a fresh Allocate)
// carries the node's admission ledger, which the continuous re-division of
// the minute's slots needs.
func (rm *room) recompute(now time.Time) *allocation {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	return rm.recomputeLocked(now, rm.alloc.Load())
}

// refresh is recompute for the allocation loop: the new allocation is then
// probed (see probe), outside the room's lock, so that a panic it holds
// puts the room in its failure mode before a visitor meets it, and one
// that holds none ends that mode.
func (rm *room) refresh(now time.Time) {
	cur := rm.recompute(now)
	if cur.fallback {
		return // the computation failed
	}
	ok := false
	func() {
		defer func() {
			if p := recover(); p != nil {
				rm.fail(cur, panicAllocation, p, debug.Stack(), now, true)
			}
		}()
		snap := rm.s.node.Snapshot(rm.name, now.Unix(), cur.view.win)
		probe(cur, &snap, rm.failedCall.Load())
		ok = true
	}()
	if ok {
		rm.recovered()
	}
}

// policyFault, when set (tests only), is asked at every allocation whether
// the merged snapshot it is computed from is poisoned, and where the policy
// then panics, as it would on a state that made it fail: "allocation"
// (computing it), "estimate" (any estimate: the probe's or a waiting
// visitor's), "request" (a waiting visitor's estimate only, as a panic the
// probe does not meet), or "" (not poisoned).
var policyFault atomic.Pointer[func(room string, snap *crdt.RoomSnapshot) string]

// recomputeLocked computes the allocation that follows prev. A panic of
// the policy leaves the room in its failure mode (failsafe.go) rather than
// ending the goroutine that asked, the allocation loop or a request.
func (rm *room) recomputeLocked(now time.Time, prev *allocation) (cur *allocation) {
	defer func() {
		if p := recover(); p != nil {
			stack := debug.Stack()
			if prev == nil {
				// Nothing computed yet to fall back on: an allocation
				// that queues everyone, from nothing.
				v := rm.viewAt(now)
				pa := policy.Allocate(policy.Room{QueueAll: true}, &crdt.RoomSnapshot{Room: rm.name, Now: now.Unix(), Minute: unixMinute(now)}, rm.s.node.Replica(), now, policy.Continuous)
				prev = &allocation{Allocation: pa, chain: policy.NewChain(rm.s.node.Replica(), policy.Continuous), rm: rm, minute: unixMinute(now), at: now, view: v, next: make(chan struct{})}
				rm.alloc.Store(prev)
			}
			rm.fail(prev, panicAllocation, p, stack, now, false)
			cur = rm.alloc.Load()
		}
	}()
	minute := unixMinute(now)
	v := rm.viewAt(now)
	pol := v.pol
	// The Anywhere part is divided among the live nodes, and the division
	// assumes other nodes' admissions arrive within the gossip lag. The
	// nodes are the data center's members and the other data centers'
	// nodes, each of those data centers one replica of the snapshot.
	pol.Nodes = rm.s.node.ExpectedMembers(now) + rm.s.node.OtherDatacenterNodes()
	pol.Lag = rm.s.gossipLag()
	// While part of the ring is unreachable, this part runs on its own
	// columns and its part of the limits (policy.Sight).
	pol, snap := rm.sight(now, v.win).Take(pol)
	fault := ""
	if f := policyFault.Load(); f != nil {
		if fault = (*f)(rm.name, &snap); fault == "allocation" {
			panic("a poisoned state (test)")
		}
	}
	var chain policy.Chain
	if prev != nil {
		chain = prev.chain
	} else {
		chain = rm.s.resumeChain(rm.name)
	}
	a, chain := chain.Allocate(pol, &snap, now)
	cur = &allocation{Allocation: a, chain: chain, rm: rm, minute: minute, at: now, view: v, next: make(chan struct{}), fault: fault}
	if old := rm.alloc.Swap(cur); old != nil {
		close(old.next) // wakes the requests held on it (see holding)
	}
	return cur
}

// sight is what the node sees of the ring for an allocation at now: its
// live members, which replicas are theirs (read only while part of the
// ring is cut off) and the merged state over windows w.
func (rm *room) sight(now time.Time, w crdt.Windows) policy.Sight {
	return policy.Sight{
		Live: rm.s.node.NumMembers() + rm.s.node.OtherDatacenterNodes(),
		Reachable: func() func(crdt.ReplicaID) bool {
			reach := rm.s.node.Reachable()
			return func(r crdt.ReplicaID) bool { return reach[r] }
		},
		Snapshot: func(keep func(crdt.ReplicaID) bool) crdt.RoomSnapshot {
			if keep == nil {
				return rm.s.node.Snapshot(rm.name, now.Unix(), w)
			}
			return rm.s.node.SnapshotOf(rm.name, now.Unix(), w, keep)
		},
	}
}

// takeOver starts this room's allocation chain from an older version of the
// same room, so a settings change keeps the node's admission ledger.
func (rm *room) takeOver(old *room, now time.Time) {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	var prev *allocation
	if old != nil {
		prev = old.alloc.Load()
		rm.counted = old.counted
		rm.codes = old.codes
	}
	rm.recomputeLocked(now, prev)
}

// allocation returns the current allocation, recomputing it first when the
// minute has turned since it was made: a budget is never spent in a minute
// it was not computed for.
func (rm *room) allocation(now time.Time) *allocation {
	a := rm.alloc.Load()
	if a == nil || a.minute != unixMinute(now) {
		return rm.recompute(now)
	}
	return a
}

func unixMinute(t time.Time) int64 { return t.Unix() / 60 }
