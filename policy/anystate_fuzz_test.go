package policy_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/gossip"
	"github.com/waitroom/waitroom/policy"
)

// FuzzAnyMergedState decodes arbitrary gossip messages as a node does,
// merges what a node would accept from a peer into a state, and puts every
// call of an allocation to the snapshot of each room in it, as
// TestPropertyAnyMergedStateIsSafeForEveryAllocationCall does for drawn
// states: nothing a peer can send may make the policy panic or answer
// nonsense, since every node of the ring would do the same at once.
//
// Run it longer with
//
//	go test -run '^$' -fuzz '^FuzzAnyMergedState$' -fuzztime 5m ./policy/
func FuzzAnyMergedState(f *testing.F) {
	id := crdt.NewReplicaID("n1", 1)
	seed := func(cells ...crdt.Entry) []byte {
		s := crdt.New()
		for _, e := range cells {
			s.Apply(e)
		}
		b, err := gossip.EncodeFull(s.Full(), s.Horizon())
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	const m = anyMinute
	cell := func(kind crdt.Kind, bucket, minute int64, v uint64) crdt.Entry {
		return crdt.Entry{Key: crdt.Key{Room: "shop", Kind: kind, Bucket: bucket, Minute: minute}, Replica: id, Value: v}
	}
	// The state that once took a random room's ring down (see
	// TestARandomRoomsForecastSurvivesAPieceEndingBeforeItStarts).
	f.Add(seed(
		cell(crdt.WaitingPlus, m-2, m-2, 34), cell(crdt.SessionPlus, m*60+293, m+4, 33),
		cell(crdt.SessionPlus, m*60+67, m+1, 2), cell(crdt.Admitted, 0, m-1, 14),
	), uint16(46), uint32(5), uint32(2), uint8(1), uint8(1), uint8(0))
	// A FIFO queue of three buckets with their arrival slots.
	f.Add(seed(
		cell(crdt.WaitingPlus, m-2, m-1, 40), cell(crdt.WaitingPlus, m-1, m, 25), cell(crdt.WaitingPlus, m, m, 9),
		cell(crdt.QueuedAt, (m-2)*60, m-2, 20), cell(crdt.QueuedAt, (m-2)*60+40, m-2, 20), cell(crdt.LeftAt, (m-2)*60+40, m-2, 25),
		cell(crdt.Admitted, 0, m-1, 30), cell(crdt.Arrivals, 0, m-2, 90), cell(crdt.VisitorsQueued, 0, m-1, 60),
		cell(crdt.SessionPlus, m*60+100, m+1, 50), cell(crdt.SessionMinus, m*60+100, m+1, 3),
	), uint16(12), uint32(60), uint32(30), uint8(0), uint8(2), uint8(0))
	f.Add([]byte{0x10}, uint16(0), uint32(1), uint32(1), uint8(0), uint8(0), uint8(0xff))

	methods := []policy.Method{policy.FIFO, policy.Random, policy.Passthrough, policy.MethodReject}
	f.Fuzz(func(t *testing.T, msg []byte, at uint16, total, perMinute uint32, method, session, flags uint8) {
		d, err := gossip.Decode(msg, gossip.MaxFullState)
		if err != nil {
			return
		}
		now := time.Unix(m*60+int64(at%180)-60, 0)
		state := crdt.New()
		for _, e := range d.Delta.Entries {
			if crdt.CheckEntry(e, now.UnixMilli()) == nil {
				state.Apply(e)
			}
		}
		room := policy.Room{
			TotalActiveUsers:      int(total%5_000_000) + 1,
			SessionDuration:       int(session % 31),
			DisableSessionRenewal: flags&1 != 0,
			QueueAll:              flags&2 != 0,
			Suspended:             flags&4 != 0,
			Nodes:                 int(flags>>4) % 8,
			QueueingMethod:        methods[int(method)%len(methods)],
		}
		room.NewUsersPerMinute = int(perMinute)%room.TotalActiveUsers + 1
		if flags&8 != 0 {
			room.MaxQueue = int(perMinute%1000) + 1
		}
		r := rand.New(rand.NewPCG(uint64(at), uint64(total)))
		for _, name := range append(state.Rooms(), "shop") {
			for _, strategy := range strategies {
				var a *policy.Allocation
				for step, dt := range []time.Duration{0, 17 * time.Second, -40 * time.Second, 70 * time.Second} {
					now := now.Add(dt)
					snap := state.Snapshot(name, now.Unix(), room.Windows())
					if step == 0 {
						a = policy.Allocate(room, &snap, id, now, strategy)
					} else {
						a = a.Next(room, &snap, now)
					}
					buckets := probeBuckets(&snap)
					calls := make([]call, 60)
					for i := range calls {
						calls[i] = call{
							v:     policy.Visitor{Bucket: buckets[r.IntN(len(buckets))], Queued: r.IntN(2) == 0, Arrived: uint16(r.IntN(700))},
							how:   r.IntN(3),
							group: r.IntN(policy.MaxPriorityGroups+2) - 1, share: r.Float64()*2 - 0.5,
							heldMs: r.IntN(10_000),
						}
					}
					exercise(t, room, &snap, a, calls)
				}
			}
		}
	})
}
