package policy_test

import (
	"testing"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/policy"
)

func TestACutRingStaysWithinTheLimitsTogether(t *testing.T) {
	steady := func(per int) func(int, time.Duration) int { return func(int, time.Duration) int { return per } }
	tests := []struct {
		name     string
		room     policy.Room
		sizes    []int
		cutAt    time.Duration
		newPer   func(node int, at time.Duration) int
		minutes  int
		wantBoth bool // both parts admit in every full minute of the cut
	}{
		{
			name:  "two parts of a 2-vs-3 split with a queue keep admitting and share the per-minute limit",
			room:  policy.Room{TotalActiveUsers: 100_000, NewUsersPerMinute: 60, SessionDuration: 5},
			sizes: []int{2, 3}, cutAt: 20 * time.Second, newPer: steady(1), minutes: 4, wantBoth: true,
		},
		{
			name:  "a part that had taken most of the minute before the cut holds the other to what is left",
			room:  policy.Room{TotalActiveUsers: 100_000, NewUsersPerMinute: 60, SessionDuration: 5},
			sizes: []int{2, 3}, cutAt: 40 * time.Second, minutes: 3, wantBoth: true,
			newPer: func(node int, at time.Duration) int {
				if node < 2 {
					return 3
				}
				if at%(5*time.Second) == 0 {
					return 1
				}
				return 0
			},
		},
		{
			name:  "the total active limit holds across the parts",
			room:  policy.Room{TotalActiveUsers: 90, NewUsersPerMinute: 1000, SessionDuration: 2},
			sizes: []int{2, 3}, cutAt: 30 * time.Second, newPer: steady(1), minutes: 5, wantBoth: true,
		},
		{
			name:  "random queueing shares the per-minute limit too",
			room:  policy.Room{TotalActiveUsers: 100_000, NewUsersPerMinute: 60, SessionDuration: 5, QueueingMethod: policy.Random},
			sizes: []int{2, 3}, cutAt: 20 * time.Second, newPer: steady(1), minutes: 4, wantBoth: true,
		},
		{
			name:  "a lone node cut off from four keeps to a fifth",
			room:  policy.Room{TotalActiveUsers: 100_000, NewUsersPerMinute: 100, SessionDuration: 5},
			sizes: []int{1, 4}, cutAt: 10 * time.Second, newPer: steady(2), minutes: 3, wantBoth: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newRing(tt.room, tt.sizes...)
			c.cutAt, c.newPer = tt.cutAt, tt.newPer
			c.run(t, time.Duration(tt.minutes)*time.Minute)
			m0 := c.start.Unix() / 60
			for m := m0; m < m0+int64(tt.minutes); m++ {
				t.Logf("minute %d: %d admitted (parts %d / %d)", m-m0, c.admitted[m], c.byPart[0][m], c.byPart[1][m])
				if c.admitted[m] > tt.room.NewUsersPerMinute {
					t.Errorf("minute %d: %d admitted, over the limit of %d a minute", m-m0, c.admitted[m], tt.room.NewUsersPerMinute)
				}
				if tt.wantBoth && m > m0 && c.admitted[m] > 0 && (c.byPart[0][m] == 0 || c.byPart[1][m] == 0) {
					t.Errorf("minute %d: a part stopped admitting (%d / %d)", m-m0, c.byPart[0][m], c.byPart[1][m])
				}
			}
			if c.worstLive > float64(tt.room.TotalActiveUsers) {
				t.Errorf("active sessions reached %.1f, over the limit of %d", c.worstLive, tt.room.TotalActiveUsers)
			}
			// Once the cut is a full minute old, each part keeps to its
			// part of the per-minute limit.
			for p, part := range c.parts {
				lim := tt.room.NewUsersPerMinute * len(part) / len(c.ids)
				if cs := c.allocs[part[0]].Summary().Cut; cs == nil || cs.ReachableNodes != len(part) || cs.NewUsersPerMinute != int64(lim) {
					t.Errorf("part %d: the summary says %+v, want %d reachable of %d and %d a minute", p, cs, len(part), len(c.ids), lim)
				}
				for m := m0 + 1; m < m0+int64(tt.minutes); m++ {
					if got := c.byPart[p][m]; got > lim && tt.room.NewUsersPerMinute < 1000 {
						t.Errorf("minute %d: part %d (%d of %d nodes) admitted %d, over its part %d", m-m0, p, len(part), len(c.ids), got, lim)
					}
				}
			}
		})
	}

	t.Run("reading the other part's frozen columns as live overshoots, which is what Side prevents", func(t *testing.T) {
		c := newRing(policy.Room{TotalActiveUsers: 100_000, NewUsersPerMinute: 60, SessionDuration: 5}, 2, 3)
		c.cutAt, c.newPer, c.whole = 20*time.Second, steady(1), true
		c.run(t, 3*time.Minute)
		m0 := c.start.Unix() / 60
		worst := 0
		for m := m0; m < m0+3; m++ {
			worst = max(worst, c.admitted[m])
		}
		t.Logf("worst minute without Side: %d of 60", worst)
		if worst <= 60 {
			t.Errorf("the model cannot tell: without Side the worst minute admitted %d of 60", worst)
		}
	})
}

func TestCutOffLeavesAWholeRingAlone(t *testing.T) {
	rest := &crdt.RoomSnapshot{Minute: 10, Active: 7, Admitted: []crdt.MinuteCounts{{Minute: 10, Total: 3}}}
	r := policy.Room{TotalActiveUsers: 10, NewUsersPerMinute: 5, Nodes: 3}
	tests := []struct {
		name      string
		reachable int
		want      policy.Side
	}{
		{"every node reachable leaves the room as it was", 3, policy.Side{}},
		{"more reachable than expected leaves it too", 4, policy.Side{}},
		{"an unknown count leaves it too", 0, policy.Side{}},
		{"two of three reachable keeps what the third last said", 2, policy.Side{Nodes: 2, Admitted: 3, Active: 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.CutOff(tt.reachable, rest).Side; got != tt.want {
				t.Errorf("CutOff(%d).Side = %+v, want %+v", tt.reachable, got, tt.want)
			}
		})
	}
}
