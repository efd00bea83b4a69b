package policy

import "time"

// How a measured gossip delay becomes the lag the policy assumes
// (Room.Lag); see AssumedLag.
const (
	// LagSafety multiplies the measured delay: the delay is a percentile
	// over the last minute, and a burst may be slower than what was seen.
	LagSafety = 2
	// AllocationFollow is how long an allocation may take to follow a
	// merge: a node allocates again on a merge that changes its state, at
	// most this often (and at least every AllocationEvery).
	AllocationFollow = 50 * time.Millisecond
	// LagFloor is the least lag assumed, however fast the ring looks.
	LagFloor = 150 * time.Millisecond
)

// AssumedLag is the lag to assume (Room.Lag) for a ring whose gossip delay
// was measured at delay (the p99 over the last minute of the slowest live
// peer): delay × LagSafety + AllocationFollow, at least LagFloor, never more
// than configured, the operator's bound. The edge calls it with what its
// gossip node measures, and the simulator with what its model of gossip
// delivers, so both assume the same lag for the same delays.
//
// The lag decides how full a flooded room gets before it queues: each node
// must leave room for what the others may have admitted within one lag
// without its knowing, so a lag far above the real delay queues early, and
// one below it voids the overshoot bound (see the package doc).
func AssumedLag(delay, configured time.Duration) time.Duration {
	return min(max(delay*LagSafety+AllocationFollow, LagFloor), configured)
}
