package api

import (
	"time"

	"github.com/waitroom/waitroom/gossip"
	"github.com/waitroom/waitroom/policy"
)

// StateDoc is what GET /state answers: the node, the ring as it sees it and
// its merged picture of every room.
type StateDoc struct {
	Node        string `json:"node"`
	Replica     string `json:"replica"`
	Incarnation uint64 `json:"incarnation"`
	// Time is the node's own clock; RingTime the ring's (see
	// gossip.Node.RingNow), by which the rooms' figures are dated.
	Time     time.Time       `json:"time"`
	RingTime time.Time       `json:"ring_time"`
	Members  []gossip.Member `json:"members"`
	Gossip   gossip.Stats    `json:"gossip"`
	// Lag is the gossip delay the allocations assume, measured or
	// configured, with each peer's measured delay and clock offset.
	Lag   *LagDoc      `json:"lag,omitempty"`
	Rooms []RoomStatus `json:"rooms"`
	// Webhooks are the webhooks' deliveries as this node made them.
	Webhooks []WebhookStatus `json:"webhooks,omitempty"`
}

// RoomStatus is one room's merged figures, named after Cloudflare's waiting
// room status API where it has a name for them; GET /rooms/{name}/status
// answers it.
type RoomStatus struct {
	Name                      string         `json:"name"`
	Host                      string         `json:"host"`
	Path                      string         `json:"path"`
	Status                    string         `json:"status"` // not_queueing, queueing, queue_all, suspended
	QueueingMethod            string         `json:"queueing_method"`
	TotalActiveUsers          int            `json:"total_active_users"`
	NewUsersPerMinute         int            `json:"new_users_per_minute"`
	SessionDuration           int            `json:"session_duration"`
	EstimatedTotalActiveUsers int64          `json:"estimated_total_active_users"`
	EstimatedQueuedUsers      int64          `json:"estimated_queued_users"`
	NewUsersThisMinute        int64          `json:"new_users_this_minute"`
	MaxEstimatedTimeMinutes   int            `json:"max_estimated_time_minutes"`
	OpenSlots                 int64          `json:"open_slots"`
	AdmissionsPerMinute       float64        `json:"admissions_per_minute"`
	Buckets                   []BucketStatus `json:"buckets"`
	Nodes                     []NodeShare    `json:"nodes"`
	// Cut is set while part of the ring is unreachable: the figures above
	// are then those of the part this node can reach, held to its share of
	// the limits.
	Cut *policy.CutSummary `json:"cut,omitempty"`
	// AllocationFailing is set while the room's allocation cannot be
	// computed (a panic, counted in waitroom_panics_total): the room then
	// decides by the node's stale_state until it can again.
	AllocationFailing bool `json:"allocation_failing,omitempty"`
	// Last10Minutes are the room's analytics over the last ten minutes.
	Last10Minutes *Analytics `json:"last_10_minutes,omitempty"`
}

// BucketStatus is one arrival bucket of a room's queue.
type BucketStatus struct {
	Bucket        time.Time `json:"bucket"`
	Waiting       int64     `json:"waiting"`
	EligibleSlots int64     `json:"eligible_slots"`
}

// NodeShare is one node's part of a room's traffic.
type NodeShare struct {
	Node               string  `json:"node"`
	Replica            string  `json:"replica"`
	TrafficShare       float64 `json:"traffic_share"`
	ArrivalsThisMinute uint64  `json:"arrivals_this_minute"`
	AdmittedThisMinute uint64  `json:"admitted_this_minute"`
}

// LagDoc is the lag section of the state document: the gossip delay the
// allocation assumes and what it was derived from.
type LagDoc struct {
	// InUseMs is the lag the policy assumes (policy.Room.Lag), in ms, for
	// the ring delay shown in Ring: the figure and the lag derived from it
	// are read together. (Allocations reuse a delay figure for up to a
	// quarter of a second, so theirs may trail this by that much.)
	InUseMs float64 `json:"in_use_ms"`
	// Measured: InUseMs comes from the measured delay, not the config.
	Measured bool `json:"measured"`
	// ConfiguredMs is the configured bound (gossip_lag, or the profile's).
	ConfiguredMs float64 `json:"configured_ms"`
	// MeasuringOn is false when gossip_lag_measured is false.
	MeasuringOn bool `json:"measuring_on"`
	// Ring is the measured delay: the ring-wide figure and each live
	// peer's delay and clock offset.
	Ring gossip.RingLag `json:"ring"`
}

// Analytics are a room's replicated per-minute counters over a span of
// minutes: every node adds to them and merges everyone's, so any node
// answers for the whole cluster. GET /rooms/{name}/analytics answers it.
type Analytics struct {
	Room         string           `json:"room"`
	From         time.Time        `json:"from"`
	To           time.Time        `json:"to"` // the start of the last minute included (the current one)
	Minutes      int              `json:"minutes"`
	Totals       map[string]int64 `json:"totals"`
	TimeInQueue  Distribution     `json:"time_in_queue"`
	TimeOnOrigin Distribution     `json:"time_on_origin"`
	PerMinute    []MinuteFigures  `json:"per_minute"`
	// PriorityGroups are the room's priority groups' admissions and code
	// uses over the span, merged over the ring.
	PriorityGroups map[string]GroupFigures `json:"priority_groups,omitempty"`
}

// Distribution summarises a merged histogram of durations.
type Distribution struct {
	Count      uint64  `json:"count"`
	P50Seconds float64 `json:"p50_seconds"`
	P90Seconds float64 `json:"p90_seconds"`
}

// MinuteFigures are one minute's counters.
type MinuteFigures struct {
	Minute   time.Time        `json:"minute"`
	Counters map[string]int64 `json:"counters"`
}

// GroupFigures are a priority group's figures over a span of minutes,
// merged over the ring: for the state document and the analytics.
type GroupFigures struct {
	Admitted uint64 `json:"admitted"`
	CodeUses uint64 `json:"code_uses"`
}

// Health is what GET /healthz and GET /readyz answer, with 200 when OK and
// 503 when not.
type Health struct {
	OK bool `json:"ok"`
}

// Error is the body of every refusal of the admin API: what was wrong, in
// words an operator can act on.
type Error struct {
	Error string `json:"error"`
}
