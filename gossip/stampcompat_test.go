package gossip

import (
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/rs/zerolog"

	"github.com/waitroom/waitroom/crdt"
)

// bareNode is a node without memberlist, enough to flush broadcasts into
// its queue and merge messages.
func bareNode(name string, clock func() time.Time) *Node {
	return &Node{
		cfg:       Config{Name: name, Clock: clock},
		replica:   crdt.NewReplicaID(name, 1),
		clock:     clock,
		steps:     newStepWatch(clock),
		log:       zerolog.Nop(),
		state:     crdt.New(),
		dirty:     map[cellID]struct{}{},
		dirtyRegs: map[string]struct{}{},
		dirtyAt:   map[cellID]int64{},
		names:     map[crdt.ReplicaID]string{},
		peers:     map[string]memberlist.Node{},
		gone:      map[string]goneNode{},
		lost:      map[string]int64{},
		queue:     &memberlist.TransmitLimitedQueue{NumNodes: func() int { return 2 }, RetransmitMult: 1},
	}
}

func TestStampsOnlyWhenEveryPeerReadsThem(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	k := crdt.Key{Room: "shop", Kind: crdt.Admitted, Minute: now.Unix() / 60}
	for _, tc := range []struct {
		name     string
		metas    [][]byte // the peers' memberlist meta
		wantType byte
	}{
		{"alone, a node stamps its counts", nil, msgStampedEntries},
		{"with peers that all read stamps, a node stamps its counts", [][]byte{{featureStamped}, {featureStamped | 0x80}}, msgStampedEntries},
		{"with one peer that predates stamps, a node sends plain entries", [][]byte{{featureStamped}, nil}, msgEntries},
		{"a peer whose meta lacks the stamp feature gets plain entries", [][]byte{{0x80}}, msgEntries},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := bareNode("a", clock)
			n.peers["a"] = memberlist.Node{Name: "a", Meta: []byte{featureStamped}}
			for i, m := range tc.metas {
				name := string(rune('b' + i))
				n.peers[name] = memberlist.Node{Name: name, Meta: m}
			}
			n.updateStampPeersLocked()
			n.Add(crdt.Inc{Key: k, N: 2})
			now = now.Add(300 * time.Millisecond) // queued a while before it leaves
			n.flush()
			out := n.queue.GetBroadcasts(0, 1400)
			if len(out) != 1 {
				t.Fatalf("%d broadcasts, want 1", len(out))
			}
			m, err := Decode(out[0], MaxPacketMessage)
			if err != nil || m.Type != tc.wantType {
				t.Fatalf("broadcast of type %d (%v), want %d", m.Type, err, tc.wantType)
			}
			if m.Type == msgStampedEntries && m.At != now.Add(-300*time.Millisecond).UnixMilli() {
				t.Fatalf("stamped %d, want the time of the change %d", m.At, now.Add(-300*time.Millisecond).UnixMilli())
			}
		})
	}
}

func TestRelayKeepsTheOriginsStamp(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	origin := crdt.NewReplicaID("a", 1)
	k := crdt.Key{Room: "shop", Kind: crdt.Admitted, Minute: now.Unix() / 60}
	relay := bareNode("b", clock)
	relay.names[origin] = "a"
	relay.updateStampPeersLocked()
	relay.lag.addOffset("a", now, 0, time.Millisecond)
	made := now.Add(-120 * time.Millisecond).UnixMilli()
	(*delegate)(relay).NotifyMsg(must(EncodeStampedEntries([]crdt.Entry{{Key: k, Replica: origin, Value: 5}}, made)))
	t.Run("the first arrival of a stamped change is a delay sample of its origin", func(t *testing.T) {
		if p := relay.lag.peer("a", now); p.Samples != 1 || p.Delay() != 120*time.Millisecond {
			t.Fatalf("origin a: %+v", p)
		}
	})
	t.Run("a change heard again is no sample", func(t *testing.T) {
		(*delegate)(relay).NotifyMsg(must(EncodeStampedEntries([]crdt.Entry{{Key: k, Replica: origin, Value: 5}}, made)))
		if p := relay.lag.peer("a", now); p.Samples != 1 {
			t.Fatalf("origin a: %+v", p)
		}
	})
	t.Run("the relayed broadcast carries the origin's stamp", func(t *testing.T) {
		now = now.Add(time.Second)
		relay.flush()
		out := relay.queue.GetBroadcasts(0, 1400)
		if len(out) != 1 {
			t.Fatalf("%d broadcasts, want 1", len(out))
		}
		m, err := Decode(out[0], MaxPacketMessage)
		if err != nil || m.At != made {
			t.Fatalf("relayed %+v (%v), want stamp %d", m, err, made)
		}
	})
}
