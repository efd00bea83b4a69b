package gossip_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/waitroom/waitroom/gossip/testkit"
)

func TestMarks(t *testing.T) {
	c := newCluster(t, 3, clusterOpts{})
	c.waitMembers(3, 10*time.Second)
	expires := time.Now().Add(time.Hour).Unix()
	every := func(id string) func() bool {
		return func() bool {
			for _, n := range c.nodes {
				if n != nil && !n.HasMark(id) {
					return false
				}
			}
			return true
		}
	}

	t.Run("a mark made on one node is held on every node, and marking it again is refused anywhere", func(t *testing.T) {
		if !c.nodes[0].Mark("code/shop/one", expires) {
			t.Fatal("the first mark of an id was refused")
		}
		testkit.Eventually(t, testkit.Wait{What: "every node holding the mark", Timeout: 5 * time.Second}, every("code/shop/one"))
		for i, n := range c.nodes {
			if n.Mark("code/shop/one", expires) {
				t.Fatalf("node %d marked an id the ring already holds", i)
			}
		}
	})

	t.Run("an expired mark is never held", func(t *testing.T) {
		if c.nodes[1].Mark("code/shop/old", time.Now().Add(-time.Minute).Unix()) {
			t.Fatal("a mark that expired before it was made was accepted")
		}
		if c.nodes[1].HasMark("code/shop/old") {
			t.Fatal("an expired mark is held")
		}
	})

	t.Run("a node that joins later is sent every mark", func(t *testing.T) {
		for i := range 3 {
			c.nodes[i%3].Mark(fmt.Sprintf("code/shop/later-%d", i), expires)
		}
		late := c.add(t, "node-late", clusterOpts{})
		c.waitMembers(4, 10*time.Second)
		testkit.Eventually(t, testkit.Wait{What: "the late node holding every mark", Timeout: 5 * time.Second, Seen: func() string { return fmt.Sprint(late.MarkList()) }}, func() bool {
			return late.HasMark("code/shop/one") && late.HasMark("code/shop/later-0") && late.HasMark("code/shop/later-1") && late.HasMark("code/shop/later-2")
		})
	})
}
