package gossip

import (
	"fmt"
	"testing"
	"time"

	"github.com/waitroom/waitroom/crdt"
)

// Run with
//
//	go test -run '^$' -bench . -benchmem ./gossip/

func benchEntries(n int) []crdt.Entry {
	es := make([]crdt.Entry, n)
	for i := range es {
		es[i] = entry(crdt.Key{Room: "tickets.example.com/sale", Kind: crdt.Kind(i%6 + 1), Bucket: testMinute - int64(i%5), Minute: testMinute}, crdt.NewReplicaID("pop", uint64(i)), uint64(1000+i))
	}
	return es
}

func BenchmarkEncodeEntries(b *testing.B) {
	for _, n := range []int{1, 16} {
		es := benchEntries(n)
		b.Run(fmt.Sprintf("%d entries", n), func(b *testing.B) {
			b.ReportAllocs()
			var size int
			for b.Loop() {
				msg, err := EncodeEntries(es)
				if err != nil {
					b.Fatal(err)
				}
				size = len(msg)
			}
			b.ReportMetric(float64(size), "bytes/msg")
		})
	}
}

func BenchmarkDecodeEntries(b *testing.B) {
	for _, n := range []int{1, 16} {
		msg := must(EncodeEntries(benchEntries(n)))
		b.Run(fmt.Sprintf("%d entries", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(msg)))
			for b.Loop() {
				if _, err := Decode(msg, MaxPacketMessage); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// fullStates are the push-pull states of one room written by 50 nodes: over
// the default retention and over an hour.
var fullStates = []struct {
	name             string
	replicas, minute int
}{
	{"50 nodes × 35 minutes", 50, DefaultRetention},
	{"50 nodes × 60 minutes", 50, 60},
}

func BenchmarkEncodeFull(b *testing.B) {
	for _, fs := range fullStates {
		s := roomState(fs.replicas, fs.minute)
		full := s.Full()
		b.Run(fs.name, func(b *testing.B) {
			b.ReportAllocs()
			var size int
			for b.Loop() {
				msg, err := EncodeFull(full, 0)
				if err != nil {
					b.Fatal(err)
				}
				size = len(msg)
			}
			b.ReportMetric(float64(size), "bytes/msg")
			b.ReportMetric(float64(len(full.Entries)), "entries")
		})
	}
}

func BenchmarkDecodeFull(b *testing.B) {
	for _, fs := range fullStates {
		msg := must(EncodeFull(roomState(fs.replicas, fs.minute).Full(), 0))
		b.Run(fs.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(msg)))
			for b.Loop() {
				if _, err := Decode(msg, MaxFullState); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMergeFull is the receiving side of push-pull: decode a 50-node
// state and merge it, into a state that lacks all of it (a node joining) and
// into a live node that holds it already (the steady state).
func BenchmarkMergeFull(b *testing.B) {
	for _, fs := range fullStates {
		b.Run(fs.name+" into an empty state", func(b *testing.B) {
			msg := must(EncodeFull(roomState(fs.replicas, fs.minute).Full(), 0))
			b.ReportAllocs()
			for b.Loop() {
				m, err := Decode(msg, MaxFullState)
				if err != nil {
					b.Fatal(err)
				}
				crdt.New().Merge(m.Delta)
			}
		})
		b.Run(fs.name+" into a node that holds it", func(b *testing.B) {
			n := startLoneB(b)
			now := time.Now().Unix() / 60
			msg := must(EncodeFull(roomStateAt(fs.replicas, fs.minute, now-int64(fs.minute)+1).Full(), 0))
			d := (*delegate)(n)
			d.MergeRemoteState(msg, false)
			if n.Stats().PushPulls != 1 {
				b.Fatal("the state was not merged")
			}
			b.ReportAllocs()
			for b.Loop() {
				d.MergeRemoteState(msg, false)
			}
			if dropped := n.Stats().Dropped; dropped != nil {
				b.Fatalf("refused: %v", dropped)
			}
		})
	}
}

// BenchmarkNotifyMsg is the receiving side of a broadcast: decode one entry,
// merge it and mark it for relay.
func BenchmarkNotifyMsg(b *testing.B) {
	n := startLoneB(b)
	d := (*delegate)(n)
	key := crdt.Key{Room: "shop", Kind: crdt.Admitted, Minute: time.Now().Unix() / 60}
	peer := crdt.NewReplicaID("peer", 1)
	const batch = 4096
	msgs := make([][]byte, batch)
	next := uint64(1)
	refill := func() {
		for i := range msgs {
			msgs[i] = must(EncodeEntries([]crdt.Entry{{Key: key, Replica: peer, Value: next}}))
			next++
		}
	}
	refill()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i == batch {
			b.StopTimer()
			refill()
			n.flush() // keep the dirty set and queue from growing
			b.StartTimer()
			i = 0
		}
		d.NotifyMsg(msgs[i])
		i++
	}
	if n.Stats().Dropped != nil {
		b.Fatalf("dropped: %v", n.Stats().Dropped)
	}
}

// BenchmarkNodeAdd is the cost an admission pays on the request path: three
// increments of the node's own cells.
func BenchmarkNodeAdd(b *testing.B) {
	n := startLoneB(b)
	m := time.Now().Unix() / 60
	incs := []Inc{
		{Key: crdt.Key{Room: "shop", Kind: crdt.Admitted, Minute: m}, N: 1},
		{Key: crdt.Key{Room: "shop", Kind: crdt.ActivePlus, Minute: m}, N: 1},
		{Key: crdt.Key{Room: "shop", Kind: crdt.WaitingMinus, Bucket: m - 2, Minute: m}, N: 1},
	}
	b.ReportAllocs()
	for b.Loop() {
		n.Add(incs...)
	}
}

// BenchmarkFlush is what a gossip round pays to encode and queue the cells
// that changed since the last one: here a room's four cells on each of ten
// nodes, as a relaying node sees them.
func BenchmarkFlush(b *testing.B) {
	n := startLoneB(b)
	m := time.Now().Unix() / 60
	var es []crdt.Entry
	for r := 0; r < 10; r++ {
		for _, k := range []crdt.Kind{crdt.Arrivals, crdt.Admitted, crdt.ActivePlus, crdt.WaitingMinus} {
			es = append(es, crdt.Entry{Key: crdt.Key{Room: "shop", Kind: k, Minute: m}, Replica: crdt.NewReplicaID(fmt.Sprint("pop-", r), 1)})
		}
	}
	b.ReportAllocs()
	v := uint64(0)
	for b.Loop() {
		v++
		n.mu.Lock()
		for i := range es {
			es[i].Value = v
			n.state.Apply(es[i])
			n.dirty[cellID{es[i].Key, es[i].Replica}] = struct{}{}
		}
		n.mu.Unlock()
		n.flush()
	}
}

func startLoneB(b *testing.B) *Node {
	b.Helper()
	n, err := Start(Config{Name: "bench", Bind: "127.0.0.1:0", Profile: Local, Keys: [][]byte{loneKey}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = n.Kill() })
	return n
}
