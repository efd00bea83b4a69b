package gossip

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/rs/zerolog"

	"github.com/waitroom/waitroom/crdt"
)

func TestBeatRegisters(t *testing.T) {
	a, b := crdt.NewReplicaID("a", 1), crdt.NewReplicaID("b", 1)
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		reg   crdt.RegisterEntry
		valid bool
	}{
		{"a beat under its writer's name holding a time is accepted", crdt.RegisterEntry{Name: BeatRegister(a), Reg: crdt.LWW[[]byte]{Value: encodeBeat(now.UnixMilli()), Replica: a}}, true},
		{"a beat written by another replica is refused", crdt.RegisterEntry{Name: BeatRegister(a), Reg: crdt.LWW[[]byte]{Value: encodeBeat(now.UnixMilli()), Replica: b}}, false},
		{"a beat that holds no time is refused", crdt.RegisterEntry{Name: BeatRegister(a), Reg: crdt.LWW[[]byte]{Value: []byte("soon"), Replica: a}}, false},
		{"a beat at time zero is refused", crdt.RegisterEntry{Name: BeatRegister(a), Reg: crdt.LWW[[]byte]{Value: encodeBeat(0), Replica: a}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := checkBeat(tc.reg); (err == nil) != tc.valid {
				t.Fatalf("checkBeat: %v, want valid %v", err, tc.valid)
			}
		})
	}
}

func TestBeatOnlyWhenIdle(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	n := bareNode("a", clock)
	n.updateStampPeersLocked()
	beat := func() (int64, bool) {
		r, ok := n.Register(BeatRegister(n.replica))
		if !ok {
			return 0, false
		}
		return decodeBeat(r.Value)
	}
	n.beatIfIdle(now)
	t.Run("a node that has sent nothing beats", func(t *testing.T) {
		if at, ok := beat(); !ok || at != now.UnixMilli() {
			t.Fatalf("beat %d (%v), want %d", at, ok, now.UnixMilli())
		}
	})
	t.Run("a node that sent counts within the interval does not beat", func(t *testing.T) {
		now = now.Add(BeatInterval)
		n.Add(crdt.Inc{Key: crdt.Key{Room: "shop", Kind: crdt.Admitted, Minute: now.Unix() / 60}, N: 1})
		n.flush()
		now = now.Add(BeatInterval / 2)
		n.beatIfIdle(now)
		if at, _ := beat(); at != now.Add(-3*BeatInterval/2).UnixMilli() {
			t.Fatalf("beat at %d, want the first one only", at)
		}
	})
	t.Run("a node idle for the interval beats again", func(t *testing.T) {
		now = now.Add(BeatInterval / 2)
		n.beatIfIdle(now)
		if at, _ := beat(); at != now.UnixMilli() {
			t.Fatalf("beat at %d, want %d", at, now.UnixMilli())
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
