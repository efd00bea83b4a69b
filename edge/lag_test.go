package edge_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/edge/agent"
	"github.com/waitroom/waitroom/gossip"
	"github.com/waitroom/waitroom/policy"
)

// TestMeasuredGossipLag runs three nodes on loopback (real clocks), the
// third with gossip_lag_measured: false, counts admissions at every node
// until the first two have measured every peer, and checks the lag their
// allocations assume.
func TestMeasuredGossipLag(t *testing.T) {
	key := keyFile(t, t.TempDir())
	off := false
	var nodes []*agent.Agent
	for i := range 3 {
		cfg := nodeConfig(fmt.Sprintf("pop-%d", i+1), key, "http://127.0.0.1:1", room("shop", 40, 40))
		if i > 0 {
			cfg.Seeds = []string{nodes[0].Node().Addr()}
		}
		if i == 2 {
			cfg.GossipLagMeasured = &off
		}
		nodes = append(nodes, startServer(t, cfg, nil))
	}
	const configured = time.Second // the local profile's
	t.Run("before any measurement every node assumes the configured lag", func(t *testing.T) {
		for i, n := range nodes {
			if l := n.StateDoc().Lag; l == nil || l.Measured || l.InUseMs != 1000 || l.ConfiguredMs != 1000 {
				t.Errorf("node %d: %+v", i+1, l)
			}
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		done := true
		for _, n := range nodes[:2] {
			l := n.StateDoc().Lag
			done = done && l.Measured && len(l.Ring.Peers) == 2
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			for i, n := range nodes {
				t.Logf("node %d: %+v", i+1, n.StateDoc().Lag)
			}
			t.Fatal("the gossip delay was not measured within 30 s")
		}
		for _, n := range nodes {
			n.Node().Add(gossip.Inc{Key: crdt.Key{Room: "shop", Kind: crdt.Admitted, Minute: time.Now().Unix() / 60}, N: 1})
		}
		<-tick.C
	}
	for i, n := range nodes[:2] {
		l := n.StateDoc().Lag
		// The policy's rule, applied to the delay the node shows.
		d := time.Duration(l.Ring.DelayMs * float64(time.Millisecond))
		want := policy.AssumedLag(d, configured)
		t.Logf("node %d: ring delay %.1f ms, lag in use %.1f ms", i+1, l.Ring.DelayMs, l.InUseMs)
		t.Run(fmt.Sprintf("node %d assumes twice the measured delay plus the allocation's reaction, within its bounds", i+1), func(t *testing.T) {
			if math.Abs(l.InUseMs-float64(want)/float64(time.Millisecond)) > 0.001 || !l.Measured || !l.MeasuringOn {
				t.Errorf("lag %+v, want %v in use", l, want)
			}
			if l.InUseMs >= l.ConfiguredMs {
				t.Errorf("the measured lag %.0f ms is not below the configured %.0f ms on loopback", l.InUseMs, l.ConfiguredMs)
			}
		})
		t.Run(fmt.Sprintf("node %d shows each peer's delay and clock offset", i+1), func(t *testing.T) {
			for _, p := range l.Ring.Peers {
				if !p.OffsetKnown || p.Samples < gossip.LagMinSamples || math.Abs(p.ClockOffsetMs) > 1000 {
					t.Errorf("peer %+v", p)
				}
			}
		})
		t.Run(fmt.Sprintf("node %d exports the lag in use and its peers' clock offsets", i+1), func(t *testing.T) {
			admin := n.AdminHandler()
			if g := metric(t, admin, `waitroom_gossip_lag_seconds{measured="1"}`); g <= 0 || g >= configured.Seconds() {
				t.Errorf("lag gauge %v", g)
			}
			for _, p := range l.Ring.Peers {
				if text := body(t, adminGet(t, admin, "/metrics")); !strings.Contains(text, `waitroom_gossip_peer_clock_offset_seconds{peer="`+p.Name+`"}`) {
					t.Errorf("no clock offset gauge for %s", p.Name)
				}
			}
		})
	}
	t.Run("a node with gossip_lag_measured: false keeps the configured lag", func(t *testing.T) {
		if l := nodes[2].StateDoc().Lag; l.Measured || l.MeasuringOn || l.InUseMs != 1000 {
			t.Errorf("lag %+v", l)
		}
	})
}
