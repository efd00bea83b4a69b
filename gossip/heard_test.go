package gossip_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/waitroom/waitroom/gossip"
	"github.com/waitroom/waitroom/gossip/testkit"
)

func TestSuspectedMemberIsOneUnheardForTwoProbeRounds(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	// LAN timings: a probe a second, half a second to answer.
	pi, pt := time.Second, 500*time.Millisecond
	tests := []struct {
		name    string
		members int
		ago     time.Duration
		never   bool
		want    bool
	}{
		{name: "a member acked a moment ago is not suspected", members: 3, ago: 100 * time.Millisecond},
		{name: "a member of three unheard for exactly two rounds and a timeout is not yet suspected", members: 3, ago: 4500 * time.Millisecond},
		{name: "a member of three unheard for longer than two rounds and a timeout is suspected", members: 3, ago: 4501 * time.Millisecond, want: true},
		{name: "a member of ten unheard for five seconds is not suspected: its turn comes every nine", members: 10, ago: 5 * time.Second},
		{name: "a member of ten unheard for twenty seconds is suspected", members: 10, ago: 20 * time.Second, want: true},
		{name: "a two-node ring still gives its peer two probes", members: 2, ago: 2 * time.Second},
		{name: "a lone node's threshold counts one peer", members: 1, ago: 3 * time.Second, want: true},
		{name: "a member never heard of is not suspected", members: 3, never: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			last := t0
			if tc.never {
				last = time.Time{}
			}
			now := t0.Add(tc.ago)
			if got := gossip.Suspected(last, now, gossip.SuspectAfter(tc.members, pi, pt)); got != tc.want {
				t.Errorf("Suspected(heard %s ago, %d members) = %v, want %v", tc.ago, tc.members, got, tc.want)
			}
		})
	}
}

// TestMembersAreHeardThroughProbeAcks runs a ring on a fake clock: every
// peer is heard through its probe acks, one whose last ack is older than the
// threshold is listed as suspect, and the next ack clears it.
func TestMembersAreHeardThroughProbeAcks(t *testing.T) {
	fake := testkit.NewClock(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	c := newCluster(t, 3, clusterOpts{clock: fake.Now})
	c.waitMembers(3, 10*time.Second)
	peersHeardSince := func(since time.Time) func() bool {
		return func() bool {
			for _, m := range c.nodes[0].Members() {
				if m.Name != c.nodes[0].Name() && (m.LastHeard.Before(since) || m.Suspected) {
					return false
				}
			}
			return true
		}
	}
	seen := func() string { return fmt.Sprintf("%+v", c.nodes[0].Members()) }
	if !peersHeardSince(fake.Now())() {
		t.Fatalf("peers that just joined are not listed as heard now: %s", seen())
	}

	t.Run("a peer whose last ack is older than the threshold is listed as suspect", func(t *testing.T) {
		fake.Advance(time.Hour)
		at := fake.Now()
		for _, m := range c.nodes[0].Members() {
			if m.Name == c.nodes[0].Name() {
				if m.Suspected || !m.LastHeard.IsZero() {
					t.Errorf("this node lists itself as %+v", m)
				}
				continue
			}
			// An ack may land between the advance and the listing; one
			// that has not is an hour old.
			if m.LastHeard.Before(at) && (!m.Suspected || m.State != "suspect") {
				t.Errorf("a peer last heard an hour ago is listed as %+v", m)
			}
		}
	})
	t.Run("the next probe acks clear the suspicion", func(t *testing.T) {
		testkit.Eventually(t, testkit.Wait{What: "every peer heard again through a probe ack", Timeout: 10 * time.Second, Seen: seen}, peersHeardSince(fake.Now()))
	})
}
