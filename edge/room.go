package edge

import (
	"fmt"
	"net/http/httputil"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cbroglie/mustache"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/policy"
)

// Cookie lifetimes and the refresh interval (reference 003): a queued
// visitor's token lives five minutes and the page refreshes about every
// twenty seconds, jittered per check-in so that check-ins spread out.
const (
	queuedTokenLife   = crdt.DefaultWaitingWindow * time.Minute
	refreshBase       = 20
	refreshJitter     = 3 // ± seconds
	earlyCheckInSlack = 1 // seconds a browser may come early and still count
)

// room is one waiting room at run time.
type room struct {
	s          *Server
	name       string
	cfg        *RoomConfig
	pol        policy.Room
	win        crdt.Windows
	tmpl       *mustache.Template
	proxy      *httputil.ReverseProxy
	cookieName string
	revoke     bool // origin command "revoke" enabled

	// mu orders admissions against allocation: requests hold it shared while
	// they decide and record, the allocator exclusively while it snapshots,
	// so no admission is ever missing from both the old budget and the new
	// snapshot.
	mu    sync.RWMutex
	alloc atomic.Pointer[allocation]
	m     roomMetrics
}

// allocation is the room's current policy allocation and the minute it was
// computed for.
type allocation struct {
	*policy.Allocation
	minute int64
}

func newRoom(s *Server, c *RoomConfig) (*room, error) {
	rm := &room{
		s:          s,
		name:       c.Name,
		cfg:        c,
		pol:        policyRoom(c),
		cookieName: c.CookieName(),
		m:          s.metrics.forRoom(c.Name),
	}
	rm.win = rm.pol.Windows()
	for _, cmd := range c.EnabledOriginCommands {
		if cmd == "revoke" {
			rm.revoke = true
		}
	}
	src := c.CustomPageHTML
	if src == "" {
		src = defaultPageHTML
	}
	t, err := mustache.ParseStringPartials(src, &mustache.StaticProvider{})
	if err != nil {
		return nil, fmt.Errorf("custom_page_html: %w", err)
	}
	rm.tmpl = t
	origin := c.Origin
	if origin == "" {
		origin = s.cfg.Origin
	}
	if origin == "" {
		return nil, fmt.Errorf("origin: the room has none and the node has no default origin")
	}
	p, err := newProxy(s, rm, origin)
	if err != nil {
		return nil, fmt.Errorf("origin: %w", err)
	}
	rm.proxy = p
	return rm, nil
}

func policyRoom(c *RoomConfig) policy.Room {
	return policy.Room{
		TotalActiveUsers:  c.TotalActiveUsers,
		NewUsersPerMinute: c.NewUsersPerMinute,
		SessionDuration:   c.SessionDuration,
		QueueingMethod:    policy.Method(c.QueueingMethod),
		QueueAll:          c.QueueAll,
		Suspended:         c.Suspended,
		MaxQueue:          c.MaxQueue,
	}
}

// recompute replaces the room's allocation with the one that follows it,
// computed from the merged state at now. Next (rather than a fresh Allocate)
// carries the node's admission ledger, which the continuous re-division of
// the minute's slots needs.
func (rm *room) recompute(now time.Time) *allocation {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	minute := unixMinute(now)
	snap := rm.s.node.Snapshot(rm.name, minute, rm.win)
	pol := rm.pol
	// The Anywhere part is divided among the live nodes.
	pol.Nodes = rm.s.node.NumMembers()
	var a *policy.Allocation
	if prev := rm.alloc.Load(); prev != nil {
		a = prev.Next(pol, &snap, now)
	} else {
		a = policy.Allocate(pol, &snap, rm.s.node.Replica(), now, policy.Continuous)
	}
	cur := &allocation{Allocation: a, minute: minute}
	rm.alloc.Store(cur)
	return cur
}

// allocation returns the current allocation, recomputing it first when the
// minute has turned since it was made: a budget is never spent in a minute
// it was not computed for.
func (rm *room) allocation(now time.Time) *allocation {
	a := rm.alloc.Load()
	if a == nil || a.minute != unixMinute(now) {
		return rm.recompute(now)
	}
	return a
}

func unixMinute(t time.Time) int64 { return t.Unix() / 60 }
