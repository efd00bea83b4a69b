package sim

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/waitroom/waitroom/policy"
	"github.com/waitroom/waitroom/policy/duration"
)

// Scenario is one simulated event, as read from a YAML file in
// testdata/scenarios. Durations are written with a unit ("1m30s", "200ms"),
// as in a node's configuration (see Duration).
type Scenario struct {
	Name string `yaml:"name" json:"name"`
	// Title is a few words for the README's table; the name when empty.
	Title       string `yaml:"title" json:"title,omitempty"`
	Description string `yaml:"description" json:"description,omitempty"`
	Seed        uint64 `yaml:"seed" json:"seed"`
	// Duration is the virtual time simulated from the first arrival phase's
	// origin (t = 0, a minute boundary).
	Duration   Duration `yaml:"duration" json:"duration"`
	Nodes      Nodes    `yaml:"nodes" json:"nodes"`
	Gossip     Gossip   `yaml:"gossip" json:"gossip"`
	Room       Room     `yaml:"room" json:"room"`
	Strategies []string `yaml:"strategies" json:"strategies"`
	Visitors   Visitors `yaml:"visitors" json:"visitors"`
	Events     []Event  `yaml:"events" json:"events,omitempty"`
	// Goals names the goals checked besides TruthGoals, which every run is
	// checked against (see GoalNames); empty means the defaults for the
	// queueing method.
	Goals []string `yaml:"goals" json:"goals,omitempty"`
}

// Nodes describes the cluster.
type Nodes struct {
	Count int `yaml:"count" json:"count"`
	// Skew is each node's clock offset, one per node; SkewRange instead
	// spreads the offsets evenly over ±SkewRange (node 0 at −SkewRange, the
	// last node at +SkewRange).
	Skew      []Duration `yaml:"skew" json:"skew,omitempty"`
	SkewRange Duration   `yaml:"skew_range" json:"skew_range,omitempty"`
	// FailureDetection is how long the other nodes take to notice a crashed
	// node, or the nodes on the far side of a partition, and stop counting
	// them as live members (memberlist's suspicion time). They stay
	// expected for ten minutes more (gossip.Node.ExpectedMembers). 0 means
	// 5s.
	FailureDetection Duration `yaml:"failure_detection" json:"failure_detection,omitempty"`
	// CutHandling is what a node does while it sees fewer live members than
	// it expects: "parts" (the default, also when empty) reads only the
	// reachable replicas' entries and runs on its part of the limits
	// (policy.Sight); "whole" reads the whole snapshot, stale columns and
	// all (Sight.Whole), as nodes did before the parts, for comparison.
	CutHandling string `yaml:"cut_handling" json:"cut_handling,omitempty"`
	// Clock is the time a node dates its counts by: "ring" (the default,
	// also when empty) is its clock corrected by the median of the clock
	// offsets of the peers it sees (crdt.RingOffset, crdt.RingNow,
	// measured without error here); "own" is its own skewed clock, as
	// nodes did before the ring's time, for comparison.
	Clock string `yaml:"clock" json:"clock,omitempty"`
	// RecomputeEvery and RecomputeThrottle are the periods of a node's
	// allocation loop: at least every policy.AllocationEvery (250ms), and
	// on every gossip delivery that changes the state but at most every
	// policy.AllocationFollow (50ms). 0 means those.
	RecomputeEvery    Duration `yaml:"recompute_every" json:"recompute_every,omitempty"`
	RecomputeThrottle Duration `yaml:"recompute_throttle" json:"recompute_throttle,omitempty"`
	// Datacenters groups the nodes in this many data centers of
	// count / datacenters nodes each (node i in data center i / that,
	// named "dc-K"), as nodes that name a data center are: within one,
	// everything travels as gossip describes (the LAN), and each node
	// measures its lag and its ring's time among its own data center's
	// members; between data centers only data-center figures travel
	// (gossip.wan). 0, the default, is a ring that names none: every node
	// a data center of its own, every node's cells everywhere.
	Datacenters int `yaml:"datacenters" json:"datacenters,omitempty"`
}

// The values of nodes.cut_handling.
const (
	// CutParts is a node's handling of a cut ring: the reachable
	// replicas' snapshot and its part of the limits (policy.Sight).
	CutParts = "parts"
	// CutWhole reads the whole snapshot while cut, as nodes did before
	// the parts: for comparison only.
	CutWhole = "whole"
)

// The values of nodes.clock.
const (
	// ClockRing is a node's time: the ring's (crdt.RingNow).
	ClockRing = "ring"
	// ClockOwn is each node's own clock, as nodes did before the ring's
	// time: for comparison only.
	ClockOwn = "own"
)

// Gossip describes how entries travel between nodes.
type Gossip struct {
	// Delay is the one-way delivery time of a gossip message; Jitter spreads
	// it uniformly over Delay ± Jitter (never below zero); Loss is the
	// chance that one message to one peer is lost.
	Delay  Duration `yaml:"delay" json:"delay"`
	Jitter Duration `yaml:"jitter" json:"jitter"`
	Loss   float64  `yaml:"loss" json:"loss"`
	// PushPull is the full-state anti-entropy interval: each node exchanges
	// its whole state with one random live peer this often (no loss). 0
	// means 30s; a negative value turns it off.
	PushPull Duration `yaml:"push_pull" json:"push_pull"`
	// Batch is how long a node gathers its own new entries before shipping
	// them (memberlist sends them with the next gossip packet). 0 means
	// 50ms.
	Batch Duration `yaml:"batch" json:"batch,omitempty"`
	// LagMeasured false makes every node assume the configured lag
	// (room.lag) throughout, as a node's gossip_lag_measured: false does;
	// by default each node measures the delay of what it hears, idle beats
	// included, and assumes policy.AssumedLag of it.
	LagMeasured *bool `yaml:"lag_measured" json:"lag_measured,omitempty"`
	// WAN is how figures travel between data centers (nodes.datacenters);
	// Delay, Jitter, Loss and PushPull above are then those within a data
	// center.
	WAN *WAN `yaml:"wan" json:"wan,omitempty"`
}

// WAN describes the pool between data centers. Each data center's carrier
// (its first live member: which member carries changes who sends, not
// what) sums the data center's changed cells every Round
// (crdt.State.Carry) and sends the figures that grew to every other data
// center's carrier, each copy delayed by Delay ± Jitter and lost with
// probability Loss; a lost copy is sent again at the next round (the pool
// retransmits what it queued). The receiving carrier merges the figures
// (crdt.State.MergeAt) and relays what was new to its data center's
// members over the LAN.
type WAN struct {
	Delay  Duration `yaml:"delay" json:"delay,omitempty"`
	Jitter Duration `yaml:"jitter" json:"jitter,omitempty"`
	Loss   float64  `yaml:"loss" json:"loss,omitempty"`
	// Round is how often a carrier sends its data center's changed
	// figures: a gossip round between data centers (200ms), or longer for
	// a carrier whose byte budget makes it gather changes. 0 means 200ms.
	Round Duration `yaml:"round" json:"round,omitempty"`
}

// wan is the pool between data centers as configured, its round
// defaulted.
func (g Gossip) wan() WAN {
	var w WAN
	if g.WAN != nil {
		w = *g.WAN
	}
	if w.Round == 0 {
		w.Round = Duration(wanRound)
	}
	return w
}

// wanRound is the default WAN.Round: the gossip interval of the pool
// between data centers.
const wanRound = 200 * time.Millisecond

func (g Gossip) lagMeasured() bool { return g.LagMeasured == nil || *g.LagMeasured }

// Room holds the room settings, with Cloudflare's field names.
type Room struct {
	TotalActiveUsers  int    `yaml:"total_active_users" json:"total_active_users"`
	NewUsersPerMinute int    `yaml:"new_users_per_minute" json:"new_users_per_minute"`
	SessionDuration   int    `yaml:"session_duration" json:"session_duration"` // minutes 1–30, 0 = policy.DefaultSessionDuration
	QueueingMethod    string `yaml:"queueing_method" json:"queueing_method"`   // fifo (default) or random
	QueueAll          bool   `yaml:"queue_all" json:"queue_all,omitempty"`
	MaxQueue          int    `yaml:"max_queue" json:"max_queue,omitempty"`
	// Lag is policy.Room.Lag, the gossip staleness the policy assumes; 0
	// leaves the policy's default.
	Lag Duration `yaml:"lag" json:"lag,omitempty"`
	// PriorityGroups are the room's priority groups, with the fields of a
	// room's priority_groups: holders of a group's code go in ahead of the
	// line within its share, and within its own new_users_per_minute when
	// it has one. A phase's visitors hold a group's code (Phase.Group).
	PriorityGroups []PriorityGroup `yaml:"priority_groups" json:"priority_groups,omitempty"`
}

// PriorityGroup is one of the room's priority groups (see policy.Group).
type PriorityGroup struct {
	Name string `yaml:"name" json:"name"`
	// Share is the most of a node's admissions the group may take ahead
	// of the line, above 0 and at most 1; 0 means 1.
	Share float64 `yaml:"share" json:"share,omitempty"`
	// NewUsersPerMinute is the group's own cap: once the ring has admitted
	// this many of its holders in a minute, they wait in the line like
	// everyone else until the next. 0: no cap of its own.
	NewUsersPerMinute int `yaml:"new_users_per_minute" json:"new_users_per_minute,omitempty"`
}

// Visitors is the visitor model.
type Visitors struct {
	Arrival Arrival `yaml:"arrival" json:"arrival"`
	// NodeWeights splits arrivals between nodes (default: evenly); shift
	// events change it over time.
	NodeWeights []float64 `yaml:"node_weights" json:"node_weights,omitempty"`
	// DatacenterWeights, instead of NodeWeights, splits arrivals between
	// data centers (nodes.datacenters), each data center's share evenly
	// over its nodes, as a round-robin balancer in front of them does.
	DatacenterWeights []float64 `yaml:"datacenter_weights" json:"datacenter_weights,omitempty"`
	// TimeOnOrigin is how long an admitted visitor keeps browsing; during
	// it they make a request every RequestInterval. Their session then
	// lasts session_duration after the last request.
	TimeOnOrigin    Dist        `yaml:"time_on_origin" json:"time_on_origin"`
	RequestInterval Dist        `yaml:"request_interval" json:"request_interval"`
	Refresh         Refresh     `yaml:"refresh" json:"refresh"`
	Abandonment     Abandonment `yaml:"abandonment" json:"abandonment"`
}

// Refresh is how queued visitors come back.
type Refresh struct {
	// Latency is added to the page's Refresh interval before the browser's
	// next check-in arrives. Default: uniform 0–500ms.
	Latency Dist `yaml:"latency" json:"latency"`
	// SpamShare of the visitors reload every SpamInterval while queued,
	// whatever the page says; a node counts such an early check-in as no
	// attempt.
	SpamShare    float64  `yaml:"spam_share" json:"spam_share,omitempty"`
	SpamInterval Duration `yaml:"spam_interval" json:"spam_interval,omitempty"`
}

// Abandonment is the queued visitors' patience.
type Abandonment struct {
	// Probability that a visitor has limited patience; After is how long
	// such a visitor waits before leaving the queue for good.
	Probability float64 `yaml:"probability" json:"probability,omitempty"`
	After       Dist    `yaml:"after" json:"after,omitempty"`
}

// Arrival is the arrival curve. Every curve is turned into phases.
type Arrival struct {
	// Curve: uniform (Visitors, or Rate per minute, over Start..End), step
	// (RateBefore until At, then RateAfter, over Start..End), spike (Rate
	// over Start..End plus SpikeVisitors within SpikeOver from SpikeAt,
	// optionally at SpikeNode only) or phases (Phases as given).
	Curve    string   `yaml:"curve" json:"curve"`
	Visitors int      `yaml:"visitors" json:"visitors,omitempty"`
	Rate     float64  `yaml:"rate" json:"rate,omitempty"`
	Start    Duration `yaml:"start" json:"start,omitempty"`
	End      Duration `yaml:"end" json:"end,omitempty"`
	// Process: poisson (default) or even (evenly spaced arrivals).
	Process    string   `yaml:"process" json:"process,omitempty"`
	At         Duration `yaml:"at" json:"at,omitempty"`
	RateBefore float64  `yaml:"rate_before" json:"rate_before,omitempty"`
	RateAfter  float64  `yaml:"rate_after" json:"rate_after,omitempty"`

	SpikeAt       Duration `yaml:"spike_at" json:"spike_at,omitempty"`
	SpikeOver     Duration `yaml:"spike_over" json:"spike_over,omitempty"`
	SpikeVisitors int      `yaml:"spike_visitors" json:"spike_visitors,omitempty"`
	SpikeNode     *int     `yaml:"spike_node" json:"spike_node,omitempty"`

	Phases []Phase `yaml:"phases" json:"phases,omitempty"`

	// SpoofBuckets reproduces the experiment of Cloudflare's "Waiting Room: Random Queueing and Custom Web/Mobile Apps": the arrival
	// times drawn above become the visitors' arrival buckets, written into
	// their tokens, and everyone joins at Start, spread over JoinOver.
	SpoofBuckets bool     `yaml:"spoof_buckets" json:"spoof_buckets,omitempty"`
	JoinOver     Duration `yaml:"join_over" json:"join_over,omitempty"`
}

// Phase is one stretch of arrivals: Visitors spread over Start..End, or a
// rate per minute (ramping linearly to RateEnd when set). Weights or Node
// override the node split for this phase's arrivals.
type Phase struct {
	Start    Duration  `yaml:"start" json:"start"`
	End      Duration  `yaml:"end" json:"end"`
	Visitors int       `yaml:"visitors" json:"visitors,omitempty"`
	Rate     float64   `yaml:"rate" json:"rate,omitempty"`
	RateEnd  *float64  `yaml:"rate_end" json:"rate_end,omitempty"`
	Process  string    `yaml:"process" json:"process,omitempty"`
	Weights  []float64 `yaml:"weights" json:"weights,omitempty"`
	Node     *int      `yaml:"node" json:"node,omitempty"`
	// Cookieless visitors keep no cookie: each makes its first request and
	// never comes back with the token it was given (a flood of cookieless
	// requests). Queued or turned away, it is gone; let in, it browses.
	Cookieless bool `yaml:"cookieless" json:"cookieless,omitempty"`
	// Group names the room's priority group whose code every visitor of
	// this phase presents at its first request; its token carries the
	// group for as long as it lives.
	Group string `yaml:"group" json:"group,omitempty"`
}

// Event is something that happens to the cluster at a time: a node crash,
// clean leave or restart, a partition or a traffic shift.
type Event struct {
	At Duration `yaml:"at" json:"at"`
	// Crash stops a node: it neither serves nor gossips again, and its
	// visitors move to other nodes with their tokens. The others stop
	// counting it live after nodes.failure_detection but, unable to tell a
	// crash from a partition, keep expecting it for ten minutes.
	Crash *int `yaml:"crash" json:"crash,omitempty"`
	// Leave stops a node cleanly (gossip.Node.Close): it sends its last
	// counts and announces its leave, and the others stop expecting it as
	// soon as the announcement arrives.
	Leave *int `yaml:"leave" json:"leave,omitempty"`
	// Restart starts a node that crashed or left earlier again, as a new
	// process: a new incarnation with an empty state, which expects the
	// whole ring (its seeds) and joins every live node at once by a
	// full-state exchange. New visitors reach it again; those who moved
	// away stay where they went.
	Restart *int `yaml:"restart" json:"restart,omitempty"`
	// Partition cuts the ring into groups for a while.
	Partition *Partition `yaml:"partition" json:"partition,omitempty"`
	// Shift moves the arrival split to Weights, linearly over Over.
	Shift *Shift `yaml:"shift" json:"shift,omitempty"`
}

// Partition cuts the ring: from the event's time, for For, gossip between
// nodes of different Groups is lost (messages in flight included, push-pull
// too). After nodes.failure_detection each node counts only its own group
// as live. On heal, messages flow again and every node rejoins the nodes it
// lost, as the gossip join loop does: within a second, a full-state
// exchange with each of them (a push-pull over TCP, one gossip delay each
// way), after which it counts them live again. (A node's join loop tries
// only while a node counts fewer live members than it expects, so a cut that
// outlasts the ten minutes of expectation heals here but may not there.)
// Every node is in exactly one group; visitors keep reaching their node.
type Partition struct {
	For    Duration `yaml:"for" json:"for"`
	Groups [][]int  `yaml:"groups" json:"groups"`
}

// Shift is a change of the arrival split between nodes.
type Shift struct {
	Weights []float64 `yaml:"weights" json:"weights"`
	Over    Duration  `yaml:"over" json:"over,omitempty"`
}

// Duration is a time.Duration written "1m30s" or "200ms" in a scenario, in
// the one grammar of package policy/duration, which a node's configuration
// shares; JSON gets the same string.
type Duration = duration.Duration

// Dist is a distribution of durations: a plain duration means a constant;
// otherwise {dist: constant|uniform|normal|exponential, value, min, max,
// mean, sd}. Normal and exponential draws are clamped to [min, max] (max 0
// means no upper bound).
type Dist struct {
	Kind  string   `yaml:"dist" json:"dist"`
	Value Duration `yaml:"value" json:"value,omitempty"`
	Min   Duration `yaml:"min" json:"min,omitempty"`
	Max   Duration `yaml:"max" json:"max,omitempty"`
	Mean  Duration `yaml:"mean" json:"mean,omitempty"`
	SD    Duration `yaml:"sd" json:"sd,omitempty"`
	set   bool
}

// UnmarshalYAML accepts a scalar duration (a constant) or a mapping.
func (x *Dist) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		var d Duration
		if err := d.UnmarshalYAML(n); err != nil {
			return err
		}
		*x = Dist{Kind: "constant", Value: d, set: true}
		return nil
	}
	type plain Dist
	var p plain
	dec := n
	if err := decodeStrict(dec, &p); err != nil {
		return err
	}
	*x = Dist(p)
	x.set = true
	if x.Kind == "" {
		x.Kind = "constant"
	}
	return nil
}

func decodeStrict(n *yaml.Node, v any) error {
	// yaml.v3 applies KnownFields only through a Decoder; re-encode the
	// node so that an unknown key inside a distribution is refused too.
	b, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	return dec.Decode(v)
}

func (x Dist) validate(p *problems, field string) {
	switch x.Kind {
	case "constant":
		if x.Value < 0 {
			p.add(field+".value", "must not be negative")
		}
	case "uniform":
		if x.Min < 0 || x.Max < x.Min {
			p.add(field, "uniform needs 0 ≤ min ≤ max")
		}
	case "normal":
		if x.SD < 0 || x.Mean < 0 {
			p.add(field, "normal needs mean ≥ 0 and sd ≥ 0")
		}
	case "exponential":
		if x.Mean <= 0 {
			p.add(field+".mean", "exponential needs mean > 0")
		}
	default:
		p.add(field+".dist", "%q must be constant, uniform, normal or exponential", x.Kind)
	}
	if x.Max > 0 && x.Max < x.Min {
		p.add(field+".max", "must be ≥ min")
	}
}

// GoalNames are the goals a scenario may list.
var GoalNames = []string{GoalPeakActive, GoalPeakNew, GoalFirstQueue, GoalNoEarlyQueue, GoalFIFOInversions, GoalRandomCorrelation, GoalEstimate}

// The goals.
const (
	GoalPeakActive        = "peak_active"             // peak active ≤ 1.02 × limit
	GoalPeakNew           = "peak_new_per_minute"     // peak new users per minute ≤ 1.02 × limit
	GoalFirstQueue        = "first_queue_utilisation" // utilisation at the first queueing ≥ 0.95
	GoalNoEarlyQueue      = "no_early_queueing"       // nobody queued below 0.97 × the limit
	GoalFIFOInversions    = "fifo_inversions"         // ≤ 1% of admissions
	GoalRandomCorrelation = "random_correlation"      // |corr(arrival minute, wait)| ≤ 0.1
	GoalEstimate          = "estimate"                // FIFO estimate within ±20% for 90%
)

// Load reads and validates a scenario file.
func Load(path string) (*Scenario, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sc, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return sc, nil
}

// Parse decodes a scenario (unknown fields are refused), fills in defaults
// and validates it.
func Parse(b []byte) (*Scenario, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var sc Scenario
	if err := dec.Decode(&sc); err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	sc.defaults()
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	return &sc, nil
}

func (sc *Scenario) defaults() {
	if sc.Nodes.FailureDetection == 0 {
		sc.Nodes.FailureDetection = Duration(5 * time.Second)
	}
	if sc.Nodes.RecomputeEvery == 0 {
		sc.Nodes.RecomputeEvery = Duration(policy.AllocationEvery)
	}
	if sc.Nodes.RecomputeThrottle == 0 {
		sc.Nodes.RecomputeThrottle = Duration(policy.AllocationFollow)
	}
	if sc.Gossip.PushPull == 0 {
		sc.Gossip.PushPull = Duration(30 * time.Second)
	}
	if sc.Gossip.Batch == 0 {
		sc.Gossip.Batch = Duration(50 * time.Millisecond)
	}
	if sc.Room.QueueingMethod == "" {
		sc.Room.QueueingMethod = string(policy.FIFO)
	}
	if len(sc.Strategies) == 0 {
		sc.Strategies = []string{StrategyOurs, StrategyReference}
	}
	v := &sc.Visitors
	if !v.TimeOnOrigin.set && v.TimeOnOrigin.Kind == "" {
		v.TimeOnOrigin = Dist{Kind: "constant", Value: Duration(time.Minute), set: true}
	}
	if !v.RequestInterval.set && v.RequestInterval.Kind == "" {
		v.RequestInterval = Dist{Kind: "constant", Value: Duration(20 * time.Second), set: true}
	}
	if !v.Refresh.Latency.set && v.Refresh.Latency.Kind == "" {
		v.Refresh.Latency = Dist{Kind: "uniform", Max: Duration(500 * time.Millisecond), set: true}
	}
	if v.Refresh.SpamInterval == 0 {
		v.Refresh.SpamInterval = Duration(5 * time.Second)
	}
	if v.Abandonment.Probability > 0 && v.Abandonment.After.Kind == "" {
		v.Abandonment.After = Dist{Kind: "exponential", Mean: Duration(5 * time.Minute), set: true}
	}
	if v.Arrival.Curve == "" {
		v.Arrival.Curve = "uniform"
	}
	if v.Arrival.SpoofBuckets && v.Arrival.JoinOver == 0 {
		v.Arrival.JoinOver = Duration(10 * time.Second)
	}
	if len(sc.Goals) == 0 {
		sc.Goals = []string{GoalPeakActive, GoalPeakNew}
		switch sc.Room.QueueingMethod {
		case string(policy.Random):
			sc.Goals = append(sc.Goals, GoalRandomCorrelation)
		default:
			sc.Goals = append(sc.Goals, GoalFIFOInversions, GoalEstimate)
		}
	}
}

// problems gathers validation errors, each naming its field.
type problems []string

func (p *problems) add(field, format string, args ...any) {
	*p = append(*p, field+": "+fmt.Sprintf(format, args...))
}

// Validate checks the scenario; every error names the field.
func (sc *Scenario) Validate() error {
	var p problems
	if strings.TrimSpace(sc.Name) == "" {
		p.add("name", "is required")
	}
	if sc.Duration <= 0 {
		p.add("duration", "is required and must be > 0")
	}
	n := sc.Nodes.Count
	if n < 1 || n > 1000 {
		p.add("nodes.count", "%d must be from 1 to 1000", n)
	}
	if len(sc.Nodes.Skew) > 0 && len(sc.Nodes.Skew) != n {
		p.add("nodes.skew", "has %d entries, want one per node (%d)", len(sc.Nodes.Skew), n)
	}
	if len(sc.Nodes.Skew) > 0 && sc.Nodes.SkewRange != 0 {
		p.add("nodes.skew_range", "give skew or skew_range, not both")
	}
	if sc.Nodes.SkewRange < 0 {
		p.add("nodes.skew_range", "must not be negative")
	}
	if sc.Nodes.FailureDetection < 0 {
		p.add("nodes.failure_detection", "must not be negative")
	}
	switch sc.Nodes.CutHandling {
	case "", CutParts, CutWhole:
	default:
		p.add("nodes.cut_handling", "%q must be parts or whole", sc.Nodes.CutHandling)
	}
	switch sc.Nodes.Clock {
	case "", ClockRing, ClockOwn:
	default:
		p.add("nodes.clock", "%q must be ring or own", sc.Nodes.Clock)
	}
	if sc.Nodes.RecomputeEvery < 0 || sc.Nodes.RecomputeThrottle < 0 {
		p.add("nodes.recompute_every", "and recompute_throttle must not be negative")
	}
	sc.validateDatacenters(&p)
	g := sc.Gossip
	if g.Delay < 0 {
		p.add("gossip.delay", "must not be negative")
	}
	if g.Jitter < 0 {
		p.add("gossip.jitter", "must not be negative")
	}
	if g.Loss < 0 || g.Loss >= 1 || math.IsNaN(g.Loss) {
		p.add("gossip.loss", "%v must be from 0 to below 1", g.Loss)
	}
	if g.Batch < 0 {
		p.add("gossip.batch", "must not be negative")
	}
	r := sc.Room
	switch {
	case r.TotalActiveUsers < 1:
		p.add("room.total_active_users", "is required: from 1 to 2147483647")
	case r.NewUsersPerMinute < 1:
		p.add("room.new_users_per_minute", "is required: from 1 to total_active_users")
	case r.NewUsersPerMinute > r.TotalActiveUsers:
		p.add("room.new_users_per_minute", "%d must be ≤ total_active_users (%d)", r.NewUsersPerMinute, r.TotalActiveUsers)
	}
	if r.SessionDuration < 0 || r.SessionDuration > 30 {
		p.add("room.session_duration", "%d must be from 1 to 30 minutes (0 means the default, %d)", r.SessionDuration, policy.DefaultSessionDuration)
	}
	switch policy.Method(r.QueueingMethod) {
	case policy.FIFO, policy.Random, policy.Passthrough, policy.MethodReject:
	default:
		p.add("room.queueing_method", "%q must be one of fifo, random, passthrough, reject", r.QueueingMethod)
	}
	if r.MaxQueue < 0 {
		p.add("room.max_queue", "must not be negative")
	}
	if r.Lag < 0 {
		p.add("room.lag", "must not be negative")
	}
	r.validateGroups(&p)
	for i, s := range sc.Strategies {
		if s != StrategyOurs && s != StrategyReference {
			p.add(fmt.Sprintf("strategies[%d]", i), "%q must be ours or reference", s)
		}
	}
	sc.validateVisitors(&p)
	for i, e := range sc.Events {
		f := fmt.Sprintf("events[%d]", i)
		if e.At < 0 {
			p.add(f+".at", "must not be negative")
		}
		kinds := 0
		for _, set := range []bool{e.Crash != nil, e.Leave != nil, e.Restart != nil, e.Partition != nil, e.Shift != nil} {
			if set {
				kinds++
			}
		}
		switch {
		case kinds != 1:
			p.add(f, "needs exactly one of crash, leave, restart, partition or shift")
		case e.Crash != nil && (*e.Crash < 0 || *e.Crash >= n):
			p.add(f+".crash", "node %d does not exist (0..%d)", *e.Crash, n-1)
		case e.Leave != nil && (*e.Leave < 0 || *e.Leave >= n):
			p.add(f+".leave", "node %d does not exist (0..%d)", *e.Leave, n-1)
		case e.Restart != nil && (*e.Restart < 0 || *e.Restart >= n):
			p.add(f+".restart", "node %d does not exist (0..%d)", *e.Restart, n-1)
		case e.Restart != nil && !sc.stoppedBefore(*e.Restart, e.At):
			p.add(f+".restart", "node %d is not down at %v: restart follows a crash or leave of the same node", *e.Restart, e.At.D())
		case e.Partition != nil:
			e.Partition.validate(&p, f+".partition", n)
		case e.Shift != nil:
			checkWeights(&p, f+".shift.weights", e.Shift.Weights, n, true)
			if e.Shift.Over < 0 {
				p.add(f+".shift.over", "must not be negative")
			}
		}
	}
	sc.validateOverlap(&p)
	for i, gname := range sc.Goals {
		if !containsStr(GoalNames, gname) {
			p.add(fmt.Sprintf("goals[%d]", i), "%q must be one of %s", gname, strings.Join(GoalNames, ", "))
		}
	}
	if len(p) > 0 {
		return errors.New("invalid scenario: " + strings.Join(p, "; "))
	}
	return nil
}

// validateDatacenters checks nodes.datacenters, gossip.wan and
// visitors.datacenter_weights.
func (sc *Scenario) validateDatacenters(p *problems) {
	n, d := sc.Nodes.Count, sc.Nodes.Datacenters
	if d == 0 {
		if sc.Gossip.WAN != nil {
			p.add("gossip.wan", "needs nodes.datacenters")
		}
		if len(sc.Visitors.DatacenterWeights) > 0 {
			p.add("visitors.datacenter_weights", "needs nodes.datacenters")
		}
		return
	}
	if d < 0 || d > n || (n >= 1 && n%d != 0) {
		p.add("nodes.datacenters", "%d must be from 1 to nodes.count (%d) and divide it: every data center has as many nodes", d, n)
		return
	}
	w := sc.Gossip.wan()
	if w.Delay < 0 || w.Jitter < 0 || w.Round < 0 {
		p.add("gossip.wan", "delay, jitter and round must not be negative")
	}
	if w.Loss < 0 || w.Loss >= 1 || math.IsNaN(w.Loss) {
		p.add("gossip.wan.loss", "%v must be from 0 to below 1", w.Loss)
	}
	if len(sc.Visitors.DatacenterWeights) > 0 {
		if len(sc.Visitors.NodeWeights) > 0 {
			p.add("visitors.datacenter_weights", "give node_weights or datacenter_weights, not both")
		}
		checkWeights(p, "visitors.datacenter_weights", sc.Visitors.DatacenterWeights, d, true)
	}
	if sc.Visitors.Arrival.SpoofBuckets {
		p.add("visitors.arrival.spoof_buckets", "is not modelled with nodes.datacenters")
	}
	for i, e := range sc.Events {
		if e.Shift == nil {
			// A crash, leave, restart or cut with data centers would need
			// carriers to hand over and data centers to split: not
			// modelled yet.
			p.add(fmt.Sprintf("events[%d]", i), "only shift events are modelled with nodes.datacenters")
		}
	}
}

// datacenterOf is node i's data center (0 .. datacenters-1), when the
// scenario has data centers.
func (sc *Scenario) datacenterOf(i int) int { return i / (sc.Nodes.Count / sc.Nodes.Datacenters) }

func (sc *Scenario) validateVisitors(p *problems) {
	v := &sc.Visitors
	n := sc.Nodes.Count
	if len(v.NodeWeights) > 0 {
		checkWeights(p, "visitors.node_weights", v.NodeWeights, n, true)
	}
	v.TimeOnOrigin.validate(p, "visitors.time_on_origin")
	v.RequestInterval.validate(p, "visitors.request_interval")
	if v.RequestInterval.Kind == "constant" && v.RequestInterval.Value <= 0 {
		p.add("visitors.request_interval", "must be > 0")
	}
	v.Refresh.Latency.validate(p, "visitors.refresh.latency")
	if v.Refresh.SpamShare < 0 || v.Refresh.SpamShare > 1 {
		p.add("visitors.refresh.spam_share", "%v must be from 0 to 1", v.Refresh.SpamShare)
	}
	if v.Refresh.SpamInterval <= 0 {
		p.add("visitors.refresh.spam_interval", "must be > 0")
	}
	if v.Abandonment.Probability < 0 || v.Abandonment.Probability > 1 {
		p.add("visitors.abandonment.probability", "%v must be from 0 to 1", v.Abandonment.Probability)
	}
	if v.Abandonment.Probability > 0 {
		v.Abandonment.After.validate(p, "visitors.abandonment.after")
	}
	a := &v.Arrival
	const f = "visitors.arrival"
	switch a.Curve {
	case "uniform":
		if (a.Visitors > 0) == (a.Rate > 0) {
			p.add(f+".visitors", "uniform needs exactly one of visitors or rate > 0")
		}
		if a.End <= a.Start {
			p.add(f+".end", "must be after start")
		}
	case "step":
		if a.End <= a.Start || a.At < a.Start || a.At > a.End {
			p.add(f+".at", "step needs start ≤ at ≤ end and start < end")
		}
		if a.RateBefore < 0 || a.RateAfter < 0 {
			p.add(f+".rate_after", "rates must not be negative")
		}
	case "spike":
		if a.Rate < 0 {
			p.add(f+".rate", "must not be negative")
		}
		if a.Rate > 0 && a.End <= a.Start {
			p.add(f+".end", "must be after start")
		}
		if a.SpikeVisitors <= 0 {
			p.add(f+".spike_visitors", "must be > 0")
		}
		if a.SpikeOver <= 0 {
			p.add(f+".spike_over", "must be > 0")
		}
		if a.SpikeNode != nil && (*a.SpikeNode < 0 || *a.SpikeNode >= n) {
			p.add(f+".spike_node", "node %d does not exist (0..%d)", *a.SpikeNode, n-1)
		}
	case "phases":
		if len(a.Phases) == 0 {
			p.add(f+".phases", "is required for curve phases")
		}
	default:
		p.add(f+".curve", "%q must be uniform, step, spike or phases", a.Curve)
	}
	if a.Curve != "phases" && len(a.Phases) > 0 {
		p.add(f+".phases", "only with curve: phases")
	}
	for i, ph := range a.Phases {
		pf := fmt.Sprintf("%s.phases[%d]", f, i)
		if ph.End <= ph.Start {
			p.add(pf+".end", "must be after start")
		}
		if (ph.Visitors > 0) == (ph.Rate > 0 || (ph.RateEnd != nil && *ph.RateEnd > 0)) {
			p.add(pf+".visitors", "needs exactly one of visitors or rate")
		}
		if ph.Rate < 0 || (ph.RateEnd != nil && *ph.RateEnd < 0) {
			p.add(pf+".rate", "must not be negative")
		}
		if len(ph.Weights) > 0 {
			checkWeights(p, pf+".weights", ph.Weights, n, false)
		}
		if ph.Node != nil && (*ph.Node < 0 || *ph.Node >= n) {
			p.add(pf+".node", "node %d does not exist (0..%d)", *ph.Node, n-1)
		}
		checkProcess(p, pf+".process", ph.Process)
		if ph.Group != "" && sc.Room.group(ph.Group) < 0 {
			p.add(pf+".group", "%q is none of room.priority_groups", ph.Group)
		}
	}
	checkProcess(p, f+".process", a.Process)
	if a.SpoofBuckets && a.JoinOver <= 0 {
		p.add(f+".join_over", "must be > 0")
	}
}

// validateGroups checks the room's priority groups.
func (r Room) validateGroups(p *problems) {
	if len(r.PriorityGroups) > policy.MaxPriorityGroups {
		p.add("room.priority_groups", "%d groups, at most %d allowed", len(r.PriorityGroups), policy.MaxPriorityGroups)
	}
	for i, g := range r.PriorityGroups {
		f := fmt.Sprintf("room.priority_groups[%d].", i)
		switch {
		case strings.TrimSpace(g.Name) == "":
			p.add(f+"name", "is required")
		case r.group(g.Name) != i:
			p.add(f+"name", "%q appears twice", g.Name)
		}
		if g.Share < 0 || g.Share > 1 || math.IsNaN(g.Share) {
			p.add(f+"share", "%v must be above 0 and at most 1 (0 or unset means 1)", g.Share)
		}
		if g.NewUsersPerMinute < 0 {
			p.add(f+"new_users_per_minute", "%d must be 0 (no cap of its own) or more", g.NewUsersPerMinute)
		}
	}
}

// group is the index of the priority group named name, or -1.
func (r Room) group(name string) int {
	for i, g := range r.PriorityGroups {
		if g.Name == name {
			return i
		}
	}
	return -1
}

// policyGroups converts the room's priority groups, in order.
func (r Room) policyGroups() []policy.Group {
	var out []policy.Group
	for i, g := range r.PriorityGroups {
		out = append(out, policy.Group{Name: g.Name, Index: i, Share: g.Share, NewUsersPerMinute: g.NewUsersPerMinute})
	}
	return out
}

func (pt *Partition) validate(p *problems, field string, n int) {
	if pt.For <= 0 {
		p.add(field+".for", "is required and must be > 0")
	}
	if len(pt.Groups) < 2 {
		p.add(field+".groups", "needs at least two groups of nodes")
		return
	}
	seen := make([]bool, n)
	for g, grp := range pt.Groups {
		gf := fmt.Sprintf("%s.groups[%d]", field, g)
		if len(grp) == 0 {
			p.add(gf, "is empty")
		}
		for _, id := range grp {
			switch {
			case id < 0 || id >= n:
				p.add(gf, "node %d does not exist (0..%d)", id, n-1)
			case seen[id]:
				p.add(gf, "node %d is in two groups", id)
			default:
				seen[id] = true
			}
		}
	}
	for id, ok := range seen {
		if !ok {
			p.add(field+".groups", "node %d is in no group (list every node once)", id)
			break
		}
	}
}

// stoppedBefore reports whether node id crashed or left before at, and was
// not restarted since.
func (sc *Scenario) stoppedBefore(id int, at Duration) bool {
	var stop, start Duration = -1, -1
	for _, e := range sc.Events {
		if e.At >= at {
			continue
		}
		switch {
		case (e.Crash != nil && *e.Crash == id) || (e.Leave != nil && *e.Leave == id):
			stop = max(stop, e.At)
		case e.Restart != nil && *e.Restart == id:
			start = max(start, e.At)
		}
	}
	return stop >= 0 && stop >= start
}

// validateOverlap refuses partitions that overlap in time: the ring is cut
// one way at a time.
func (sc *Scenario) validateOverlap(p *problems) {
	for i, a := range sc.Events {
		if a.Partition == nil {
			continue
		}
		for j := i + 1; j < len(sc.Events); j++ {
			b := sc.Events[j]
			if b.Partition == nil {
				continue
			}
			if a.At < b.At+b.Partition.For && b.At < a.At+a.Partition.For {
				p.add(fmt.Sprintf("events[%d].partition", j), "overlaps the partition of events[%d]; cut the ring one way at a time", i)
			}
		}
	}
}

func checkProcess(p *problems, field, s string) {
	if s != "" && s != "poisson" && s != "even" {
		p.add(field, "%q must be poisson or even", s)
	}
}

func checkWeights(p *problems, field string, w []float64, n int, needLen bool) {
	if needLen && len(w) != n {
		p.add(field, "has %d entries, want one per node (%d)", len(w), n)
		return
	}
	if len(w) > n {
		p.add(field, "has %d entries, more than the %d nodes", len(w), n)
	}
	sum := 0.0
	for _, x := range w {
		if x < 0 || math.IsNaN(x) || math.IsInf(x, 0) {
			p.add(field, "weights must be finite and ≥ 0")
			return
		}
		sum += x
	}
	if sum <= 0 {
		p.add(field, "at least one weight must be > 0")
	}
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// label is the scenario's title, or its name.
func (sc *Scenario) label() string {
	if sc.Title != "" {
		return sc.Title
	}
	return sc.Name
}

// HasGoal reports whether the scenario lists goal g.
func (sc *Scenario) HasGoal(g string) bool { return containsStr(sc.Goals, g) }

// policyRoom converts the room settings; Nodes is filled per node.
func (sc *Scenario) policyRoom() policy.Room {
	r := sc.Room
	return policy.Room{
		TotalActiveUsers:  r.TotalActiveUsers,
		NewUsersPerMinute: r.NewUsersPerMinute,
		SessionDuration:   r.SessionDuration,
		QueueingMethod:    policy.Method(r.QueueingMethod),
		QueueAll:          r.QueueAll,
		MaxQueue:          r.MaxQueue,
		Lag:               r.Lag.D(),
	}
}

// session is how long a session lasts after the last request.
func (sc *Scenario) session() time.Duration {
	return time.Duration(sc.policyRoom().Session()) * time.Minute
}

// skews returns every node's clock offset.
func (sc *Scenario) skews() []time.Duration {
	n := sc.Nodes.Count
	out := make([]time.Duration, n)
	switch {
	case len(sc.Nodes.Skew) == n:
		for i, d := range sc.Nodes.Skew {
			out[i] = d.D()
		}
	case sc.Nodes.SkewRange > 0 && n > 1:
		r := sc.Nodes.SkewRange.D()
		for i := range out {
			out[i] = -r + time.Duration(int64(2*r)*int64(i)/int64(n-1))
		}
	}
	return out
}
