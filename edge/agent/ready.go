package agent

import (
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom/edge/config"
)

// readiness is what /readyz answers from: whether the node has what it
// needs to decide for visitors, and whether it is stopping.
type readiness struct {
	started time.Time // node clock, when New started building the node
	// primed is set the first time the node is found ready, so that it
	// logs that once.
	primed atomic.Bool
	// stopping is set when shutdown begins, so load balancers stop sending
	// before the listeners close.
	stopping atomic.Bool
}

// Ready reports whether the node should be sent visitors at now: it is
// not stopping, it is not cut off from its peers with stale_state closed
// (it would queue every new visitor, as /healthz says), it knows the ring's
// time (it measured the clocks of most of its live peers: before that, a
// node whose clock is off would date its visitors' arrivals in another
// minute than the ring's), and it has had
// fresh state: it joined the ring and heard from a peer (gossip from a peer
// is the proof of both: only members holding the key are heard), or,
// without seeds, it waited ReadyAloneAfter for one. A node with seeds that
// never reaches a peer never becomes ready: deciding alone would let its
// visitors in on counts that miss every other node's. Having heard once is
// enough, whenever it was: a ring scaled down to one node must keep serving
// (stale_state decides what a node cut off does).
func (a *Agent) Ready(now time.Time) bool {
	if a.ready.stopping.Load() || a.StaleClosed(now) || !a.Node().ClockSettled(now) {
		return false
	}
	wait := time.Duration(a.cfg.ReadyAloneAfter)
	if wait <= 0 {
		wait = config.DefaultReadyAloneAfter
	}
	var why string
	switch {
	case !a.Node().LastHeard().IsZero():
		why = "joined the ring and heard from a peer"
	case len(a.cfg.Seeds) == 0 && now.Sub(a.ready.started) >= wait:
		why = "alone by configuration (no seeds, no peer within ready_alone_after)"
	default:
		return false
	}
	if a.ready.primed.CompareAndSwap(false, true) {
		a.log.Info().Int("members", a.Node().NumMembers()).Msg("ready: " + why)
	}
	return true
}

// beginShutdown turns the node not ready, at once, so that load balancers
// that probe /readyz stop sending while it drains.
func (a *Agent) beginShutdown() {
	a.ready.stopping.Store(true)
}
