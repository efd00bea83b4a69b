package edge_test

import (
	"strings"
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

// TestQueueAnswerHeadersDoNotGrowWithTheAddress holds every header of a
// queued answer under 1 KB whatever the visitor's address: a proxy in
// front keeps an answer's headers in a small buffer and fails past it.
func TestQueueAnswerHeadersDoNotGrowWithTheAddress(t *testing.T) {
	f := newFixture(t, fullRoom("shop"))
	admitFirst(t, f, "http://shop.test/")
	for _, tc := range []struct {
		name, query string
		carries     bool
	}{
		{"a short address is carried in Refresh with the cookie check", "q=shoes", true},
		{"an 8 KB address is left out of Refresh, and kept in the page", "q=" + strings.Repeat("a", 8<<10), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := newVisitor().Get(f.Server, "http://shop.test/search?"+tc.query)
			page := body(t, resp)
			for k, vs := range resp.Header {
				for _, v := range vs {
					if len(k)+len(v) > 1024 {
						t.Errorf("header %s is %d bytes", k, len(v))
					}
				}
			}
			refresh := resp.Header.Get("Refresh")
			if got := strings.Contains(refresh, "__waitroom_cc="); got != tc.carries {
				t.Errorf("Refresh %.80q carries the address: %v, want %v", refresh, got, tc.carries)
			}
			if !strings.Contains(page, "/search?"+tc.query[:min(len(tc.query), 100)]) {
				t.Error("the page does not carry the address")
			}
		})
	}
}
