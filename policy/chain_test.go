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
