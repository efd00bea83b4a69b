package edge

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom/edge/api"
	"github.com/waitroom/waitroom/edge/config"
)

// readiness is what /readyz answers from: whether the node has what it
// needs to decide for visitors, and whether it is stopping.
type readiness struct {
	started time.Time // node clock, when New built the server
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
func (s *Server) Ready(now time.Time) bool {
	if s.ready.stopping.Load() || s.staleClosed(now) || !s.node.ClockSettled(now) {
		return false
	}
	wait := time.Duration(s.cfg.ReadyAloneAfter)
	if wait <= 0 {
		wait = config.DefaultReadyAloneAfter
	}
	var why string
	switch {
	case !s.node.LastHeard().IsZero():
		why = "joined the ring and heard from a peer"
	case len(s.cfg.Seeds) == 0 && now.Sub(s.ready.started) >= wait:
		why = "alone by configuration (no seeds, no peer within ready_alone_after)"
	default:
		return false
	}
	if s.ready.primed.CompareAndSwap(false, true) {
		s.log.Info().Int("members", s.node.NumMembers()).Msg("ready: " + why)
	}
	return true
}

// serveReady answers GET /readyz, open like /healthz, with nothing but ok
// or not: 200 when Ready, 503 otherwise.
func (s *Server) serveReady(w http.ResponseWriter, r *http.Request) {
	if !s.Ready(s.clock()) {
		writeJSON(w, http.StatusServiceUnavailable, api.Health{OK: false})
		return
	}
	writeJSON(w, http.StatusOK, api.Health{OK: true})
}

// beginShutdown turns the node not ready, at once, so that load balancers
// that probe /readyz stop sending while it drains.
func (s *Server) beginShutdown() {
	s.ready.stopping.Store(true)
}
