package policy_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/policy"
)

// BenchmarkDecide is one visitor's decision from a cached allocation (goal:
// ≤ 200 ns, 0 allocations).
func BenchmarkDecide(b *testing.B) {
	now := time.Unix(28_000_000*60+30, 0)
	m := minuteOf(now)
	w := world{now: now, waiting: []crdt.BucketCount{{Bucket: m - 3, N: 1000}, {Bucket: m - 2, N: 1000}}}
	cases := []struct {
		name  string
		total int
		v     policy.Visitor
	}{
		{"admit a covered visitor", 1 << 50, policy.Visitor{Bucket: m - 3, Queued: true}},
		{"admit a new visitor from the pool", 1 << 50, policy.Visitor{Bucket: m}},
		{"queue a visitor", 10, policy.Visitor{Bucket: m}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			room := policy.Room{TotalActiveUsers: c.total, NewUsersPerMinute: c.total, Nodes: 1}
			a := policy.Allocate(room, w.snap(), nairobi, now, policy.Continuous)
			b.ReportAllocs()
			for b.Loop() {
				a.Decide(c.v, nil)
			}
		})
	}
	b.Run("admit from many goroutines", func(b *testing.B) {
		room := policy.Room{TotalActiveUsers: 1 << 50, NewUsersPerMinute: 1 << 50, Nodes: 1}
		a := policy.Allocate(room, w.snap(), nairobi, now, policy.Continuous)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				a.Decide(policy.Visitor{Bucket: m}, nil)
			}
		})
	})
}

// BenchmarkAllocate recomputes a room's allocation from a snapshot with 50
// nodes and 300 waiting buckets (goal: ≤ 50 µs).
func BenchmarkAllocate(b *testing.B) {
	now := time.Unix(28_000_000*60+30, 0)
	m := minuteOf(now)
	w := world{now: now, active: 95_000, arrivals: map[int64]perNode{}, admitted: map[int64]perNode{}}
	for i := range 50 {
		id := crdt.NewReplicaID(fmt.Sprintf("pop-%d", i), 1)
		for dm := range int64(policy.HistoryMinutes) {
			if w.arrivals[m-dm] == nil {
				w.arrivals[m-dm], w.admitted[m-dm] = perNode{}, perNode{}
			}
			w.arrivals[m-dm][id] = uint64(100 + i)
			w.admitted[m-dm][id] = uint64(40 + i)
		}
	}
	for i := range int64(300) {
		w.waiting = append(w.waiting, crdt.BucketCount{Bucket: m - 300 + i, N: 50 + i%7})
	}
	snap := w.snap()
	self := crdt.NewReplicaID("pop-17", 1)
	room := policy.Room{TotalActiveUsers: 100_000, NewUsersPerMinute: 20_000, Nodes: 50}
	for _, s := range strategies {
		b.Run("Allocate "+s.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				policy.Allocate(room, snap, self, now, s)
			}
		})
		b.Run("Next "+s.String(), func(b *testing.B) {
			a := policy.Allocate(room, snap, self, now.Add(-5*time.Second), s)
			t := now
			b.ReportAllocs()
			for b.Loop() {
				t = t.Add(time.Millisecond)
				a = a.Next(room, snap, t)
			}
		})
	}
}
