package policy_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/policy"
)

// cluster is a small discrete-time model of several nodes: each node sees
// its own counters at once and the others' one gossip delay late, and
// re-allocates every step, as the edge does. Visitors who are not admitted
// leave (nobody queues), so the new-user pool is all there is to split.
type cluster struct {
	room     policy.Room
	strategy policy.Strategy
	nodes    []crdt.ReplicaID
	start    time.Time // the start of the minute the model runs in
	step     time.Duration
	delay    time.Duration // gossip delay, at most room.Lag
	prior    [2]uint64     // arrivals and admissions per node in each of the two minutes before
	demand   func(node int, step int) int

	hist   [][]nodeCounts // per step, per node
	allocs []*policy.Allocation
}

type nodeCounts struct{ arrivals, admitted uint64 }

type clusterResult struct {
	admitted []uint64 // per node, in the minute
	refused  []uint64
	total    uint64
}

func (c *cluster) view(i, step int, now time.Time) *crdt.RoomSnapshot {
	m := minuteOf(c.start)
	lagSteps := int(c.delay / c.step)
	w := world{now: now, arrivals: map[int64]perNode{m - 2: {}, m - 1: {}, m: {}}, admitted: map[int64]perNode{m - 2: {}, m - 1: {}, m: {}}}
	for j, id := range c.nodes {
		for _, pm := range []int64{m - 2, m - 1} {
			w.arrivals[pm][id] = c.prior[0]
			w.admitted[pm][id] = c.prior[1]
			w.active += int64(c.prior[1])
		}
		s := step
		if j != i {
			s = step - lagSteps
		}
		if s < 0 || len(c.hist) == 0 {
			continue
		}
		nc := c.hist[min(s, len(c.hist)-1)][j]
		w.arrivals[m][id] = nc.arrivals
		w.admitted[m][id] = nc.admitted
		w.active += int64(nc.admitted)
	}
	return w.snap()
}

func (c *cluster) run(steps int) clusterResult {
	n := len(c.nodes)
	res := clusterResult{admitted: make([]uint64, n), refused: make([]uint64, n)}
	cur := make([]nodeCounts, n)
	c.allocs = make([]*policy.Allocation, n)
	chains := make([]policy.Chain, n)
	bucket := minuteOf(c.start)
	// Nodes have been running: their chains began before the minute.
	warm := c.start.Add(-2 * c.room.Lag)
	for i, id := range c.nodes {
		c.allocs[i], chains[i] = policy.NewChain(id, c.strategy).Allocate(c.room, c.view(i, 0, warm), warm)
	}
	for s := range steps {
		now := c.start.Add(time.Duration(s) * c.step)
		for i, id := range c.nodes {
			snap := c.view(i, s, now)
			// The own column is exact: use the counts as they are right now.
			for k := range snap.Arrivals {
				if snap.Arrivals[k].Minute == bucket {
					snap.Arrivals[k] = minuteCounts(bucket, withOwn(snap.Arrivals[k], id, cur[i].arrivals))
					snap.Admitted[k] = minuteCounts(bucket, withOwn(snap.Admitted[k], id, cur[i].admitted))
				}
			}
			c.allocs[i], chains[i] = chains[i].Allocate(c.room, snap, now)
			for range c.demand(i, s) {
				cur[i].arrivals++
				if c.allocs[i].Decide(policy.Visitor{Bucket: bucket}, nil) == policy.Admit {
					cur[i].admitted++
					res.admitted[i]++
					res.total++
				} else {
					res.refused[i]++
				}
			}
		}
		c.hist = append(c.hist, append([]nodeCounts(nil), cur...))
	}
	return res
}

func withOwn(mc crdt.MinuteCounts, self crdt.ReplicaID, n uint64) perNode {
	p := perNode{self: n}
	for _, c := range mc.ByReplica {
		if c.Replica != self {
			p[c.Replica] = c.N
		}
	}
	return p
}

func newCluster(t *testing.T, n int, s policy.Strategy) *cluster {
	c := &cluster{
		room:     policy.Room{TotalActiveUsers: 1_000_000, NewUsersPerMinute: 1000, Nodes: n, Lag: time.Second},
		strategy: s, start: at(t, "2021-05-27T16:00:00Z"), step: 100 * time.Millisecond, delay: time.Second,
	}
	for i := range n {
		c.nodes = append(c.nodes, crdt.NewReplicaID(fmt.Sprintf("node-%d", i), 1))
	}
	return c
}

func TestEveryNodeBurstingAtOnceStaysWithinTheLimit(t *testing.T) {
	for _, delay := range []time.Duration{0, 300 * time.Millisecond, time.Second} {
		t.Run(fmt.Sprintf("five nodes flooded at :00 with gossip %v late admit at most 1,000 in the minute", delay), func(t *testing.T) {
			c := newCluster(t, 5, policy.Continuous)
			c.delay = delay
			c.demand = func(int, int) int { return 400 } // 4,000 a second per node
			r := c.run(600)
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
		c := newCluster(t, 5, policy.Continuous)
		c.delay = 2 * time.Second
		c.demand = func(int, int) int { return 400 }
		r := c.run(600)
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
	results := map[policy.Strategy]clusterResult{}
	for _, s := range strategies {
		c := newCluster(t, 5, s)
		c.prior = [2]uint64{200, 200}
		c.demand = burst
		results[s] = c.run(600)
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
			c := newCluster(t, 5, s)
			c.prior = [2]uint64{194, 194}
			acc := make([]float64, 5)
			c.demand = func(i, _ int) int {
				acc[i] += 970.0 / 5 / 600
				n := int(acc[i])
				acc[i] -= float64(n)
				return n
			}
			r := c.run(600)
			var refused uint64
			for _, n := range r.refused {
				refused += n
			}
			if refused > 0 {
				t.Errorf("refused %d of %d", refused, r.total+refused)
			}
		})
	}
}

// Poisson arrivals at 97% of the limit bring a node, now and then, several
// visitors within one lag near the end of a minute, when its share of the
// little that is left is a slot or two. While nobody waits, a node may take
// a burst beyond its share (see "Bursts" in the package doc).
func TestABurstNearTheEndOfAMinuteIsAdmittedWhileNobodyWaits(t *testing.T) {
	c := newCluster(t, 5, policy.Continuous)
	c.prior = [2]uint64{194, 194}
	acc := make([]float64, 5)
	c.demand = func(i, step int) int {
		acc[i] += 970.0 / 5 / 600
		n := int(acc[i])
		acc[i] -= float64(n)
		if i == 0 && step == 595 { // 59.5 s: eight at once at node 0
			n += 8
		}
		return n
	}
	r := c.run(600)
	var refused uint64
	for _, n := range r.refused {
		refused += n
	}
	if refused > 0 || r.total > 1000 {
		t.Errorf("refused %d, admitted %d of 1,000 (per node %v)", refused, r.total, r.admitted)
	}
}

// The price of bursts: a flood that reaches every node in the same lag while
// nobody waits, when the pool is nearly used, is admitted up to every node's
// burst allowance. The model is pessimistic: nobody queues here, so the
// bursts never stop, where at the edge the first queued visitor stops them
// within a lag.
func TestAFloodAtEveryNodeWhileNobodyWaitsOvershootsByAtMostTheBursts(t *testing.T) {
	const n = 10
	worst := uint64(0)
	for _, from := range []int{540, 560, 570, 575, 580, 585, 590} {
		c := newCluster(t, n, policy.Continuous)
		c.prior = [2]uint64{97, 97}
		acc := make([]float64, n)
		c.demand = func(i, step int) int {
			if step >= from {
				return 400
			}
			acc[i] += 970.0 / n / 600
			k := int(acc[i])
			acc[i] -= float64(k)
			return k
		}
		r := c.run(600)
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
