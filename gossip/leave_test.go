package gossip_test

import (
	"testing"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/gossip"
)

// TestLeaving checks what a node's departure tells the others: a clean
// leave (Close) hands over the last counts and stops the others expecting
// the node, a crash (Kill) does neither, and a node that comes back is
// expected again.
func TestLeaving(t *testing.T) {
	expectedOn := func(c *cluster, i int) int { return c.nodes[i].ExpectedMembers(time.Now()) }
	waitExpected := func(t *testing.T, c *cluster, i, want int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for expectedOn(c, i) != want || c.nodes[i].NumMembers() != want {
			if time.Now().After(deadline) {
				t.Fatalf("node %d expects %d members and sees %d, want %d", i, expectedOn(c, i), c.nodes[i].NumMembers(), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
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

	t.Run("a node that crashes is still expected, since it cannot be told from a partition", func(t *testing.T) {
		t.Parallel()
		c := newCluster(t, 3, clusterOpts{})
		c.waitMembers(3, 10*time.Second)
		if err := c.nodes[2].Kill(); err != nil {
			t.Fatal(err)
		}
		c.nodes[2] = nil
		deadline := time.Now().Add(10 * time.Second)
		for c.nodes[0].NumMembers() != 2 {
			if time.Now().After(deadline) {
				t.Fatalf("the crash was never noticed: %d members", c.nodes[0].NumMembers())
			}
			time.Sleep(10 * time.Millisecond)
		}
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
		deadline := time.Now().Add(10 * time.Second)
		for c.nodes[0].NumMembers() != 2 {
			if time.Now().After(deadline) {
				t.Fatal("the crash was never noticed")
			}
			time.Sleep(10 * time.Millisecond)
		}
		if got := expectedOn(c, 0); got != 3 {
			t.Errorf("after the returned node crashed node 0 expects %d members, want 3", got)
		}
	})
}
