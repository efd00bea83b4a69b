package edge_test

import (
	"testing"
	"time"
)

// The queue page's refresh interval is the allocation's
// (policy.Allocation.RefreshInterval): short for the two oldest buckets of
// a line where no slot is open, about twenty seconds behind them.
func TestTheQueuePageRefreshesOftenOnlyNearTheFront(t *testing.T) {
	f := newFixture(t, fullRoom("shop"))
	admitFirst(t, f, "http://shop.test/")
	// One visitor waits from each of two minutes, then a crowd arrives in
	// a third.
	for range 2 {
		newVisitor().Queue(t, f.Server, f.Clock, "http://shop.test/")
		f.Clock.Advance(time.Minute)
		settle(t, f)
	}
	seen := map[int]bool{}
	for range 20 {
		resp := newVisitor().Queue(t, f.Server, f.Clock, "http://shop.test/")
		n, err := refreshSeconds(resp)
		if err != nil || n < 17 || n > 23 {
			t.Fatalf("behind the two oldest buckets: Refresh %q, want 17..23", resp.Header.Get("Refresh"))
		}
		seen[n] = true
	}
	if len(seen) < 2 {
		t.Errorf("20 queued visitors all got the same refresh interval %v: no jitter", seen)
	}
}
