package gossip_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/gossip"
)

// faults says what the network does to the packets (UDP) a node sends:
// lose some, send some twice (the second copy possibly late, so behind later
// packets), and refuse some stream (TCP) dials.
type faults struct {
	drop, dup, late, dialFail float64
}

// faultNet is a gossip.MemNet with f's faults.
func (f faults) faultNet(seed uint64) *gossip.MemNet {
	fn := gossip.NewMemNet(seed)
	fn.SetLoss(f.drop)
	fn.SetDuplication(f.dup)
	fn.SetLateCopies(f.late, 300*time.Millisecond)
	fn.SetDialFailure(f.dialFail)
	return fn
}

func TestLossAndDuplication(t *testing.T) {
	for _, tc := range []struct {
		name     string
		f        faults
		pushPull time.Duration
	}{
		{
			name:     "nodes converge to exact totals when 30% of packets are lost, 10% duplicated and 10% of dials refused",
			f:        faults{drop: 0.30, dup: 0.10, late: 0.5, dialFail: 0.10},
			pushPull: 500 * time.Millisecond,
		},
		{
			// Exact totals prove nothing was counted twice: a cell that
			// overshot could never come back down under max-merge.
			name:     "nodes never double count when every packet arrives twice, half of the copies late and out of order",
			f:        faults{dup: 1.0, late: 0.5},
			pushPull: time.Second,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const nodes, writesPerNode = 5, 40
			fn := tc.f.faultNet(1)
			c := newCluster(t, nodes, clusterOpts{
				transport: func(t testing.TB, name string) memberlist.Transport {
					tr, err := fn.Transport("127.0.0.1:0")
					if err != nil {
						t.Fatal(err)
					}
					return tr
				},
				tune: func(mc *memberlist.Config) { mc.PushPullInterval = tc.pushPull },
			})
			c.waitMembers(nodes, 30*time.Second)

			m := nowMinute()
			want := map[crdt.Key]uint64{}
			var mu sync.Mutex
			var wg sync.WaitGroup
			for i, n := range c.nodes {
				wg.Add(1)
				go func() {
					defer wg.Done()
					// Writes spread over a few gossip rounds, so that many
					// intermediate values are sent, lost and superseded.
					tk := time.NewTicker(5 * time.Millisecond)
					defer tk.Stop()
					for j := 0; j < writesPerNode; j++ {
						<-tk.C
						incs := []gossip.Inc{
							{Key: minuteKey("shop", crdt.Admitted, m), N: 1},
							{Key: minuteKey("shop", crdt.Arrivals, m), N: uint64(j%3 + 1)},
							{Key: crdt.Key{Room: "shop", Kind: crdt.WaitingPlus, Bucket: m - int64(j%4), Minute: m}, N: 1},
							{Key: minuteKey(fmt.Sprintf("room-%d", (i+j)%3), crdt.ActivePlus, m), N: 2},
						}
						n.Add(incs...)
						mu.Lock()
						for _, in := range incs {
							want[in.Key] += in.N
						}
						mu.Unlock()
					}
				}()
			}
			wg.Wait()

			start := time.Now()
			for i := range c.nodes {
				for k, v := range want {
					if !c.waitValue(i, k, v, 30*time.Second) {
						var got uint64
						c.nodes[i].Read(func(s *crdt.State) { got = s.Value(k) })
						t.Fatalf("node %d holds %d in %+v, want %d", i, got, k, v)
					}
				}
			}
			var merged, pushPulls uint64
			for _, n := range c.nodes {
				st := n.Stats()
				merged += st.EntriesMerged
				pushPulls += st.PushPulls
				if len(st.Dropped) != 0 {
					t.Errorf("%s dropped messages: %v", n.Name(), st.Dropped)
				}
			}
			counts := fn.Stats()
			t.Logf("%d cells converged on %d nodes %v after the last write; packets sent %d, lost %d, duplicated %d; dials refused %d; entries merged %d, push-pulls %d",
				len(want), nodes, time.Since(start).Round(time.Millisecond), counts.Sent, counts.Lost, counts.Duplicated, counts.RefusedDials, merged, pushPulls)
			if tc.f.drop > 0 && counts.Lost == 0 || tc.f.dup > 0 && counts.Duplicated == 0 {
				t.Fatal("the transport injected no fault")
			}
		})
	}
}
