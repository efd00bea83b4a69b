package policy_test

import (
	"testing"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/policy"
)

// TestOtherDatacentersHeardLate: a node of one data center and another data
// center of one node (its one replica in the snapshot, crdt.DatacenterReplica)
// split a pool of 100 evenly. Both take their half at once; the other
// data center's half reaches this node only after the far lag. Half a
// second later, past the data center's own lag but within the far lag, a
// node that assumes the far lag for the other data center's admissions
// has no allowance left (its half of the pool as it stood a far lag ago is
// taken), where one that assumes its data center's lag for everyone takes
// half of what it sees as left: 25 more, the ring 125 of 100. Once the far
// lag has passed with nothing heard, it takes its half of what is left.
func TestOtherDatacentersHeardLate(t *testing.T) {
	far := crdt.DatacenterReplica("far")
	start := at(t, "2024-05-01T10:00:30Z")
	m := minuteOf(start)
	worldAt := func(now time.Time, own uint64) *crdt.RoomSnapshot {
		return world{
			now:      now,
			arrivals: map[int64]perNode{m - 1: {dublin: 200, far: 200}, m: {dublin: 200, far: 200}},
			admitted: map[int64]perNode{m: {dublin: own}},
			// Someone was queued this minute: no burst allowance, only
			// the split.
			queued: map[int64]perNode{m: {dublin: 1}},
		}.snap()
	}
	cases := []struct {
		name           string
		farLag         time.Duration
		atOnce, within int // admissions at the start, and half a second later
		after          int // 1.5 s after the start, nothing heard of the other data center
	}{
		{name: "a node that assumes the far lag for the other data center takes nothing more within it", farLag: time.Second, atOnce: 50, within: 0, after: 25},
		{name: "a node that assumes its own data center's lag for all takes half of what it sees left", farLag: 0, atOnce: 50, within: 25, after: 12},
		{name: "a far lag no longer than the lag changes nothing", farLag: 100 * time.Millisecond, atOnce: 50, within: 25, after: 12},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			room := policy.Room{TotalActiveUsers: 1000, NewUsersPerMinute: 100, Nodes: 2, Lag: 150 * time.Millisecond, FarLag: c.farLag}
			v := policy.Visitor{Bucket: m}
			a := settled(room, worldAt(start, 0), dublin, start, policy.Continuous)
			var own uint64
			steps := []struct {
				after time.Duration
				want  int
			}{{0, c.atOnce}, {500 * time.Millisecond, c.within}, {1500 * time.Millisecond, c.after}}
			for _, st := range steps {
				now := start.Add(st.after)
				if st.after > 0 {
					a = a.Next(room, worldAt(now, own), now)
				}
				got := decideN(a, v, 100)
				if got != st.want {
					t.Errorf("admitted %d %s after the start, want %d", got, st.after, st.want)
				}
				own += uint64(got)
				// The node allocates again as its own count changes, as
				// the edge does on every merge.
				now = now.Add(200 * time.Millisecond)
				a = a.Next(room, worldAt(now, own), now)
			}
		})
	}
}
