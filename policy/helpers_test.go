package policy_test

import (
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/policy"
)

// The data centers of the reference's examples, one node each.
var (
	nairobi = crdt.NewReplicaID("nairobi", 1)
	dublin  = crdt.NewReplicaID("dublin", 1)
	sanJose = crdt.NewReplicaID("san-jose", 1)
	london  = crdt.NewReplicaID("london", 1)
	delhi   = crdt.NewReplicaID("delhi", 1)
)

// at parses an RFC 3339 time of the reference's examples.
func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func minuteOf(t time.Time) int64 { return t.Unix() / 60 }

// perNode is one minute of a per-node counter.
type perNode map[crdt.ReplicaID]uint64

// world describes a merged state in the reference's terms; snap turns it
// into the crdt snapshot the policy reads.
type world struct {
	now      time.Time
	active   int64
	waiting  []crdt.BucketCount
	arrivals map[int64]perNode // by unix minute
	admitted map[int64]perNode
	queued   map[int64]perNode // new visitors queued, by unix minute
}

func (w world) snap() *crdt.RoomSnapshot {
	m := minuteOf(w.now)
	s := &crdt.RoomSnapshot{Room: "shop", Now: w.now.Unix(), Minute: m, Active: w.active}
	for _, b := range w.waiting {
		if b.N > 0 {
			s.Waiting = append(s.Waiting, b)
			s.TotalWaiting += b.N
		}
	}
	for i := m - policy.HistoryMinutes + 1; i <= m; i++ {
		s.Arrivals = append(s.Arrivals, minuteCounts(i, w.arrivals[i]))
		s.Admitted = append(s.Admitted, minuteCounts(i, w.admitted[i]))
		if w.queued != nil {
			s.Queued = append(s.Queued, minuteCounts(i, w.queued[i]))
		}
	}
	return s
}

// minuteCounts builds one minute sorted by replica, as the crdt keeps it.
func minuteCounts(m int64, c perNode) crdt.MinuteCounts {
	mc := crdt.MinuteCounts{Minute: m}
	for r, n := range c {
		if n > 0 {
			mc.ByReplica = append(mc.ByReplica, crdt.Count{Replica: r, N: n})
			mc.Total += n
		}
	}
	slices.SortFunc(mc.ByReplica, func(a, b crdt.Count) int {
		switch {
		case a.Replica < b.Replica:
			return -1
		case a.Replica > b.Replica:
			return 1
		}
		return 0
	})
	return mc
}

// settled allocates as a node that has been allocating all along: its chain
// is older than one lag, so its own traffic counts in full.
func settled(room policy.Room, snap *crdt.RoomSnapshot, self crdt.ReplicaID, now time.Time, s policy.Strategy) *policy.Allocation {
	lag := room.Lag
	if lag == 0 {
		lag = policy.DefaultLag
	}
	return policy.Allocate(room, snap, self, now.Add(-2*lag), s).Next(room, snap, now)
}

// decideN asks n times for visitor v and counts the admissions.
func decideN(a *policy.Allocation, v policy.Visitor, n int) int {
	admitted := 0
	for range n {
		if a.Decide(v, nil) == policy.Admit {
			admitted++
		}
	}
	return admitted
}

var strategies = []policy.Strategy{policy.Continuous, policy.ReferencePerMinute}

// shownOf is what an estimate shows a visitor who is counted: its exported
// fields, without what a new visitor's first answer would show instead.
func shownOf(e policy.Estimate) policy.Estimate {
	return policy.Estimate{
		WaitTime: e.WaitTime, WaitTimeKnown: e.WaitTimeKnown, WaitTimeFormatted: e.WaitTimeFormatted,
		WaitTime25: e.WaitTime25, WaitTime50: e.WaitTime50, WaitTime75: e.WaitTime75,
		QueueIsFull: e.QueueIsFull, VisitorsAhead: e.VisitorsAhead, Position: e.Position, PositionKnown: e.PositionKnown, Eligible: e.Eligible,
	}
}
