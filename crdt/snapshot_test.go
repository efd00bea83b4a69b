package crdt_test

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/waitroom/waitroom/crdt"
)

// Replicas of the examples. Their order matters for ByReplica: A < B < C.
const (
	nodeA crdt.ReplicaID = 0xA
	nodeB crdt.ReplicaID = 0xB
	nodeC crdt.ReplicaID = 0xC
)

// now is the current minute of the examples; writes give minutes and
// buckets relative to it.
const now = base + 100

type write struct {
	by     crdt.ReplicaID
	kind   crdt.Kind
	bucket int64 // Waiting kinds: minutes relative to now; Session kinds: the expiry second relative to now's first
	minute int64 // relative to now
	n      uint64
}

// apply performs every write on the writer's own state and merges the
// entries into one node's state, as gossip would.
func apply(t *testing.T, ws []write) *crdt.State {
	t.Helper()
	writers := map[crdt.ReplicaID]*crdt.State{}
	s := crdt.New()
	for _, w := range ws {
		if writers[w.by] == nil {
			writers[w.by] = crdt.New()
		}
		k := crdt.Key{Room: "tickets", Kind: w.kind, Minute: now + w.minute}
		if w.kind == crdt.WaitingPlus || w.kind == crdt.WaitingMinus {
			k.Bucket = now + w.bucket
		}
		if w.kind == crdt.SessionPlus || w.kind == crdt.SessionMinus {
			// bucket is the expiry second, relative to the start of now.
			k.Bucket = now*60 + w.bucket
			k.Minute = k.Bucket / 60
		}
		e, ok := writers[w.by].Add(k, w.by, w.n)
		if !ok {
			t.Fatalf("Add(%+v) refused", k)
		}
		s.Apply(e)
	}
	return s
}

func TestSnapshotTotals(t *testing.T) {
	w := crdt.Windows{History: 3} // Waiting defaults to 5 minutes
	type bucket struct {
		at int64 // relative to now
		n  int64
	}
	tests := []struct {
		name    string
		room    string // "tickets" unless set
		second  int64  // of the snapshot, into minute now
		writes  []write
		active  int64
		waiting []bucket
	}{
		{
			name: "active sums the plus and minus sides of the sessions not yet expired",
			writes: []write{
				{nodeA, crdt.SessionPlus, 30, 0, 2},
				{nodeB, crdt.SessionPlus, 300, 0, 3},
				{nodeA, crdt.SessionPlus, 1800, 0, 1},
				{nodeC, crdt.SessionMinus, 1800, 0, 1},
			},
			active: 5,
		},
		{
			name:   "a session is counted before its expiry second",
			second: 29,
			writes: []write{{nodeA, crdt.SessionPlus, 30, 0, 1}},
			active: 1,
		},
		{
			name:   "and not from its expiry second on",
			second: 30,
			writes: []write{{nodeA, crdt.SessionPlus, 30, 0, 1}},
		},
		{
			name: "a session moved to a later slice is counted once",
			writes: []write{
				{nodeA, crdt.SessionPlus, 100, 0, 1},
				{nodeB, crdt.SessionMinus, 100, 0, 1},
				{nodeB, crdt.SessionPlus, 115, 0, 1},
			},
			active: 1,
		},
		{
			name: "a revoked session is no longer active",
			writes: []write{
				{nodeA, crdt.SessionPlus, 60, 0, 2},
				{nodeB, crdt.SessionMinus, 60, 0, 1},
			},
			active: 1,
		},
		{
			name: "a minus that arrives without its plus does not make active negative",
			writes: []write{
				{nodeA, crdt.SessionPlus, 60, 0, 2},
				{nodeB, crdt.SessionMinus, 90, 0, 3},
			},
		},
		{
			name:   "a cell dated beyond the longest session cannot be a session and is left out",
			writes: []write{{nodeA, crdt.SessionPlus, crdt.MaxSessionLead*60 + 60, 0, 5}},
		},
		{
			name: "the old per-minute active kinds are not read",
			writes: []write{
				{nodeA, crdt.ActivePlus, 0, 0, 4},
				{nodeA, crdt.ActivePlus, 0, -1, 4},
			},
		},
		{
			name: "waiting is summed per bucket over the five-minute window, oldest bucket first",
			writes: []write{
				{nodeA, crdt.WaitingPlus, -7, -1, 3},
				{nodeA, crdt.WaitingPlus, -30, -4, 2},
				{nodeB, crdt.WaitingMinus, -30, -4, 1},
				{nodeB, crdt.WaitingPlus, -30, -3, 1},
				{nodeC, crdt.WaitingPlus, -2, 0, 1},
				{nodeC, crdt.WaitingPlus, -50, -5, 2}, // cookie expired
			},
			waiting: []bucket{{-30, 2}, {-7, 3}, {-2, 1}},
		},
		{
			name: "a queued visitor who checked in again is counted once in its bucket",
			writes: []write{
				{nodeA, crdt.WaitingPlus, -3, -3, 1},
				{nodeB, crdt.WaitingMinus, -3, -3, 1},
				{nodeB, crdt.WaitingPlus, -3, -1, 1},
			},
			waiting: []bucket{{-3, 1}},
		},
		{
			name: "buckets nobody waits in any more are left out",
			writes: []write{
				{nodeA, crdt.WaitingPlus, -4, -4, 1},
				{nodeB, crdt.WaitingMinus, -4, -4, 1},
				{nodeB, crdt.WaitingMinus, -9, -1, 1}, // its plus is still on the way
			},
		},
		{
			name: "a future minute from a peer with a skewed clock is counted in the current minute",
			writes: []write{
				{nodeA, crdt.WaitingPlus, +1, +1, 3},
				{nodeB, crdt.WaitingPlus, -1, +2, 1},
			},
			waiting: []bucket{{-1, 1}, {+1, 3}},
		},
		{
			name:   "a room nobody wrote to has nobody active or waiting",
			room:   "vaccine",
			writes: []write{{nodeA, crdt.SessionPlus, 60, 0, 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			room := tt.room
			if room == "" {
				room = "tickets"
			}
			snap := apply(t, tt.writes).Snapshot(room, now*60+tt.second, w)
			if snap.Room != room || snap.Minute != now || snap.Now != now*60+tt.second {
				t.Errorf("snapshot of %q at minute %d second %d, want %q at %d", snap.Room, snap.Minute, snap.Now, room, now)
			}
			if snap.Active != tt.active {
				t.Errorf("active %d, want %d", snap.Active, tt.active)
			}
			var want []crdt.BucketCount
			var total int64
			for _, b := range tt.waiting {
				want = append(want, crdt.BucketCount{Bucket: now + b.at, N: b.n})
				total += b.n
			}
			if !slices.Equal(snap.Waiting, want) || snap.TotalWaiting != total {
				t.Errorf("waiting %v (total %d), want %v (total %d)", snap.Waiting, snap.TotalWaiting, want, total)
			}
			if len(snap.Admitted) != w.History || len(snap.Arrivals) != w.History {
				t.Errorf("%d minutes of admitted and %d of arrivals, want %d", len(snap.Admitted), len(snap.Arrivals), w.History)
			}
		})
	}
}

func TestSnapshotPerMinuteCounts(t *testing.T) {
	w := crdt.Windows{History: 4}
	s := apply(t, []write{
		{nodeA, crdt.Admitted, 0, -3, 2},
		{nodeA, crdt.Admitted, 0, -1, 1},
		{nodeB, crdt.Admitted, 0, 0, 3},
		{nodeA, crdt.Admitted, 0, 0, 5},
		{nodeC, crdt.Admitted, 0, -5, 9}, // before History
		{nodeB, crdt.Arrivals, 0, -2, 4},
		{nodeA, crdt.Arrivals, 0, -2, 10},
		{nodeC, crdt.Arrivals, 0, +1, 6}, // a peer whose clock runs ahead
		{nodeC, crdt.Arrivals, 0, 0, 1},
		{nodeA, crdt.VisitorsQueued, 0, -1, 2},
		{nodeB, crdt.VisitorsQueued, 0, -1, 3},
	})
	snap := s.Snapshot("tickets", now*60, w)

	counts := func(cs ...crdt.Count) []crdt.Count { return cs }
	tests := []struct {
		name string
		got  crdt.MinuteCounts
		want crdt.MinuteCounts
	}{
		{"the oldest History minute comes first", snap.Admitted[0], crdt.MinuteCounts{Minute: now - 3, Total: 2, ByReplica: counts(crdt.Count{Replica: nodeA, N: 2})}},
		{"a minute without admissions is present with zero", snap.Admitted[1], crdt.MinuteCounts{Minute: now - 2}},
		{"the current minute is last", snap.Admitted[3], crdt.MinuteCounts{Minute: now, Total: 8, ByReplica: counts(crdt.Count{Replica: nodeA, N: 5}, crdt.Count{Replica: nodeB, N: 3})}},
		{"AdmittedIn finds a minute of History", snap.AdmittedIn(now - 1), crdt.MinuteCounts{Minute: now - 1, Total: 1, ByReplica: counts(crdt.Count{Replica: nodeA, N: 1})}},
		{"AdmittedIn of a minute before History is zero", snap.AdmittedIn(now - 5), crdt.MinuteCounts{Minute: now - 5}},
		{"AdmittedIn of a minute after now is zero", snap.AdmittedIn(now + 1), crdt.MinuteCounts{Minute: now + 1}},
		{"arrivals are kept per replica, sorted by replica", snap.ArrivalsIn(now - 2), crdt.MinuteCounts{Minute: now - 2, Total: 14, ByReplica: counts(crdt.Count{Replica: nodeA, N: 10}, crdt.Count{Replica: nodeB, N: 4})}},
		{"arrivals from a skewed peer's future minute count in the current minute", snap.ArrivalsIn(now), crdt.MinuteCounts{Minute: now, Total: 7, ByReplica: counts(crdt.Count{Replica: nodeC, N: 7})}},
		{"the new visitors queued are summed per minute", snap.QueuedIn(now - 1), crdt.MinuteCounts{Minute: now - 1, Total: 5, ByReplica: counts(crdt.Count{Replica: nodeA, N: 2}, crdt.Count{Replica: nodeB, N: 3})}},
		{"a minute without new visitors queued is zero", snap.QueuedIn(now), crdt.MinuteCounts{Minute: now}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got.Minute != tt.want.Minute || tt.got.Total != tt.want.Total || !slices.Equal(tt.got.ByReplica, tt.want.ByReplica) {
				t.Errorf("got %+v, want %+v", tt.got, tt.want)
			}
		})
	}

	t.Run("Of reads one replica's count and zero for others", func(t *testing.T) {
		m := snap.AdmittedIn(now)
		if m.Of(nodeA) != 5 || m.Of(nodeB) != 3 || m.Of(nodeC) != 0 {
			t.Errorf("Of: A %d B %d C %d, want 5 3 0", m.Of(nodeA), m.Of(nodeB), m.Of(nodeC))
		}
	})
	t.Run("History shorter than three minutes is raised to three", func(t *testing.T) {
		snap := s.Snapshot("tickets", now*60, crdt.Windows{History: 1})
		if len(snap.Admitted) != 3 || snap.Admitted[0].Minute != now-2 {
			t.Errorf("%d minutes starting at %d, want 3 starting at %d", len(snap.Admitted), snap.Admitted[0].Minute-now, -2)
		}
	})
	t.Run("a snapshot does not share memory with the state", func(t *testing.T) {
		snap := s.Snapshot("tickets", now*60, w)
		snap.Admitted[3].ByReplica[0].N = 1000
		if again := s.Snapshot("tickets", now*60, w); again.AdmittedIn(now).Of(nodeA) != 5 {
			t.Errorf("changing a snapshot changed the state: A now %d", again.AdmittedIn(now).Of(nodeA))
		}
	})
}

// TestSnapshotOfSumsOnlyTheKeptReplicas checks SnapshotOf against a model:
// the kept replicas' entries alone, summed per cell with each session and
// waiting cell taken as at least zero. With keep nil it is Snapshot; and the
// per-minute counts of a side and of the rest add up to the whole.
func TestSnapshotOfSumsOnlyTheKeptReplicas(t *testing.T) {
	w := crdt.Windows{Waiting: 4, History: 4, SlotReplicas: 90, WaitingBy: true}
	checkLaw(t, func(t *rapid.T) {
		c := drawCluster(t, 4, rapid.Bool().Draw(t, "prune"))
		m := c.merged()
		kept := map[crdt.ReplicaID]bool{}
		for _, id := range c.ids {
			kept[id] = rapid.Bool().Draw(t, fmt.Sprintf("keep %d", id))
		}
		keep := func(r crdt.ReplicaID) bool { return kept[r] }
		rest := func(r crdt.ReplicaID) bool { return !kept[r] }

		model := crdt.New()
		var es []crdt.Entry
		for _, e := range m.Full().Entries {
			if kept[e.Replica] {
				es = append(es, e)
			}
		}
		model.Merge(crdt.Delta{Entries: es})

		minute := base + rapid.Int64Range(0, 6).Draw(t, "minute")
		sec := minute*60 + rapid.Int64Range(0, 59).Draw(t, "second")
		for _, room := range testRooms {
			whole := m.Snapshot(room, sec, w)
			if got := m.SnapshotOf(room, sec, w, nil); !reflect.DeepEqual(got, whole) {
				t.Fatalf("SnapshotOf with keep nil = %+v, Snapshot = %+v", got, whole)
			}
			side := m.SnapshotOf(room, sec, w, keep)
			want := model.Snapshot(room, sec, w)
			want.Active, want.Waiting, want.TotalWaiting = cellwise(es, room, sec, w)
			want.WaitingBy = waitingByIn(es, room, sec, w, want.TotalWaiting)
			want.Arrived = slotsIn(es, room, crdt.QueuedAt, want.Waiting, sec-int64(w.SlotReplicas))
			want.Left = slotsIn(es, room, crdt.LeftAt, want.Waiting, math.MinInt64)
			if !reflect.DeepEqual(side, want) {
				t.Fatalf("SnapshotOf(kept) = %+v, want %+v", side, want)
			}
			other := m.SnapshotOf(room, sec, w, rest)
			for i := range whole.Admitted {
				if side.Admitted[i].Total+other.Admitted[i].Total != whole.Admitted[i].Total ||
					side.Arrivals[i].Total+other.Arrivals[i].Total != whole.Arrivals[i].Total {
					t.Fatalf("minute %d: a side and the rest do not add up to the whole", whole.Admitted[i].Minute)
				}
			}
		}
	})
}

// waitingByIn is where the waiting visitors are in the entries es, as
// RoomSnapshot.WaitingBy says: each waiting cell's net count within the
// waiting window shared between the replicas whose own net in the cell is
// above zero, in proportion (nil when nobody waits at all, total).
func waitingByIn(es []crdt.Entry, room string, sec int64, w crdt.Windows, total int64) []crdt.ReplicaPart {
	if total == 0 {
		return nil
	}
	type cell struct{ bucket, minute int64 }
	plus, minus := map[cell]int64{}, map[cell]int64{}
	netBy := map[cell]map[crdt.ReplicaID]int64{}
	var cells []cell
	for _, e := range es {
		c := cell{e.Key.Bucket, min(e.Key.Minute, sec/60)}
		if e.Key.Room != room || c.minute <= sec/60-int64(w.Waiting) {
			continue
		}
		if netBy[c] == nil {
			netBy[c] = map[crdt.ReplicaID]int64{}
		}
		switch e.Key.Kind {
		case crdt.WaitingPlus:
			plus[c] += int64(e.Value)
			netBy[c][e.Replica] += int64(e.Value)
		case crdt.WaitingMinus:
			minus[c] += int64(e.Value)
			netBy[c][e.Replica] -= int64(e.Value)
		default:
			continue
		}
		if !slices.Contains(cells, c) {
			cells = append(cells, c)
		}
	}
	slices.SortFunc(cells, func(a, b cell) int { return cmp.Or(cmp.Compare(a.bucket, b.bucket), cmp.Compare(a.minute, b.minute)) })
	by := map[crdt.ReplicaID]float64{}
	for _, c := range cells {
		net := plus[c] - minus[c]
		var pos int64
		for _, n := range netBy[c] {
			pos += max(n, 0)
		}
		if net <= 0 || pos == 0 {
			continue
		}
		for _, r := range slices.Sorted(maps.Keys(netBy[c])) {
			if n := netBy[c][r]; n > 0 {
				by[r] += float64(net) * float64(n) / float64(pos)
			}
		}
	}
	var out []crdt.ReplicaPart
	for r, n := range by {
		if n > 0 {
			out = append(out, crdt.ReplicaPart{Replica: r, N: n})
		}
	}
	slices.SortFunc(out, func(a, b crdt.ReplicaPart) int { return cmp.Compare(a.Replica, b.Replica) })
	return out
}

// slotsIn is the arrival slots a snapshot lists, from the entries es: the
// counts of kind (QueuedAt or LeftAt) of the room's buckets that have
// someone waiting, oldest first (nil when none).
func slotsIn(es []crdt.Entry, room string, kind crdt.Kind, waiting []crdt.BucketCount, replicasFrom int64) []crdt.SlotCount {
	waits := map[int64]bool{}
	for _, b := range waiting {
		waits[b.Bucket] = b.N > 0
	}
	bySlot := map[int64]int64{}
	byReplica := map[int64]map[crdt.ReplicaID]uint64{}
	for _, e := range es {
		if e.Key.Room == room && e.Key.Kind == kind {
			bySlot[e.Key.Bucket] += int64(e.Value)
			if byReplica[e.Key.Bucket] == nil {
				byReplica[e.Key.Bucket] = map[crdt.ReplicaID]uint64{}
			}
			byReplica[e.Key.Bucket][e.Replica] += e.Value
		}
	}
	var out []crdt.SlotCount
	for sec, n := range bySlot {
		if n > 0 && waits[floorMinute(sec)] {
			c := crdt.SlotCount{Second: sec, N: n}
			if sec >= replicasFrom {
				for r, v := range byReplica[sec] {
					c.ByReplica = append(c.ByReplica, crdt.Count{Replica: r, N: v})
				}
				slices.SortFunc(c.ByReplica, func(a, b crdt.Count) int { return cmp.Compare(a.Replica, b.Replica) })
			}
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b crdt.SlotCount) int { return cmp.Compare(a.Second, b.Second) })
	return out
}

// floorMinute is the minute of a unix second, rounding towards minus
// infinity.
func floorMinute(sec int64) int64 {
	m := sec / 60
	if sec%60 < 0 {
		m--
	}
	return m
}

// cellwise is the model of SnapshotOf's session and waiting sums: net per
// cell, each at least zero, then summed: sessions whose expiry second is
// after sec, waiting cells within the window.
func cellwise(es []crdt.Entry, room string, sec int64, w crdt.Windows) (active int64, waiting []crdt.BucketCount, total int64) {
	type cell struct {
		waiting        bool
		bucket, minute int64
	}
	minute := sec / 60
	net := map[cell]int64{}
	for _, e := range es {
		if e.Key.Room != room {
			continue
		}
		m := min(e.Key.Minute, minute)
		v := int64(e.Value)
		switch e.Key.Kind {
		case crdt.SessionMinus, crdt.WaitingMinus:
			v = -v
		case crdt.SessionPlus, crdt.WaitingPlus:
		default:
			continue
		}
		if isSession(e.Key.Kind) {
			m = 0
		}
		net[cell{isWaiting(e.Key.Kind), e.Key.Bucket, m}] += v
	}
	byBucket := map[int64]int64{}
	for c, v := range net {
		v = max(v, 0)
		switch {
		case c.waiting && c.minute > minute-int64(w.Waiting):
			byBucket[c.bucket] += v
		case !c.waiting && c.bucket > sec && c.bucket <= sec+crdt.MaxSessionLead*60:
			active += v
		}
	}
	for b, n := range byBucket {
		if n > 0 {
			waiting = append(waiting, crdt.BucketCount{Bucket: b, N: n})
			total += n
		}
	}
	slices.SortFunc(waiting, func(a, b crdt.BucketCount) int { return int(a.Bucket - b.Bucket) })
	return active, waiting, total
}

func TestSnapshotOfKeepsVisitorsWhoMoved(t *testing.T) {
	w := crdt.Windows{History: 3}
	// A visitor queued at C in bucket now-2 and counted there in minute
	// now-2 checks in at A in minute now: A moves the count. A session
	// admitted at C comes back to A and is moved to a later slice too.
	s := apply(t, []write{
		{by: nodeC, kind: crdt.WaitingPlus, bucket: -2, minute: -2, n: 1},
		{by: nodeA, kind: crdt.WaitingMinus, bucket: -2, minute: -2, n: 1},
		{by: nodeA, kind: crdt.WaitingPlus, bucket: -2, minute: 0, n: 1},
		{by: nodeC, kind: crdt.SessionPlus, bucket: 240, n: 1},
		{by: nodeA, kind: crdt.SessionMinus, bucket: 240, n: 1},
		{by: nodeA, kind: crdt.SessionPlus, bucket: 300, n: 1},
	})
	side := s.SnapshotOf("tickets", now*60, w, func(r crdt.ReplicaID) bool { return r != nodeC })
	t.Run("the part without C still counts the visitor as waiting", func(t *testing.T) {
		if side.TotalWaiting != 1 {
			t.Errorf("waiting %d, want 1", side.TotalWaiting)
		}
	})
	t.Run("and the session as active", func(t *testing.T) {
		if side.Active != 1 {
			t.Errorf("active %d, want 1", side.Active)
		}
	})
	t.Run("the whole state counts each once", func(t *testing.T) {
		whole := s.Snapshot("tickets", now*60, w)
		if whole.TotalWaiting != 1 || whole.Active != 1 {
			t.Errorf("waiting %d and active %d, want 1 and 1", whole.TotalWaiting, whole.Active)
		}
	})
}

func TestSnapshotWaitingByReplica(t *testing.T) {
	w := crdt.Windows{History: 3, WaitingBy: true}
	tests := []struct {
		name   string
		writes []write
		want   []crdt.ReplicaPart
	}{
		{
			name: "each node's waiting visitors are counted at it",
			writes: []write{
				{by: nodeA, kind: crdt.WaitingPlus, bucket: -1, minute: -1, n: 3},
				{by: nodeB, kind: crdt.WaitingPlus, bucket: 0, minute: 0, n: 1},
			},
			want: []crdt.ReplicaPart{{Replica: nodeA, N: 3}, {Replica: nodeB, N: 1}},
		},
		{
			name: "a visitor whose count moved to a later minute at its node is counted once",
			writes: []write{
				{by: nodeA, kind: crdt.WaitingPlus, bucket: -2, minute: -2, n: 2},
				{by: nodeA, kind: crdt.WaitingMinus, bucket: -2, minute: -2, n: 1},
				{by: nodeA, kind: crdt.WaitingPlus, bucket: -2, minute: 0, n: 1},
			},
			want: []crdt.ReplicaPart{{Replica: nodeA, N: 2}},
		},
		{
			name: "a node whose visitors were all let in is left out",
			writes: []write{
				{by: nodeA, kind: crdt.WaitingPlus, bucket: -1, minute: -1, n: 2},
				{by: nodeA, kind: crdt.WaitingMinus, bucket: -1, minute: -1, n: 2},
				{by: nodeB, kind: crdt.WaitingPlus, bucket: 0, minute: 0, n: 1},
			},
			want: []crdt.ReplicaPart{{Replica: nodeB, N: 1}},
		},
		{
			name: "a visitor who moved to another node is counted where it checked in last",
			writes: []write{
				{by: nodeC, kind: crdt.WaitingPlus, bucket: -2, minute: -2, n: 1},
				{by: nodeA, kind: crdt.WaitingMinus, bucket: -2, minute: -2, n: 1},
				{by: nodeA, kind: crdt.WaitingPlus, bucket: -2, minute: 0, n: 1},
			},
			want: []crdt.ReplicaPart{{Replica: nodeA, N: 1}},
		},
		{
			name: "of a node that restarted, those who came back are counted at its new incarnation",
			writes: []write{
				{by: nodeC, kind: crdt.WaitingPlus, bucket: -1, minute: -1, n: 2},
				{by: nodeA, kind: crdt.WaitingMinus, bucket: -1, minute: -1, n: 1},
				{by: nodeA, kind: crdt.WaitingPlus, bucket: -1, minute: 0, n: 1},
			},
			want: []crdt.ReplicaPart{{Replica: nodeA, N: 1}, {Replica: nodeC, N: 1}},
		},
		{
			name: "those let in at their own node leave its part of a cell",
			writes: []write{
				{by: nodeA, kind: crdt.WaitingPlus, bucket: 0, minute: 0, n: 3},
				{by: nodeB, kind: crdt.WaitingPlus, bucket: 0, minute: 0, n: 1},
				{by: nodeA, kind: crdt.WaitingMinus, bucket: 0, minute: 0, n: 2},
			},
			want: []crdt.ReplicaPart{{Replica: nodeA, N: 1}, {Replica: nodeB, N: 1}},
		},
		{
			name: "what is left of a cell whose visitors left at other nodes is shared in proportion",
			writes: []write{
				// A and B each counted two into the cell; one of them was
				// let in at C: nobody can tell whose.
				{by: nodeA, kind: crdt.WaitingPlus, bucket: 0, minute: -1, n: 2},
				{by: nodeB, kind: crdt.WaitingPlus, bucket: 0, minute: -1, n: 2},
				{by: nodeC, kind: crdt.WaitingMinus, bucket: 0, minute: -1, n: 1},
			},
			want: []crdt.ReplicaPart{{Replica: nodeA, N: 1.5}, {Replica: nodeB, N: 1.5}},
		},
		{
			name: "counts older than the waiting window are not counted",
			writes: []write{
				{by: nodeA, kind: crdt.WaitingPlus, bucket: -9, minute: -9, n: 4},
				{by: nodeB, kind: crdt.WaitingPlus, bucket: 0, minute: 0, n: 1},
			},
			want: []crdt.ReplicaPart{{Replica: nodeB, N: 1}},
		},
		{
			name: "nobody waiting lists nobody",
			writes: []write{
				{by: nodeA, kind: crdt.WaitingPlus, bucket: -1, minute: -1, n: 1},
				{by: nodeA, kind: crdt.WaitingMinus, bucket: -1, minute: -1, n: 1},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := apply(t, tt.writes)
			if snap := s.Snapshot("tickets", now*60, w); !slices.Equal(snap.WaitingBy, tt.want) {
				t.Errorf("waiting by replica %v, want %v", snap.WaitingBy, tt.want)
			}
			unasked := w
			unasked.WaitingBy = false
			if snap := s.Snapshot("tickets", now*60, unasked); snap.WaitingBy != nil {
				t.Errorf("waiting by replica %v where the windows did not ask for it", snap.WaitingBy)
			}
		})
	}
}

func TestSnapshotArrivalSlots(t *testing.T) {
	slot := func(bucket int64, tenths uint16) int64 { return crdt.ArrivalSlot(now+bucket, tenths) }
	// Two slots of a waiting bucket: the last one's counted at two nodes.
	twoSlots := []crdt.Entry{
		{Key: crdt.Key{Kind: crdt.WaitingPlus, Bucket: now - 1, Minute: now}, Replica: nodeA, Value: 5},
		{Key: crdt.Key{Kind: crdt.QueuedAt, Bucket: slot(-1, 450), Minute: now - 1}, Replica: nodeA, Value: 2},
		{Key: crdt.Key{Kind: crdt.QueuedAt, Bucket: slot(-1, 450), Minute: now - 1}, Replica: nodeB, Value: 1},
		{Key: crdt.Key{Kind: crdt.QueuedAt, Bucket: slot(-1, 10), Minute: now - 1}, Replica: nodeC, Value: 4},
	}
	tests := []struct {
		name string
		ws   []crdt.Entry
		w    int // Windows.SlotReplicas
		want []crdt.SlotCount
	}{
		{
			name: "slots of a waiting bucket are summed over the nodes, oldest first",
			ws:   twoSlots,
			want: []crdt.SlotCount{{Second: (now-1)*60 + 0, N: 4}, {Second: (now-1)*60 + 40, N: 3}},
		},
		{
			name: "the slots of the last seconds asked for list their counts replica by replica",
			ws:   twoSlots,
			w:    60,
			want: []crdt.SlotCount{
				{Second: (now-1)*60 + 0, N: 4},
				{Second: (now-1)*60 + 40, N: 3, ByReplica: []crdt.Count{{Replica: nodeA, N: 2}, {Replica: nodeB, N: 1}}},
			},
		},
		{
			name: "slots of a bucket nobody waits in any more are left out",
			ws: []crdt.Entry{
				{Key: crdt.Key{Kind: crdt.WaitingPlus, Bucket: now - 2, Minute: now - 1}, Replica: nodeA, Value: 1},
				{Key: crdt.Key{Kind: crdt.WaitingMinus, Bucket: now - 2, Minute: now - 1}, Replica: nodeA, Value: 1},
				{Key: crdt.Key{Kind: crdt.QueuedAt, Bucket: slot(-2, 0), Minute: now - 2}, Replica: nodeA, Value: 1},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := crdt.New()
			for _, e := range tt.ws {
				e.Key.Room = "tickets"
				s.Apply(e)
			}
			snap := s.Snapshot("tickets", now*60+30, crdt.Windows{Waiting: crdt.DefaultWaitingWindow, History: 3, SlotReplicas: tt.w})
			if !reflect.DeepEqual(snap.Arrived, tt.want) {
				t.Errorf("Arrived = %v, want %v", snap.Arrived, tt.want)
			}
		})
	}
	t.Run("those who left a slot's line are listed by slot like those who joined it", func(t *testing.T) {
		s := crdt.New()
		for _, e := range []crdt.Entry{
			{Key: crdt.Key{Kind: crdt.WaitingPlus, Bucket: now - 1, Minute: now}, Replica: nodeA, Value: 5},
			{Key: crdt.Key{Kind: crdt.QueuedAt, Bucket: slot(-1, 450), Minute: now - 1}, Replica: nodeA, Value: 7},
			{Key: crdt.Key{Kind: crdt.LeftAt, Bucket: slot(-1, 450), Minute: now - 1}, Replica: nodeA, Value: 1},
			{Key: crdt.Key{Kind: crdt.LeftAt, Bucket: slot(-1, 460), Minute: now - 1}, Replica: nodeB, Value: 1},
			{Key: crdt.Key{Kind: crdt.LeftAt, Bucket: slot(-2, 0), Minute: now - 2}, Replica: nodeB, Value: 3},
		} {
			e.Key.Room = "tickets"
			s.Apply(e)
		}
		snap := s.Snapshot("tickets", now*60+30, crdt.Windows{Waiting: crdt.DefaultWaitingWindow, History: 3})
		want := []crdt.SlotCount{{Second: (now-1)*60 + 40, N: 2, ByReplica: []crdt.Count{{Replica: nodeA, N: 1}, {Replica: nodeB, N: 1}}}}
		if !reflect.DeepEqual(snap.Left, want) {
			t.Errorf("Left = %v, want %v: the waiting bucket's slot, over both nodes and by node", snap.Left, want)
		}
	})
	t.Run("a slot is the third of the minute the visitor came in", func(t *testing.T) {
		for tenths, want := range map[uint16]int64{0: 0, 199: 0, 200: 20, 599: 40, 65535: 40} {
			if got := crdt.ArrivalSlot(now, tenths) - now*60; got != want {
				t.Errorf("ArrivalSlot(%d tenths) begins %d s in, want %d", tenths, got, want)
			}
		}
	})
}

func TestSnapshotSessionExpiriesAndAdmissionTotals(t *testing.T) {
	s := apply(t, []write{
		{nodeA, crdt.SessionPlus, 30, 0, 2},
		{nodeB, crdt.SessionPlus, 30, 0, 1},
		{nodeA, crdt.SessionPlus, -10, 0, 4}, // already expired
		{nodeA, crdt.SessionPlus, 300, 0, 3},
		{nodeB, crdt.SessionMinus, 300, 0, 3}, // moved on: nothing left in it
		{nodeC, crdt.SessionPlus, 315, 0, 1},
		{nodeA, crdt.Admitted, 0, -3, 2},
		{nodeB, crdt.Admitted, 0, 0, 3},
		{nodeC, crdt.Admitted, 0, -9, 9}, // before the admissions window
	})
	snap := s.Snapshot("tickets", now*60, crdt.Windows{History: 3, Admissions: 5})
	t.Run("the sessions still running are listed by expiry, soonest first, empty cells left out", func(t *testing.T) {
		want := []crdt.SlotCount{{Second: now*60 + 30, N: 3}, {Second: now*60 + 315, N: 1}}
		if !reflect.DeepEqual(snap.Expiring, want) {
			t.Errorf("Expiring = %+v, want %+v", snap.Expiring, want)
		}
	})
	t.Run("and they add up to the active count", func(t *testing.T) {
		var n int64
		for _, c := range snap.Expiring {
			n += c.N
		}
		if n != snap.Active {
			t.Errorf("Expiring adds up to %d, Active is %d", n, snap.Active)
		}
	})
	t.Run("the admission totals cover the admissions window ending with the current minute", func(t *testing.T) {
		if want := []uint64{0, 2, 0, 0, 3}; !slices.Equal(snap.AdmittedTotals, want) {
			t.Errorf("AdmittedTotals = %v, want %v", snap.AdmittedTotals, want)
		}
	})
	t.Run("without an admissions window there are none", func(t *testing.T) {
		if got := s.Snapshot("tickets", now*60, crdt.Windows{History: 3}).AdmittedTotals; got != nil {
			t.Errorf("AdmittedTotals = %v, want none", got)
		}
	})
}
