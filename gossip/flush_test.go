package gossip

import (
	"bytes"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/waitroom/waitroom/crdt"
)

// loneKey is the gossip key of the package's single-node tests.
var loneKey = bytes.Repeat([]byte{9}, 32)

func startLone(t *testing.T) *Node {
	t.Helper()
	n, err := Start(Config{Name: "lone", Bind: "127.0.0.1:0", Profile: Local, Keys: [][]byte{loneKey}, Log: zerolog.New(io.Discard)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Kill() })
	return n
}

// queuedValue returns the value the broadcast queued for cell k of replica
// r carries (0 if none), emptying the queue.
func queuedValue(t *testing.T, n *Node, k crdt.Key, r crdt.ReplicaID) uint64 {
	t.Helper()
	defer n.queue.Reset()
	var v uint64
	for _, msg := range n.queue.GetBroadcasts(0, 1<<20) {
		m, err := Decode(msg, MaxReliableMessage)
		if err != nil {
			t.Fatalf("queued an undecodable message: %v", err)
		}
		for _, e := range m.Delta.Entries {
			if e.Key == k && e.Replica == r {
				if v != 0 {
					t.Fatal("two broadcasts queued for one cell")
				}
				v = e.Value
			}
		}
	}
	return v
}

// memberlist asks for broadcasts from several goroutines at once (the gossip
// ticker, probes, acks sent by the packet listener). Each of those calls
// flushes the dirty cells; a flush that read an older value must not queue
// it after a concurrent flush queued a newer one, or the newer broadcast is
// replaced (same name) and the last value never leaves the node.
func TestConcurrentFlushesQueueTheNewestValue(t *testing.T) {
	n := startLone(t)
	// A live node prunes by its clock: write in the current minute.
	k := crdt.Key{Room: "shop", Kind: crdt.Admitted, Minute: time.Now().Unix() / 60}
	const rounds = 3000
	stale := 0
	for i := 0; i < rounds; i++ {
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := 0; g < 3; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for j := 0; j < 3; j++ {
					n.flush()
				}
			}()
		}
		close(start)
		for j := 0; j < 3; j++ {
			n.Add(Inc{Key: k, N: 1})
		}
		wg.Wait()
		n.flush() // whatever is still dirty
		var want uint64
		n.Read(func(s *crdt.State) { want = s.Get(k, n.replica) })
		if want != uint64(3*(i+1)) {
			t.Fatalf("round %d: state holds %d, want %d", i, want, 3*(i+1))
		}
		if got := queuedValue(t, n, k, n.replica); got != want {
			stale++
			if stale == 1 {
				t.Errorf("round %d: the queue holds %d for the cell, the state %d", i, got, want)
			}
		}
	}
	if stale > 0 {
		t.Errorf("%d of %d rounds left an older value queued in place of the newest", stale, rounds)
	}
}
