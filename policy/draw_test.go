package policy_test

import (
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/policy"
)

// A random queue is one lottery of the whole ring: every waiting visitor
// has the same chance of the next slot, whichever node it waits at. The
// crowd is the real-process random-regional scenario's: limits 30/30,
// 1-minute sessions, 45 new visitors a minute for two minutes, one node
// getting four times the traffic of each other, visitors browsing 20–60 s.
func TestARandomQueueGivesEveryWaitingVisitorTheSameChanceWhereverItWaits(t *testing.T) {
	room := policy.Room{TotalActiveUsers: 30, NewUsersPerMinute: 30, SessionDuration: 1, Lag: time.Second, QueueingMethod: policy.Random}
	const seeds = 5
	// The crowd comes evenly, as in the real run (seed 0), and as Poisson
	// streams drawn from the other seeds, each run on its own.
	rings := make([]*ring, seeds+1)
	var wg sync.WaitGroup
	for seed := range rings {
		c := newRing(room, 3)
		c.step, c.delay = 200*time.Millisecond, 200*time.Millisecond
		crowd := stream{rate: 45, weights: []float64{4, 1, 1}, from: 0, to: 2 * time.Minute}
		c.newPer = evenly(crowd, c.step)
		if seed > 0 {
			c.newPer = atRandom(crowd, uint64(seed), c.step)
		}
		c.browse = browsing(20*time.Second, 60*time.Second, 3*time.Second, 8*time.Second)
		rings[seed] = c
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.run(t, 6*time.Minute)
		}()
	}
	wg.Wait()
	var n, waited [3]float64 // visitors let in after waiting, and their seconds waited, per node
	var longestFree time.Duration
	for seed, c := range rings {
		r := c.truth
		if r.peakActive > room.TotalActiveUsers || r.peakPerMinute > room.NewUsersPerMinute {
			t.Errorf("seed %d: peaks %d active and %d a minute, over the limits of %d and %d", seed, r.peakActive, r.peakPerMinute, room.TotalActiveUsers, room.NewUsersPerMinute)
		}
		for _, v := range c.visitors {
			if !v.admitted {
				t.Errorf("seed %d: a visitor who came to node %d at %v was never let in", seed, v.home, v.arrived.Sub(c.start))
				continue
			}
			if w := v.admittedAt.Sub(v.arrived); w > policy.ProofRefresh+time.Second {
				n[v.home]++
				waited[v.home] += w.Seconds()
			}
		}
		t.Logf("seed %d: longest free %v", seed, r.longestFree)
		longestFree = max(longestFree, r.longestFree)
	}
	ring := (n[0] + n[1] + n[2]) / (waited[0] + waited[1] + waited[2])
	for node := range n {
		// The chance a second of a visitor who waits at the node, against
		// the ring's: its visitors let in over the seconds they waited.
		// With the pool shared by traffic, the busy node's visitors had
		// 1.24 times the ring's and the others' 0.82 and 0.74; now 1.03,
		// 1.06 and 0.89.
		chance := n[node] / waited[node] / ring
		t.Logf("node %d: %.0f let in after waiting %.0f s on average, %.2f times the ring's chance a second", node, n[node], waited[node]/n[node], chance)
		if chance < 0.8 || chance > 1.25 {
			t.Errorf("node %d's waiting visitors had %.2f times the ring's chance a second, want 0.8 to 1.25", node, chance)
		}
	}
	// A lone visitor at a node of little traffic was turned away at every
	// check-in while the room had free slots: shared by traffic, its node's
	// share rounded to nothing, and a slot stayed free for 66 s (the even
	// crowd); now at most 19 s.
	if longestFree > 23*time.Second {
		t.Errorf("a slot stayed free for %v while someone waited, want at most 23 s", longestFree)
	}
}
