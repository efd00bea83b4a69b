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

// TestLeaving checks what a node's departure tells the others: a clean
// leave (Close) hands over the last counts and stops the others expecting
// the node, a crash (Kill) does neither, and a node that comes back is
// expected again.
func TestLeaving(t *testing.T) {
	expectedOn := func(c *cluster, i int) int { return c.nodes[i].ExpectedMembers(time.Now()) }
	waitExpected := func(t *testing.T, c *cluster, i, want int) {
		t.Helper()
		testkit.Eventually(t, testkit.Wait{What: fmt.Sprintf("node %d expecting and seeing %d members", i, want), Timeout: 10 * time.Second, Seen: func() string { return fmt.Sprintf("expects %d, sees %d", expectedOn(c, i), c.nodes[i].NumMembers()) }}, func() bool { return expectedOn(c, i) == want && c.nodes[i].NumMembers() == want })
	}

	t.Run("a node that leaves cleanly sends its last counts and is no longer expected", func(t *testing.T) {
		t.Parallel()
		c := newCluster(t, 3, clusterOpts{})
		c.waitMembers(3, 10*time.Second)
		k := minuteKey("shop", crdt.Admitted, nowMinute())
		// Written and closed at once: the count has not gone out yet.
		c.nodes[2].Add(gossip.Inc{Key: k, N: 7})
		if err := c.nodes[2].Close(); err != nil {
			t.Fatal(err)
		}
		c.nodes[2] = nil
		if !c.waitValue(0, k, 7, 5*time.Second) {
			t.Fatal("the leaving node's last count never arrived")
		}
		waitExpected(t, c, 0, 2)
		waitExpected(t, c, 1, 2)
	})

	t.Run("a leaving node hands its last counts to every peer over TCP even when every packet is lost", func(t *testing.T) {
		t.Parallel()
		c := losingEveryPacket(t, 11)
		k := minuteKey("shop", crdt.Admitted, nowMinute())
		c.nodes[2].Add(gossip.Inc{Key: k, N: 5})
		info := gossip.NodeInfoRegister(c.nodes[2].Replica())
		if err := c.nodes[2].Close(); err != nil {
			t.Fatal(err)
		}
		c.nodes[2] = nil
		for i := range 2 {
			// The hand-over is one TCP stream per peer; a loaded CI
			// machine took longer than 5 s to finish it.
			if !c.waitValue(i, k, 5, 20*time.Second) {
				t.Errorf("node %d never got the leaving node's last count", i)
			}
			// The leave announcement came by the same stream.
			left := func() bool {
				reg, ok := c.nodes[i].Register(info)
				if !ok {
					return false
				}
				ni, err := gossip.DecodeNodeInfo(reg.Value)
				return err == nil && ni.Left
			}
			testkit.Eventually(t, testkit.Wait{What: fmt.Sprintf("node %d hearing the leave announced", i), Timeout: 5 * time.Second, Seen: func() string { return "no announcement of the leave" }}, left)
		}
	})

	t.Run("a leaving node hands over again the counts it pushed shortly before, when every packet was lost", func(t *testing.T) {
		t.Parallel()
		c := losingEveryPacket(t, 12)
		k := minuteKey("shop", crdt.Admitted, nowMinute())
		before := c.nodes[2].Stats().MessagesOut
		c.nodes[2].Add(gossip.Inc{Key: k, N: 4})
		// The count goes out as packets, all lost, before the leave.
		testkit.Eventually(t, testkit.Wait{What: "the count pushed as packets", Timeout: 10 * time.Second, Seen: func() string { return fmt.Sprintf("%d messages out", c.nodes[2].Stats().MessagesOut) }}, func() bool {
			return c.nodes[2].Stats().MessagesOut > before
		})
		if err := c.nodes[2].Close(); err != nil {
			t.Fatal(err)
		}
		c.nodes[2] = nil
		for i := range 2 {
			if !c.waitValue(i, k, 4, 20*time.Second) {
				t.Errorf("node %d never got the count pushed before the leave", i)
			}
		}
	})

	t.Run("a node that crashes is still expected, since it cannot be told from a partition", func(t *testing.T) {
		t.Parallel()
		c := newCluster(t, 3, clusterOpts{})
		c.waitMembers(3, 10*time.Second)
		if err := c.nodes[2].Kill(); err != nil {
			t.Fatal(err)
		}
		c.nodes[2] = nil
		waitNumMembers(t, c.nodes[0], 2, 10*time.Second) // the crash is noticed
		if got := expectedOn(c, 0); got != 3 {
			t.Errorf("after a crash node 0 expects %d members, want 3", got)
		}
	})

	t.Run("a node that left and comes back under its name is expected again", func(t *testing.T) {
		t.Parallel()
		c := newCluster(t, 3, clusterOpts{})
		c.waitMembers(3, 10*time.Second)
		if err := c.nodes[2].Close(); err != nil {
			t.Fatal(err)
		}
		c.nodes[2] = nil
		waitExpected(t, c, 0, 2)
		back := c.add(t, "node-02", clusterOpts{})
		defer back.Kill()
		waitExpected(t, c, 0, 3)
		// And if it then crashes, its old leave does not excuse it.
		if err := back.Kill(); err != nil {
			t.Fatal(err)
		}
		waitNumMembers(t, c.nodes[0], 2, 10*time.Second)
		if got := expectedOn(c, 0); got != 3 {
			t.Errorf("after the returned node crashed node 0 expects %d members, want 3", got)
		}
	})
}

// losingEveryPacket starts a ring of three on a fault network seeded with
// seed, without periodic push-pull, and once it has formed loses every
// packet: only TCP streams (a clean leave's hand-over) still carry counts.
func losingEveryPacket(t *testing.T, seed uint64) *cluster {
	t.Helper()
	fn := gossip.NewMemNet(seed)
	c := newCluster(t, 3, clusterOpts{
		transport: func(t testing.TB, name string) memberlist.Transport {
			tr, err := fn.Transport("127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			return tr
		},
		tune: func(mc *memberlist.Config) { mc.PushPullInterval = 0 },
	})
	c.waitMembers(3, 10*time.Second)
	fn.SetLoss(1)
	return c
}

// TestExpectedMembersRemembersTheRing checks the memory behind
// ExpectedMembers: a ring that has had its size for a long time is still
// remembered when a member crashes, and forgotten ten minutes after.
func TestExpectedMembersRemembersTheRing(t *testing.T) {
	fake := testkit.NewClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	clock, advance := fake.Now, func(d time.Duration) { fake.Advance(d) }

	c := newCluster(t, 3, clusterOpts{clock: clock})
	c.waitMembers(3, 10*time.Second)
	// Long stable: nothing has joined or left for an hour, and nobody
	// asked in between.
	advance(time.Hour)
	if err := c.nodes[2].Kill(); err != nil {
		t.Fatal(err)
	}
	c.nodes[2] = nil
	c.waitMembers(2, 10*time.Second)

	steps := []struct {
		name  string
		after time.Duration
		want  int
	}{
		{"a crash after an hour of a stable ring is still expected back", 0, 3},
		{"and nine minutes later", 9 * time.Minute, 3},
		{"ten minutes after the crash it is forgotten", time.Minute + time.Second, 2},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			advance(st.after)
			for i := range 2 {
				if got := c.nodes[i].ExpectedMembers(clock()); got != st.want {
					t.Errorf("node %d expects %d members, want %d", i, got, st.want)
				}
			}
		})
	}
}

// TestALongPartitionHeals cuts a ring for longer than the nodes remember
// each other: once healed, the sides still find each other and merge.
func TestALongPartitionHeals(t *testing.T) {
	fake := testkit.NewClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	clock := fake.Now
	fn := gossip.NewMemNet(7)
	c := newCluster(t, 3, clusterOpts{
		clock:  clock,
		search: 200 * time.Millisecond,
		transport: func(t testing.TB, name string) memberlist.Transport {
			tr, err := fn.Transport("127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			return tr
		},
		tune: func(mc *memberlist.Config) {
			mc.ProbeInterval = 200 * time.Millisecond
			mc.ProbeTimeout = 100 * time.Millisecond
			mc.SuspicionMult = 2
			mc.GossipToTheDeadTime = time.Second
			mc.TCPTimeout = 500 * time.Millisecond
		},
	})
	c.waitMembers(3, 10*time.Second)
	// node-00 has no seeds and node-01, node-02 have node-00: cut node-00
	// off, so that only its memory of lost members can bring it back, and
	// the others only their seed.
	fn.Partition([]string{c.nodes[0].Addr()}, []string{c.nodes[1].Addr(), c.nodes[2].Addr()})
	// Each side notices the other is gone.
	for i, want := range []int{1, 2, 2} {
		waitNumMembers(t, c.nodes[i], want, 10*time.Second)
	}
	// Past the ring's memory: each side now expects only itself.
	fake.Advance(11 * time.Minute)
	if got := c.nodes[0].ExpectedMembers(clock()); got != 1 {
		t.Fatalf("after eleven minutes node-00 still expects %d members", got)
	}
	// Dated by the nodes' clock: a peer refuses a cell dated beyond its
	// own clock's minute and the allowed offset.
	k := minuteKey("shop", crdt.Admitted, clock().Unix()/60)
	c.nodes[0].Add(gossip.Inc{Key: k, N: 4})
	c.nodes[2].Add(gossip.Inc{Key: k, N: 5})
	fn.Heal()
	c.waitMembers(3, 10*time.Second)
	for i := range c.nodes {
		if !c.waitValue(i, k, 9, 10*time.Second) {
			t.Fatalf("node %d did not merge the other side's counts", i)
		}
	}
}
