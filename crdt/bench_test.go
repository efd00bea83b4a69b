package crdt_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/waitroom/waitroom/crdt"
)

// The sizes of a busy room: 50 nodes, a 60-minute queue.
const (
	roomNodes     = 50
	queueMinutes  = 60 // arrival buckets
	activeMinutes = 30 // minutes of admitted and arrivals, and the session length
	// sessionSlice is the session cells' width for 30-minute sessions
	// (policy.SessionSlice): 120 live cells on each side.
	sessionSlice = 15
	busyRoom     = "tickets"
	// retentionMinutes is how long a node keeps a cell past its minute
	// (gossip.DefaultRetention): what bounds the arrival slots kept.
	retentionMinutes = 35
	// arrivalSlots is the QueuedAt cells of one bucket.
	arrivalSlots = 60 / crdt.ArrivalSlotSeconds
)

// roomNow is the current unix minute of the benchmarks.
const roomNow = base + 1000

func roomReplicas() []crdt.ReplicaID {
	ids := make([]crdt.ReplicaID, roomNodes)
	for i := range ids {
		ids[i] = crdt.NewReplicaID(fmt.Sprintf("pop-%02d", i), 1_763_700_000_000_000_000+uint64(i))
	}
	return ids
}

// roomEntries lists every entry of a busy room with 30-minute sessions, the
// longest: per replica, 60 arrival buckets each counted over the 5 minutes
// of the waiting window on the plus and the minus side, 30 minutes of
// admitted and arrivals, the sessions of the next 30 minutes in 15-second
// slices on the plus and the minus side, and the three arrival slots of
// each of the 35 buckets still within the retention window. That is
// 50 × (60×5×2 + 30×2 + 120×2 + 35×3) = 50,250 entries in 1,005 cells.
func roomEntries(ids []crdt.ReplicaID, seed uint64) []crdt.Entry {
	rng := rand.New(rand.NewPCG(seed, 1))
	slices := int64(activeMinutes * 60 / sessionSlice)
	out := make([]crdt.Entry, 0, len(ids)*(queueMinutes*crdt.DefaultWaitingWindow*2+activeMinutes*2+int(slices)*2))
	for _, r := range ids {
		for b := roomNow - queueMinutes + 1; b <= roomNow; b++ {
			for m := roomNow - crdt.DefaultWaitingWindow + 1; m <= roomNow; m++ {
				for _, k := range []crdt.Kind{crdt.WaitingPlus, crdt.WaitingMinus} {
					out = append(out, crdt.Entry{Key: crdt.Key{Room: busyRoom, Kind: k, Bucket: b, Minute: m}, Replica: r, Value: 1 + rng.Uint64N(200)})
				}
			}
		}
		// The arrival slots of the buckets still within the retention
		// window (the gossip layer's, 35 minutes), one cell per slot for
		// those who joined its line and one for those who left it.
		for b := roomNow - min(queueMinutes, retentionMinutes) + 1; b <= roomNow; b++ {
			for sec := int64(0); sec < 60; sec += crdt.ArrivalSlotSeconds {
				for _, k := range []crdt.Kind{crdt.QueuedAt, crdt.LeftAt} {
					out = append(out, crdt.Entry{Key: crdt.Key{Room: busyRoom, Kind: k, Bucket: b*60 + sec, Minute: b}, Replica: r, Value: 1 + rng.Uint64N(200)})
				}
			}
		}
		for m := roomNow - activeMinutes + 1; m <= roomNow; m++ {
			for _, k := range []crdt.Kind{crdt.Admitted, crdt.Arrivals} {
				out = append(out, crdt.Entry{Key: crdt.Key{Room: busyRoom, Kind: k, Minute: m}, Replica: r, Value: 1 + rng.Uint64N(200)})
			}
		}
		for i := range slices {
			e := roomNow*60 + (i+1)*sessionSlice
			for _, k := range []crdt.Kind{crdt.SessionPlus, crdt.SessionMinus} {
				out = append(out, crdt.Entry{Key: crdt.Key{Room: busyRoom, Kind: k, Bucket: e, Minute: e / 60}, Replica: r, Value: 1 + rng.Uint64N(200)})
			}
		}
	}
	return out
}

// buildRoom is the state one node holds for the busy room. Entries arrive
// replica by replica, as push-pull with each peer delivers them.
func buildRoom(ids []crdt.ReplicaID, seed uint64) *crdt.State {
	s := crdt.New()
	for _, e := range roomEntries(ids, seed) {
		s.Apply(e)
	}
	return s
}

func roomWindows() crdt.Windows {
	// SlotReplicas as the admission policy asks for (policy.Room.Windows):
	// the slots still filling, and every slot's left counts, per replica.
	return crdt.Windows{Waiting: crdt.DefaultWaitingWindow, History: activeMinutes, SlotReplicas: 29}
}

// TestMemoryPerRoom holds the state of the busy room to its memory budget,
// so that a node can hold many rooms: at most 1 MiB per room at 50 nodes
// with a 60-minute queue.
func TestMemoryPerRoom(t *testing.T) {
	const limit = 1 << 20
	ids := roomReplicas()
	entries := roomEntries(ids, 1)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	s := crdt.New()
	for _, e := range entries {
		s.Apply(e)
	}

	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(entries)
	st := s.Stats()
	runtime.KeepAlive(s)

	wantCells := queueMinutes*crdt.DefaultWaitingWindow*2 + activeMinutes*2 + activeMinutes*60/sessionSlice*2 + retentionMinutes*arrivalSlots*2
	if st.Cells != wantCells || st.Entries != len(entries) {
		t.Fatalf("room holds %d cells and %d entries, want %d and %d", st.Cells, st.Entries, wantCells, len(entries))
	}
	retained := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("room of %d nodes, %d-minute queue: %d cells, %d entries, %d bytes retained (%.1f KiB, %.1f bytes per entry)",
		roomNodes, queueMinutes, st.Cells, st.Entries, retained, float64(retained)/1024, float64(retained)/float64(st.Entries))
	if retained > limit {
		t.Errorf("the room retains %d bytes, over the goal of %d", retained, limit)
	}
}

// BenchmarkAdd is one local increment (a new admission) in a node holding
// the busy room.
func BenchmarkAdd(b *testing.B) {
	ids := roomReplicas()
	s := buildRoom(ids, 1)
	k := crdt.Key{Room: busyRoom, Kind: crdt.Admitted, Minute: roomNow}
	b.ReportAllocs()
	for b.Loop() {
		s.Add(k, ids[7], 1)
	}
}

// BenchmarkMergeDelta merges a 20-entry delta from a peer into the busy room;
// every entry raises the peer's value, so all 20 change the state and are
// returned for relay.
func BenchmarkMergeDelta(b *testing.B) {
	ids := roomReplicas()
	s := buildRoom(ids, 1)
	peer := ids[3]
	var d crdt.Delta
	for i := range 20 {
		var k crdt.Key
		switch i % 4 {
		case 0:
			k = crdt.Key{Room: busyRoom, Kind: crdt.Admitted, Minute: roomNow}
		case 1:
			k = crdt.Key{Room: busyRoom, Kind: crdt.ActivePlus, Minute: roomNow - int64(i%3)}
		case 2:
			k = crdt.Key{Room: busyRoom, Kind: crdt.WaitingMinus, Bucket: roomNow - int64(i), Minute: roomNow - 1}
		default:
			k = crdt.Key{Room: busyRoom, Kind: crdt.WaitingPlus, Bucket: roomNow - int64(i), Minute: roomNow}
		}
		d.Entries = append(d.Entries, crdt.Entry{Key: k, Replica: peer})
	}
	v := uint64(1000)
	b.ReportAllocs()
	for b.Loop() {
		v += 100
		for i := range d.Entries {
			d.Entries[i].Value = v + uint64(i)
		}
		if out := s.Merge(d); len(out.Entries) != len(d.Entries) {
			b.Fatalf("merge changed %d entries, want %d", len(out.Entries), len(d.Entries))
		}
	}
}

// BenchmarkMergeState is push-pull anti-entropy between two nodes holding the
// busy room.
func BenchmarkMergeState(b *testing.B) {
	ids := roomReplicas()
	local := buildRoom(ids, 1)
	remote := buildRoom(ids, 2) // every entry independently larger or smaller
	b.Run("in sync", func(b *testing.B) {
		s := local.Clone()
		s.MergeState(remote)
		b.ReportAllocs()
		for b.Loop() {
			s.MergeState(remote)
		}
	})
	b.Run("half the entries behind", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			s := local.Clone()
			b.StartTimer()
			s.MergeState(remote)
		}
	})
}

// BenchmarkSnapshot sums the busy room for the admission policy.
func BenchmarkSnapshot(b *testing.B) {
	s := buildRoom(roomReplicas(), 1)
	w := roomWindows()
	b.ReportAllocs()
	for b.Loop() {
		snap := s.Snapshot(busyRoom, roomNow*60, w)
		if len(snap.Waiting) == 0 {
			b.Fatal("empty snapshot")
		}
	}
}

// BenchmarkSnapshotOf sums the busy room twice, as a node cut off from half
// the ring does at each allocation: its part, and what it last heard of the
// rest. Compare with BenchmarkSnapshot, the whole ring's one sum.
func BenchmarkSnapshotOf(b *testing.B) {
	s := buildRoom(roomReplicas(), 1)
	w := roomWindows()
	half := func(r crdt.ReplicaID) bool { return r%2 == 0 }
	rest := func(r crdt.ReplicaID) bool { return r%2 != 0 }
	b.ReportAllocs()
	for b.Loop() {
		part := s.SnapshotOf(busyRoom, roomNow*60, w, half)
		other := s.SnapshotOf(busyRoom, roomNow*60, w, rest)
		if len(part.Waiting)+len(other.Waiting) == 0 {
			b.Fatal("empty snapshot")
		}
	}
}

// The sizes of a busy room in a ring of data centers: 300 of them, three
// nodes each, the same 60-minute queue.
const (
	ringDatacenters = 300
	datacenterNodes = 3
)

// datacenterRoom is the state one node of such a ring holds for the busy
// room: its own data center's three replicas' entries, and one aggregate
// entry per other data center in every cell (its carriers' steady state),
// each as roomEntries writes a replica's.
func datacenterRoom() (*crdt.State, int) {
	own := roomReplicas()[:datacenterNodes]
	s := crdt.New()
	s.SetDatacenter("dc-000")
	for _, e := range roomEntries(own, 1) {
		s.Apply(e)
	}
	var d crdt.Delta
	for i := 1; i < ringDatacenters; i++ {
		dc := fmt.Sprintf("dc-%03d", i)
		members := make([]crdt.ReplicaID, datacenterNodes)
		for j := range members {
			members[j] = crdt.NewReplicaID(fmt.Sprintf("%s-node-%d", dc, j), 1)
		}
		g := crdt.NewGroup(dc, members)
		d.Groups = append(d.Groups, g)
		d.Aggregates = append(d.Aggregates, roomEntries([]crdt.ReplicaID{g.ID()}, uint64(i))...)
	}
	s.Merge(d)
	return s, len(d.Aggregates)
}

// TestMemoryPerRoomOfDatacenters holds the busy room on one node of a ring
// of 300 data centers of three nodes each to the same budget of 1 MiB:
// every other data center is one aggregate entry per cell, packed in a few
// bytes (aggCell).
func TestMemoryPerRoomOfDatacenters(t *testing.T) {
	const limit = 1 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s, aggs := datacenterRoom()
	runtime.GC()
	runtime.ReadMemStats(&after)
	st := s.Stats()
	runtime.KeepAlive(s)
	if st.Aggregates != aggs || st.Groups != ringDatacenters-1 {
		t.Fatalf("room holds %d aggregates of %d groups, want %d of %d", st.Aggregates, st.Groups, aggs, ringDatacenters-1)
	}
	retained := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("room of %d data centers × %d nodes, %d-minute queue: %d cells of own entries (%d entries), %d aggregate cells (%d aggregates): %d bytes retained (%.1f KiB, %.1f bytes per entry)",
		ringDatacenters, datacenterNodes, queueMinutes, st.Cells, st.Entries, st.AggregateCells, st.Aggregates, retained, float64(retained)/1024, float64(retained)/float64(st.Entries+st.Aggregates))
	if retained > limit {
		t.Errorf("the room retains %d bytes, over the goal of %d", retained, limit)
	}
}

// BenchmarkSnapshotOfDatacenters sums the busy room of a ring of 300 data
// centers for the admission policy: its own replicas' cells and one figure
// per other data center in each.
func BenchmarkSnapshotOfDatacenters(b *testing.B) {
	s, _ := datacenterRoom()
	w := roomWindows()
	b.ReportAllocs()
	for b.Loop() {
		if snap := s.Snapshot(busyRoom, roomNow*60, w); len(snap.Waiting) == 0 {
			b.Fatal("empty snapshot")
		}
	}
}

// BenchmarkMergeFullOfDatacenters is a push-pull between two nodes of that
// ring already in step: the peer's whole state, decoded, merged.
func BenchmarkMergeFullOfDatacenters(b *testing.B) {
	s, _ := datacenterRoom()
	full := s.Full()
	b.ReportAllocs()
	for b.Loop() {
		if changed := s.Merge(full); !changed.Empty() {
			b.Fatal("a state in step changed")
		}
	}
}
