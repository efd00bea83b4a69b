package policy_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/waitroom/waitroom/policy"
)

// newPool is the ring model (ring) of how the new-user slots of one minute
// are divided: n nodes in front of a room of a million active users and
// 1,000 new users a minute, allocating every 100 ms with chains that began
// before the minute, and a visitor not let in at its first request leaves
// (nobody queues, and nobody is held), so the new-user pool is all there is
// to divide. Its minute is the one that starts at c.start.
func newPool(t *testing.T, n int, s policy.Strategy) *ring {
	c := newRing(policy.Room{TotalActiveUsers: 1_000_000, NewUsersPerMinute: 1000, Lag: time.Second}, n)
	c.start = at(t, "2021-05-27T16:00:00Z")
	c.step, c.delay, c.strategy = 100*time.Millisecond, time.Second, s
	c.warm, c.leave, c.noHold = 2*c.room.Lag, true, true
	return c
}

// perStep turns a demand per node and 100 ms step into the ring's arrivals.
func perStep(demand func(node, step int) int) func(int, time.Duration) int {
	return func(node int, at time.Duration) int { return demand(node, int(at/(100*time.Millisecond))) }
}

// poolResult is what the pool's minute gave: admissions in all and per
// node, and the visitors turned away.
type poolResult struct {
	total    int
	admitted []int
	refused  int
}

func (c *ring) runPool(t *testing.T) poolResult {
	t.Helper()
	c.run(t, time.Minute)
	return poolResult{total: c.admitted[c.start.Unix()/60], admitted: c.byNode, refused: c.truth.queued}
}

func TestEveryNodeBurstingAtOnceStaysWithinTheLimit(t *testing.T) {
	for _, delay := range []time.Duration{0, 300 * time.Millisecond, time.Second} {
		t.Run(fmt.Sprintf("five nodes flooded at :00 with gossip %v late admit at most 1,000 in the minute", delay), func(t *testing.T) {
			c := newPool(t, 5, policy.Continuous)
			c.delay = delay
			c.newPer = perStep(func(int, int) int { return 400 }) // 4,000 a second per node
			r := c.runPool(t)
			if r.total > 1000 || r.total < 995 {
				t.Errorf("admitted %d in the minute (per node %v), want 990..1,000", r.total, r.admitted)
			}
		})
	}
	// The bound needs Room.Lag to bound the gossip delay. When gossip is
	// slower, every node counts its flood as traffic the others have seen
	// and takes nearly the whole pool: this is why the default lag has a
	// margin. If this starts failing, the package doc's bound can improve.
	t.Run("gossip twice as slow as the assumed lag voids the bound under a flood at every node", func(t *testing.T) {
		c := newPool(t, 5, policy.Continuous)
		c.delay = 2 * time.Second
		c.newPer = perStep(func(int, int) int { return 400 })
		r := c.runPool(t)
		if r.total <= 1000 {
			t.Errorf("admitted %d, within the limit: update the package doc", r.total)
		}
		t.Logf("gossip at twice the lag: %d admitted of 1,000", r.total)
	})
}

func TestABurstAtOneNodeGetsTheSlotsQuietNodesLeave(t *testing.T) {
	// Two minutes of even traffic at the limit, then only node 0 is busy.
	burst := func(i, _ int) int {
		if i == 0 {
			return 20 // 200 a second
		}
		return 0
	}
	results := map[policy.Strategy]poolResult{}
	for _, s := range strategies {
		c := newPool(t, 5, s)
		c.prior = 200
		c.newPer = perStep(burst)
		results[s] = c.runPool(t)
		t.Logf("%v: node 0 admitted %d of 1,000 in the minute", s, results[s].admitted[0])
	}
	if got := results[policy.ReferencePerMinute].admitted[0]; got != 200 {
		t.Errorf("the reference's split gave node 0 %d, want its fifth, 200", got)
	}
	if got := results[policy.Continuous].admitted[0]; got < 970 || got > 1000 {
		t.Errorf("the continuous split gave node 0 %d, want nearly all of 1,000", got)
	}
}

func TestSteadyEvenLoadIsNotQueuedBelowTheLimit(t *testing.T) {
	// 97% of the limit, spread evenly over five nodes and the minute.
	for _, s := range strategies {
		t.Run(fmt.Sprintf("%v turns nobody away at 97%% of the limit", s), func(t *testing.T) {
			c := newPool(t, 5, s)
			c.prior = 194
			acc := make([]float64, 5)
			c.newPer = perStep(func(i, _ int) int {
				acc[i] += 970.0 / 5 / 600
				n := int(acc[i])
				acc[i] -= float64(n)
				return n
			})
			r := c.runPool(t)
			if r.refused > 0 {
				t.Errorf("refused %d of %d", r.refused, r.total+r.refused)
			}
		})
	}
}

// Poisson arrivals at 97% of the limit bring a node, now and then, several
// visitors within one lag near the end of a minute, when its share of the
// little that is left is a slot or two. While nobody waits, a node may take
// a burst beyond its share (see "Bursts" in the package doc).
func TestABurstNearTheEndOfAMinuteIsAdmittedWhileNobodyWaits(t *testing.T) {
	c := newPool(t, 5, policy.Continuous)
	c.prior = 194
	acc := make([]float64, 5)
	c.newPer = perStep(func(i, step int) int {
		acc[i] += 970.0 / 5 / 600
		n := int(acc[i])
		acc[i] -= float64(n)
		if i == 0 && step == 595 { // 59.5 s: eight at once at node 0
			n += 8
		}
		return n
	})
	r := c.runPool(t)
	if r.refused > 0 || r.total > 1000 {
		t.Errorf("refused %d, admitted %d of 1,000 (per node %v)", r.refused, r.total, r.admitted)
	}
}

// The price of bursts: a flood that reaches every node in the same lag while
// nobody waits, when the pool is nearly used, is admitted up to every node's
// burst allowance. The model is pessimistic: nobody queues here, so the
// bursts never stop, where at a node the first queued visitor stops them
// within a lag.
func TestAFloodAtEveryNodeWhileNobodyWaitsOvershootsByAtMostTheBursts(t *testing.T) {
	const n = 10
	worst := 0
	for _, from := range []int{540, 560, 570, 575, 580, 585, 590} {
		c := newPool(t, n, policy.Continuous)
		c.prior = 97
		acc := make([]float64, n)
		c.newPer = perStep(func(i, step int) int {
			if step >= from {
				return 400
			}
			acc[i] += 970.0 / n / 600
			k := int(acc[i])
			acc[i] -= float64(k)
			return k
		})
		r := c.runPool(t)
		worst = max(worst, r.total)
	}
	// λ = 97 a minute per node = 1.6 a lag of 1 s: a burst allowance of
	// ceil(1.6 + 4 √1.6) + 1 = 8 at each of the ten nodes, less what the
	// others were expected to take (16): (n − 1) × 8 − 16 + 1.6 ≈ 58.
	if worst > 1000+58 {
		t.Errorf("a flood late in the minute at every node admitted %d of 1,000", worst)
	}
	t.Logf("a flood late in the minute at every node: %d of 1,000 at worst", worst)
}
