package policy_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/policy"
)

func TestMethodsAndSwitches(t *testing.T) {
	now := at(t, "2021-05-27T16:00:30Z")
	m := minuteOf(now)
	admitted := map[int64]perNode{m - 1: {nairobi: 30}}
	queued := policy.Visitor{Bucket: m - 2, Queued: true}
	fresh := policy.Visitor{Bucket: m}
	tests := []struct {
		name          string
		room          policy.Room
		active        int64
		queued, fresh policy.Outcome
		status        policy.Status
		estimateKnown bool
	}{
		{name: "fifo admits while there is room", room: policy.Room{}, active: 0,
			queued: policy.Admit, fresh: policy.Admit, status: policy.StatusQueueing, estimateKnown: true},
		{name: "fifo queues when the room is full", room: policy.Room{}, active: 200,
			queued: policy.Queue, fresh: policy.Queue, status: policy.StatusQueueing, estimateKnown: true},
		{name: "passthrough lets everyone in even when full", room: policy.Room{QueueingMethod: policy.Passthrough}, active: 200,
			queued: policy.Admit, fresh: policy.Admit, status: policy.StatusNotQueueing},
		{name: "reject turns everyone away even when there is room", room: policy.Room{QueueingMethod: policy.MethodReject}, active: 0,
			queued: policy.Reject, fresh: policy.Reject, status: policy.StatusQueueing},
		{name: "queue_all holds everyone even when there is room, without an estimate", room: policy.Room{QueueAll: true}, active: 0,
			queued: policy.Queue, fresh: policy.Queue, status: policy.StatusQueueAll},
		{name: "suspended passes everyone through uncounted, whatever else is set", room: policy.Room{Suspended: true, QueueAll: true, QueueingMethod: policy.MethodReject}, active: 200,
			queued: policy.Bypass, fresh: policy.Bypass, status: policy.StatusSuspended},
		{name: "a full queue turns new visitors away but keeps those already waiting", room: policy.Room{MaxQueue: 10}, active: 200,
			queued: policy.Queue, fresh: policy.Reject, status: policy.StatusQueueing, estimateKnown: true},
		{name: "a full queue under queue_all also turns new visitors away", room: policy.Room{MaxQueue: 10, QueueAll: true}, active: 0,
			queued: policy.Queue, fresh: policy.Reject, status: policy.StatusQueueAll},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			room := tc.room
			room.TotalActiveUsers, room.NewUsersPerMinute = 200, 200
			w := world{now: now, active: tc.active, admitted: admitted, waiting: []crdt.BucketCount{{Bucket: m - 2, N: 10}}}
			a := policy.Allocate(room, w.snap(), nairobi, now, policy.Continuous)
			if got := a.Decide(queued, nil); got != tc.queued {
				t.Errorf("queued visitor: %v, want %v", got, tc.queued)
			}
			if got := a.Decide(fresh, nil); got != tc.fresh {
				t.Errorf("new visitor: %v, want %v", got, tc.fresh)
			}
			if got := a.Status(); got != tc.status {
				t.Errorf("status %q, want %q", got, tc.status)
			}
			e := a.Estimate(m)
			if e.WaitTimeKnown != tc.estimateKnown {
				t.Errorf("estimate known = %v, want %v (%+v)", e.WaitTimeKnown, tc.estimateKnown, e)
			}
			if e.QueueIsFull != (room.MaxQueue > 0) {
				t.Errorf("queue is full = %v with 10 waiting and max %d", e.QueueIsFull, room.MaxQueue)
			}
		})
	}
}

func TestStatusWithoutQueue(t *testing.T) {
	now := at(t, "2021-05-27T16:00:30Z")
	room := policy.Room{TotalActiveUsers: 200, NewUsersPerMinute: 200}
	if s := policy.Allocate(room, world{now: now, active: 10}.snap(), nairobi, now, policy.Continuous).Status(); s != policy.StatusNotQueueing {
		t.Errorf("an empty queue with open slots is %q, want not_queueing", s)
	}
	if s := policy.Allocate(room, world{now: now, active: 200}.snap(), nairobi, now, policy.Continuous).Status(); s != policy.StatusQueueing {
		t.Errorf("a full room is %q, want queueing: the next visitor waits", s)
	}
}

func TestFIFOClassification(t *testing.T) {
	now := at(t, "2021-05-27T16:00:30Z")
	m := minuteOf(now)
	room := policy.Room{TotalActiveUsers: 10000, NewUsersPerMinute: 2000, Nodes: 1}
	w := world{now: now, active: 7000, waiting: []crdt.BucketCount{{Bucket: m - 5, N: 500}, {Bucket: m - 3, N: 1000}, {Bucket: m - 2, N: 1000}}}
	a := policy.Allocate(room, w.snap(), nairobi, now, policy.Continuous)
	tests := []struct {
		name string
		v    policy.Visitor
		want policy.Outcome
	}{
		{"a covered bucket goes in", policy.Visitor{Bucket: m - 5, Queued: true}, policy.Admit},
		{"an older bucket that nobody waits in any more goes in", policy.Visitor{Bucket: m - 9, Queued: true}, policy.Admit},
		{"a bucket between covered ones goes in", policy.Visitor{Bucket: m - 4, Queued: true}, policy.Admit},
		{"the partial bucket goes in on the node's share", policy.Visitor{Bucket: m - 2, Queued: true}, policy.Admit},
		{"a newer bucket waits", policy.Visitor{Bucket: m - 1, Queued: true}, policy.Queue},
		{"a new visitor waits behind the queue", policy.Visitor{Bucket: m}, policy.Queue},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := a.Decide(tc.v, nil); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("a covered bucket is eligible: its next check-in goes in", func(t *testing.T) {
		if !a.Estimate(m-3).Eligible || a.Estimate(m-2).Eligible {
			t.Errorf("eligible: covered %v, partial %v", a.Estimate(m-3).Eligible, a.Estimate(m-2).Eligible)
		}
	})
}

func TestDecideFromManyGoroutinesStopsAtTheBudget(t *testing.T) {
	now := at(t, "2021-05-27T16:00:30Z")
	m := minuteOf(now)
	room := policy.Room{TotalActiveUsers: 10000, NewUsersPerMinute: 1000, Nodes: 4}
	a := policy.Allocate(room, world{now: now}.snap(), nairobi, now, policy.Continuous)
	budget := a.Budget()
	if budget <= 0 || budget >= 1000 {
		t.Fatalf("budget %d, want a share of 1000", budget)
	}
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				if a.Decide(policy.Visitor{Bucket: m, Queued: g%2 == 0}, nil) == policy.Admit {
					admitted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if admitted.Load() != budget || a.Budget() != 0 {
		t.Errorf("admitted %d of a budget of %d, %d left", admitted.Load(), budget, a.Budget())
	}
}

func TestAnAdmissionOnASupersededAllocationStillCounts(t *testing.T) {
	now := at(t, "2021-05-27T16:00:30Z")
	m := minuteOf(now)
	room := policy.Room{TotalActiveUsers: 10000, NewUsersPerMinute: 100, Nodes: 1}
	snap := world{now: now}.snap()
	old := policy.Allocate(room, snap, nairobi, now, policy.Continuous)
	next := old.Next(room, snap, now)
	// The edge still holds old for a request that started before the swap.
	if old.Decide(policy.Visitor{Bucket: m}, nil) != policy.Admit {
		t.Fatal("the old allocation refused")
	}
	if got := next.Budget(); got != 99 {
		t.Errorf("the new allocation's budget is %d, want 99: the old one's admission counts", got)
	}
}

func TestARandomRoomPacesItsSlotsOnlyWhileSomebodyWaits(t *testing.T) {
	now := at(t, "2021-05-27T16:00:06Z") // a tenth of the minute gone
	m := minuteOf(now)
	room := policy.Room{TotalActiveUsers: 60, NewUsersPerMinute: 40, Nodes: 1, QueueingMethod: policy.Random}
	tests := []struct {
		name    string
		waiting []crdt.BucketCount
		queued  bool // the 40 visitors check in with a queued cookie
		want    int  // admissions of the 40 visitors
	}{
		// Pacing keeps a queue's check-ins from racing for the slots as
		// the minute turns; without a queue there is no race.
		{"with nobody waiting, new visitors go in up to the per-minute limit", nil, false, 40},
		{"with a queue, a tenth of the minute releases a tenth of its slots and a little more", []crdt.BucketCount{{Bucket: m, N: 30}}, true, 7},
		// Everyone's chance comes with a check-in, the newcomer's too.
		{"with a queue, a new visitor joins the draw with its first check-in", []crdt.BucketCount{{Bucket: m, N: 30}}, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := world{now: now, waiting: tt.waiting}
			a := settled(room, w.snap(), nairobi, now, policy.Continuous)
			if got := decideN(a, policy.Visitor{Bucket: m, Queued: tt.queued}, 40); got != tt.want {
				t.Errorf("%d of 40 admitted, want %d", got, tt.want)
			}
		})
	}
}
