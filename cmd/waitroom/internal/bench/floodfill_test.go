package bench_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/waitroom/waitroom/edge/agent"
	"github.com/waitroom/waitroom/edge/edgetest"
)

// TestMeasureFloodFill floods a fresh room (limits 40/40) at three nodes on
// loopback, with real clocks, as the flood does: 120 new visitors
// over ten seconds, round robin, each asking once. It prints how full the
// room was when the first visitor was queued, with the gossip lag measured
// and with the configured one. It runs only with WAITROOM_MEASURE=1:
//
//	WAITROOM_MEASURE=1 go test -run TestMeasureFloodFill -v ./cmd/waitroom/internal/bench/
func TestMeasureFloodFill(t *testing.T) {
	needEnv(t, "WAITROOM_MEASURE", "set WAITROOM_MEASURE=1 to measure how full a flooded room gets before it queues")
	const limit, visitors, over, nodes = 40, 120, 10 * time.Second, 3
	profile := envString("WAITROOM_MEASURE_PROFILE", "local")
	for _, measured := range []bool{false, true} {
		t.Run(fmt.Sprintf("gossip_lag_measured %v", measured), func(t *testing.T) {
			o := edgetest.NewOrigin(t)
			key := edgetest.KeyFile(t, t.TempDir())
			var srvs []*agent.Agent
			for i := range nodes {
				cfg := edgetest.NodeConfig(fmt.Sprintf("pop-%d", i+1), key, o.URL, edgetest.Room("shop", limit, limit))
				cfg.GossipProfile = profile
				cfg.GossipLagMeasured = &measured
				if i > 0 {
					cfg.Seeds = []string{srvs[0].Node().Addr()}
				}
				srvs = append(srvs, edgetest.StartServer(t, cfg, nil))
			}
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				ok := true
				for _, s := range srvs {
					ok = ok && len(s.StateDoc().Members) == nodes
				}
				if ok {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("no ring")
				}
			}
			// A ring that has run a while: with the lag measured, every
			// node has heard every peer's beats before the flood.
			for deadline := time.Now().Add(60 * time.Second); measured; time.Sleep(100 * time.Millisecond) {
				ok := true
				for _, s := range srvs {
					ok = ok && s.StateDoc().Lag.Measured
				}
				if ok {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the lag was not measured within a minute")
				}
			}
			admitted, firstQueuedAfter := 0, -1
			var lagAtFirstQueue float64
			start := time.Now()
			for i := range visitors {
				time.Sleep(time.Until(start.Add(over * time.Duration(i) / visitors)))
				srv := srvs[i%nodes]
				resp := edgetest.NewVisitor().Get(srv, "http://shop.test/")
				switch {
				case resp.StatusCode == http.StatusOK && resp.Header.Get("Refresh") == "":
					admitted++
				case firstQueuedAfter < 0:
					firstQueuedAfter = admitted
					lagAtFirstQueue = srv.StateDoc().Lag.InUseMs
				}
			}
			t.Logf("profile %s, gossip_lag_measured %v: first queued after %d of %d admitted (utilisation %.3f, lag in use there %.0f ms); %d admitted in all",
				profile, measured, firstQueuedAfter, limit, float64(firstQueuedAfter)/limit, lagAtFirstQueue, admitted)
			for i, s := range srvs {
				l := s.StateDoc().Lag
				for _, p := range l.Ring.Peers {
					t.Logf("after the flood, pop-%d hears %s %.0f ms late (p99; max %.0f ms over %d samples)", i+1, p.Name, p.DelayMs, p.DelayMaxMs, p.Samples)
				}
			}
			if admitted > limit*102/100 {
				t.Errorf("admitted %d, limit %d", admitted, limit)
			}
		})
	}
}
