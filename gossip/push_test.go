package gossip_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/gossip"
	"github.com/waitroom/waitroom/gossip/testkit"
)

// slowGossip is a ring where nothing but the push carries a change soon: a
// gossip round, and the probes broadcasts ride along with, every ten
// seconds, and no periodic push-pull.
const slowGossip = 10 * time.Second

func slowTune(mc *memberlist.Config) {
	mc.GossipInterval = slowGossip
	mc.ProbeInterval = slowGossip
	mc.PushPullInterval = 0
}

// slowRing starts three nodes that gossip every slowGossip and waits until
// each sees the others.
func slowRing(t *testing.T) (a, b, c *gossip.Node) {
	t.Helper()
	a = startNode(t, gossip.Config{Name: "a", Tune: slowTune, Log: testLog(t)})
	b = startNode(t, gossip.Config{Name: "b", Tune: slowTune, Log: testLog(t), Seeds: []string{a.Addr()}})
	c = startNode(t, gossip.Config{Name: "c", Tune: slowTune, Log: testLog(t), Seeds: []string{a.Addr(), b.Addr()}})
	for _, n := range []*gossip.Node{a, b, c} {
		waitNumMembers(t, n, 3, 10*time.Second)
	}
	return a, b, c
}

// reachedSoon fails unless every one of peers holds from's entry of k at
// want within a tenth of the gossip interval.
func reachedSoon(t *testing.T, from *gossip.Node, k crdt.Key, want uint64, peers ...*gossip.Node) {
	t.Helper()
	for _, p := range peers {
		var got uint64
		testkit.Eventually(t, testkit.Wait{What: fmt.Sprintf("value %d of %s at %s", want, from.Name(), p.Name()), Timeout: slowGossip / 10, Seen: func() string { return fmt.Sprintf("%d", got) }}, func() bool {
			p.Read(func(s *crdt.State) { got = s.Get(k, from.Replica()) })
			return got == want
		})
	}
}

// A node's own change reaches every peer promptly, not at the next gossip
// round: in a ring that gossips every ten seconds, each of several changes
// in a row arrives at both peers within a tenth of the interval. Without the
// push, a change waits for the round (at a random point of the interval), so
// three in a row arriving that early would be chance of about one in a
// thousand.
func TestOwnChangesReachPeersBeforeTheGossipRound(t *testing.T) {
	a, b, c := slowRing(t)
	// The peers list fills from memberlist's events, which the joins'
	// push-pulls have sent by now.
	k := minuteKey("shop", crdt.Admitted, nowMinute())
	for round := 1; round <= 3; round++ {
		a.Add(gossip.Inc{Key: k, N: 1})
		reachedSoon(t, a, k, uint64(round), b, c)
	}
}

// A gossip round that takes a node's own change before the push runs (the
// push waits a few milliseconds to gather a burst) does not take it from
// the push: the change still reaches both peers at once, even when that
// round's packets are lost. Before, the push found nothing left to send,
// and a peer that the broadcast queue's few transmissions missed waited
// for push-pull (seen in the end-to-end test: a session count short at one
// node for 15 to 25 s).
func TestOwnChangesTakenByAGossipRoundAreStillPushed(t *testing.T) {
	a, b, c := slowRing(t)
	k := minuteKey("shop", crdt.Admitted, nowMinute())
	for round := 1; round <= 3; round++ {
		a.Add(gossip.Inc{Key: k, N: 1})
		if n := gossip.TakeBroadcasts(a); n == 0 {
			t.Fatalf("change %d: the round took no broadcast", round)
		}
		reachedSoon(t, a, k, uint64(round), b, c)
	}
}
