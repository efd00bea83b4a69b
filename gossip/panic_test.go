package gossip_test

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/gossip"
	"github.com/waitroom/waitroom/gossip/testkit"
)

// panicLog collects what OnPanic reports, by node and where.
type panicLog struct {
	mu      sync.Mutex
	by      map[int]map[string]int
	arrived chan string // every where reported, for a test that waits for one
}

func newPanicLog() *panicLog {
	return &panicLog{by: map[int]map[string]int{}, arrived: make(chan string, 1024)}
}

func (l *panicLog) report(i int, where string, _ any, _ []byte) {
	l.mu.Lock()
	if l.by[i] == nil {
		l.by[i] = map[string]int{}
	}
	l.by[i][where]++
	l.mu.Unlock()
	select {
	case l.arrived <- where:
	default:
	}
}

func (l *panicLog) count(i int, where string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.by[i][where]
}

// next waits for the next report.
func (l *panicLog) next(t *testing.T, timeout time.Duration) string {
	t.Helper()
	select {
	case where := <-l.arrived:
		return where
	case <-time.After(timeout):
		t.Fatalf("no panic reported within %v", timeout)
		return ""
	}
}

// A peer's message that makes the merge panic must not take the node down:
// the same message reaches every node, so it would take the whole ring. The
// panic is injected under the node's lock, so the merges that follow also
// show that the lock was released.
func TestPanicWhileMergingAMessage(t *testing.T) {
	var armed atomic.Bool
	panics := newPanicLog()
	cfg := gossip.Config{
		Name:    "target",
		Log:     testLog(t),
		OnPanic: func(where string, r any, stack []byte) { panics.report(0, where, r, stack) },
		Tune:    func(mc *memberlist.Config) { mc.PushPullInterval = 0 },
	}
	gossip.SetTestHook(&cfg, func(where string) {
		if where == gossip.PanicMessage && armed.CompareAndSwap(true, false) {
			panic("injected: a message whose merge panics")
		}
	})
	node := startNode(t, cfg)

	// The prober sends only what the test gives it: the one message the
	// hook panics on is the test's.
	p := newProber(t, testKey)
	if _, err := p.ml.Join([]string{node.Addr()}); err != nil {
		t.Fatal(err)
	}
	target := p.member(t, "target")
	other := crdt.NewReplicaID("peer", 1)
	m := nowMinute()
	cell := minuteKey("shop", crdt.Arrivals, m)
	page := bytes.Repeat([]byte("<p>queue</p>"), 2000) // too large for a packet

	for _, tc := range []struct {
		name   string
		msg    []byte
		send   func(*memberlist.Node, []byte) error
		merged func() bool
	}{
		{
			"an entries message whose merge panics is dropped and the same message merges when sent again",
			mustBytes(gossip.EncodeEntries([]crdt.Entry{{Key: cell, Replica: other, Value: 42}})),
			p.ml.SendBestEffort,
			func() bool {
				var v uint64
				node.Read(func(s *crdt.State) { v = s.Value(cell) })
				return v == 42
			},
		},
		{
			"a register over the reliable stream whose merge panics is dropped and merges when sent again",
			mustBytes(gossip.EncodeRegisters([]crdt.RegisterEntry{{Name: "room/page", Reg: crdt.LWW[[]byte]{Value: page, Replica: other}}})),
			p.ml.SendReliable,
			func() bool {
				r, ok := node.Register("room/page")
				return ok && bytes.Equal(r.Value, page)
			},
		},
		{
			"a mark whose merge panics is dropped and merges when sent again",
			mustBytes(gossip.EncodeMarks([]crdt.Mark{{ID: "visitor-1", Expires: time.Now().Add(time.Hour).Unix()}}, 0)),
			p.ml.SendBestEffort,
			func() bool { return node.HasMark("visitor-1") },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dropped := node.Stats().Dropped[gossip.DroppedPanic]
			reported := panics.count(0, gossip.PanicMessage)
			armed.Store(true)
			if err := tc.send(target, tc.msg); err != nil {
				t.Fatalf("send: %v", err)
			}
			if where := panics.next(t, 10*time.Second); where != gossip.PanicMessage {
				t.Fatalf("OnPanic called with where %q, want %q", where, gossip.PanicMessage)
			}
			if got := node.Stats().Dropped[gossip.DroppedPanic]; got != dropped+1 {
				t.Fatalf("dropped[%s] = %d, want %d", gossip.DroppedPanic, got, dropped+1)
			}
			if tc.merged() {
				t.Fatal("the message whose merge panicked was merged")
			}

			if err := tc.send(target, tc.msg); err != nil {
				t.Fatalf("send again: %v", err)
			}
			testkit.Eventually(t, testkit.Wait{What: "the message merged when sent again", Timeout: 10 * time.Second}, tc.merged)
			if got := panics.count(0, gossip.PanicMessage); got != reported+1 {
				t.Fatalf("OnPanic called %d times, want once", got-reported)
			}
			if got := node.Stats().Members; got != 2 {
				t.Fatalf("node sees %d members, want 2", got)
			}
		})
	}
}

// A loop of the node that panics in one turn goes on with the next: the
// beat, which keeps the ring's delay measured, and the join, which heals
// partitions, must outlive a bad turn.
func TestPanicInALoopTurn(t *testing.T) {
	for _, tc := range []struct {
		name  string
		where string
		cfg   func(t *testing.T) gossip.Config
	}{
		{
			"a beat that panics does not stop the beat loop",
			gossip.PanicBeatLoop,
			func(*testing.T) gossip.Config { return gossip.Config{BeatInterval: 40 * time.Millisecond} },
		},
		{
			"a join attempt that panics does not stop the join loop",
			gossip.PanicJoinLoop,
			func(t *testing.T) gossip.Config {
				// A seed nobody answers at: the loop keeps trying.
				return gossip.Config{Seeds: []string{fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))}}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var turns atomic.Int64
			panics := newPanicLog()
			cfg := tc.cfg(t)
			cfg.Name = "looping"
			cfg.Log = testLog(t)
			cfg.OnPanic = func(where string, r any, stack []byte) { panics.report(0, where, r, stack) }
			gossip.SetTestHook(&cfg, func(where string) {
				if where == tc.where && turns.Add(1) == 1 {
					panic("injected: a loop turn that panics")
				}
			})
			startNode(t, cfg)
			if where := panics.next(t, 10*time.Second); where != tc.where {
				t.Fatalf("OnPanic called with where %q, want %q", where, tc.where)
			}
			// The join loop waits 5 s after a turn that panicked.
			testkit.Eventually(t, testkit.Wait{What: "two more turns of the loop after the one that panicked", Timeout: 15 * time.Second, Seen: func() string {
				return fmt.Sprintf("%d turns", turns.Load())
			}}, func() bool { return turns.Load() >= 3 })
			if got := panics.count(0, tc.where); got != 1 {
				t.Fatalf("OnPanic called %d times, want once", got)
			}
		})
	}
}

// A push-pull that panics on one side must not kill either node, and once
// the panics stop, push-pull brings the nodes together again. Node 1 drops
// every message until then, so that nothing but push-pull carries node 0's
// counts to it.
func TestPanicInPushPull(t *testing.T) {
	for _, tc := range []struct {
		name  string
		node  int    // the node that panics in push-pull
		where string // where it panics
	}{
		{"a node whose merge of a peer's state panics stays up and converges once the panics stop", 1, gossip.PanicMergeState},
		{"a node whose own state panics as it is built sends none, stays up and converges once the panics stop", 0, gossip.PanicLocalState},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pushPullPanics, messagePanics atomic.Bool
			pushPullPanics.Store(true)
			messagePanics.Store(true)
			panics := newPanicLog()
			c := newCluster(t, 2, clusterOpts{
				tune: func(mc *memberlist.Config) { mc.PushPullInterval = 200 * time.Millisecond },
				hook: func(i int, where string) {
					switch {
					case i == tc.node && where == tc.where && pushPullPanics.Load(),
						i == 1 && where == gossip.PanicMessage && messagePanics.Load():
						panic("injected: " + where)
					}
				},
				onPanic: panics.report,
			})
			c.waitMembers(2, 10*time.Second)
			k := minuteKey("shop", crdt.Admitted, nowMinute())
			before := panics.count(tc.node, tc.where)
			c.nodes[0].Add(gossip.Inc{Key: k, N: 7})
			testkit.Eventually(t, testkit.Wait{What: "two push-pulls panicking after the write", Timeout: 10 * time.Second, Seen: func() string {
				return fmt.Sprintf("%d push-pull panics", panics.count(tc.node, tc.where)-before)
			}}, func() bool { return panics.count(tc.node, tc.where) >= before+2 })
			var held uint64
			c.nodes[1].Read(func(s *crdt.State) { held = s.Value(k) })
			if held != 0 {
				t.Fatalf("node 1 holds %d while every way to it panics", held)
			}

			pushPullPanics.Store(false)
			if !c.waitValue(1, k, 7, 10*time.Second) {
				t.Fatal("node 1 did not get node 0's count by push-pull after the panics stopped")
			}
			messagePanics.Store(false)
			c.nodes[1].Add(gossip.Inc{Key: k, N: 5})
			for i := range c.nodes {
				if !c.waitValue(i, k, 12, 10*time.Second) {
					t.Fatalf("node %d did not converge to 7 + 5", i)
				}
			}
			c.waitMembers(2, 10*time.Second)
			// Merges that panicked count as dropped; a state that could not
			// be built drops nothing.
			for i, n := range c.nodes {
				want := panics.count(i, gossip.PanicMessage) + panics.count(i, gossip.PanicMergeState)
				testkit.Eventually(t, testkit.Wait{What: fmt.Sprintf("node %d counting %d merges that panicked as dropped", i, want), Timeout: 5 * time.Second, Seen: func() string {
					return fmt.Sprint(n.Stats().Dropped)
				}}, func() bool { return n.Stats().Dropped[gossip.DroppedPanic] == int64(want) })
			}
		})
	}
}
