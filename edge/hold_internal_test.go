package edge

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/policy"
)

func TestHoldingIsBounded(t *testing.T) {
	at := time.Date(2026, 11, 21, 12, 0, 30, 0, time.UTC)
	newAlloc := func() *allocation {
		snap := &crdt.RoomSnapshot{Room: "shop", Now: at.Unix(), Minute: at.Unix() / 60}
		a := policy.Allocate(policy.Room{TotalActiveUsers: 10, NewUsersPerMinute: 10}, snap, crdt.NewReplicaID("pop-a", 1), at, policy.Continuous)
		return &allocation{Allocation: a, next: make(chan struct{})}
	}
	tests := []struct {
		name string
		// run sets the case up and reports whether the request was held
		// (ok) and, when it was, whether its wait ended with a decision
		// to make (true) or with the visitor gone (false).
		run      func(s *Server, rq *request, a *allocation, h *holding) (held, decide bool)
		wantHeld bool
		wantWait bool
		wantLeft int64 // requests still held after release
	}{
		{
			name: "a request is held while a place is free and wakes when the next allocation replaces the one it waited on",
			run: func(s *Server, rq *request, a *allocation, h *holding) (bool, bool) {
				if !h.ok(s, rq, a) {
					return false, false
				}
				close(a.next)
				return true, h.wait(rq, a)
			},
			wantHeld: true, wantWait: true,
		},
		{
			name: "beyond the most requests held at once a request is decided at once",
			run: func(s *Server, rq *request, a *allocation, h *holding) (bool, bool) {
				s.held.Store(maxHeldRequests)
				defer s.held.Add(-maxHeldRequests)
				return h.ok(s, rq, a), false
			},
		},
		{
			name: "a clock that stands at the allocation's own instant holds nobody",
			run: func(s *Server, rq *request, a *allocation, h *holding) (bool, bool) {
				rq.now = at
				return h.ok(s, rq, a), false
			},
		},
		{
			name: "a held request whose visitor went away ends without a decision",
			run: func(s *Server, rq *request, a *allocation, h *holding) (bool, bool) {
				if !h.ok(s, rq, a) {
					return false, false
				}
				ctx, cancel := context.WithCancel(rq.r.Context())
				cancel()
				rq.r = rq.r.WithContext(ctx)
				return true, h.wait(rq, a)
			},
			wantHeld: true, wantWait: false,
		},
		{
			name: "a held request is held no more once the edge's patience is over",
			run: func(s *Server, rq *request, a *allocation, h *holding) (bool, bool) {
				if !h.ok(s, rq, a) {
					return false, false
				}
				h.until = time.Now().Add(-time.Millisecond)
				rq.now = rq.now.Add(time.Second)
				return h.ok(s, rq, a), false
			},
			wantWait: false,
		},
		{
			name: "a held request whose node's clock stood still since is held no more",
			run: func(s *Server, rq *request, a *allocation, h *holding) (bool, bool) {
				if !h.ok(s, rq, a) {
					return false, false
				}
				return h.ok(s, rq, a), false
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			later := func() time.Time { return at.Add(time.Second) }
			s := &Server{clock: later, ring: later, metrics: newMetrics()}
			rm := &room{name: "shop", m: s.metrics.forRoom("shop")}
			rq := &request{r: httptest.NewRequest("GET", "http://shop.test/", nil), rm: rm, now: at.Add(time.Millisecond)}
			var h holding
			held, decide := tc.run(s, rq, newAlloc(), &h)
			h.release()
			if held != tc.wantHeld || decide != tc.wantWait {
				t.Errorf("held %v, then a decision to make %v; want %v, %v", held, decide, tc.wantHeld, tc.wantWait)
			}
			if n := s.held.Load(); n != tc.wantLeft {
				t.Errorf("%d requests held after release, want %d", n, tc.wantLeft)
			}
		})
	}
}
