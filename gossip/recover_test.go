package gossip

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/waitroom/waitroom/crdt"
)

// panicsHere panics, so that a stack can be told to be the panicking one.
func panicsHere() { panic("boom") }

func TestPanicReport(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	type call struct {
		where     string
		recovered any
		stack     string
	}
	for _, tc := range []struct {
		name     string
		onPanic  func(calls *[]call) func(string, any, []byte)
		calls    int    // OnPanic calls wanted
		logPanic string // the panic field of the one error line wanted; "" for no line
	}{
		{
			name:     "with no OnPanic the node logs one error line with where, panic and stack",
			logPanic: "boom",
		},
		{
			name: "with OnPanic set the node calls it once with where, the value and the stack that panicked, and logs nothing",
			onPanic: func(calls *[]call) func(string, any, []byte) {
				return func(where string, r any, stack []byte) { *calls = append(*calls, call{where, r, string(stack)}) }
			},
			calls: 1,
		},
		{
			name: "an OnPanic that panics itself is logged and the node goes on",
			onPanic: func(calls *[]call) func(string, any, []byte) {
				return func(where string, r any, stack []byte) {
					*calls = append(*calls, call{where, r, string(stack)})
					panic("reporting failed")
				}
			},
			calls:    1,
			logPanic: "boom (and OnPanic panicked reporting it: reporting failed)",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			var calls []call
			n := bareNode("a", func() time.Time { return now })
			n.log = zerolog.New(&buf)
			if tc.onPanic != nil {
				n.cfg.OnPanic = tc.onPanic(&calls)
			}
			n.guarded(PanicBeatLoop, panicsHere)

			if len(calls) != tc.calls {
				t.Fatalf("OnPanic called %d times, want %d", len(calls), tc.calls)
			}
			for _, c := range calls {
				if c.where != PanicBeatLoop || c.recovered != "boom" || !strings.Contains(c.stack, "panicsHere") {
					t.Fatalf("OnPanic called with where %q, value %v and a stack without the panicking function:\n%s", c.where, c.recovered, c.stack)
				}
			}
			lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
			if tc.logPanic == "" {
				if buf.Len() != 0 {
					t.Fatalf("logged:\n%s", buf.String())
				}
				return
			}
			if len(lines) != 1 {
				t.Fatalf("logged %d lines, want one:\n%s", len(lines), buf.String())
			}
			var line struct{ Level, Where, Panic, Stack string }
			if err := json.Unmarshal([]byte(lines[0]), &line); err != nil {
				t.Fatalf("log line %q: %v", lines[0], err)
			}
			if line.Level != "error" || line.Where != PanicBeatLoop || line.Panic != tc.logPanic || !strings.Contains(line.Stack, "panicsHere") {
				t.Fatalf("log line %s", lines[0])
			}
		})
	}
}

// A panic under the node's lock must not leave it held: the node would
// stop at its next merge, admission or gossip round.
func TestPanicLeavesNoLockHeld(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	other := crdt.NewReplicaID("b", 1)
	k := crdt.Key{Room: "shop", Kind: crdt.Admitted, Minute: now.Unix() / 60}
	entries := must(EncodeEntries([]crdt.Entry{{Key: k, Replica: other, Value: 3}}))
	st := crdt.New()
	st.Add(k, other, 3)
	full := must(EncodeFull(st.Full(), 0))
	for _, tc := range []struct {
		name    string
		where   string
		call    func(d *delegate) []byte
		dropped int64
	}{
		{"a message whose merge panics is dropped, counted and leaves the lock free", PanicMessage, func(d *delegate) []byte { d.NotifyMsg(entries); return nil }, 1},
		{"a push-pull state whose merge panics is dropped, counted and leaves the lock free", PanicMergeState, func(d *delegate) []byte { d.MergeRemoteState(full, false); return nil }, 1},
		{"this node's push-pull state panicking as it is built is sent empty and leaves the lock free", PanicLocalState, func(d *delegate) []byte { return d.LocalState(false) }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := bareNode("a", func() time.Time { return now })
			var reported []string
			n.cfg.OnPanic = func(where string, _ any, _ []byte) { reported = append(reported, where) }
			n.cfg.testHook = func(where string) {
				if where == tc.where {
					panic("injected")
				}
			}
			if out := tc.call((*delegate)(n)); out != nil {
				t.Fatalf("returned %d bytes, want none", len(out))
			}
			if len(reported) != 1 || reported[0] != tc.where {
				t.Fatalf("reported %v, want [%s]", reported, tc.where)
			}
			if !n.mu.TryLock() {
				t.Fatal("the node's lock is held after the panic")
			}
			n.mu.Unlock()
			if !n.peersMu.TryLock() {
				t.Fatal("the peers' lock is held after the panic")
			}
			n.peersMu.Unlock()
			var got int64
			if v, ok := n.stats.dropped.Load(DroppedPanic); ok {
				got = v.(*atomic.Int64).Load()
			}
			if got != tc.dropped {
				t.Fatalf("dropped[%s] = %d, want %d", DroppedPanic, got, tc.dropped)
			}
			if v := n.state.Value(k); v != 0 {
				t.Fatalf("merged %d from what panicked", v)
			}
		})
	}
}
