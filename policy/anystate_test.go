package policy_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/policy"
	"pgregory.net/rapid"
)

// Every node merges the same state, so a state that makes the policy panic
// makes every node of the ring panic at once. The checks below build room
// states as arbitrary as the ring can merge (any counts in any cells of any
// kind a peer may write, within the bounds a node enforces on what it
// hears), rooms with any settings a config or the admin API accepts, and
// chains of allocations whose clock steps back and whose settings switch
// between methods, and call every exported function of an Allocation on
// them: none may panic, and what they answer must make sense.

// anyMinute is the minute the arbitrary states are built around.
const anyMinute = 29_000_000

// anyCellKinds are the kinds a peer may write into a room.
var anyCellKinds = []crdt.Kind{
	crdt.Arrivals, crdt.Admitted, crdt.WaitingPlus, crdt.WaitingMinus,
	crdt.SessionPlus, crdt.SessionMinus, crdt.QueuedAt, crdt.LeftAt, crdt.VisitorsQueued,
	crdt.Revocations, crdt.ActivePlus, crdt.ActiveMinus,
}

// drawValue draws one replica's count in a cell: mostly small, sometimes
// as large as a peer may write.
func drawValue(t *rapid.T) uint64 {
	switch rapid.IntRange(0, 9).Draw(t, "scale") {
	case 0:
		return uint64(rapid.IntRange(1, crdt.MaxEntryValue).Draw(t, "huge"))
	case 1, 2:
		return uint64(rapid.IntRange(1, 100_000).Draw(t, "large"))
	}
	return uint64(rapid.IntRange(1, 60).Draw(t, "small"))
}

// drawEntry draws one cell entry of room name around minute m, within the
// bounds a node accepts from a peer.
func drawEntry(t *rapid.T, name string, m int64, replicas []crdt.ReplicaID) crdt.Entry {
	kind := rapid.SampledFrom(anyCellKinds).Draw(t, "kind")
	minute := m + int64(rapid.IntRange(-40, 2).Draw(t, "minute"))
	var bucket int64
	switch kind {
	case crdt.WaitingPlus, crdt.WaitingMinus:
		bucket = minute - int64(rapid.IntRange(0, 12).Draw(t, "age"))
	case crdt.SessionPlus, crdt.SessionMinus:
		sec := m*60 + int64(rapid.IntRange(-120, crdt.MaxSessionLead*60+90).Draw(t, "expiry"))
		if rapid.Bool().Draw(t, "on a slice") {
			sec -= sec % 5
		}
		bucket, minute = sec, sec/60
	case crdt.QueuedAt, crdt.LeftAt:
		bucket = crdt.ArrivalSlot(minute, uint16(rapid.IntRange(0, 700).Draw(t, "tenths")))
		if rapid.IntRange(0, 9).Draw(t, "odd slot") == 0 {
			bucket = minute*60 + int64(rapid.IntRange(-90, 150).Draw(t, "odd second"))
		}
	case crdt.Revocations:
		bucket = int64(rapid.Uint32().Draw(t, "session"))
	}
	return crdt.Entry{
		Key:     crdt.Key{Room: name, Kind: kind, Bucket: bucket, Minute: minute},
		Replica: rapid.SampledFrom(replicas).Draw(t, "replica"),
		Value:   drawValue(t),
	}
}

// drawState draws a merged state of room name around minute m.
func drawState(t *rapid.T, name string, m int64) (*crdt.State, []crdt.ReplicaID) {
	replicas := make([]crdt.ReplicaID, rapid.IntRange(1, 6).Draw(t, "replicas"))
	for i := range replicas {
		replicas[i] = crdt.NewReplicaID(fmt.Sprintf("n%d", i), uint64(rapid.IntRange(1, 3).Draw(t, "incarnation")))
	}
	s := crdt.New()
	for range rapid.IntRange(0, 120).Draw(t, "entries") {
		s.Apply(drawEntry(t, name, m, replicas))
	}
	return s, replicas
}

// drawAnyRoom draws room settings as a config file or the admin API may
// give them, with the ring's facts (nodes, lag, a cut) as arbitrary as
// membership may make them.
func drawAnyRoom(t *rapid.T) policy.Room {
	total := drawLimit(t, "total")
	room := policy.Room{
		TotalActiveUsers:      total,
		NewUsersPerMinute:     min(total, drawLimit(t, "per minute")),
		SessionDuration:       rapid.IntRange(0, 30).Draw(t, "session"),
		DisableSessionRenewal: rapid.Bool().Draw(t, "no renewal"),
		QueueingMethod:        rapid.SampledFrom([]policy.Method{policy.FIFO, policy.Random, policy.Passthrough, policy.MethodReject, ""}).Draw(t, "method"),
		QueueAll:              rapid.IntRange(0, 9).Draw(t, "queue all") == 0,
		Suspended:             rapid.IntRange(0, 19).Draw(t, "suspended") == 0,
		Nodes:                 rapid.IntRange(0, 12).Draw(t, "nodes"),
		Lag:                   time.Duration(rapid.IntRange(0, 30_000).Draw(t, "lag ms")) * time.Millisecond,
		CheckIn:               time.Duration(rapid.IntRange(0, 60_000).Draw(t, "check-in ms")) * time.Millisecond,
	}
	if rapid.IntRange(0, 4).Draw(t, "capped") == 0 {
		room.MaxQueue = drawLimit(t, "max queue")
	}
	if room.Nodes > 1 && rapid.IntRange(0, 4).Draw(t, "cut") == 0 {
		room.Side = policy.Side{
			Nodes:    rapid.IntRange(1, room.Nodes).Draw(t, "reachable"),
			Admitted: int64(rapid.IntRange(0, 5_000_000).Draw(t, "elsewhere admitted")),
			Active:   int64(rapid.IntRange(0, 5_000_000).Draw(t, "elsewhere active")),
		}
	}
	return room
}

// drawLimit draws a room limit from 1 to millions.
func drawLimit(t *rapid.T, label string) int {
	switch rapid.IntRange(0, 3).Draw(t, label+" scale") {
	case 0:
		return rapid.IntRange(1, 5).Draw(t, label)
	case 1:
		return rapid.IntRange(1, 200).Draw(t, label)
	case 2:
		return rapid.IntRange(1, 20_000).Draw(t, label)
	}
	return rapid.IntRange(1, 5_000_000).Draw(t, label)
}

// fataler is what the checks need of a rapid.T or a testing.T.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// finite fails t when x is NaN or infinite.
func finite(t fataler, what string, x float64) {
	t.Helper()
	if math.IsNaN(x) || math.IsInf(x, 0) {
		t.Fatalf("%s is %v", what, x)
	}
}

// call is one request exercise puts to an allocation: Decide (how 0),
// DecidePriority for group and share (1), or Held with the visitor held
// since heldMs before the allocation, then Decide (2).
type call struct {
	v      policy.Visitor
	how    int
	group  int
	share  float64
	heldMs int
}

// drawCalls draws the requests exercise puts to an allocation, their
// visitors from the buckets.
func drawCalls(t *rapid.T, buckets []int64) []call {
	calls := make([]call, rapid.IntRange(0, 200).Draw(t, "visitors"))
	for i := range calls {
		calls[i] = call{
			v: policy.Visitor{
				Bucket:  rapid.SampledFrom(buckets).Draw(t, "bucket"),
				Queued:  rapid.Bool().Draw(t, "queued"),
				Arrived: uint16(rapid.IntRange(0, 700).Draw(t, "arrived")),
			},
			how:    rapid.IntRange(0, 2).Draw(t, "how"),
			group:  rapid.IntRange(-1, policy.MaxPriorityGroups).Draw(t, "group"),
			share:  rapid.Float64Range(-0.5, 1.5).Draw(t, "share"),
			heldMs: rapid.IntRange(0, 10_000).Draw(t, "held ms"),
		}
	}
	return calls
}

// probeBuckets are the buckets exercise asks about: those waiting, their
// neighbours, the current minute and the extremes.
func probeBuckets(snap *crdt.RoomSnapshot) []int64 {
	buckets := []int64{math.MinInt64, math.MaxInt64, snap.Minute, snap.Minute + 1, snap.Minute - 40}
	for _, b := range snap.Waiting {
		buckets = append(buckets, b.Bucket, b.Bucket-1)
	}
	return buckets
}

// exercise calls every exported function of a on the buckets of snap and
// the requests calls, and checks what they answer; it returns how many
// visitors it admitted.
func exercise(t fataler, room policy.Room, snap *crdt.RoomSnapshot, a *policy.Allocation, calls []call) (admitted int64) {
	t.Helper()
	s := a.Summary()
	finite(t, "active users", s.ActiveUsers)
	finite(t, "share", s.Share)
	finite(t, "anywhere share", s.AnywhereShare)
	finite(t, "admission rate", s.AdmissionRate)
	if s.Share < 0 || s.AnywhereShare < 0 || s.AdmissionRate < 0 {
		t.Fatalf("a negative share or rate: %+v", s)
	}
	if s.OpenSlots < 0 || s.Budget < 0 || s.MaxWaitMinutes < 0 || s.CoveredSlots < 0 || s.PoolSlots < 0 {
		t.Fatalf("a negative slot count or wait: %+v", s)
	}
	if s.OpenSlots > int64(room.TotalActiveUsers) || s.OpenSlots > int64(room.NewUsersPerMinute) {
		t.Fatalf("%d open slots over the limits %d/%d", s.OpenSlots, room.TotalActiveUsers, room.NewUsersPerMinute)
	}
	if a.OpenSlots() != s.OpenSlots || a.Budget() < 0 || a.At().IsZero() {
		t.Fatalf("the accessors disagree with the summary")
	}
	_ = a.Status()
	waiting := s.QueuedUsers
	buckets := probeBuckets(snap)
	for _, b := range a.EligibleSlots() {
		if b.Eligible < 0 || b.Eligible > b.Waiting {
			t.Fatalf("bucket %d has %d eligible of %d waiting", b.Bucket, b.Eligible, b.Waiting)
		}
	}
	for _, b := range buckets {
		for _, arrived := range []uint16{0, 1, 199, 200, 599, 600, math.MaxUint16} {
			e := a.EstimateAt(b, arrived)
			if e.WaitTime < 0 || e.WaitTime25 < 0 || e.WaitTime50 < 0 || e.WaitTime75 < 0 {
				t.Fatalf("a negative wait for bucket %d at %d: %+v", b, arrived, e)
			}
			if e.WaitTime25 > e.WaitTime50 || e.WaitTime50 > e.WaitTime75 || e.WaitSeconds25 > e.WaitSeconds50 || e.WaitSeconds50 > e.WaitSeconds75 {
				t.Fatalf("percentiles out of order for bucket %d: %+v", b, e)
			}
			if e.WaitTimeKnown && e.WaitTime < 1 {
				t.Fatalf("a known wait of %d minutes for bucket %d", e.WaitTime, b)
			}
			for _, w := range [][2]int{{e.WaitTime25, e.WaitSeconds25}, {e.WaitTime50, e.WaitSeconds50}, {e.WaitTime75, e.WaitSeconds75}} {
				if e.WaitTimeKnown && (w[1] < 1 || (w[1] < 60 && w[0] != 1) || (w[1] >= 60 && w[1] != w[0]*60)) {
					t.Fatalf("a wait of %d minutes said as %d seconds for bucket %d: %+v", w[0], w[1], b, e)
				}
			}
			if e.VisitorsAhead < 0 || e.VisitorsAhead > waiting {
				t.Fatalf("%d ahead of bucket %d with %d waiting", e.VisitorsAhead, b, waiting)
			}
			n, known := a.Position(b, arrived)
			if n < 0 || n > waiting+room.Side.Waiting.Total() || (!known && n != 0) {
				t.Fatalf("position %d (known %v) for bucket %d with %d waiting", n, known, b, waiting)
			}
			if e.Position != n || e.PositionKnown != known {
				t.Fatalf("the estimate's position %d/%v is not Position's %d/%v", e.Position, e.PositionKnown, n, known)
			}
			_ = e.ForNewVisitor()
			for _, draw := range []float64{0, 0.5, 0.999999} {
				if r := a.RefreshInterval(b, draw); r == 0 {
					t.Fatalf("a refresh interval of 0 for bucket %d", b)
				}
			}
		}
	}
	if m, _ := a.MaxWait(); m < 0 {
		t.Fatalf("a negative longest wait: %d", m)
	}
	// Deciding: no more admissions than the split allows.
	limit := s.Budget + s.CoveredSlots
	for _, c := range calls {
		var o policy.Outcome
		switch c.how {
		case 1:
			o, _ = a.DecidePriority(c.v, c.group, c.share)
		case 2:
			_ = a.Held(c.v, a.At().Add(-time.Duration(c.heldMs)*time.Millisecond))
			o = a.Decide(c.v, nil)
		default:
			o = a.Decide(c.v, nil)
		}
		if o == policy.Admit {
			admitted++
		}
	}
	if room.QueueAll || room.Suspended || room.QueueingMethod == policy.Passthrough || room.QueueingMethod == policy.MethodReject {
		return admitted
	}
	if admitted > limit {
		t.Fatalf("admitted %d, over budget %d + covered %d", admitted, s.Budget, s.CoveredSlots)
	}
	return admitted
}

func TestPropertyAnyMergedStateIsSafeForEveryAllocationCall(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		const name = "shop"
		state, replicas := drawState(t, name, anyMinute)
		self := rapid.SampledFrom(append(replicas, crdt.NewReplicaID("newcomer", 1))).Draw(t, "self")
		strategy := rapid.SampledFrom(strategies).Draw(t, "strategy")
		now := time.Unix(anyMinute*60, 0).Add(time.Duration(rapid.IntRange(-5_000, 65_000).Draw(t, "ms")) * time.Millisecond)
		var a *policy.Allocation
		var chainAdmitted int64 // since the chain began
		for step := range rapid.IntRange(1, 8).Draw(t, "steps") {
			room := drawAnyRoom(t)
			for range rapid.IntRange(0, 20).Draw(t, "new entries") {
				state.Apply(drawEntry(t, name, now.Unix()/60, replicas))
			}
			snap := state.Snapshot(name, now.Unix(), room.Windows())
			if room.Side.Nodes > 0 {
				keep := func(r crdt.ReplicaID) bool { return r == self }
				snap = state.SnapshotOf(name, now.Unix(), room.Windows(), keep)
				if rapid.Bool().Draw(t, "the line elsewhere as heard") {
					rest := state.SnapshotOf(name, now.Unix(), room.Windows(), func(r crdt.ReplicaID) bool { return r != self })
					room.Side.Waiting = room.CutOff(room.Side.Nodes, &rest).Side.Waiting
				}
			}
			if step == 0 || rapid.IntRange(0, 5).Draw(t, "fresh chain") == 0 {
				a = policy.Allocate(room, &snap, self, now, strategy)
				chainAdmitted = 0
			} else {
				a = a.Next(room, &snap, now)
			}
			chainAdmitted += exercise(t, room, &snap, a, drawCalls(t, probeBuckets(&snap)))
			for g := -1; g <= policy.MaxPriorityGroups; g++ {
				if n := a.PriorityAdmitted(g); n < 0 || n > chainAdmitted {
					t.Fatalf("group %d took %d of the chain's %d admissions", g, n, chainAdmitted)
				}
			}
			// The clock goes on, or steps back as a wall clock may.
			now = now.Add(time.Duration(rapid.IntRange(-90_000, 90_000).Draw(t, "step ms")) * time.Millisecond)
		}
	})
}

// The states below once made a random room's forecast index past the end of
// its histogram: a slot freeing as a fraction of a visitor (a share of the
// live band) before the per-minute budget allows a whole admission gives a
// piece that ends before it starts, and later than every other piece's end.
// Every node of the ring merged such a state and panicked in the same
// second. Each is a handful of cells, as minutes from anyMinute and seconds
// from its start.
func TestARandomRoomsForecastSurvivesAPieceEndingBeforeItStarts(t *testing.T) {
	type cell struct {
		kind          crdt.Kind
		bucket, value int64 // bucket: minutes from anyMinute, or seconds from its start for a session cell
		minute        int64
	}
	cases := []struct {
		name  string
		room  policy.Room
		at    int64 // seconds into anyMinute
		cells []cell
	}{
		{
			name: "two sessions end soon and many later, with one admission a minute",
			room: policy.Room{TotalActiveUsers: 5, NewUsersPerMinute: 2, SessionDuration: 1, QueueingMethod: policy.Random},
			at:   46,
			cells: []cell{
				{kind: crdt.WaitingPlus, bucket: -2, minute: -2, value: 34},
				{kind: crdt.SessionPlus, bucket: 293, minute: 4, value: 33},
				{kind: crdt.SessionPlus, bucket: 67, minute: 1, value: 2},
				{kind: crdt.Admitted, minute: -1, value: 14},
			},
		},
		{
			name: "a queue of three minutes behind sessions ending over five",
			room: policy.Room{TotalActiveUsers: 26, NewUsersPerMinute: 12, SessionDuration: 2, QueueingMethod: policy.Random},
			at:   47,
			cells: []cell{
				{kind: crdt.Admitted, minute: -5, value: 45},
				{kind: crdt.SessionPlus, bucket: 325, minute: 5, value: 40},
				{kind: crdt.SessionPlus, bucket: 60, minute: 1, value: 1},
				{kind: crdt.WaitingPlus, bucket: 0, minute: 0, value: 47},
				{kind: crdt.SessionPlus, bucket: 310, minute: 5, value: 7},
				{kind: crdt.Admitted, minute: -7, value: 11},
			},
		},
	}
	id := crdt.NewReplicaID("n1", 1)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := crdt.New()
			for _, x := range c.cells {
				k := crdt.Key{Room: "shop", Kind: x.kind, Minute: anyMinute + x.minute}
				switch x.kind {
				case crdt.SessionPlus:
					k.Bucket = anyMinute*60 + x.bucket
				case crdt.WaitingPlus:
					k.Bucket = anyMinute + x.bucket
				}
				s.Apply(crdt.Entry{Key: k, Replica: id, Value: uint64(x.value)})
			}
			now := time.Unix(anyMinute*60+c.at, 0)
			snap := s.Snapshot("shop", now.Unix(), c.room.Windows())
			a := policy.Allocate(c.room, &snap, id, now, policy.Continuous)
			e := a.Estimate(anyMinute)
			if !e.WaitTimeKnown || e.WaitTime25 < 1 || e.WaitTime25 > e.WaitTime50 || e.WaitTime50 > e.WaitTime75 {
				t.Fatalf("estimate %+v, want known percentiles in order", e)
			}
		})
	}
}
