package policy_test

import (
	"testing"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/policy"
)

func TestTheChainCarriesTheLedgerUntilTimeStepsBack(t *testing.T) {
	room := policy.Room{TotalActiveUsers: 1000, NewUsersPerMinute: 10, Nodes: 1}
	start := at(t, "2026-11-21T12:00:30Z")
	snapAt := func(now time.Time) *crdt.RoomSnapshot { return world{now: now}.snap() }
	tests := []struct {
		name string
		next time.Duration // from the first allocation
		want int64         // priority admissions the next allocation's ledger holds
	}{
		{"a later allocation follows with the ledger of the one before", 5 * time.Second, 3},
		{"an allocation at the same second follows too", 0, 3},
		{"a ring time that stepped back starts the chain afresh", -5 * time.Second, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chain := policy.NewChain(nairobi, policy.Continuous)
			if chain.Last() != nil {
				t.Fatal("a new chain has an allocation")
			}
			first, chain := chain.Allocate(room, snapAt(start), start)
			if chain.Last() != first {
				t.Fatal("the chain does not end in the allocation it returned")
			}
			for range 3 {
				if out, ahead := first.DecidePriority(policy.Visitor{Bucket: minuteOf(start)}, 0, 1); out != policy.Admit || !ahead {
					t.Fatalf("a priority holder was not admitted ahead: %v, %v", out, ahead)
				}
			}
			then := start.Add(tt.next)
			a, _ := chain.Allocate(room, snapAt(then), then)
			if got := a.PriorityAdmitted(0); got != tt.want {
				t.Errorf("the ledger holds %d priority admissions, want %d", got, tt.want)
			}
		})
	}
}

func TestASightReadsOnlyTheReachablePartWhileCut(t *testing.T) {
	room := policy.Room{TotalActiveUsers: 100, NewUsersPerMinute: 30, Nodes: 3}
	now := at(t, "2026-11-21T12:00:30Z")
	m := minuteOf(now)
	reach := func() func(crdt.ReplicaID) bool { return func(r crdt.ReplicaID) bool { return r != delhi } }
	// The snapshot of the replicas keep accepts: each node admitted one
	// visitor per node in this minute, delhi five.
	snapshot := func(keep func(crdt.ReplicaID) bool) crdt.RoomSnapshot {
		adm := perNode{}
		for r, n := range (perNode{nairobi: 1, dublin: 1, delhi: 5}) {
			if keep == nil || keep(r) {
				adm[r] = n
			}
		}
		var active int64
		for _, n := range adm {
			active += int64(n)
		}
		return *world{now: now, active: active, admitted: map[int64]perNode{m: adm}}.snap()
	}
	tests := []struct {
		name                   string
		sight                  policy.Sight
		wantSide               policy.Side
		wantAdmitted, wantLive int64 // in the snapshot
	}{
		{"a whole ring reads every replica and keeps the room as it is",
			policy.Sight{Live: 3, Reachable: reach, Snapshot: snapshot}, policy.Side{}, 7, 7},
		{"a cut ring reads the reachable replicas and keeps what the others last said",
			policy.Sight{Live: 2, Reachable: reach, Snapshot: snapshot}, policy.Side{Nodes: 2, Admitted: 5, Active: 5}, 2, 2},
		{"a cut ring read whole, for comparison, reads every replica",
			policy.Sight{Live: 2, Reachable: reach, Snapshot: snapshot, Whole: true}, policy.Side{}, 7, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, snap := tt.sight.Take(room)
			if r.Side != tt.wantSide {
				t.Errorf("side %+v, want %+v", r.Side, tt.wantSide)
			}
			if got := int64(snap.AdmittedIn(m).Total); got != tt.wantAdmitted || snap.Active != tt.wantLive {
				t.Errorf("the snapshot holds %d admitted and %d active, want %d and %d", got, snap.Active, tt.wantAdmitted, tt.wantLive)
			}
		})
	}
}

// TestACutRingStillCountsTheLineItCannotReach: while a node is down, its
// visitors keep trying and are let in first when it is back, so the places
// the others tell count them; they take none of this part's slots
// meanwhile, so the waits do not.
func TestACutRingStillCountsTheLineItCannotReach(t *testing.T) {
	room := policy.Room{TotalActiveUsers: 10, NewUsersPerMinute: 10, Nodes: 3}
	now := at(t, "2026-11-21T12:05:30Z")
	m := minuteOf(now)
	old := m - 3 // a bucket whose slots filled long ago: placed by the slots' counts
	// Each node's waiting visitors: nairobi and dublin 4 each in the old
	// bucket's first slot; delhi, down, 6 in its first slot and 2 in its
	// last, and 5 of an older bucket still.
	type line struct {
		waiting     []crdt.BucketCount
		slots, left []crdt.SlotCount
	}
	lines := map[crdt.ReplicaID]line{
		nairobi: {waiting: []crdt.BucketCount{{Bucket: old, N: 4}}, slots: []crdt.SlotCount{{Second: old * 60, N: 4}}},
		dublin:  {waiting: []crdt.BucketCount{{Bucket: old, N: 4}}, slots: []crdt.SlotCount{{Second: old * 60, N: 4}}},
		delhi: {waiting: []crdt.BucketCount{{Bucket: old - 1, N: 5}, {Bucket: old, N: 8}},
			slots: []crdt.SlotCount{{Second: (old - 1) * 60, N: 5}, {Second: old * 60, N: 6}, {Second: old*60 + 40, N: 2}}},
	}
	// The same, but nairobi and dublin have let their visitors of the old
	// bucket's first slot in, and nairobi delhi's six of it too, who came
	// to it while delhi was down: delhi's last word still has them waiting.
	moved := map[crdt.ReplicaID]line{
		nairobi: {slots: []crdt.SlotCount{{Second: old * 60, N: 4}}, left: []crdt.SlotCount{{Second: old * 60, N: 10}}},
		dublin:  {slots: []crdt.SlotCount{{Second: old * 60, N: 4}}, left: []crdt.SlotCount{{Second: old * 60, N: 4}}},
		delhi:   lines[delhi],
	}
	snapshotOf := func(lines map[crdt.ReplicaID]line) func(keep func(crdt.ReplicaID) bool) crdt.RoomSnapshot {
		return func(keep func(crdt.ReplicaID) bool) crdt.RoomSnapshot {
			w := world{now: now, active: 10}
			byBucket, bySlot, leftBySlot := map[int64]int64{}, map[int64]int64{}, map[int64]int64{}
			for r, l := range lines {
				if keep != nil && !keep(r) {
					continue
				}
				for _, b := range l.waiting {
					byBucket[b.Bucket] += b.N
				}
				for _, s := range l.slots {
					bySlot[s.Second] += s.N
				}
				for _, s := range l.left {
					leftBySlot[s.Second] += s.N
				}
			}
			for _, b := range []int64{old - 1, old} {
				if byBucket[b] > 0 {
					w.waiting = append(w.waiting, crdt.BucketCount{Bucket: b, N: byBucket[b]})
				}
			}
			s := w.snap()
			for _, sec := range []int64{(old - 1) * 60, old * 60, old*60 + 40} {
				if bySlot[sec] > 0 {
					s.Arrived = append(s.Arrived, crdt.SlotCount{Second: sec, N: bySlot[sec]})
				}
				if leftBySlot[sec] > 0 {
					s.Left = append(s.Left, crdt.SlotCount{Second: sec, N: leftBySlot[sec]})
				}
			}
			return *s
		}
	}
	snapshot := snapshotOf(lines)
	reach := func() func(crdt.ReplicaID) bool { return func(r crdt.ReplicaID) bool { return r != delhi } }
	whole := policy.Sight{Live: 3, Reachable: reach, Snapshot: snapshot}
	cut := policy.Sight{Live: 2, Reachable: reach, Snapshot: snapshot}
	cutMoved := policy.Sight{Live: 2, Reachable: reach, Snapshot: snapshotOf(moved)}

	tests := []struct {
		name    string
		sight   policy.Sight
		arrived uint16 // tenths of a second into the old bucket's minute
		want    int64
	}{
		{"the whole ring places a visitor of the old bucket's second slot behind its first slot and the older bucket", whole, 250, 19},
		{"cut off from the node that is down, the ring still counts its visitors ahead", cut, 250, 19},
		{"cut off, a visitor halfway through the last slot has half of the down node's visitors of that slot ahead", cut, 500, 20},
		{"cut off, the down node's visitors let in at the others are ahead no more", cutMoved, 250, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := policy.NewChain(nairobi, policy.Continuous).Step(room, tt.sight, now)
			if got, known := a.Position(old, tt.arrived); !known || got != tt.want {
				t.Errorf("place %d (known %v), want %d", got, known, tt.want)
			}
		})
	}

	t.Run("the first answer of a new visitor counts the line it cannot reach", func(t *testing.T) {
		a, _ := policy.NewChain(nairobi, policy.Continuous).Step(room, cut, now)
		e := a.EstimateAt(m, 300).ForNewVisitor()
		if e.Position != 8+13 {
			t.Errorf("a new visitor is told %d ahead, want %d", e.Position, 8+13)
		}
	})
	t.Run("the first answer of a new visitor leaves out the down node's visitors let in at the others", func(t *testing.T) {
		a, _ := policy.NewChain(nairobi, policy.Continuous).Step(room, cutMoved, now)
		if e := a.EstimateAt(m, 300).ForNewVisitor(); e.Position != 5+2 {
			t.Errorf("a new visitor is told %d ahead, want %d", e.Position, 5+2)
		}
	})
}

// TestARingWholeAgainDoesNotTakeTheOthersCountsForANewCrowd: while cut off,
// a node sums the queued counts of the replicas it reaches; whole again, the
// others' counts come back with every visitor they queued meanwhile, which
// is no crowd of the last seconds still to prove.
func TestARingWholeAgainDoesNotTakeTheOthersCountsForANewCrowd(t *testing.T) {
	start := at(t, "2026-11-21T12:00:10Z")
	m := minuteOf(start)
	snap := func(d time.Duration, queued perNode) *crdt.RoomSnapshot {
		return world{now: start.Add(d), active: 10, queued: map[int64]perNode{m: queued}}.snap()
	}
	room := policy.Room{TotalActiveUsers: 10, NewUsersPerMinute: 10, Nodes: 3}
	cut := room
	cut.Side = policy.Side{Nodes: 2}
	newcomer := func(a *policy.Allocation) int64 { return a.EstimateAt(m, 300).ForNewVisitor().Position }

	tests := []struct {
		name  string
		first policy.Room
		want  int64
	}{
		{"a whole ring that hears thirty more queued since its last look counts them ahead", room, 30},
		{"a ring whole again does not count the thirty the node it could not reach queued meanwhile", cut, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chain := policy.NewChain(nairobi, policy.Continuous)
			for i, d := range []time.Duration{0, 3 * time.Second, 5 * time.Second} {
				r := tt.first
				if i == 2 {
					r = room
				}
				q := perNode{dublin: 10}
				if i == 2 {
					q = perNode{dublin: 10, delhi: 30}
				}
				_, chain = chain.Allocate(r, snap(d, q), start.Add(d))
			}
			if got := newcomer(chain.Last()); got != tt.want {
				t.Errorf("a new visitor is told %d ahead, want %d", got, tt.want)
			}
		})
	}
}
