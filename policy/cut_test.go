package policy_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/policy"
)

// split is a small cluster cut in two: every node keeps its own crdt state,
// the nodes of one part see each other's entries at once, and from the cut
// on neither part hears from the other. Visitors keep their home node and
// check in every 20 s until admitted; what each request counts is the
// counter rule's (policy.Count), as at the edge.
type split struct {
	room      policy.Room
	parts     [][]int // node indexes of each part
	ids       []crdt.ReplicaID
	states    []*crdt.State
	allocs    []*policy.Allocation
	start     time.Time
	cutAt     time.Duration // from start; the cut lasts to the end
	whole     bool          // read the whole snapshot while cut (what the edge did before Side)
	newPer    func(node int, at time.Duration) int
	visitors  []*splitVisitor
	admitted  map[int64]int   // truth: admissions per minute, all nodes
	admits    []int64         // truth: the second of every admission
	byPart    []map[int64]int // per part
	worstLive float64         // truth: the most active sessions seen at any step
}

type splitVisitor struct {
	home          int
	tok           policy.Counting // zero before the first request
	next          time.Time
	admittedFirst bool
}

const splitRoom = "shop"

func (c *split) partOf(node int) int {
	for p, ns := range c.parts {
		for _, n := range ns {
			if n == node {
				return p
			}
		}
	}
	panic("node in no part")
}

// gossip merges the states of every part, or of the whole ring before the
// cut.
func (c *split) gossip(cut bool) {
	groups := c.parts
	if !cut {
		all := []int{}
		for _, p := range c.parts {
			all = append(all, p...)
		}
		groups = [][]int{all}
	}
	for _, g := range groups {
		m := crdt.New()
		for _, n := range g {
			m.MergeState(c.states[n])
		}
		for _, n := range g {
			c.states[n].MergeState(m)
		}
	}
}

func (c *split) run(t *testing.T, d time.Duration) {
	t.Helper()
	n := len(c.ids)
	c.room.Nodes, c.room.Lag = n, time.Second
	c.admitted = map[int64]int{}
	c.byPart = make([]map[int64]int, len(c.parts))
	for p := range c.byPart {
		c.byPart[p] = map[int64]int{}
	}
	c.allocs = make([]*policy.Allocation, n)
	w := c.room.Windows()
	for step := time.Duration(0); step < d; step += time.Second {
		now := c.start.Add(step)
		m := now.Unix() / 60
		cut := step >= c.cutAt
		for i := range n {
			part := c.parts[c.partOf(i)]
			room := c.room
			var snap crdt.RoomSnapshot
			if cut && !c.whole {
				in := map[crdt.ReplicaID]bool{}
				for _, j := range part {
					in[c.ids[j]] = true
				}
				snap = c.states[i].SnapshotOf(splitRoom, now.Unix(), w, func(r crdt.ReplicaID) bool { return in[r] })
				rest := c.states[i].SnapshotOf(splitRoom, now.Unix(), w, func(r crdt.ReplicaID) bool { return !in[r] })
				room = room.CutOff(len(part), &rest)
			} else {
				snap = c.states[i].Snapshot(splitRoom, now.Unix(), w)
			}
			if c.allocs[i] == nil {
				c.allocs[i] = policy.Allocate(room, &snap, c.ids[i], now, policy.Continuous)
			} else {
				c.allocs[i] = c.allocs[i].Next(room, &snap, now)
			}
			for range c.newPer(i, step) {
				c.visitors = append(c.visitors, &splitVisitor{home: i, next: now})
			}
			for _, v := range c.visitors {
				if v.home != i || v.admittedFirst || now.Before(v.next) {
					continue
				}
				c.visit(i, v, now, m)
			}
		}
		c.gossip(cut)
		c.worstLive = max(c.worstLive, c.liveAt(now))
	}
}

func (c *split) visit(i int, v *splitVisitor, now time.Time, m int64) {
	sec := now.Unix()
	fresh := v.tok == policy.Counting{}
	bucket := v.tok.Bucket
	if fresh {
		bucket = m
	}
	out := c.allocs[i].Decide(policy.Visitor{Bucket: bucket, Queued: v.tok.Waiting()}, nil)
	incs, tok := policy.Count(nil, c.room, splitRoom, v.tok, policy.Event{Step: policy.StepDecided, Fresh: fresh, Outcome: out, Refresh: 20}, sec)
	for _, in := range incs {
		c.states[i].Add(in.Key, c.ids[i], in.N)
	}
	v.tok = tok
	switch out {
	case policy.Admit:
		v.admittedFirst = true
		c.admits = append(c.admits, sec)
		c.admitted[m]++
		c.byPart[c.partOf(i)][m]++
	case policy.Queue:
		v.next = now.Add(20 * time.Second)
	}
}

// liveAt is the true number of active sessions at now: those admitted less
// than SessionDuration ago (visitors here make no request after the
// admission, so sessions are never renewed).
func (c *split) liveAt(now time.Time) float64 {
	d := int64(c.room.SessionDuration) * 60
	var live float64
	for _, s := range c.admits {
		if s+d > now.Unix() {
			live++
		}
	}
	return live
}

func newSplit(room policy.Room, sizes ...int) *split {
	c := &split{room: room, start: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)}
	i := 0
	for p, size := range sizes {
		var part []int
		for range size {
			part = append(part, i)
			c.ids = append(c.ids, crdt.NewReplicaID(fmt.Sprintf("part%d-node%d", p, i), 1))
			c.states = append(c.states, crdt.New())
			i++
		}
		c.parts = append(c.parts, part)
	}
	return c
}

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
			c := newSplit(tt.room, tt.sizes...)
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
		c := newSplit(policy.Room{TotalActiveUsers: 100_000, NewUsersPerMinute: 60, SessionDuration: 5}, 2, 3)
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
