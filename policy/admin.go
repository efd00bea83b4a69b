package policy

import (
	"math"
	"time"
)

// BucketSlots is one waiting bucket with its reserved slots: the
// "eligibleSlots" of "Building Waiting Room on Workers and Durable Objects".
type BucketSlots struct {
	Bucket   int64 `json:"bucket"`
	Waiting  int64 `json:"waiting"`
	Eligible int64 `json:"eligible_slots"`
}

// Summary is an allocation as the admin endpoint and the simulator show it.
// Slot counts are for the current split; for ReferencePerMinute that is the
// split made at the minute's first allocation.
type Summary struct {
	Status   Status `json:"status"`
	Method   Method `json:"queueing_method"`
	Strategy string `json:"strategy"`
	Minute   int64  `json:"minute"`
	At       string `json:"at"`

	ActiveUsers        float64 `json:"active_users"` // the expiring minute pro rata
	AdmittedThisMinute int64   `json:"admitted_this_minute"`
	OpenSlots          int64   `json:"open_slots"`  // S as of now
	SplitSlots         int64   `json:"split_slots"` // S the split was made from

	CoveredSlots  int64   `json:"covered_slots"` // slots reserved for fully covered buckets
	PoolSlots     int64   `json:"pool_slots"`    // the partial bucket's slots or the new-user remainder
	Share         float64 `json:"share"`         // this node's share of traffic
	AnywhereShare float64 `json:"anywhere_share"`
	Nodes         int     `json:"nodes"`          // the Anywhere part is divided by this
	NodeSlots     int64   `json:"node_slots"`     // Share × PoolSlots
	AnywhereSlots int64   `json:"anywhere_slots"` // AnywhereShare × PoolSlots, for all nodes together
	Allowance     int64   `json:"allowance"`      // pool admissions this split granted this node
	Budget        int64   `json:"budget"`         // of which still unused
	// BurstAllowance is what the allowance may reach, share or not, while
	// nobody waits (see "Bursts" in the package doc); 0 while anyone waits.
	BurstAllowance int64 `json:"burst_allowance"`

	QueuedUsers    int64         `json:"queued_users"`
	QueueIsFull    bool          `json:"queue_is_full"`
	AdmissionRate  float64       `json:"admissions_per_minute"`
	RateKnown      bool          `json:"rate_known"`
	MaxWaitMinutes int           `json:"max_wait_minutes"`
	MaxWaitKnown   bool          `json:"max_wait_known"`
	Buckets        []BucketSlots `json:"buckets"`
	// Cut is set while part of the ring is unreachable (Room.Side): the
	// figures above are then the reachable part's alone.
	Cut *CutSummary `json:"cut,omitempty"`
}

// CutSummary is what a node cut off from part of the ring runs on.
type CutSummary struct {
	ReachableNodes    int     `json:"reachable_nodes"`
	ExpectedNodes     int     `json:"expected_nodes"`
	TotalActiveUsers  int64   `json:"part_total_active_users"`   // this part's share of the limit
	NewUsersPerMinute int64   `json:"part_new_users_per_minute"` // this part's share of the limit
	ElsewhereActive   float64 `json:"elsewhere_active_users"`    // as last heard
	ElsewhereAdmitted int64   `json:"elsewhere_admitted_this_minute"`
	// ElsewhereWaiting is how many waited at the unreachable nodes, as
	// last heard: still in line, and counted in the places told here.
	ElsewhereWaiting int64 `json:"elsewhere_waiting"`
}

// OpenSlots is S = min(total − active, new per minute − admitted this
// minute) as of the allocation, never negative.
func (a *Allocation) OpenSlots() int64 { return a.open }

// Budget is how many more visitors this node may admit from the pool (the
// partial bucket, new users, or anyone under random queueing) before the next
// allocation. Covered buckets are not limited by it.
func (a *Allocation) Budget() int64 { return max(0, a.sp.poolCap-a.led.pool.Load()) }

// EligibleSlots lists the waiting buckets, oldest first, with the slots
// reserved for each from the split's open slots.
func (a *Allocation) EligibleSlots() []BucketSlots {
	out := make([]BucketSlots, len(a.buckets))
	for i, b := range a.buckets {
		out[i] = BucketSlots{Bucket: b.bucket, Waiting: b.n, Eligible: min(b.n, max(0, a.sp.covered+a.sp.pool-b.before))}
	}
	return out
}

// MaxWait is the estimate for the newest visitor: the whole queue ahead under
// FIFO, the 75th percentile under random queueing.
func (a *Allocation) MaxWait() (minutes int, known bool) {
	e := a.Estimate(math.MaxInt64)
	if a.method == Random {
		return e.WaitTime75, e.WaitTimeKnown
	}
	return e.WaitTime, e.WaitTimeKnown
}

// Summary gathers the allocation's figures.
func (a *Allocation) Summary() Summary {
	wait, known := a.MaxWait()
	var cut *CutSummary
	if a.cut {
		cut = &CutSummary{
			ReachableNodes: a.room.Side.Nodes, ExpectedNodes: a.room.Nodes,
			TotalActiveUsers:  a.partOf(int64(a.room.TotalActiveUsers)),
			NewUsersPerMinute: a.partOf(int64(a.room.NewUsersPerMinute)),
			ElsewhereActive:   a.elseActive, ElsewhereAdmitted: a.elseAdm,
			ElsewhereWaiting: a.room.Side.Waiting.Total(),
		}
	}
	return Summary{
		Cut:    cut,
		Status: a.Status(), Method: a.method, Strategy: a.strategy.String(),
		Minute: a.minute, At: a.now.UTC().Format(time.RFC3339Nano),
		ActiveUsers: a.activeEff, AdmittedThisMinute: a.admitted,
		OpenSlots: a.open, SplitSlots: a.sp.open,
		CoveredSlots: a.sp.covered, PoolSlots: a.sp.pool,
		Share: a.sp.share, AnywhereShare: a.sp.anywhere, Nodes: a.sp.nodes,
		NodeSlots:     int64(math.Floor(a.sp.shareSlots + 1e-9)),
		AnywhereSlots: int64(math.Round(a.sp.anywhereSlots)),
		Allowance:     a.sp.allowance, BurstAllowance: a.sp.burst, Budget: a.Budget(),
		QueuedUsers: a.waiting, QueueIsFull: a.full,
		AdmissionRate: a.rate, RateKnown: a.rate > 0,
		MaxWaitMinutes: wait, MaxWaitKnown: known,
		Buckets: a.EligibleSlots(),
	}
}
