package policy_test

import (
	"fmt"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/policy"
)

// The edge's loop for one room on one node: decide from the cached
// allocation, record the outcome in the node's own crdt column, and
// re-allocate from the new snapshot with Next.
func Example() {
	self := crdt.NewReplicaID("pop-ams", 1)
	room := policy.Room{TotalActiveUsers: 100, NewUsersPerMinute: 10, SessionDuration: 5, Nodes: 1}
	state := crdt.New()
	now := time.Date(2025, 1, 1, 12, 0, 5, 0, time.UTC)
	minute := now.Unix() / 60
	key := func(k crdt.Kind, bucket int64) crdt.Key {
		return crdt.Key{Room: "shop", Kind: k, Bucket: bucket, Minute: minute}
	}

	snap := state.Snapshot("shop", minute, room.Windows())
	alloc := policy.Allocate(room, &snap, self, now, policy.Continuous)
	outcomes := map[policy.Outcome]int{}
	for range 12 { // twelve new visitors, 100 ms apart
		state.Add(key(crdt.Arrivals, 0), self, 1)
		v := policy.Visitor{Bucket: minute}
		o := alloc.Decide(v, nil)
		switch o {
		case policy.Admit:
			state.Add(key(crdt.Admitted, 0), self, 1)
			state.Add(key(crdt.ActivePlus, 0), self, 1)
		case policy.Queue:
			state.Add(key(crdt.WaitingPlus, v.Bucket), self, 1)
		}
		outcomes[o]++
		now = now.Add(100 * time.Millisecond)
		snap = state.Snapshot("shop", minute, room.Windows())
		alloc = alloc.Next(room, &snap, now)
	}
	e := alloc.Estimate(minute)
	fmt.Println(outcomes[policy.Admit], "admitted,", outcomes[policy.Queue], "queued")
	fmt.Println(alloc.Status(), alloc.OpenSlots(), "open slots")
	fmt.Println(e.VisitorsAhead, "ahead, wait", e.WaitTimeFormatted)
	// Output:
	// 10 admitted, 2 queued
	// queueing 0 open slots
	// 0 ahead, wait 1 minute
}
