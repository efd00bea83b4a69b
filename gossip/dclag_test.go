package gossip_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/gossip"
	"github.com/waitroom/waitroom/gossip/testkit"
)

// TestDatacenterDelayIsMeasured: two data centers of two nodes over a
// MemNet whose link between data centers holds every packet back by
// crossing. A count added again and again at one of east's nodes reaches
// west in figures that east's carrier stamps, and west's nodes measure
// east's delay from them: at least the crossing (the stamps and the
// nodes' ring times are on one machine's clock), with enough samples for
// the far lag, while east, which hears no figures of its own, has no
// figure of itself.
func TestDatacenterDelayIsMeasured(t *testing.T) {
	const crossing = 300 * time.Millisecond
	mn := gossip.NewMemNet(5)
	const perDC = 2
	dcOf := func(i int) int { return i / perDC }
	mn.SetPairDelay(func(from, to string) time.Duration {
		if strings.HasSuffix(from, ":7947") && scaleDC(from) != scaleDC(to) {
			return crossing
		}
		return 0
	})
	index := func(name string) int {
		var i int
		if _, err := fmt.Sscanf(name, "node-%d", &i); err != nil {
			t.Fatalf("node name %s", name)
		}
		return i
	}
	c := newCluster(t, 2*perDC, clusterOpts{
		carriers:   1,
		datacenter: func(i int) string { return []string{"east", "west"}[dcOf(i)] },
		transport: func(t testing.TB, name string) memberlist.Transport {
			i := index(name)
			tr, err := mn.Transport(scaleAddr(dcOf(i), i%perDC, 7946))
			if err != nil {
				t.Fatal(err)
			}
			return tr
		},
		wanTransport: func(t testing.TB, name string) func() (memberlist.Transport, error) {
			i := index(name)
			return func() (memberlist.Transport, error) { return mn.Transport(scaleAddr(dcOf(i), i%perDC, 7947)) }
		},
		wanSeeds: []string{scaleAddr(0, 0, 7947), scaleAddr(1, 0, 7947)},
	})
	c.waitMembers(perDC, 10*time.Second)
	c.waitCarriers(30 * time.Second)

	k := minuteKey("shop", crdt.Admitted, nowMinute())
	var added uint64
	west := c.nodes[perDC:]
	testkit.Eventually(t, testkit.Wait{What: "west's nodes measuring east's figures' delay from enough samples", Timeout: 60 * time.Second, Seen: func() string {
		var b strings.Builder
		for i, n := range c.nodes {
			fmt.Fprintf(&b, "\n  node %d (%s): %+v", i, c.dcs[i], n.DatacenterLags(time.Now()))
		}
		return b.String()
	}}, func() bool {
		// One more admission at east, heard by west as a new batch.
		added++
		c.nodes[0].Add(gossip.Inc{Key: k, N: 1})
		for _, n := range west {
			if _, ok := n.DatacenterDelay(time.Now()); !ok {
				return false
			}
		}
		return true
	})
	for i, n := range west {
		lags := n.DatacenterLags(time.Now())
		if len(lags) != 1 || lags[0].Datacenter != "east" {
			t.Fatalf("west's node %d measures %+v, want east alone", i, lags)
		}
		d, _ := n.DatacenterDelay(time.Now())
		if d < crossing || lags[0].Samples < crdt.DelayMinSamples {
			t.Errorf("west's node %d: east's delay %s from %d samples, want at least the crossing's %s from %d", i, d, lags[0].Samples, crossing, crdt.DelayMinSamples)
		}
	}
	for i, n := range c.nodes[:perDC] {
		if lags := n.DatacenterLags(time.Now()); len(lags) != 0 {
			t.Errorf("east's node %d measures %+v, but hears no figures of another data center's counts", i, lags)
		}
		if _, ok := n.DatacenterDelay(time.Now()); ok {
			t.Errorf("east's node %d has a far delay without samples", i)
		}
	}
	t.Logf("added %d; west measures %+v", added, west[0].DatacenterLags(time.Now()))
}
