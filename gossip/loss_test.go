package gossip_test

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/gossip"
)

// faults says what a faultyTransport does to the packets (UDP) a node
// sends: drop some, send some twice (the second copy possibly late, so
// behind later packets), and refuse some stream (TCP) dials.
type faults struct {
	drop, dup, late, dialFail float64
}

type faultCounts struct {
	sent, dropped, duplicated, dialsRefused atomic.Int64
}

// faultyTransport is memberlist's UDP/TCP transport with faults injected on
// the sending side.
type faultyTransport struct {
	*memberlist.NetTransport
	f       faults
	counts  *faultCounts
	mu      sync.Mutex
	closed  bool
	pending sync.WaitGroup // late copies in flight; Add only under mu while open
}

func newFaultyTransport(t testing.TB, f faults, counts *faultCounts) *faultyTransport {
	t.Helper()
	nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{
		BindAddrs: []string{"127.0.0.1"},
		Logger:    log.New(io.Discard, "", 0),
	})
	if err != nil {
		t.Fatal(err)
	}
	return &faultyTransport{NetTransport: nt, f: f, counts: counts}
}

// FinalAdvertiseAddr advertises the port the transport bound: with a
// custom transport memberlist passes on the configured port, 0.
func (t *faultyTransport) FinalAdvertiseAddr(ip string, port int) (net.IP, int, error) {
	if port == 0 {
		port = t.GetAutoBindPort()
	}
	return t.NetTransport.FinalAdvertiseAddr(ip, port)
}

func (t *faultyTransport) send(b []byte, write func([]byte) error) (time.Time, error) {
	t.counts.sent.Add(1)
	r := rand.Float64()
	if r < t.f.drop {
		t.counts.dropped.Add(1)
		return time.Now(), nil
	}
	if err := write(b); err != nil {
		return time.Time{}, err
	}
	if r < t.f.drop+t.f.dup {
		t.counts.duplicated.Add(1)
		cp := bytes.Clone(b)
		if rand.Float64() < t.f.late {
			t.mu.Lock()
			if !t.closed {
				t.pending.Add(1)
				time.AfterFunc(time.Duration(rand.IntN(300))*time.Millisecond, func() {
					defer t.pending.Done()
					_ = write(cp)
				})
			}
			t.mu.Unlock()
		} else {
			_ = write(cp)
		}
	}
	return time.Now(), nil
}

func (t *faultyTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	return t.send(b, func(p []byte) error { _, err := t.NetTransport.WriteTo(p, addr); return err })
}

func (t *faultyTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	return t.send(b, func(p []byte) error { _, err := t.NetTransport.WriteToAddress(p, a); return err })
}

func (t *faultyTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	if rand.Float64() < t.f.dialFail {
		t.counts.dialsRefused.Add(1)
		return nil, fmt.Errorf("injected: dial %s refused", a.Addr)
	}
	return t.NetTransport.DialAddressTimeout(a, timeout)
}

func (t *faultyTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return t.DialAddressTimeout(memberlist.Address{Addr: addr}, timeout)
}

func (t *faultyTransport) Shutdown() error {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.pending.Wait()
	return t.NetTransport.Shutdown()
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
			var counts faultCounts
			c := newCluster(t, nodes, clusterOpts{
				transport: func(t testing.TB, name string) memberlist.Transport { return newFaultyTransport(t, tc.f, &counts) },
				tune:      func(mc *memberlist.Config) { mc.PushPullInterval = tc.pushPull },
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
			t.Logf("%d cells converged on %d nodes %v after the last write; packets sent %d, lost %d, duplicated %d; dials refused %d; entries merged %d, push-pulls %d",
				len(want), nodes, time.Since(start).Round(time.Millisecond), counts.sent.Load(), counts.dropped.Load(), counts.duplicated.Load(), counts.dialsRefused.Load(), merged, pushPulls)
			if tc.f.drop > 0 && counts.dropped.Load() == 0 || tc.f.dup > 0 && counts.duplicated.Load() == 0 {
				t.Fatal("the transport injected no fault")
			}
		})
	}
}
