package policy_test

import (
	"fmt"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/policy"
)

// The edge's loop for one room on one node: decide from the cached
// allocation, let the counter rule say what the outcome moves in the node's
// own crdt column, and re-allocate from the new snapshot with Next.
func Example() {
	self := crdt.NewReplicaID("pop-ams", 1)
	room := policy.Room{TotalActiveUsers: 100, NewUsersPerMinute: 10, SessionDuration: 5, Nodes: 1}
	state := crdt.New()
	now := time.Date(2025, 1, 1, 12, 0, 5, 0, time.UTC)
	minute := now.Unix() / 60

	snap := state.Snapshot("shop", now.Unix(), room.Windows())
	alloc := policy.Allocate(room, &snap, self, now, policy.Continuous)
	outcomes := map[policy.Outcome]int{}
	for range 12 { // twelve new visitors, 100 ms apart
		o := alloc.Decide(policy.Visitor{Bucket: minute}, nil)
		incs, _ := policy.Count(nil, room, "shop", policy.Counting{}, policy.Event{Step: policy.StepDecided, Fresh: true, Outcome: o, Refresh: 20, At: now.Unix()})
		for _, in := range incs {
			state.Add(in.Key, self, in.N)
		}
		outcomes[o]++
		now = now.Add(100 * time.Millisecond)
		snap = state.Snapshot("shop", now.Unix(), room.Windows())
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
