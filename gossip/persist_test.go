package gossip_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/gossip"
	"github.com/waitroom/waitroom/gossip/testkit"
)

// saved saves n and decodes it back, as a node's data directory would.
func saved(t *testing.T, n *gossip.Node) *gossip.Saved {
	t.Helper()
	b, err := n.Save()
	if err != nil {
		t.Fatal(err)
	}
	s, err := gossip.DecodeSaved(b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestASavedStateComesBack(t *testing.T) {
	minute := nowMinute()
	key := minuteKey("sale", crdt.Admitted, minute)
	old := startNode(t, gossip.Config{Name: "a", Log: testLog(t)})
	old.Add(gossip.Inc{Key: key, N: 7})
	old.SetRegister("room/sale", []byte(`{"name":"sale"}`))
	expires := time.Now().Add(time.Hour).Unix()
	old.Mark("code/used", expires)
	s := saved(t, old)
	_ = old.Kill()

	back := startNode(t, gossip.Config{Name: "a", Log: testLog(t), Restore: s})
	t.Run("the counts are back, under the earlier incarnation", func(t *testing.T) {
		var total, own uint64
		back.Read(func(st *crdt.State) { total, own = st.Value(key), st.Get(key, back.Replica()) })
		if total != 7 {
			t.Fatalf("admitted this minute %d, want 7", total)
		}
		if own != 0 {
			t.Fatalf("the new incarnation holds %d of the restored count; it must write above nothing of its earlier one", own)
		}
	})
	t.Run("the registers are back with their stamps", func(t *testing.T) {
		was, _ := old.Register("room/sale")
		got, ok := back.Register("room/sale")
		if !ok || !bytes.Equal(got.Value, was.Value) || got.Stamp != was.Stamp || got.Replica != was.Replica {
			t.Fatalf("register %+v, %v; want %+v", got, ok, was)
		}
	})
	t.Run("a used mark is still used", func(t *testing.T) {
		if !back.HasMark("code/used") || back.Mark("code/used", expires) {
			t.Fatal("the restored node takes a used mark as new")
		}
	})
	t.Run("a change after the restore is stamped after the restored one", func(t *testing.T) {
		was, _ := back.Register("room/sale")
		back.SetRegister("room/sale", []byte(`{"name":"sale","x":1}`))
		got, _ := back.Register("room/sale")
		if !got.Newer(was) {
			t.Fatalf("new write %+v is not newer than the restored %+v", got, was)
		}
	})
}

func TestTheRingsNewerStateWinsOverARestoredOne(t *testing.T) {
	c := newCluster(t, 2, clusterOpts{})
	c.waitMembers(2, 10*time.Second)
	a, b := c.nodes[0], c.nodes[1]
	a.SetRegister("room/sale", []byte("old"))
	testkit.Eventually(t, testkit.Wait{What: "b hearing the first write", Timeout: 10 * time.Second}, func() bool {
		r, ok := b.Register("room/sale")
		return ok && string(r.Value) == "old"
	})
	s := saved(t, a)
	_ = a.Kill()
	c.nodes[0] = nil
	b.SetRegister("room/sale", []byte("new")) // while a is down
	back := startNode(t, gossip.Config{Name: "node-00", Seeds: []string{b.Addr()}, Log: testLog(t), Restore: s})
	testkit.Eventually(t, testkit.Wait{What: "the restarted node taking the ring's newer write", Timeout: 10 * time.Second, Seen: func() string {
		r, _ := back.Register("room/sale")
		return string(r.Value)
	}}, func() bool {
		r, ok := back.Register("room/sale")
		return ok && string(r.Value) == "new"
	})
}

func TestARestoredNodeLooksForTheMembersItKnew(t *testing.T) {
	c := newCluster(t, 3, clusterOpts{})
	c.waitMembers(3, 10*time.Second)
	s := saved(t, c.nodes[2])
	if s.Members() != 2 {
		t.Fatalf("saved %d members, want the 2 others", s.Members())
	}
	_ = c.nodes[2].Kill()
	c.nodes[2] = nil
	// No seeds: only the saved members lead it back to the ring.
	back := startNode(t, gossip.Config{Name: "node-02", Log: testLog(t), Restore: s})
	t.Run("it expects the ring it knew before it has joined", func(t *testing.T) {
		if got := back.ExpectedMembers(time.Now()); got < 3 {
			t.Fatalf("expects %d members, want 3", got)
		}
	})
	t.Run("it joins them without a seed", func(t *testing.T) {
		waitNumMembers(t, back, 3, 15*time.Second)
	})
}

func TestDecodeSavedRefusesWhatSaveDidNotWrite(t *testing.T) {
	n := startNode(t, gossip.Config{Name: "a", Log: testLog(t)})
	n.SetRegister("room/sale", []byte("x"))
	good, err := n.Save()
	if err != nil {
		t.Fatal(err)
	}
	marks, _ := gossip.EncodeMarks(nil, 0)
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"an empty file", nil},
		{"a cut-off state", good[:len(good)/2]},
		{"a state with bytes after it", append(bytes.Clone(good), 0)},
		{"marks where the full state belongs", mustMsgpack(t, [3]any{marks, marks, [][2]string{}})},
		{"a member without a name", mustMsgpack(t, [3]any{good[1:], marks, [][2]string{{"", "127.0.0.1:1"}}})},
	} {
		t.Run(fmt.Sprintf("%s is refused", tc.name), func(t *testing.T) {
			if _, err := gossip.DecodeSaved(tc.b); err == nil {
				t.Fatal("decoded")
			}
		})
	}
}

func mustMsgpack(t *testing.T, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func FuzzDecodeSaved(f *testing.F) {
	f.Add([]byte{0x93, 0xc4, 0x00, 0xc4, 0x00, 0x90})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := gossip.DecodeSaved(b)
		if err != nil {
			return
		}
		_ = s.Rooms() + s.Registers() + s.Cells() + s.Marks() + s.Members()
	})
}
