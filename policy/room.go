package policy

import (
	"slices"
	"time"

	"github.com/waitroom/waitroom/crdt"
)

// Method is a room's queueing_method.
type Method string

// The queueing methods of Cloudflare's Waiting Room (fifo, random,
// passthrough, reject). Anything else is treated as FIFO, the default; the
// edge refuses unknown values at load.
const (
	FIFO        Method = "fifo"
	Random      Method = "random"
	Passthrough Method = "passthrough"
	// MethodReject is "reject"; the short name Reject is the Outcome.
	MethodReject Method = "reject"
)

// Strategy says how the open slots of a minute are divided between nodes.
type Strategy uint8

const (
	// Continuous re-divides the unused slots at every Allocate, from traffic
	// of the last sixty seconds; see the package doc. It is the default.
	Continuous Strategy = iota
	// ReferencePerMinute is the reference's split: fixed at the first
	// allocation of a minute from the traffic two minutes earlier, never
	// redistributed within the minute. It is kept as a baseline for the
	// simulator.
	ReferencePerMinute
)

// String names the strategy for logs and the admin endpoint.
func (s Strategy) String() string {
	if s == ReferencePerMinute {
		return "reference_per_minute"
	}
	return "continuous"
}

// DefaultLag is the bound on gossip staleness assumed when Room.Lag is zero:
// twice the usual worst delivery of a gossip round (0.2–1 s). A bound that is
// too small voids the overshoot guarantee (see the package doc); one that is
// too large only slows the re-division of unused slots a little.
const DefaultLag = 2 * time.Second

// HistoryMinutes is how many minutes of per-node arrivals and admissions the
// policy reads: five full minutes plus the current one for the admission
// rate, of which the last three also serve the traffic shares.
const HistoryMinutes = 6

// AdmissionMinutes is how many minutes of room-wide admissions the forecast
// reads (forecast.go): the cohorts whose visitors may still browse, as long
// as the longest session the room allows.
const AdmissionMinutes = crdt.MaxSessionLead

// Room holds what admission needs to know about a room. The operator's part
// mirrors the reference's settings; the edge validates the configuration and
// converts it into this.
type Room struct {
	TotalActiveUsers  int
	NewUsersPerMinute int
	SessionDuration   int // minutes, 1–30; 0 means DefaultSessionDuration
	// DisableSessionRenewal: a session ends session_duration after its
	// admission whatever the visitor does, and is counted once, in the
	// cell of that expiry (see Count).
	DisableSessionRenewal bool
	QueueingMethod        Method
	QueueAll              bool
	Suspended             bool
	// MaxQueue caps the queue: when TotalWaiting >= MaxQueue (> 0), a new
	// visitor who would have been queued is turned away with Reject instead,
	// so the queue stops growing, and Estimate reports QueueIsFull. Visitors
	// already queued keep their place.
	MaxQueue int

	// Nodes and Lag are facts about the cluster, not operator settings; the
	// edge fills them in from its membership and gossip configuration.
	//
	// Nodes is the number of live nodes. The Anywhere part of the slots is
	// divided by it, so it must not be smaller than the number of nodes that
	// may admit; 0 means "count the nodes seen in the traffic history", which
	// is too small when silent nodes wake up all at once.
	Nodes int
	// Side is set while some of the nodes this one expects are unreachable
	// (a partition, or peers that just failed); see CutOff. Its zero value
	// means the whole ring is reachable.
	Side Side
	// Lag bounds how stale a remote node's column in the snapshot can be; 0
	// means DefaultLag. It must cover the real gossip delay, or the overshoot
	// bound of the package doc is void (gossip at 5 s under the default 2 s
	// lag: twice the per-minute limit in the simulator).
	Lag time.Duration
	// CheckIn is the longest interval between two check-ins of a queued
	// visitor (the refresh interval the edge gives, with its jitter); 0
	// means DefaultCheckIn. A covered bucket holds newer ones back for this
	// long at most (see the package doc).
	CheckIn time.Duration
}

// DefaultCheckIn is the edge's refresh interval for queued visitors, 20 s,
// with its jitter of ± 3 s.
const DefaultCheckIn = 23 * time.Second

// Side is the part of a cut ring that a node can still reach. The other
// part's columns in the node's state stopped growing at the cut while its
// nodes may well go on admitting, so a node that read the whole snapshot
// would believe that the slots the other part takes are free, and every part
// would fill most of the room. While cut off, the snapshot given to Allocate
// or Next holds only the reachable replicas' entries (crdt.State.SnapshotOf),
// and the part this node is on runs as a room of its own with
// Nodes/Room.Nodes of each limit, never more than what the whole room has
// left by what the node last heard of the others. Parts that see each other
// the same way then stay within the limits together; what costs is that a
// busier part cannot borrow the slots a quieter one leaves unused, and that a
// node that died rather than split off holds its part of the limits until
// it is back or forgotten (see gossip.Node.ExpectedMembers).
type Side struct {
	// Nodes is how many nodes this one can reach, itself included.
	Nodes int
	// What this node last heard of the unreachable nodes: their admissions
	// in the current minute and their active sessions, as in
	// crdt.RoomSnapshot.
	Admitted, Active int64
	// Waiting is what this node last heard of the visitors waiting at the
	// unreachable nodes; nil when none did. They take no slot of this
	// part, but they are still in line: a node that died keeps its
	// visitors' places, and they are let in when it is back (see
	// Elsewhere).
	Waiting *Elsewhere
}

// Elsewhere is the line at the nodes a cut ring cannot reach, as last
// heard: the waiting buckets and who joined them per arrival slot, as in
// crdt.RoomSnapshot. A place in line counts those of them who came before
// the visitor. Left out, the survivors of a killed node told their
// visitors ten to nineteen fewer ahead than there were while it was down
// (three real processes, the node-restart scenario): its visitors kept
// trying and were let in first when it came back.
type Elsewhere struct {
	waiting []crdt.BucketCount
	lines   slotLines
	// replicas are the unreachable replicas, as their counts name them,
	// sorted: whose curves of a slot place their visitors (inSlot).
	replicas []crdt.ReplicaID
}

// CutOff returns r for a node that can reach reachable of the r.Nodes
// nodes, rest being the snapshot of the unreachable replicas' entries at the
// same second as the reachable ones' snapshot that the caller hands to
// Allocate or Next. With every node reachable it returns r unchanged.
func (r Room) CutOff(reachable int, rest *crdt.RoomSnapshot) Room {
	r.Side = Side{}
	if reachable <= 0 || reachable >= r.Nodes {
		return r
	}
	r.Side = Side{
		Nodes:    reachable,
		Admitted: int64(rest.AdmittedIn(rest.Minute).Total),
		Active:   rest.Active,
	}
	if rest.TotalWaiting > 0 {
		r.Side.Waiting = &Elsewhere{waiting: rest.Waiting, lines: slotLines{rest.Arrived, rest.Left}, replicas: replicasOf(rest)}
	}
	return r
}

// cut reports whether the node is cut off from part of the ring, and the
// fraction of the nodes it can reach.
func (r Room) cut() (bool, float64) {
	if r.Side.Nodes <= 0 || r.Nodes <= 0 || r.Side.Nodes >= r.Nodes {
		return false, 1
	}
	return true, float64(r.Side.Nodes) / float64(r.Nodes)
}

// Windows returns the spans the crdt snapshot must sum for this room: the
// slots still filling, whose growth a node follows replica by replica
// (noteArrivals), list their counts so.
func (r Room) Windows() crdt.Windows {
	return crdt.Windows{
		Waiting: crdt.DefaultWaitingWindow, History: HistoryMinutes, Admissions: AdmissionMinutes,
		SlotReplicas: int(curveWindow/1000) + 1,
		WaitingBy:    r.method() == Random, // see drawShares
	}
}

// DefaultSessionDuration is session_duration, in minutes, when a room
// sets none: Cloudflare's default.
const DefaultSessionDuration = 5

// Session is how long, in minutes, a session lasts after the visitor's
// last request (after its admission with DisableSessionRenewal):
// SessionDuration, DefaultSessionDuration when it is unset, at most 30.
func (r Room) Session() int {
	if r.SessionDuration <= 0 {
		return DefaultSessionDuration
	}
	return min(r.SessionDuration, 30)
}

func (r Room) method() Method {
	switch r.QueueingMethod {
	case Random, Passthrough, MethodReject:
		return r.QueueingMethod
	}
	return FIFO
}

func (r Room) checkIn() time.Duration {
	if r.CheckIn > 0 {
		return r.CheckIn
	}
	return DefaultCheckIn
}

func (r Room) lag() time.Duration {
	if r.Lag > 0 {
		return r.Lag
	}
	return DefaultLag
}

// mode is what Decide does with every visitor, fixed when allocating.
type mode uint8

const (
	modeDecide    mode = iota // fifo or random: consult the split
	modeAdmitAll              // passthrough
	modeRejectAll             // reject
	modeQueueAll              // queue_all
	modeBypass                // suspended
)

// mode orders the switches: a suspended room is off whatever else is set, and
// queue_all holds everyone whatever the method.
func (r Room) mode() mode {
	switch {
	case r.Suspended:
		return modeBypass
	case r.QueueAll:
		return modeQueueAll
	case r.method() == MethodReject:
		return modeRejectAll
	case r.method() == Passthrough:
		return modeAdmitAll
	}
	return modeDecide
}

// replicasOf lists the replicas that snap's counts name, sorted: those of
// its minutes' arrivals and of its slots' lines.
func replicasOf(snap *crdt.RoomSnapshot) []crdt.ReplicaID {
	var out []crdt.ReplicaID
	add := func(counts []crdt.Count) {
		for _, c := range counts {
			if i, found := slices.BinarySearch(out, c.Replica); !found {
				out = slices.Insert(out, i, c.Replica)
			}
		}
	}
	for _, m := range snap.Arrivals {
		add(m.ByReplica)
	}
	for _, s := range snap.Arrived {
		add(s.ByReplica)
	}
	for _, s := range snap.Left {
		add(s.ByReplica)
	}
	return out
}
