package sim_test

import (
	"strings"
	"testing"

	"github.com/waitroom/waitroom/policy/sim"
)

// TestPriorityGroupsKeepTheirOwnCaps replays a room with a priority group
// whose holders come at half the room's new-user limit: ahead of the line
// the group takes its own new_users_per_minute when it has one, and its
// share of the slots when it has none.
func TestPriorityGroupsKeepTheirOwnCaps(t *testing.T) {
	t.Parallel()
	const base = `name: vip
seed: 3
duration: 8m
nodes: {count: 3}
gossip: {delay: 200ms, jitter: 50ms}
room:
  total_active_users: 10000
  new_users_per_minute: 60
  priority_groups:
    - GROUP
visitors:
  arrival:
    curve: phases
    phases:
      - {start: 0s, end: 6m, rate: 120}
      - {start: 0s, end: 6m, rate: 30, group: vip}
`
	// A priority admission ahead of the line takes a pool slot, never a
	// covered one (policy.Allocation.DecidePriority): the covered slots are
	// the whole room's at every node, and when the holders took them too the
	// room went 1.3 × past new_users_per_minute. With the pool only, a
	// holder who finds this node's pool spent waits in the line, at its own
	// bucket, like anyone.
	tests := []struct {
		name             string
		group            string
		minAhead         int // ahead of the line in each full minute of the queue
		maxAhead         int // in any minute; 0: not bounded
		wantLineAdmitted bool
		minAheadShare    float64 // of the holders let in, the part let in ahead of the line
	}{
		{
			name:  "a group capped at 10 a minute takes 10 a minute ahead of the line and waits in it for the rest",
			group: "{name: vip, new_users_per_minute: 10}",
			// The cap is read from the counts the node has heard: when
			// the minute turns, the holders at the front check in at
			// every node before each hears of the others' admissions.
			minAhead: 9, maxAhead: 14, wantLineAdmitted: true,
		},
		{
			name:          "a group without a cap of its own, whose holders come within its share, goes in ahead of the line while the pool has slots",
			group:         "{name: vip, share: 0.5}",
			minAheadShare: 0.9, wantLineAdmitted: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := sim.Parse([]byte(strings.Replace(base, "GROUP", tt.group, 1)))
			if err != nil {
				t.Fatal(err)
			}
			res, err := sim.Run(sc, sim.StrategyOurs)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Groups) != 1 {
				t.Fatalf("groups %+v", res.Groups)
			}
			g := res.Groups[0]
			t.Logf("%s: %d visitors, %d admitted, %d ahead; ahead per minute %v, all per minute %v", g.Name, g.Visitors, g.Admitted, g.Ahead, g.AheadPerMinute, g.PerMinute)
			if g.Visitors == 0 || g.Ahead == 0 {
				t.Fatal("no holder went in ahead of the line")
			}
			for m := 1; m < 6; m++ {
				if got := g.AheadPerMinute[m]; got < tt.minAhead {
					t.Errorf("minute %d: %d ahead of the line, want at least %d", m, got, tt.minAhead)
				}
			}
			if tt.maxAhead > 0 && g.PeakAheadPerMinute > tt.maxAhead {
				t.Errorf("%d ahead of the line in one minute, want at most %d", g.PeakAheadPerMinute, tt.maxAhead)
			}
			if lined := g.Admitted > g.Ahead; lined != tt.wantLineAdmitted {
				t.Errorf("holders let in from the line: %v, want %v", lined, tt.wantLineAdmitted)
			}
			if share := float64(g.Ahead) / float64(g.Admitted); share < tt.minAheadShare {
				t.Errorf("%.2f of the holders let in went ahead of the line, want at least %.2f", share, tt.minAheadShare)
			}
			// The room's limit holds whatever the mix (the fidelity goal).
			if res.Figures.PeakNewPerMinute > 1.02 {
				t.Errorf("peak new users per minute %.2f of the limit, want at most 1.02", res.Figures.PeakNewPerMinute)
			}
			t.Logf("peak new users per minute: %.3f of the limit", res.Figures.PeakNewPerMinute)
		})
	}
}
