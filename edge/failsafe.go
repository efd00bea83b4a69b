package edge

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/edge/queuepage"
	"github.com/waitroom/waitroom/policy"
)

// No panic takes a node down. Every node of the ring merges the same state
// and runs the same policy over it, so a state that makes the policy panic
// makes every node panic in the same second: the one outage a waiting room
// exists to prevent, and on restart the nodes merge the same state back.
// So every goroutine the node starts recovers, and every call into the
// policy is guarded: a panic is logged once with its stack and its room,
// counted in waitroom_panics_total{where}, and the room runs on in the
// failure mode its node's stale_state already names for a node cut off from
// the ring, until an allocation is computed and probed again without one:
//
//   - open (the default): the room keeps deciding from the last allocation
//     that was computed; its estimates, the hold for the next allocation and
//     the short refresh near the front are left out (the wait shows as
//     unknown), since those are where the panic may lie. An allocation kept
//     past its minute keeps the budget it had left then, so a room that
//     stays failing admits nobody beyond it.
//   - closed: new visitors are queued, as a node cut off from the ring with
//     stale_state: closed queues them; admitted visitors keep their sessions
//     and queued ones their places.

// Where a recovered panic happened: the label of waitroom_panics_total.
const (
	panicAllocation = "allocation"      // computing or probing a room's allocation
	panicRequest    = "request"         // a policy call or any other step of a visitor's request
	panicLoop       = "allocation_loop" // the rest of a round of the allocation loop
)

// What runs beside the node counts its panics under names of its own
// (Panicked, Recover, AfterEachRound): "console" (sampling the console's
// charts), "webhooks" (deciding which webhook notices are due),
// "webhook_delivery", "admin" (an admin API request) and "acme".

// panicked counts one recovered panic under where and logs it with its
// stack, room and what it was ("" for no room). loud is false for a panic of
// a room already failing, which is counted but not logged again.
func (s *Server) panicked(where, room string, p any, stack []byte, loud bool) {
	s.metrics.panics.WithLabelValues(where).Inc()
	if !loud {
		return
	}
	ev := s.log.Error().Str("where", where).Str("panic", fmt.Sprint(p)).Bytes("stack", stack)
	if room != "" {
		ev = ev.Str("room", room)
	}
	ev.Msg("recovered from a panic")
}

// Panicked counts and logs one panic that what runs beside the node
// (the admin API, the webhooks, the listeners) recovered, under where.
func (s *Server) Panicked(where string, p any, stack []byte) {
	s.panicked(where, "", p, stack, true)
}

// Recover is recoverAs for what runs beside the node: deferred directly
// by a goroutine or a step that must not end it, it recovers a panic and
// counts and logs it under where.
func (s *Server) Recover(where string) {
	if p := recover(); p != nil {
		s.panicked(where, "", p, debug.Stack(), true)
	}
}

// recoverAs is deferred by every goroutine of the node and every step that
// must not end it: it recovers a panic, counts and logs it under where, and
// lets the goroutine go on (or end normally).
func (s *Server) recoverAs(where string) {
	if p := recover(); p != nil {
		s.panicked(where, "", p, debug.Stack(), true)
	}
}

// safely runs fn, recovering a panic as recoverAs does: a loop's step that
// fails is skipped, and the loop goes on with the next.
func (s *Server) safely(where string, fn func()) {
	defer s.recoverAs(where)
	fn()
}

// recoverRequest is deferred by the request path: a panic that no policy
// guard caught answers a page that tries again shortly, never a broken
// connection. An aborted proxy copy (http.ErrAbortHandler) is not a panic
// of ours and goes on up.
func (s *Server) recoverRequest(w http.ResponseWriter, rm *room) {
	p := recover()
	if p == nil {
		return
	}
	if err, ok := p.(error); ok && errors.Is(err, http.ErrAbortHandler) {
		panic(p)
	}
	name := ""
	if rm != nil {
		name = rm.name
	}
	s.panicked(panicRequest, name, p, debug.Stack(), true)
	h := w.Header()
	h.Set("Refresh", strconv.Itoa(policy.RefreshBase))
	h.Set("Retry-After", strconv.Itoa(policy.RefreshBase))
	h.Set("Cache-Control", "no-store")
	queuepage.WriteStatus(w, http.StatusServiceUnavailable, "Please wait", "The waiting room is busy. This page will try again shortly.")
}

// fail puts room rm in its failure mode after a panic of where in
// allocation a (recovered as p with stack): a's place is taken by the
// fallback, unless a later allocation has taken it already. It never takes
// rm.mu, which the request that panicked may hold.
// degraded says whether a's estimates failed (a request's or the probe's
// panic), or only the computation of the allocation that was to follow it.
func (rm *room) fail(a *allocation, where string, p any, stack []byte, now time.Time, degraded bool) {
	first := !rm.failing.Swap(true)
	rm.s.panicked(where, rm.name, p, stack, first)
	if first {
		rm.s.log.Warn().Str("room", rm.name).Str("stale_state", rm.s.staleMode()).
			Msg("the room's allocation failed: deciding by stale_state until one is computed again")
	}
	fb := rm.fallback(a, now, degraded)
	if rm.alloc.CompareAndSwap(a, fb) {
		close(a.next) // wakes the requests held on it (see holding)
	}
}

// fallback is what room rm runs on once allocation a has failed (see the
// top of this file). Its chain is a's, so the node's admission ledger
// survives the failure.
func (rm *room) fallback(a *allocation, now time.Time, degraded bool) *allocation {
	fb := &allocation{Allocation: a.Allocation, chain: a.chain, rm: rm, minute: unixMinute(now), at: a.at, view: a.view, next: make(chan struct{}), degraded: degraded || a.degraded, fallback: true, fault: a.fault}
	if rm.s.staleMode() == "closed" {
		pol := a.view.pol
		pol.QueueAll, pol.Suspended = true, false
		snap := crdt.RoomSnapshot{Room: rm.name, Now: now.Unix(), Minute: unixMinute(now)}
		fb.Allocation = policy.Allocate(pol, &snap, rm.s.node.Replica(), now, policy.Continuous)
		fb.degraded = true
	}
	return fb
}

// recovered ends a room's failure once an allocation has been computed and
// probed without a panic.
func (rm *room) recovered() {
	rm.failedCall.Store(nil)
	if rm.failing.Swap(false) {
		rm.s.log.Info().Str("room", rm.name).Msg("the room's allocation is computed again")
	}
}

// staleMode is the node's stale_state: open or closed.
func (s *Server) staleMode() string {
	if s.cfg.StaleState == "closed" {
		return "closed"
	}
	return "open"
}

// estimateCall is one estimate a request asked of an allocation.
type estimateCall struct {
	bucket  int64
	arrived uint16
}

// probe asks a freshly computed allocation what requests and the admin API
// will ask of it: the summary (the longest wait, the forecast), the
// estimate, place and refresh interval of every waiting bucket's first and
// last visitors, and the estimate a request met a panic in, if one did (a
// failed call the probe would not make otherwise, asked again until it
// passes). A panic here puts the room in its failure mode before a visitor
// meets it, or keeps it there.
func probe(a *allocation, snap *crdt.RoomSnapshot, failed *estimateCall) {
	if a.fault == "estimate" || (failed != nil && a.fault != "") {
		panic("a poisoned state (test)")
	}
	pa := a.Allocation
	_ = pa.Summary()
	for _, b := range snap.Waiting {
		for _, arrived := range [...]uint16{0, 599} {
			_ = pa.EstimateAt(b.Bucket, arrived)
		}
		_ = pa.RefreshInterval(b.Bucket, 0.5)
	}
	_ = pa.EstimateAt(snap.Minute, 0)
	if failed != nil {
		_ = pa.EstimateAt(failed.bucket, failed.arrived)
	}
}

// The policy calls of the request path, the admin API and the console go
// through the methods below, which stand in for the policy's own: a panic
// puts the room in its failure mode and the call answers what that mode
// would (a queued visitor, an unknown wait, the plain refresh interval).

// guard recovers a panic of a policy call on a: the room fails (see fail).
// It must be deferred directly, as `defer a.guard(&failed)`; failed is set
// so that the caller can answer the failure mode.
func (a *allocation) guard(failed *bool) {
	if p := recover(); p != nil {
		*failed = true
		if a.rm != nil {
			a.rm.fail(a, panicRequest, p, debug.Stack(), a.rm.s.ringNow(), true)
		}
	}
}

// Decide is policy.Allocation.Decide; a panic queues the visitor.
func (a *allocation) Decide(v policy.Visitor, rng *rand.Rand) (out policy.Outcome) {
	var failed bool
	defer func() {
		if failed {
			out = policy.Queue
		}
	}()
	defer a.guard(&failed)
	return a.Allocation.Decide(v, rng)
}

// DecidePriority is policy.Allocation.DecidePriority; a panic queues the
// visitor.
func (a *allocation) DecidePriority(v policy.Visitor, g int, share float64) (out policy.Outcome, ahead bool) {
	var failed bool
	defer func() {
		if failed {
			out, ahead = policy.Queue, false
		}
	}()
	defer a.guard(&failed)
	return a.Allocation.DecidePriority(v, g, share)
}

// Held is policy.Allocation.Held; a failing room holds nobody.
func (a *allocation) Held(v policy.Visitor, since time.Time) (held bool) {
	if a.degraded {
		return false
	}
	var failed bool
	defer func() {
		if failed {
			held = false
		}
	}()
	defer a.guard(&failed)
	return a.Allocation.Held(v, since)
}

// RefreshInterval is policy.Allocation.RefreshInterval; a failing room
// gives everyone the plain interval.
func (a *allocation) RefreshInterval(bucket int64, draw float64) (r uint16) {
	if a.degraded {
		return policy.JitteredRefresh(draw)
	}
	var failed bool
	defer func() {
		if failed {
			r = policy.JitteredRefresh(draw)
		}
	}()
	defer a.guard(&failed)
	return a.Allocation.RefreshInterval(bucket, draw)
}

// unknownEstimate is what a failing room tells a waiting visitor: no wait
// and no place.
func unknownEstimate() policy.Estimate {
	return policy.Estimate{WaitTimeFormatted: policy.UnknownWait}
}

// EstimateAt is policy.Allocation.EstimateAt; a failing room knows no
// wait.
func (a *allocation) EstimateAt(bucket int64, arrived uint16) (e policy.Estimate) {
	if a.degraded {
		return unknownEstimate()
	}
	var failed bool
	defer func() {
		if failed {
			e = unknownEstimate()
			if a.rm != nil {
				a.rm.failedCall.Store(&estimateCall{bucket, arrived})
			}
		}
	}()
	defer a.guard(&failed)
	if a.fault != "" {
		panic("a poisoned state (test)")
	}
	return a.Allocation.EstimateAt(bucket, arrived)
}

// Estimate is policy.Allocation.Estimate, guarded as EstimateAt.
func (a *allocation) Estimate(bucket int64) policy.Estimate { return a.EstimateAt(bucket, 0) }

// Status is policy.Allocation.Status; a room whose status cannot be
// computed is taken as queueing.
func (a *allocation) Status() (st policy.Status) {
	var failed bool
	defer func() {
		if failed {
			st = policy.StatusQueueing
		}
	}()
	defer a.guard(&failed)
	return a.Allocation.Status()
}

// Summary is policy.Allocation.Summary; a room whose summary cannot be
// computed shows what it can without the policy: queueing, and the minute.
func (a *allocation) Summary() (sum policy.Summary) {
	var failed bool
	defer func() {
		if failed {
			sum = policy.Summary{Status: policy.StatusQueueing, Method: a.view.pol.QueueingMethod, Minute: a.minute, At: a.at.UTC().Format(time.RFC3339Nano)}
		}
	}()
	defer a.guard(&failed)
	if a.degraded {
		// The figures that need no estimate: the estimates failed.
		sum = policy.Summary{
			Status: a.Allocation.Status(), Method: a.view.pol.QueueingMethod, Minute: a.minute,
			At: a.at.UTC().Format(time.RFC3339Nano), OpenSlots: a.OpenSlots(), Budget: a.Budget(),
			Buckets: a.EligibleSlots(),
		}
		for _, b := range sum.Buckets {
			sum.QueuedUsers += b.Waiting
		}
		return sum
	}
	return a.Allocation.Summary()
}
