package edge_test

// The fault suite's use of the harness's cluster (faults_test.go): real
// edge nodes in this process, each gossiping over memberlist through a
// gossip.MemNet transport (in memory, no sockets) that the test can make
// lose, delay, duplicate and partition packets while the nodes run; and what the suite
// compares them by (cells, totals, a crowd of visitors).
//
// Gossip runs on real time with memberlist timings shortened about five
// times from the LAN profile (faultTune), so that a node is declared dead in
// about a second and push-pull runs every two seconds. Admission minutes run
// on fake clocks: one base clock the test moves, and per node an offset from
// it (clock skew).

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/edgetest"
	"github.com/waitroom/waitroom/gossip"
	"github.com/waitroom/waitroom/gossip/testkit"
	"github.com/waitroom/waitroom/policy"
)

// faultLong reports whether the long variants run (WAITROOM_LONG=1): the
// full durations instead of the scaled-down ones of the default
// suite.
func faultLong() bool { return os.Getenv("WAITROOM_LONG") == "1" }

// faultTune shortens memberlist's timings for the fault suite (see
// edgetest.FastGossip).
var faultTune = edgetest.FastGossip

// faultWindows are snapshot windows wide enough for every count the fault
// tests make.
var faultWindows = crdt.Windows{Waiting: crdt.DefaultWaitingWindow, History: 10}

// newFaultCluster starts n nodes on a MemNet seeded with seed (skews, if
// given, offset their clocks) and waits until they form one ring.
func newFaultCluster(t *testing.T, seed uint64, n int, skews []time.Duration, rooms ...config.Room) *cluster {
	t.Helper()
	c := faultClusterOf(t, seed, rooms...)
	for i := 0; i < n; i++ {
		var skew time.Duration
		if i < len(skews) {
			skew = skews[i]
		}
		c.Add(fmt.Sprintf("pop-%c", 'a'+i), skew)
	}
	c.WaitRing(c.Nodes, 15*time.Second)
	return c
}

// faultClusterOf makes an empty cluster of the fault suite: gossip over a
// MemNet seeded with seed, memberlist's timings shortened (faultTune).
// Add nodes with Add.
func faultClusterOf(t *testing.T, seed uint64, rooms ...config.Room) *cluster {
	t.Helper()
	return clusterOf(t, clusterOpts{Rooms: rooms, Faults: gossip.NewMemNet(seed), Tune: faultTune})
}

// faultCells returns the node's counter cells of room, sorted (roomCells).
func faultCells(n *clusterNode, room string) []crdt.Entry { return roomCells(n.Server.Node(), room) }

// roomCells returns a gossip node's counter cells of room, sorted, only
// those of kinds when any are given: two nodes hold the same state of the
// room when these are equal. Their snapshots may agree while their states
// do not, as when each of three nodes has counted its own visitor's end
// and not yet heard of the other two.
func roomCells(n *gossip.Node, room string, kinds ...crdt.Kind) []crdt.Entry {
	var out []crdt.Entry
	n.Read(func(s *crdt.State) {
		for _, e := range s.Full().Entries {
			if e.Key.Room == room && (len(kinds) == 0 || slices.Contains(kinds, e.Key.Kind)) {
				out = append(out, e)
			}
		}
	})
	slices.SortFunc(out, func(a, b crdt.Entry) int {
		return cmp.Or(cmp.Compare(a.Key.Kind, b.Key.Kind), cmp.Compare(a.Key.Bucket, b.Key.Bucket),
			cmp.Compare(a.Key.Minute, b.Key.Minute), cmp.Compare(a.Replica, b.Replica))
	})
	return out
}

// faultSameCells reports whether every one of nodes holds the same cells of room.
func faultSameCells(room string, nodes []*clusterNode) bool {
	first := faultCells(nodes[0], room)
	for _, n := range nodes[1:] {
		if !slices.Equal(first, faultCells(n, room)) {
			return false
		}
	}
	return true
}

// faultWaitConverged waits until nodes hold the same cells of room and
// returns how long it took.
func faultWaitConverged(t *testing.T, c *cluster, room string, nodes []*clusterNode, d time.Duration) time.Duration {
	t.Helper()
	return testkit.Eventually(t, testkit.Wait{What: "replicas converge", Timeout: d, Seen: func() string {
		var b strings.Builder
		m := c.Clock.Now().Unix() / 60
		for _, n := range nodes {
			fmt.Fprintf(&b, "\n  %s: %d cells, %s", n.Name, len(faultCells(n, room)), faultTotalsOf(faultSnap(n, room, m)))
		}
		return b.String() + c.Membership(nodes)
	}}, func() bool { return faultSameCells(room, nodes) })
}

// faultSnap is the node's snapshot of room at the start of unix minute m,
// over faultWindows.
func faultSnap(n *clusterNode, room string, m int64) crdt.RoomSnapshot {
	return n.Server.Node().Snapshot(room, m*60, faultWindows)
}

// faultTotals are the figures the fault tests compare with the truth.
type faultTotals struct {
	Admitted uint64 // admissions over the history window
	Arrivals uint64
	Active   int64 // sessions not yet expired
	Waiting  int64
}

func (ft faultTotals) String() string {
	return fmt.Sprintf("admitted %d, active %d, waiting %d, arrivals %d", ft.Admitted, ft.Active, ft.Waiting, ft.Arrivals)
}

func faultTotalsOf(s crdt.RoomSnapshot) faultTotals {
	ft := faultTotals{Active: s.Active, Waiting: s.TotalWaiting}
	for _, mc := range s.Admitted {
		ft.Admitted += mc.Total
	}
	for _, mc := range s.Arrivals {
		ft.Arrivals += mc.Total
	}
	return ft
}

// faultCrowd is the test's record of what visitors were told: the truth the
// replicated counts must match.
type faultCrowd struct {
	mu       sync.Mutex
	visitors []*faultVisitor
}

// faultVisitor is one browser and what happened to it.
type faultVisitor struct {
	*visitor
	id         int
	home       int   // index of the node it first reached
	bucket     int64 // minute of its first request, on the node it reached
	admitted   bool
	admittedAt time.Time // base clock
	admittedIn int64     // the minute of the ring's time at the admitting node
	queued     bool      // held on the queue page at its last counted check-in
	proving    bool      // given its first queue page: not counted until it comes back
	next       time.Time // base clock: when its queue page says to come back
	node       string    // where it was admitted
}

func (cr *faultCrowd) add(n int) []*faultVisitor {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	out := make([]*faultVisitor, n)
	for i := range out {
		out[i] = &faultVisitor{visitor: newVisitor(), id: len(cr.visitors)}
		cr.visitors = append(cr.visitors, out[i])
	}
	return out
}

// counts returns how many visitors are admitted and how many wait.
func (cr *faultCrowd) counts() (admitted, waiting int) {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	for _, v := range cr.visitors {
		switch {
		case v.admitted:
			admitted++
		case v.queued:
			waiting++
		}
	}
	return admitted, waiting
}

// prove moves the cluster's clock on by the proof interval and brings back
// every visitor in vs that was given its first queue page, to the node at
// returns it to, as its browser would: from then on it counts as waiting.
func (cr *faultCrowd) prove(t *testing.T, c *cluster, vs []*faultVisitor, at func(*faultVisitor) *clusterNode) {
	t.Helper()
	c.Advance(policy.ProofRefresh * time.Second)
	for _, v := range vs {
		if v.proving && !v.admitted {
			v.visit(t, at(v))
		}
	}
}

// due reports whether a queued visitor's page would come back by now.
func (v *faultVisitor) due(now time.Time) bool {
	return (v.queued || v.proving) && !v.admitted && !now.Before(v.next)
}

// faultOutcome is what one request got.
type faultOutcome int

const (
	faultAdmitted faultOutcome = iota + 1
	faultQueued
	faultEarly // the queue page again, for a check-in before its time
)

// visit sends v to node n for room's page and records the outcome. A
// visitor already admitted must stay admitted, and no answer may be an
// error page.
func (v *faultVisitor) visit(t *testing.T, n *clusterNode) faultOutcome {
	t.Helper()
	first := len(v.Cookies) == 0
	resp := v.Get(n.Server, "http://shop.test/")
	_ = body(t, resp)
	switch {
	case resp.Header.Get("X-Origin") == "yes":
		if !v.admitted {
			v.admitted, v.admittedAt, v.node, v.queued, v.proving = true, n.Cluster().Clock.Now(), n.Name, false, false
			v.admittedIn = n.Server.RingNow().Unix() / 60
		}
		if first {
			v.bucket = n.Now().Unix() / 60
		}
		return faultAdmitted
	case resp.Header.Get("Refresh") != "":
		if v.admitted {
			t.Errorf("visitor %d, admitted at %s, was queued at %s", v.id, v.node, n.Name)
		}
		// The visitor comes back to the room's own address, as a client
		// that ignores a Refresh url would; the cookie check is covered
		// by TestCookieCheck.
		secs, err := refreshSeconds(resp)
		if err != nil || secs < 1 {
			t.Errorf("visitor %d at %s: Refresh %q", v.id, n.Name, resp.Header.Get("Refresh"))
		}
		v.next = n.Cluster().Clock.Now().Add(time.Duration(secs) * time.Second)
		if first {
			v.bucket = n.Now().Unix() / 60
		}
		if len(resp.Header.Values("Set-Cookie")) == 0 {
			return faultEarly
		}
		// A new visitor's first page counts no waiting place: it waits
		// from its next request, with the cookie (its proof).
		v.queued, v.proving = !first, first
		return faultQueued
	default:
		t.Errorf("visitor %d at %s: status %d, neither admitted nor queued", v.id, n.Name, resp.StatusCode)
		return 0
	}
}

// faultPair is two transports on one MemNet, with b's packets counted.
// Something reads both transports' packets and streams for as long as they
// run, as memberlist would: a packet that finds a full queue is lost.
type faultPair struct {
	net  *gossip.MemNet
	a, b *gossip.MemTransport

	mu    sync.Mutex
	got   int
	first time.Time
}

func newFaultPair(t *testing.T, seed uint64) *faultPair {
	t.Helper()
	p := &faultPair{net: gossip.NewMemNet(seed)}
	var err error
	if p.a, err = p.net.Transport("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	if p.b, err = p.net.Transport("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, tr := range []*gossip.MemTransport{p.a, p.b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-tr.PacketCh():
					if tr == p.b {
						p.mu.Lock()
						if p.got == 0 {
							p.first = time.Now()
						}
						p.got++
						p.mu.Unlock()
					}
				case conn := <-tr.StreamCh():
					conn.Close()
				case <-done:
					return
				}
			}
		}()
	}
	t.Cleanup(func() {
		_ = p.a.Shutdown()
		_ = p.b.Shutdown()
		close(done)
		wg.Wait()
	})
	return p
}

// send sends n packets from a to b and returns how many b received within
// wait, and how long after the first send the first arrived.
func (p *faultPair) send(t *testing.T, n int, wait time.Duration) (got int, first time.Duration) {
	t.Helper()
	p.mu.Lock()
	p.got = 0
	p.mu.Unlock()
	start := time.Now()
	for i := 0; i < n; i++ {
		if _, err := p.a.WriteTo([]byte(fmt.Sprintf("packet %d", i)), p.b.Addr()); err != nil {
			t.Fatal(err)
		}
		if i%20 == 19 {
			time.Sleep(time.Millisecond) // leave the reader time to drain
		}
	}
	time.Sleep(wait)
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.got, p.first.Sub(start)
}

func TestFaultNet(t *testing.T) {
	t.Run("a loss probability of 30% loses about 30% of packets", func(t *testing.T) {
		p := newFaultPair(t, 1)
		p.net.SetLoss(0.3)
		got, _ := p.send(t, 2000, 300*time.Millisecond)
		st := p.net.Stats()
		frac := float64(st.Lost) / float64(st.Sent)
		if frac < 0.26 || frac > 0.34 {
			t.Errorf("lost %d of %d (%.3f), want about 0.30", st.Lost, st.Sent, frac)
		}
		if int64(got) != st.Sent-st.Lost {
			t.Errorf("received %d, want the %d not lost", got, st.Sent-st.Lost)
		}
	})

	t.Run("duplication sends packets twice", func(t *testing.T) {
		p := newFaultPair(t, 2)
		p.net.SetDuplication(1)
		if got, _ := p.send(t, 100, 300*time.Millisecond); got != 200 {
			t.Errorf("received %d copies of 100 packets, want 200", got)
		}
	})

	t.Run("delay holds packets back", func(t *testing.T) {
		p := newFaultPair(t, 3)
		p.net.SetDelay(150*time.Millisecond, 50*time.Millisecond)
		got, first := p.send(t, 20, 500*time.Millisecond)
		if got != 20 || first < 150*time.Millisecond {
			t.Errorf("received %d of 20, the first after %s; want all, none before 150 ms", got, first)
		}
	})

	t.Run("a pair's own delay holds its packets back", func(t *testing.T) {
		p := newFaultPair(t, 5)
		to := p.b.Addr()
		p.net.SetPairDelay(func(from, dst string) time.Duration {
			if dst == to {
				return 120 * time.Millisecond
			}
			return 0
		})
		got, first := p.send(t, 20, 400*time.Millisecond)
		if got != 20 || first < 120*time.Millisecond {
			t.Errorf("received %d of 20, the first after %s; want all, none before 120 ms", got, first)
		}
	})

	t.Run("the bytes a transport sends are counted at its address, lost packets included", func(t *testing.T) {
		p := newFaultPair(t, 6)
		p.net.SetLoss(0.5)
		const n = 50
		p.send(t, n, 50*time.Millisecond)
		want := uint64(0)
		for i := 0; i < n; i++ {
			want += uint64(len(fmt.Sprintf("packet %d", i)))
		}
		if got := p.net.Sent(p.a.Addr()); got != want {
			t.Errorf("a sent %d bytes by the count, want %d", got, want)
		}
		if got := p.net.Sent(p.b.Addr()); got != 0 {
			t.Errorf("b sent %d bytes by the count, want 0", got)
		}
	})

	t.Run("a partition drops packets and refuses streams both ways until healed", func(t *testing.T) {
		p := newFaultPair(t, 4)
		p.net.Partition([]string{p.a.Addr()}, []string{p.b.Addr()})
		if got, _ := p.send(t, 20, 200*time.Millisecond); got != 0 {
			t.Errorf("received %d packets across the partition", got)
		}
		for _, d := range [][2]*gossip.MemTransport{{p.a, p.b}, {p.b, p.a}} {
			if conn, err := d[0].DialTimeout(d[1].Addr(), time.Second); err == nil {
				conn.Close()
				t.Errorf("dial from %s to %s crossed the partition", d[0].Addr(), d[1].Addr())
			}
		}
		p.net.Heal()
		if got, _ := p.send(t, 20, 200*time.Millisecond); got != 20 {
			t.Errorf("received %d of 20 packets after the heal", got)
		}
		conn, err := p.a.DialTimeout(p.b.Addr(), time.Second)
		if err != nil {
			t.Fatalf("dial after the heal: %v", err)
		}
		conn.Close()
		if st := p.net.Stats(); st.Blocked != 20 || st.RefusedDials != 2 {
			t.Errorf("stats %+v: want 20 packets blocked and 2 dials refused", st)
		}
	})

}
