package sim

import (
	"testing"
	"time"
)

// TestMembershipFollowsTheGossipLayer steps small runs through a crash, a
// clean leave and partitions, and checks at each step what every node counts
// live, what it expects (gossip.Node.ExpectedMembers) and what its
// allocation ran on: a cut-off node's summary names its reachable part.
func TestMembershipFollowsTheGossipLayer(t *testing.T) {
	type want struct {
		at             time.Duration
		live, expected []int // per node; -1 for a node that is down
	}
	cases := []struct {
		name   string
		events string
		steps  []want
	}{
		{
			name:   "a crashed node stops counting live after failure detection but stays expected for ten minutes",
			events: "[{at: 1m, crash: 4}]",
			steps: []want{
				{1*time.Minute + 2*time.Second, []int{5, 5, 5, 5, -1}, []int{5, 5, 5, 5, -1}},
				{1*time.Minute + 10*time.Second, []int{4, 4, 4, 4, -1}, []int{5, 5, 5, 5, -1}},
				{11*time.Minute + 4*time.Second, []int{4, 4, 4, 4, -1}, []int{5, 5, 5, 5, -1}},
				{11*time.Minute + 6*time.Second, []int{4, 4, 4, 4, -1}, []int{4, 4, 4, 4, -1}},
			},
		},
		{
			name:   "a node that leaves cleanly is neither live nor expected once its announcement arrives",
			events: "[{at: 1m, leave: 4}]",
			steps: []want{
				{1*time.Minute + 3*time.Second, []int{4, 4, 4, 4, -1}, []int{4, 4, 4, 4, -1}},
			},
		},
		{
			name:   "each side of a partition counts its own group live after failure detection and expects the whole ring",
			events: "[{at: 1m, partition: {for: 3m, groups: [[0, 1], [2, 3, 4]]}}]",
			steps: []want{
				{1*time.Minute + 2*time.Second, []int{5, 5, 5, 5, 5}, []int{5, 5, 5, 5, 5}},
				{1*time.Minute + 10*time.Second, []int{2, 2, 3, 3, 3}, []int{5, 5, 5, 5, 5}},
				{4*time.Minute + 4*time.Second, []int{5, 5, 5, 5, 5}, []int{5, 5, 5, 5, 5}},
			},
		},
		{
			name:   "a partition that outlasts the ten minutes leaves each side expecting only itself",
			events: "[{at: 1m, partition: {for: 12m, groups: [[0, 1], [2, 3, 4]]}}]",
			steps: []want{
				{11*time.Minute + 4*time.Second, []int{2, 2, 3, 3, 3}, []int{5, 5, 5, 5, 5}},
				{11*time.Minute + 6*time.Second, []int{2, 2, 3, 3, 3}, []int{2, 2, 3, 3, 3}},
				// Healed: nobody expects more than it sees, so a
				// node's join loop would not try to rejoin; the sim
				// rejoins anyway (see Partition).
				{13*time.Minute + 4*time.Second, []int{5, 5, 5, 5, 5}, []int{5, 5, 5, 5, 5}},
			},
		},
		{
			name:   "a killed node that restarts counts only itself live until it has joined every node, then the ring is whole",
			events: "[{at: 1m, crash: 4}, {at: 2m, restart: 4}]",
			steps: []want{
				{1*time.Minute + 10*time.Second, []int{4, 4, 4, 4, -1}, []int{5, 5, 5, 5, -1}},
				{2*time.Minute + 500*time.Millisecond, []int{4, 4, 4, 4, 1}, []int{5, 5, 5, 5, 5}},
				{2*time.Minute + 3*time.Second, []int{5, 5, 5, 5, 5}, []int{5, 5, 5, 5, 5}},
			},
		},
		{
			name:   "a node restarted before its crash was noticed is never counted dead",
			events: "[{at: 1m, crash: 4}, {at: 1m2s, restart: 4}]",
			steps: []want{
				{1*time.Minute + 10*time.Second, []int{5, 5, 5, 5, 5}, []int{5, 5, 5, 5, 5}},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			sc, err := Parse([]byte(`name: membership
seed: 3
duration: 15m
nodes: {count: 5, failure_detection: 5s}
gossip: {delay: 1s, jitter: 250ms}
room: {total_active_users: 1000, new_users_per_minute: 100}
visitors:
  arrival: {curve: uniform, rate: 60, start: 0s, end: 15m}
events: ` + c.events + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			r, err := newRun(sc, StrategyOurs, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, st := range c.steps {
				r.end = st.at
				r.loop()
				for i, n := range r.nodes {
					live, exp := -1, -1
					if n.up {
						live, exp = n.live, n.expectedMembers(r.now)
					}
					if live != st.live[i] || exp != st.expected[i] {
						t.Errorf("at %v node %d counts %d live and expects %d; want %d and %d", st.at, i, live, exp, st.live[i], st.expected[i])
					}
					if !n.up {
						continue
					}
					r.recompute(n)
					cut := n.alloc.Summary().Cut
					switch {
					case live < exp && (cut == nil || cut.ReachableNodes != live || cut.ExpectedNodes != exp):
						t.Errorf("at %v node %d allocated on %+v; want a cut of %d of %d nodes", st.at, i, cut, live, exp)
					case live >= exp && cut != nil:
						t.Errorf("at %v node %d allocated as cut off (%+v) with the whole ring live", st.at, i, cut)
					}
				}
			}
		})
	}
}
