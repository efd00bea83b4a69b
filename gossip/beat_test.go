package gossip

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/rs/zerolog"

	"github.com/waitroom/waitroom/crdt"
)

func TestBeats(t *testing.T) {
	a := crdt.NewReplicaID("a", 1)
	t.Run("a beat decodes to its replica and time", func(t *testing.T) {
		m, err := Decode(must(EncodeBeat(a, 1_700_000_000_123)), MaxPacketMessage)
		if err != nil || m.Type != msgBeat || m.Origin != a || m.At != 1_700_000_000_123 {
			t.Fatalf("got %+v (%v)", m, err)
		}
	})
	for _, tc := range []struct {
		name string
		body any
		want error
	}{
		{"a beat without a replica is refused", []any{uint64(0), int64(1)}, errValidation},
		{"a beat at time zero is refused", []any{uint64(a), int64(0)}, errValidation},
		{"a beat before 1970 is refused", []any{uint64(a), int64(-5)}, errValidation},
		{"a beat with a field missing is refused", []any{uint64(a)}, errMalformed},
		{"a beat with a string for a time is refused", []any{uint64(a), "now"}, errMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Decode(raw(t, msgBeat, tc.body), MaxPacketMessage); !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
		})
	}
}

// queued decodes what n's broadcast queue holds.
func queued(t *testing.T, n *Node) []Message {
	t.Helper()
	var out []Message
	for _, b := range n.queue.GetBroadcasts(0, 1<<16) {
		m, err := Decode(b, MaxPacketMessage)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func TestBeatOnlyWhenIdle(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	n := bareNode("a", func() time.Time { return now })
	n.updateStampPeersLocked()
	t.Run("a node that has sent nothing beats", func(t *testing.T) {
		n.beatIfIdle(now)
		if q := queued(t, n); len(q) != 1 || q[0].Type != msgBeat || q[0].At != now.UnixMilli() || q[0].Origin != n.replica {
			t.Fatalf("queued %+v", q)
		}
	})
	t.Run("a node that sent counts within the interval does not beat", func(t *testing.T) {
		now = now.Add(BeatInterval)
		n.Add(crdt.Inc{Key: crdt.Key{Room: "shop", Kind: crdt.Admitted, Minute: now.Unix() / 60}, N: 1})
		n.flush()
		now = now.Add(BeatInterval / 2)
		n.beatIfIdle(now)
		for _, m := range queued(t, n) {
			if m.Type == msgBeat && m.At == now.UnixMilli() {
				t.Fatalf("beat while sending counts: %+v", m)
			}
		}
	})
	t.Run("a node idle for the interval beats again", func(t *testing.T) {
		now = now.Add(BeatInterval / 2)
		n.beatIfIdle(now)
		beat := false
		for _, m := range queued(t, n) {
			beat = beat || (m.Type == msgBeat && m.At == now.UnixMilli())
		}
		if !beat {
			t.Fatal("no beat")
		}
	})
	t.Run("a node with a peer that predates beats does not beat", func(t *testing.T) {
		m := bareNode("a", func() time.Time { return now })
		m.peers["old"] = memberlist.Node{Name: "old"}
		m.updateStampPeersLocked()
		m.beatIfIdle(now)
		if q := queued(t, m); len(q) != 0 {
			t.Fatalf("queued %+v", q)
		}
	})
}

func TestBeatArrival(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	origin := crdt.NewReplicaID("a", 1)
	n := bareNode("b", func() time.Time { return now })
	n.names[origin] = "a"
	n.lag.addOffset("a", now, 30*time.Second, time.Millisecond) // a's clock runs 30 s ahead
	beat := must(EncodeBeat(origin, now.Add(30*time.Second-90*time.Millisecond).UnixMilli()))
	(*delegate)(n).NotifyMsg(beat)
	t.Run("the first arrival of a beat is a delay sample of its origin", func(t *testing.T) {
		if p := n.lag.peer("a", now); p.Samples != 1 || p.Delay() != 90*time.Millisecond {
			t.Fatalf("origin a: %+v", p)
		}
	})
	t.Run("the first arrival is relayed", func(t *testing.T) {
		if q := queued(t, n); len(q) != 1 || q[0].Origin != origin {
			t.Fatalf("queued %+v", q)
		}
	})
	t.Run("a beat heard again is neither a sample nor relayed", func(t *testing.T) {
		(*delegate)(n).NotifyMsg(beat)
		if p := n.lag.peer("a", now); p.Samples != 1 {
			t.Fatalf("origin a: %+v", p)
		}
		if q := queued(t, n); len(q) != 0 {
			t.Fatalf("queued %+v", q)
		}
	})
	t.Run("a beat changes nothing in the state", func(t *testing.T) {
		if st := n.state.Stats(); st.Entries != 0 || st.Registers != 0 {
			t.Fatalf("state %+v", st)
		}
	})
}

func TestClockSkewIsLoggedOnceAMinute(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	var buf bytes.Buffer
	n := bareNode("a", func() time.Time { return now })
	n.log = zerolog.New(&buf)
	for _, p := range []string{"b", "c", "d"} {
		n.peers[p] = memberlist.Node{Name: p}
	}
	// Two of three peers agree among themselves, 6 minutes ahead of a.
	n.lag.addOffset("b", now, 6*time.Minute, time.Millisecond)
	n.lag.addOffset("c", now, 6*time.Minute+time.Second, time.Millisecond)
	n.lag.addOffset("d", now, 0, time.Millisecond)
	lines := func() int { return strings.Count(buf.String(), "clock is") }
	n.checkClock(now)
	t.Run("a node whose clock is 6 minutes off its peers' median says so", func(t *testing.T) {
		if lines() != 1 || !strings.Contains(buf.String(), `"level":"warn"`) {
			t.Fatalf("log:\n%s", buf.String())
		}
	})
	t.Run("it says so once a minute, not at every check", func(t *testing.T) {
		now = now.Add(15 * time.Second)
		n.checkClock(now)
		if lines() != 1 {
			t.Fatalf("log:\n%s", buf.String())
		}
		now = now.Add(time.Minute)
		n.checkClock(now)
		if lines() != 2 {
			t.Fatalf("log:\n%s", buf.String())
		}
	})
	t.Run("a node in step with its peers' median says nothing", func(t *testing.T) {
		var quiet bytes.Buffer
		m := bareNode("a", func() time.Time { return now })
		m.log = zerolog.New(&quiet)
		m.peers["b"] = memberlist.Node{Name: "b"}
		m.lag.addOffset("b", now, 4*time.Minute, time.Millisecond)
		m.checkClock(now)
		if quiet.Len() != 0 {
			t.Fatalf("log:\n%s", quiet.String())
		}
	})
}
