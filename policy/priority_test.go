package policy_test

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/waitroom/waitroom/crdt"

	"github.com/waitroom/waitroom/policy"
)

// TestPropertyPriorityTrafficNeverAdmitsPastTheBudget mixes priority code
// holders of several groups with ordinary visitors: the node's admissions,
// both kinds together, stay within the budget that keeps the room within
// its limits, and each group's admissions ahead of the line within its
// share.
func TestPropertyPriorityTrafficNeverAdmitsPastTheBudget(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		room, w, ids := drawRoom(t, rapid.IntRange(1, 6).Draw(t, "nodes"))
		s := rapid.SampledFrom(strategies).Draw(t, "strategy")
		a := settled(room, w.snap(), ids[0], w.now, s)
		sum := a.Summary()
		limit := sum.Budget + sum.CoveredSlots
		m := minuteOf(w.now)
		shares := []float64{1, rapid.Float64Range(0.01, 1).Draw(t, "share 1"), rapid.Float64Range(0.01, 1).Draw(t, "share 2")}
		var admitted, ahead [3]int64
		var ordinary int64
		for range rapid.IntRange(0, 3000).Draw(t, "visitors") {
			v := policy.Visitor{Bucket: m - int64(rapid.IntRange(0, 30).Draw(t, "age")), Queued: rapid.Bool().Draw(t, "queued")}
			g := rapid.IntRange(-1, 2).Draw(t, "group")
			if g < 0 {
				if a.Decide(v, nil) == policy.Admit {
					ordinary++
				}
				continue
			}
			out, first := a.DecidePriority(v, g, shares[g])
			if out == policy.Admit {
				admitted[g]++
				if first {
					ahead[g]++
				}
			} else if first {
				t.Fatalf("a priority visitor of group %d was %v ahead of the line", g, out)
			}
		}
		total := ordinary + admitted[0] + admitted[1] + admitted[2]
		if total > limit {
			t.Fatalf("admitted %d (%d ordinary, %v by code), over budget %d + covered %d", total, ordinary, admitted, sum.Budget, sum.CoveredSlots)
		}
		for g := range ahead {
			if got := a.PriorityAdmitted(g); got != ahead[g] {
				t.Fatalf("group %d: PriorityAdmitted %d, counted %d", g, got, ahead[g])
			}
			if float64(ahead[g]) > shares[g]*float64(total)+1 {
				t.Fatalf("group %d took %d admissions ahead of the line of %d, over its share %.2f", g, ahead[g], total, shares[g])
			}
		}
	})
}

func TestPriorityGoesAheadOfTheLine(t *testing.T) {
	for _, s := range strategies {
		t.Run("a code holder is admitted while the line waits, under "+s.String(), func(t *testing.T) {
			room, w, ids := fullLine(t)
			a := settled(room, w.snap(), ids[0], w.now, s)
			m := minuteOf(w.now)
			if out := a.Decide(policy.Visitor{Bucket: m}, nil); out == policy.Admit {
				t.Fatalf("a new ordinary visitor was admitted past %d waiting", w.waiting[0].N)
			}
			out, first := a.DecidePriority(policy.Visitor{Bucket: m}, 0, 1)
			if out != policy.Admit || !first {
				t.Fatalf("a new code holder was %v (ahead %v), want admitted ahead of the line", out, first)
			}
		})
		t.Run("a code holder waits when the room has no slot free, under "+s.String(), func(t *testing.T) {
			room, w, ids := fullLine(t)
			w.active = int64(room.TotalActiveUsers)
			a := settled(room, w.snap(), ids[0], w.now, s)
			if out, first := a.DecidePriority(policy.Visitor{Bucket: minuteOf(w.now)}, 0, 1); out == policy.Admit || first {
				t.Fatalf("a code holder was %v (ahead %v) in a full room", out, first)
			}
		})
	}
}

// fullLine is one node's room with open slots and a line far longer than
// them, of visitors who came five minutes ago.
func fullLine(t *testing.T) (policy.Room, world, []crdt.ReplicaID) {
	t.Helper()
	now := at(t, "2026-03-01T12:00:30Z")
	m := minuteOf(now)
	room := policy.Room{TotalActiveUsers: 100, NewUsersPerMinute: 20, Nodes: 1}
	w := world{now: now, active: 50, waiting: []crdt.BucketCount{{Bucket: m - 5, N: 1000}},
		arrivals: map[int64]perNode{m - 5: {nairobi: 1000}}, admitted: map[int64]perNode{m - 1: {nairobi: 20}}}
	return room, w, []crdt.ReplicaID{nairobi}
}
