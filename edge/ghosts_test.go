package edge_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// ghostRun is one run of TestACookielessFloodCostsRealVisitorsNothing: a
// full room with a bounded queue, real visitors who keep their cookie and
// follow every Refresh, and optionally a flood of cookieless first
// requests (clients that never come back) at the same time.
type ghostRun struct {
	waits      []time.Duration // each real visitor's, from its first request to its admission
	full       int             // "the line is full" answers a real visitor got
	maxWaiting int64           // the most waiting the room counted during the flood
	ghostFull  int             // flood requests turned away by the full queue
}

// ghostVisitor is one real visitor: a browser that keeps its cookie.
type ghostVisitor struct {
	*visitor
	arrived  time.Time
	next     time.Time // when its page's Refresh fires
	url      string    // where it goes then
	admitted time.Time
}

const (
	ghostReal      = 10   // real visitors
	ghostFloodSize = 6000 // cookieless first requests
	ghostFloodSecs = 4    // over this many seconds
	ghostMaxQueue  = 20
)

func runGhosts(t *testing.T, flood bool) ghostRun {
	t.Helper()
	// Nobody leaves the origin within the run: the per-minute limit lets
	// three in a minute, so the real visitors wait for minutes, in line.
	rc := room("shop", 100_000, 3)
	rc.Host = "shop.test"
	rc.MaxQueue = ghostMaxQueue
	f := newFixture(t, rc)
	for range 3 {
		admitFirst(t, f, "http://shop.test/")
	}
	var run ghostRun
	var real []*ghostVisitor
	look := func(v *ghostVisitor, resp *http.Response) {
		page := body(t, resp)
		if strings.Contains(page, "The line is full") {
			run.full++
		}
		if resp.Header.Get("X-Origin") == "yes" {
			v.admitted = f.Clock.Now()
			return
		}
		n, err := refreshSeconds(resp)
		if err != nil {
			t.Fatalf("a real visitor got neither the origin nor a page that refreshes: %d %v", resp.StatusCode, err)
		}
		v.next, v.url = f.Clock.Now().Add(time.Duration(n)*time.Second), refreshTarget(t, resp)
	}
	arrive := func() {
		v := &ghostVisitor{visitor: newVisitor(), arrived: f.Clock.Now()}
		real = append(real, v)
		look(v, v.Get(f.Server, "http://shop.test/"))
	}
	// Half the real visitors arrive before the flood, the others one a
	// second from its start.
	for range ghostReal / 2 {
		arrive()
	}
	start := f.Clock.Now()
	for s := 0; s < 10*60; s++ {
		now := f.Clock.Now()
		// One more real visitor a second, in the middle of the second's
		// share of the flood, the same with the flood or without.
		per := 0
		if flood && now.Sub(start) < ghostFloodSecs*time.Second {
			per = ghostFloodSize / ghostFloodSecs
		}
		for i := 0; i <= per; i++ {
			if i == per/2 && len(real) < ghostReal {
				arrive()
			}
			if i == per {
				break
			}
			resp := newVisitor().Get(f.Server, "http://shop.test/")
			if strings.Contains(body(t, resp), "The line is full") {
				run.ghostFull++
			}
		}
		for _, v := range real {
			if v.admitted.IsZero() && !now.Before(v.next) {
				look(v, v.Get(f.Server, v.url))
			}
		}
		f.Server.RefreshAllocations()
		if now.Sub(start) < ghostFloodSecs*time.Second+time.Second {
			run.maxWaiting = max(run.maxWaiting, roomStatus(t, f.Admin, "shop").EstimatedQueuedUsers)
		}
		done := len(real) == ghostReal
		for _, v := range real {
			done = done && !v.admitted.IsZero()
		}
		if done {
			break
		}
		f.Clock.Advance(time.Second)
	}
	for i, v := range real {
		if v.admitted.IsZero() {
			t.Fatalf("real visitor %d was not let in within ten minutes", i)
		}
		run.waits = append(run.waits, v.admitted.Sub(v.arrived))
	}
	return run
}

// TestACookielessFloodCostsRealVisitorsNothing: thousands of first requests
// without a cookie, that never come back, reach a full room with max_queue
// set while real visitors queue. A new visitor counts as waiting only from
// its proof (the first page's refresh, with the cookie), so the flood takes
// no place: the real visitors are never told the line is full, the room's
// waiting count holds only them, and each one's wait is what it is without
// the flood. On the fake clock, a second a step; every step runs the
// node's allocation loop once (RefreshAllocations).
func TestACookielessFloodCostsRealVisitorsNothing(t *testing.T) {
	quiet := runGhosts(t, false)
	flooded := runGhosts(t, true)
	t.Logf("real visitors' waits without the flood %v, with %d cookieless requests in %d s %v; the room counted at most %d waiting during the flood; %d flood requests were told the line is full",
		quiet.waits, ghostFloodSize, ghostFloodSecs, flooded.waits, flooded.maxWaiting, flooded.ghostFull)

	t.Run("no real visitor is told that the line is full", func(t *testing.T) {
		if quiet.full+flooded.full > 0 {
			t.Errorf("%d full-queue answers without the flood, %d with it", quiet.full, flooded.full)
		}
	})
	t.Run("the room's waiting count holds only the real visitors", func(t *testing.T) {
		if flooded.maxWaiting > ghostReal {
			t.Errorf("the room counted %d waiting during the flood, with %d real visitors", flooded.maxWaiting, ghostReal)
		}
	})
	t.Run("the flood is never turned away for a full queue either", func(t *testing.T) {
		// The ghosts fill nothing, so the queue never fills: a regression
		// that counted them would turn most of them away.
		if flooded.ghostFull > 0 {
			t.Errorf("%d of %d flood requests were told the line is full", flooded.ghostFull, ghostFloodSize)
		}
	})
	t.Run("the real visitors wait as long as without the flood, within one refresh", func(t *testing.T) {
		// All of them arrive in one minute, in one bucket, and who of a
		// bucket goes in first is whoever checks in first once a slot
		// opens: the refresh interval is drawn at random (17–23 s, 4–6 s near the front) at
		// every check-in. So the waits are compared in order, shortest
		// with shortest, and may differ by up to one interval.
		const tolerance = 23 * time.Second
		q, fl := slices.Clone(quiet.waits), slices.Clone(flooded.waits)
		slices.Sort(q)
		slices.Sort(fl)
		var sumQ, sumF time.Duration
		for i := range q {
			if d := fl[i] - q[i]; d > tolerance || d < -tolerance {
				t.Errorf("the %d. shortest wait was %v with the flood, %v without", i+1, fl[i], q[i])
			}
			sumQ += q[i]
			sumF += fl[i]
		}
		t.Logf("mean wait %v without the flood, %v with it", sumQ/ghostReal, sumF/ghostReal)
	})
}
