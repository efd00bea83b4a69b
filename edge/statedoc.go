package edge

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
// room status API where it has a name for them.
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

// WaitingNow is the number of visitors waiting in the named room as the
// node's merged state says at its clock, summed afresh rather than taken from
// the last allocation (which the loop may not have recomputed yet): for tools
// that drive load and read the count right after, such as the bench. -1 for
// a room the node does not have.
func (s *Server) WaitingNow(name string) int64 {
	now := s.ringNow()
	for _, rm := range s.rooms() {
		if rm.name == name {
			return rm.s.node.Snapshot(rm.name, now.Unix(), rm.viewAt(now).win).TotalWaiting
		}
	}
	return -1
}
