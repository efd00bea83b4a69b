package policy_test

import (
	"testing"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/policy"
)

// The refresh interval a queued visitor is given: short near the front of
// the line, about twenty seconds behind it, each jittered by the caller's
// draw.
func TestTheFrontOfTheLineChecksInOften(t *testing.T) {
	start := at(t, "2021-05-27T16:00:30Z")
	m := minuteOf(start)
	room := policy.Room{TotalActiveUsers: 100_000, NewUsersPerMinute: 100, Nodes: 1, Lag: time.Second}
	// The minute's slots are gone; 100 open at the next minute, for the
	// oldest bucket (30) and part of the next (200).
	line := world{now: start, waiting: []crdt.BucketCount{{Bucket: m - 4, N: 30}, {Bucket: m - 3, N: 200}, {Bucket: m - 2, N: 200}, {Bucket: m - 1, N: 200}},
		admitted: map[int64]perNode{m: {nairobi: 100}}}
	turned := line
	turned.now = start.Add(30 * time.Second)
	turned.admitted = nil
	allocate := func(w world, method policy.Method, s policy.Strategy) *policy.Allocation {
		r := room
		r.QueueingMethod = method
		return policy.Allocate(r, w.snap(), nairobi, w.now, s)
	}
	near, far := [2]uint16{policy.NearRefreshBase - policy.NearRefreshJitter, policy.NearRefreshBase + policy.NearRefreshJitter},
		[2]uint16{policy.RefreshBase - policy.RefreshJitter, policy.RefreshBase + policy.RefreshJitter}
	tests := []struct {
		name   string
		alloc  *policy.Allocation
		bucket int64
		want   [2]uint16 // with the lowest draw and the highest
	}{
		{"with no slot open, the oldest bucket is near the front", allocate(line, policy.FIFO, policy.Continuous), m - 4, near},
		{"with no slot open, the bucket after the oldest is near the front too", allocate(line, policy.FIFO, policy.Continuous), m - 3, near},
		{"with no slot open, the third bucket is behind", allocate(line, policy.FIFO, policy.Continuous), m - 2, far},
		{"with no slot open, a new visitor is behind", allocate(line, policy.FIFO, policy.Continuous), m, far},
		{"once the covered bucket's slots open, the partial bucket's next is near the front", allocate(turned, policy.FIFO, policy.Continuous), m - 2, near},
		{"once the covered bucket's slots open, the bucket after that is behind", allocate(turned, policy.FIFO, policy.Continuous), m - 1, far},
		{"while nobody waits, a visitor queued is at the front", allocate(world{now: start, active: 100_000}, policy.FIFO, policy.Continuous), m, near},
		{"a random queue has no front", allocate(line, policy.Random, policy.Continuous), m - 4, far},
		{"the reference strategy gives everyone the long interval", allocate(line, policy.FIFO, policy.ReferencePerMinute), m - 4, far},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lo, hi := tt.alloc.RefreshInterval(tt.bucket, 0), tt.alloc.RefreshInterval(tt.bucket, 0.999999)
			if lo != tt.want[0] || hi != tt.want[1] {
				t.Errorf("refresh intervals %d to %d s, want %d to %d", lo, hi, tt.want[0], tt.want[1])
			}
		})
	}
}

// A covered bucket holds newer ones back until its visitors had their
// check-in: a full check-in interval when the bucket was only just near the
// front (some of its visitors still have the long one), the short one when
// it has been near for longer than that.
func TestAHoldIsShortForABucketLongNearTheFront(t *testing.T) {
	start := at(t, "2021-05-27T16:00:00Z")
	m := minuteOf(start)
	room := policy.Room{TotalActiveUsers: 100_000, NewUsersPerMinute: 100, Nodes: 1, Lag: time.Second}
	newer := policy.Visitor{Bucket: m - 1, Queued: true}
	waiting := []crdt.BucketCount{{Bucket: m - 2, N: 30}, {Bucket: m - 1, N: 200}}
	// Before the minute turns, the minute's slots are gone and both
	// buckets wait, near the front; at :00 the older one is covered.
	full := func(before time.Duration) world {
		return world{now: start.Add(-before), waiting: waiting, admitted: map[int64]perNode{m - 1: {nairobi: 100}}}
	}
	turned := func(after time.Duration) world { return world{now: start.Add(after), waiting: waiting} }
	tests := []struct {
		name   string
		near   time.Duration // how long before :00 the chain began, the buckets near the front since
		after  time.Duration // when the newer bucket's visitor checks in
		newcom policy.Outcome
	}{
		{"near for long, the hold ends after the short interval and a lag", 40 * time.Second, policy.NearCheckIn + room.Lag + time.Second, policy.Admit},
		{"near for long, the hold lasts the short interval and a lag", 40 * time.Second, policy.NearCheckIn, policy.Queue},
		{"near only just, the hold lasts the long interval", 2 * time.Second, policy.NearCheckIn + room.Lag + time.Second, policy.Queue},
		{"near only just, the hold ends after the long interval and a lag", 2 * time.Second, policy.DefaultCheckIn + room.Lag + time.Second, policy.Admit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := policy.Allocate(room, full(tt.near).snap(), nairobi, full(tt.near).now, policy.Continuous)
			for _, before := range []time.Duration{tt.near / 2, time.Second} {
				a = a.Next(room, full(before).snap(), full(before).now)
			}
			a = a.Next(room, turned(0).snap(), turned(0).now)
			if got := a.Decide(newer, nil); got != policy.Queue {
				t.Fatalf("right after the coverage the newer bucket's visitor: %v, want queue", got)
			}
			a = a.Next(room, turned(tt.after).snap(), turned(tt.after).now)
			if got := a.Decide(newer, nil); got != tt.newcom {
				t.Errorf("the newer bucket's visitor %v after the coverage: %v, want %v", tt.after, got, tt.newcom)
			}
		})
	}
}
