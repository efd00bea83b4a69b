package policy_test

import (
	"testing"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/policy"
)

func TestTheEarlierInABucketGoFirst(t *testing.T) {
	now := at(t, "2021-05-27T16:00:30Z")
	m := minuteOf(now)
	room := policy.Room{TotalActiveUsers: 100_000, NewUsersPerMinute: 100, Nodes: 1}
	w := world{now: now, waiting: []crdt.BucketCount{{Bucket: m - 2, N: 500}}, arrivals: map[int64]perNode{m - 1: {nairobi: 500}}}
	// 300 joined in the bucket's first twenty seconds: more than the
	// minute's 100 slots.
	slotted := w.snap()
	slotted.Arrived = []crdt.SlotCount{{Second: (m - 2) * 60, N: 300}, {Second: (m-2)*60 + 20, N: 100}, {Second: (m-2)*60 + 40, N: 100}}
	tests := []struct {
		name    string
		snap    *crdt.RoomSnapshot
		arrived uint16
		want    int // admissions of 10 tries
	}{
		{"a visitor of the bucket's first slot takes the pool's slots", slotted, 50, 10},
		{"a visitor of its last slot waits while the first slot's still do", slotted, 500, 0},
		{"without the slot counts, a visitor of any slot takes the pool's slots", w.snap(), 500, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := settled(room, tt.snap, nairobi, now, policy.Continuous)
			v := policy.Visitor{Bucket: m - 2, Queued: true, Arrived: tt.arrived}
			if got := decideN(a, v, 10); got != tt.want {
				t.Errorf("%d of 10 admitted, want %d", got, tt.want)
			}
		})
	}
	t.Run("the current minute's bucket is not ordered: its new visitors compete with it", func(t *testing.T) {
		w := world{now: now, waiting: []crdt.BucketCount{{Bucket: m, N: 500}}}
		snap := w.snap()
		snap.Arrived = []crdt.SlotCount{{Second: m * 60, N: 500}}
		a := settled(room, snap, nairobi, now.Add(time.Second), policy.Continuous)
		if got := decideN(a, policy.Visitor{Bucket: m, Queued: true, Arrived: 250}, 5); got != 5 {
			t.Errorf("%d of 5 admitted, want 5", got)
		}
	})
}
