package gossip_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/rs/zerolog"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/gossip"
	"github.com/waitroom/waitroom/gossip/testkit"
)

// prober is a bare memberlist member that speaks no waitroom: it sends
// whatever bytes a test gives it, as user messages or as its push-pull state.
type prober struct {
	ml    *memberlist.Memberlist
	state atomic.Pointer[[]byte] // what LocalState returns
}

func (p *prober) NodeMeta(int) []byte                 { return nil }
func (p *prober) NotifyMsg([]byte)                    {}
func (p *prober) GetBroadcasts(int, int) [][]byte     { return nil }
func (p *prober) MergeRemoteState(buf []byte, _ bool) {}
func (p *prober) LocalState(bool) []byte {
	if b := p.state.Load(); b != nil {
		return *b
	}
	return nil
}

// newProber starts a prober encrypting with key, or sending plaintext when
// key is nil.
func newProber(t *testing.T, key []byte) *prober {
	t.Helper()
	p := &prober{}
	mc := memberlist.DefaultLocalConfig()
	mc.Name = "prober"
	mc.BindAddr, mc.BindPort = "127.0.0.1", 0
	if key != nil {
		kr, err := memberlist.NewKeyring(nil, key)
		if err != nil {
			t.Fatal(err)
		}
		mc.Keyring = kr
	}
	mc.PushPullInterval = 0 // push-pull only when the test joins
	mc.Delegate = p
	mc.Logger = log.New(io.Discard, "", 0)
	ml, err := memberlist.Create(mc)
	if err != nil {
		t.Fatal(err)
	}
	p.ml = ml
	t.Cleanup(func() { _ = ml.Shutdown() })
	return p
}

func (p *prober) member(t *testing.T, name string) *memberlist.Node {
	t.Helper()
	for _, m := range p.ml.Members() {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("prober does not see %s", name)
	return nil
}

// pushState makes the next push-pull with addr carry b as this member's
// state. The peer has read it by the time Join returns, so the state is
// cleared again at once.
func (p *prober) pushState(addr string, b []byte) error {
	p.state.Store(&b)
	defer p.state.Store(nil)
	_, err := p.ml.Join([]string{addr})
	return err
}

// logWatcher is a log sink that signals every line whose message starts
// with prefix: the event a test can wait for when the thing it waits for
// changes no state (a drop, a failed join, a peer leaving).
type logWatcher struct {
	t      testing.TB
	prefix string
	lines  chan logLine
}

type logLine struct {
	Message string `json:"message"`
	Error   string `json:"error"`
	Peer    string `json:"peer"`
	Reason  string `json:"reason"`
}

func newLogWatcher(t testing.TB, prefix string) *logWatcher {
	return &logWatcher{t: t, prefix: prefix, lines: make(chan logLine, 256)}
}

func (w *logWatcher) Write(p []byte) (int, error) {
	var line logLine
	if json.Unmarshal(p, &line) == nil && strings.HasPrefix(line.Message, w.prefix) {
		select {
		case w.lines <- line:
		default:
			w.t.Errorf("log watcher overflow: %s", p)
		}
	}
	if testing.Verbose() {
		w.t.Log(strings.TrimSpace(string(p)))
	}
	return len(p), nil
}

// wait returns the next matching line.
func (w *logWatcher) wait(t testing.TB, timeout time.Duration) logLine {
	t.Helper()
	select {
	case l := <-w.lines:
		return l
	case <-time.After(timeout):
		t.Fatalf("no log line %q within %v", w.prefix, timeout)
		return logLine{}
	}
}

// mustBytes unwraps an encoder's result; encoding well-formed deltas cannot
// fail.
func mustBytes(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func TestBadInputThroughALiveNode(t *testing.T) {
	w := newLogWatcher(t, "dropped")
	node, err := gossip.Start(gossip.Config{
		Name: "target", Bind: "127.0.0.1:0", Profile: gossip.Local, Keys: [][]byte{testKey},
		Log:  zerolog.New(w),
		Tune: func(mc *memberlist.Config) { mc.PushPullInterval = 0 },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Kill() })

	m := nowMinute()
	shop := minuteKey("shop", crdt.Admitted, m)
	node.Add(gossip.Inc{Key: shop, N: 5})

	p := newProber(t, testKey)
	if _, err := p.ml.Join([]string{node.Addr()}); err != nil {
		t.Fatal(err)
	}
	target := p.member(t, "target")
	bestEffort := func(b []byte) func() error { return func() error { return p.ml.SendBestEffort(target, b) } }
	reliable := func(b []byte) func() error { return func() error { return p.ml.SendReliable(target, b) } }
	pushPull := func(b []byte) func() error { return func() error { return p.pushState(node.Addr(), b) } }

	other := crdt.NewReplicaID("intruder", 1)
	valid := func(i int) crdt.Entry {
		return crdt.Entry{Key: crdt.Key{Room: "shop", Kind: crdt.Arrivals, Bucket: int64(i), Minute: m}, Replica: other, Value: 100}
	}
	goodEntries := mustBytes(gossip.EncodeEntries([]crdt.Entry{valid(0)}))
	// Valid entries, then one of value zero: nothing of it may be merged.
	halfBad := mustBytes(gossip.EncodeEntries([]crdt.Entry{valid(1), valid(2), {Key: shop, Replica: other}}))
	tooManyForAPacket := make([]crdt.Entry, 40)
	for i := range tooManyForAPacket {
		tooManyForAPacket[i] = valid(10 + i)
	}
	oversizeEntries := mustBytes(gossip.EncodeEntries(tooManyForAPacket))
	hugeRegister := mustBytes(gossip.EncodeRegisters([]crdt.RegisterEntry{{Name: "room/page", Reg: crdt.LWW[[]byte]{Value: bytes.Repeat([]byte("x"), gossip.MaxReliableMessage), Replica: other}}}))
	st := crdt.New()
	st.Add(crdt.Key{Room: "shop", Kind: crdt.ActivePlus, Minute: m}, other, 7)
	st.Add(crdt.Key{Room: "shop", Kind: crdt.Admitted, Minute: m}, other, 9)
	goodFull := mustBytes(gossip.EncodeFull(st.Full(), 0))
	// Valid cells, then one count of zero: nothing of it may be merged.
	badFull := mustBytes(gossip.EncodeFull(crdt.Delta{Entries: append(st.Full().Entries, crdt.Entry{Key: minuteKey("shop", crdt.Arrivals, m), Replica: other})}, 0))

	var before *crdt.State
	node.Read(func(s *crdt.State) { before = s.Clone() })

	for _, tc := range []struct {
		name   string
		send   func() error
		reason string
	}{
		{"random bytes as a user message are dropped as another version", bestEffort([]byte("GET / HTTP/1.1\r\n")), "version"},
		{"an empty user message is dropped as malformed", bestEffort(nil), "malformed"},
		{"garbage after a valid header is dropped as malformed", bestEffort(append([]byte{goodEntries[0]}, "garbage"...)), "malformed"},
		{"a message of a newer protocol version is dropped", bestEffort(append([]byte{0x21}, goodEntries[1:]...)), "version"},
		{"a message of an unknown type is dropped", bestEffort(append([]byte{goodEntries[0]&0xf0 | 0x0e}, goodEntries[1:]...)), "type"},
		{"a full state sent as a broadcast is dropped", bestEffort(goodFull), "type"},
		{"an entries message larger than a packet is dropped though valid", bestEffort(oversizeEntries), "oversize"},
		{"a message over a megabyte on the reliable stream is dropped", reliable(hugeRegister), "oversize"},
		{"an entry list with one invalid entry after valid ones is dropped whole", bestEffort(halfBad), "invalid"},
		{"an entry list claiming four billion entries is dropped", bestEffort(append([]byte{goodEntries[0]}, 0xdd, 0xff, 0xff, 0xff, 0xff, 0x96)), "malformed"},
		{"a push-pull state claiming four billion replicas is dropped", pushPull([]byte{goodFull[0], 0x94, 0x00, 0xdd, 0xff, 0xff, 0xff, 0xff, 0x01}), "malformed"},
		{"a push-pull state with trailing bytes is dropped", pushPull(append(bytes.Clone(goodFull), 0)), "malformed"},
		{"a push-pull state with one invalid count is dropped whole", pushPull(badFull), "invalid"},
		{"a push-pull state of another version is dropped", pushPull(append([]byte{0x23}, goodFull[1:]...)), "version"},
		{"an entries message as a push-pull state is dropped", pushPull(goodEntries), "type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			was := node.Stats().Dropped
			if err := tc.send(); err != nil {
				t.Fatalf("send: %v", err)
			}
			why := w.wait(t, 10*time.Second).Error
			now := node.Stats().Dropped
			for reason, n := range now {
				want := was[reason]
				if reason == tc.reason {
					want++
				}
				if n != want {
					t.Errorf("dropped[%s] = %d, want %d (error %q)", reason, n, want, why)
				}
			}
			if now[tc.reason] == 0 {
				t.Errorf("no drop counted as %q (error %q); counts %v", tc.reason, why, now)
			}
			var same bool
			node.Read(func(s *crdt.State) { same = sameAsBefore(s, before) })
			if !same {
				t.Fatal("the state changed")
			}
		})
	}

	t.Run("the node still merges good messages afterwards", func(t *testing.T) {
		if got := node.Stats().Members; got != 2 {
			t.Fatalf("node sees %d members, want 2", got)
		}
		if err := p.ml.SendBestEffort(target, goodEntries); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, testkit.Wait{What: "the good entries merged", Timeout: 10 * time.Second}, func() bool {
			var v uint64
			node.Read(func(s *crdt.State) { v = s.Value(valid(0).Key) })
			return v == 100
		})
		if err := p.pushState(node.Addr(), goodFull); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, testkit.Wait{What: "the good state merged", Timeout: 10 * time.Second}, func() bool {
			var v uint64
			node.Read(func(s *crdt.State) { v = s.Value(shop) })
			return v == 5+9
		})
		if st := node.Stats(); st.PushPulls == 0 || st.EntriesMerged < 3 {
			t.Fatalf("stats do not show the merges: %+v", st)
		}
	})
}
