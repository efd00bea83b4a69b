package gossip_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/rs/zerolog"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/gossip"
	"github.com/waitroom/waitroom/gossip/testkit"
)

// refusedLine is the message of the line a node logs for refused input.
const refusedLine = "refused gossip input from a peer"

// addrOf is a memberlist node at a gossip address, for a prober that sends
// to a node it never joined.
func addrOf(t *testing.T, name, addr string) *memberlist.Node {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return &memberlist.Node{Name: name, Addr: net.ParseIP(h), Port: uint16(port)}
}

// stateOf copies node i's state.
func (c *cluster) stateOf(i int) *crdt.State {
	var s *crdt.State
	c.nodes[i].Read(func(st *crdt.State) { s = st.Clone() })
	return s
}

// sameAsBefore reports whether state holds what before held. The node's
// prune loop moves its horizon by the clock on its own, at any time (its
// first turn after the start, a new minute): before is pruned to the same
// horizon first, so only what was merged or written counts as a change.
func sameAsBefore(state, before *crdt.State) bool {
	b := before.Clone()
	b.Prune(state.Horizon())
	return state.Equal(b)
}

func TestOutsidersCannotInject(t *testing.T) {
	w := newLogWatcher(t, refusedLine)
	c := newCluster(t, 2, clusterOpts{logTo: w})
	c.waitMembers(2, 10*time.Second)
	m := nowMinute()
	shop := minuteKey("shop", crdt.ActivePlus, m)
	c.nodes[0].Add(gossip.Inc{Key: shop, N: 3})
	if !c.waitValue(1, shop, 3, 10*time.Second) {
		t.Fatal("the ring did not converge")
	}
	stranger := crdt.NewReplicaID("stranger", 1)
	million := mustBytes(gossip.EncodeEntries([]crdt.Entry{{Key: shop, Replica: stranger, Value: 1_000_000}}))
	room := mustBytes(gossip.EncodeRegisters([]crdt.RegisterEntry{{Name: "room/shop", Reg: crdt.LWW[[]byte]{Value: []byte(`{"name":"shop","origin":"http://127.0.0.2"}`), Stamp: crdt.HLC{Wall: time.Now().UnixMilli()}, Replica: stranger}}}))
	st := crdt.New()
	st.Add(shop, stranger, 1_000_000)
	full := mustBytes(gossip.EncodeFull(st.Full(), 0))
	before := []*crdt.State{c.stateOf(0), c.stateOf(1)}

	for _, who := range []struct {
		name string
		key  []byte
	}{
		{"a process without the key", nil},
		{"a process with another key", []byte("another-gossip-key-of-32-bytes!!")},
	} {
		p := newProber(t, who.key)
		target := addrOf(t, "node-00", c.nodes[0].Addr())
		for _, tc := range []struct {
			name string
			send func() error
		}{
			{"sending a million active visitors as a packet", func() error { return p.ml.SendBestEffort(target, million) }},
			{"sending a room's settings over a stream", func() error { return p.ml.SendReliable(target, room) }},
			{"pushing a state with a million visitors as it joins", func() error { return p.pushState(c.nodes[0].Addr(), full) }},
		} {
			t.Run(who.name+" "+tc.name+" is refused, logged and counted", func(t *testing.T) {
				was := c.nodes[0].Stats().Dropped[gossip.RefusedUnauthenticated]
				_ = tc.send() // a stream is answered with an error, or cut
				testkit.Eventually(t, testkit.Wait{What: "a refusal counted", Timeout: 10 * time.Second, Seen: func() string { return fmt.Sprintf("dropped %v", c.nodes[0].Stats().Dropped) }}, func() bool { return c.nodes[0].Stats().Dropped[gossip.RefusedUnauthenticated] != was })
				for i := range c.nodes {
					if !sameAsBefore(c.stateOf(i), before[i]) {
						t.Fatalf("node %d's state changed", i)
					}
				}
			})
		}
	}
	t.Run("the refusals were logged once, not once per message", func(t *testing.T) {
		l := w.wait(t, time.Second)
		if l.Reason != gossip.RefusedUnauthenticated || l.Error == "" {
			t.Fatalf("logged %+v, want reason %s with memberlist's error", l, gossip.RefusedUnauthenticated)
		}
		select {
		case l := <-w.lines:
			t.Fatalf("a second line within the minute: %+v", l)
		default:
		}
		if n := c.nodes[0].Stats().Dropped[gossip.RefusedUnauthenticated]; n < 6 {
			t.Fatalf("counted %d refusals, want at least one per message (6)", n)
		}
	})
	if got := len(c.nodes[0].Members()); got != 2 {
		t.Fatalf("the ring has %d members, want 2 (no outsider joined)", got)
	}
}

func TestPeersAreBelievedOnlyWithinWhatCouldBeTrue(t *testing.T) {
	w := newLogWatcher(t, refusedLine)
	notJSON := errors.New("not JSON")
	c := newCluster(t, 1, clusterOpts{
		logTo: w,
		tune:  func(mc *memberlist.Config) { mc.PushPullInterval = 0 },
		checkRegister: func(name string, value []byte) error {
			if strings.HasPrefix(name, "room/") && len(value) > 0 && !json.Valid(value) {
				return notJSON
			}
			return nil
		},
	})
	node := c.nodes[0]
	p := newProber(t, testKey) // a peer holding the ring's key
	if _, err := p.ml.Join([]string{node.Addr()}); err != nil {
		t.Fatal(err)
	}
	target := p.member(t, "node-00")
	now := time.Now()
	m := now.Unix() / 60
	peer := crdt.NewReplicaID("peer", 1)
	entry := func(kind crdt.Kind, minute int64, v uint64) crdt.Entry {
		return crdt.Entry{Key: crdt.Key{Room: "shop", Kind: kind, Minute: minute}, Replica: peer, Value: v}
	}
	reg := func(name string, value []byte, stamp crdt.HLC, r crdt.ReplicaID) crdt.RegisterEntry {
		return crdt.RegisterEntry{Name: name, Reg: crdt.LWW[[]byte]{Value: value, Stamp: stamp, Replica: r}}
	}
	entries := func(es ...crdt.Entry) func() error {
		return func() error { return p.ml.SendBestEffort(target, mustBytes(gossip.EncodeEntries(es))) }
	}
	registers := func(rs ...crdt.RegisterEntry) func() error {
		return func() error { return p.ml.SendReliable(target, mustBytes(gossip.EncodeRegisters(rs))) }
	}
	pushPull := func(es ...crdt.Entry) func() error {
		return func() error {
			return p.pushState(node.Addr(), mustBytes(gossip.EncodeFull(crdt.Delta{Entries: es}, 0)))
		}
	}
	stamp := crdt.HLC{Wall: now.UnixMilli()}
	other := crdt.NewReplicaID("node-00", 7)
	otherInfo, err := json.Marshal(map[string]any{}) // not msgpack at all
	if err != nil {
		t.Fatal(err)
	}
	forgedLeave := mustBytes(msgpackNodeInfo(crdt.NodeInfo{Name: "someone-else", Incarnation: 1, Left: true}))

	cases := []struct {
		name   string
		send   func() error
		reason string
		n      int64 // refusals the message makes
	}{
		{"counts dated an hour ahead are refused", entries(entry(crdt.ActivePlus, m+60, 1_000_000)), crdt.RefusedFutureMinute, 1},
		{"counts dated at the largest minute are refused", entries(entry(crdt.WaitingPlus, math.MaxInt64, 5)), crdt.RefusedFutureMinute, 1},
		{"a session cell beyond the longest session is refused", entries(entry(crdt.SessionPlus, m+crdt.MaxSessionLead+5, 1)), crdt.RefusedFutureMinute, 1},
		{"a count no node's traffic could make in a minute is refused", entries(entry(crdt.Admitted, m, crdt.MaxEntryValue+1)), crdt.RefusedImpossibleValue, 1},
		{"a push-pull state carrying the same is refused item by item", pushPull(entry(crdt.ActivePlus, m+60, 1), entry(crdt.Arrivals, m+61, 1)), crdt.RefusedFutureMinute, 2},
		{"a room stamped at the largest stamp is refused", registers(reg("room/shop", []byte(`{"name":"shop"}`), crdt.MaxHLC, peer)), crdt.RefusedFutureStamp, 1},
		{"a room stamped ten minutes ahead is refused", registers(reg("room/shop", []byte(`{"name":"shop"}`), crdt.HLC{Wall: now.Add(10 * time.Minute).UnixMilli()}, peer)), crdt.RefusedFutureStamp, 1},
		{"room settings the node's checks refuse are refused", registers(reg("room/shop", []byte(`{"name":`), stamp, peer)), gossip.RefusedRegister, 1},
		{"a node announcement under another writer's name is refused", registers(reg(gossip.NodeInfoRegister(other), forgedLeave, stamp, peer)), gossip.RefusedNodeInfo, 1},
		{"a node announcement naming another node is refused", registers(reg(gossip.NodeInfoRegister(peer), forgedLeave, stamp, peer)), gossip.RefusedNodeInfo, 1},
		{"a node announcement that does not decode is refused", registers(reg(gossip.NodeInfoRegister(peer), otherInfo, stamp, peer)), gossip.RefusedNodeInfo, 1},
	}
	before := c.stateOf(0)
	logged := map[string]bool{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			was := node.Stats().Dropped[tc.reason]
			if err := tc.send(); err != nil {
				t.Fatalf("send: %v", err)
			}
			if !logged[tc.reason] {
				// The first refusal of a reason logs a line; later ones
				// within the minute are only counted.
				l := w.wait(t, 10*time.Second)
				if l.Reason != tc.reason {
					t.Fatalf("logged reason %q (%s), want %q", l.Reason, l.Error, tc.reason)
				}
				logged[tc.reason] = true
			}
			testkit.Eventually(t, testkit.Wait{What: fmt.Sprintf("dropped[%s] = %d", tc.reason, was+tc.n), Timeout: 10 * time.Second, Seen: func() string { return fmt.Sprint(node.Stats().Dropped[tc.reason]) }}, func() bool { return node.Stats().Dropped[tc.reason] >= was+tc.n })
			if got := node.Stats().Dropped[tc.reason]; got != was+tc.n {
				t.Fatalf("dropped[%s] = %d, want %d", tc.reason, got, was+tc.n)
			}
			if !sameAsBefore(c.stateOf(0), before) {
				t.Fatal("the state changed")
			}
		})
	}
	t.Run("a refused reason logs no second line within the minute", func(t *testing.T) {
		select {
		case l := <-w.lines:
			t.Fatalf("logged again: %+v", l)
		default:
		}
	})

	t.Run("what could be true is still taken, from the same peer", func(t *testing.T) {
		ok := []crdt.Entry{
			entry(crdt.ActivePlus, m, 5),
			entry(crdt.SessionPlus, m+crdt.MaxSessionLead, 2), // a session dated by its expiry
			entry(crdt.Admitted, m+1, crdt.MaxEntryValue),     // a clock a minute ahead, the largest count
		}
		if err := entries(ok...)(); err != nil {
			t.Fatal(err)
		}
		info := mustBytes(msgpackNodeInfo(crdt.NodeInfo{Name: "peer", Incarnation: 1, Addr: "127.0.0.1:1"}))
		ahead := crdt.HLC{Wall: now.Add(time.Minute).UnixMilli()}
		if err := registers(reg("room/shop", []byte(`{"name":"shop"}`), ahead, peer), reg(gossip.NodeInfoRegister(peer), info, stamp, peer))(); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, testkit.Wait{What: "the peer's good entries and registers merged", Timeout: 10 * time.Second}, func() bool {
			s := c.stateOf(0)
			for _, e := range ok {
				if s.Get(e.Key, peer) != e.Value {
					return false
				}
			}
			_, room := s.Register("room/shop")
			_, ni := s.Register(gossip.NodeInfoRegister(peer))
			return room && ni
		})
		if name := node.ReplicaNames()[peer]; name != "peer" {
			t.Fatalf("the peer's announcement reads %q", name)
		}
	})
}

// msgpackNodeInfo encodes a node announcement as nodes do.
func msgpackNodeInfo(ni crdt.NodeInfo) ([]byte, error) {
	return gossip.EncodeNodeInfo(ni)
}

func TestNoStampLocksARoomOnTheRing(t *testing.T) {
	c := newCluster(t, 2, clusterOpts{})
	c.waitMembers(2, 10*time.Second)
	// Both nodes hold a room stamped at the largest stamp, as a ring
	// attacked before peers' stamps were bounded would, restored from
	// their snapshots.
	locked := crdt.RegisterEntry{Name: "room/shop", Reg: crdt.LWW[[]byte]{Value: []byte("hostile"), Stamp: crdt.MaxHLC, Replica: crdt.NewReplicaID("intruder", 1)}}
	for _, n := range c.nodes {
		n.Read(func(s *crdt.State) { s.ApplyRegister(locked) })
	}
	c.nodes[0].SetRegister("room/shop", []byte("operator"))
	for i := range c.nodes {
		if !waitRegister(c, i, "room/shop", "operator") {
			r, _ := c.nodes[i].Register("room/shop")
			t.Fatalf("node %d holds %q, want the operator's write", i, r.Value)
		}
	}
	// A later write on the other node wins too: its clock was not
	// dragged to the largest stamp.
	c.nodes[1].SetRegister("room/shop", []byte("second"))
	if !waitRegister(c, 0, "room/shop", "second") {
		t.Fatal("node 0 did not take node 1's later write")
	}
}

// waitRegister waits up to ten seconds until node i holds want in register
// name, and reports whether it did.
func waitRegister(c *cluster, i int, name, want string) bool {
	_, ok := testkit.Poll(10*time.Second, 0, func() bool {
		r, _ := c.nodes[i].Register(name)
		return string(r.Value) == want
	})
	return ok
}

func TestARingNeedsAKey(t *testing.T) {
	t.Run("a node without a key refuses to start", func(t *testing.T) {
		n, err := gossip.Start(gossip.Config{Name: "bare", Bind: "127.0.0.1:0", Profile: gossip.Local, Log: zerolog.Nop()})
		if n != nil {
			_ = n.Kill()
		}
		if !errors.Is(err, gossip.ErrNoKey) {
			t.Fatalf("Start without a key: %v, want ErrNoKey", err)
		}
	})
	t.Run("a node asked to run insecure says so, naming its address", func(t *testing.T) {
		w := newLogWatcher(t, "gossip is unauthenticated")
		n := startNode(t, gossip.Config{Name: "open", Insecure: true, Log: zerolog.New(w)})
		l := w.wait(t, 5*time.Second)
		_, port, _ := net.SplitHostPort(n.Addr())
		if want := fmt.Sprintf("anyone who reaches 127.0.0.1:%s can rewrite rooms and counts", port); !strings.Contains(l.Message, want) {
			t.Fatalf("warning %q does not say %q", l.Message, want)
		}
	})
}

func TestRedactedRegistersLeaveWithoutTheirSecret(t *testing.T) {
	strip := func(name string, value []byte) []byte {
		return bytes.ReplaceAll(value, []byte("secret"), []byte("******"))
	}
	c := newCluster(t, 2, clusterOpts{redact: strip})
	c.waitMembers(2, 10*time.Second)
	c.nodes[0].SetRegister("room/shop", []byte("turnstile secret"))
	if !waitRegister(c, 1, "room/shop", "turnstile ******") {
		r, _ := c.nodes[1].Register("room/shop")
		t.Fatalf("the peer holds %q", r.Value)
	}
	if r, _ := c.nodes[0].Register("room/shop"); string(r.Value) != "turnstile secret" {
		t.Fatalf("the writer holds %q, want its own value", r.Value)
	}
}

// TestANameHeldByALiveMemberIsNotTaken has a key holder join under the
// name of a live member, from another address, and then leave: its join
// is refused and counted, so its leave cannot take the real member out of
// the ring.
func TestANameHeldByALiveMemberIsNotTaken(t *testing.T) {
	c := newCluster(t, 3, clusterOpts{})
	c.waitMembers(3, 10*time.Second)
	real := c.nodes[1].Addr()
	impostor, err := gossip.Start(gossip.Config{Name: "node-01", Bind: "127.0.0.1:0", Seeds: []string{c.nodes[0].Addr()}, Keys: [][]byte{testKey}, Profile: gossip.Local, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, testkit.Wait{What: "the impostor's join refused", Timeout: 10 * time.Second}, func() bool {
		return c.nodes[0].Stats().Dropped[gossip.RefusedNameTaken] > 0
	})
	_ = impostor.Close()
	for _, i := range []int{0, 2} {
		var seen gossip.Member
		for _, m := range c.nodes[i].Members() {
			if m.Name == "node-01" {
				seen = m
			}
		}
		if !seen.Alive || seen.Addr != real {
			t.Errorf("after the impostor left, node-%02d sees node-01 as %+v, want it alive at %s", i, seen, real)
		}
	}
}
