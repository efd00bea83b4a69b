package policy_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/policy"
)

// restartedLine is a line of four visitors who came within a second, eleven
// seconds into an arrival slot, counted and shown their places; then its
// node stops at 40 s and starts again at 50 s, its chain resumed with what
// it saved (or not at all, with resume false).
func restartedLine(t *testing.T, resume bool) (*line, []int64) {
	t.Helper()
	s := time.Second
	l := newLine(t)
	l.came = []time.Duration{11 * s, 11*s + 300*time.Millisecond, 11*s + 600*time.Millisecond, 11*s + 900*time.Millisecond}
	var before []int64
	for _, c := range l.came {
		before = append(before, l.place(c, 40*s, false))
	}
	saved := l.chain.Last().SavePlaces()
	if len(saved) == 0 {
		t.Fatal("a node with visitors in line saved no places")
	}
	l.chain = policy.NewChain(nairobi, policy.Continuous)
	if resume {
		var err error
		if l.chain, err = policy.ResumeChain(nairobi, policy.Continuous, saved); err != nil {
			t.Fatal(err)
		}
	}
	l.now = 50 * s // down for ten seconds
	return l, before
}

func TestARestartedNodeKeepsItsVisitorsPlaces(t *testing.T) {
	s := time.Second
	t.Run("before the restart the four are told 0, 1, 2 and 3 ahead", func(t *testing.T) {
		_, before := restartedLine(t, true)
		for i, p := range before {
			if p != int64(i) {
				t.Errorf("visitor %d told %d ahead, want %d", i, p, i)
			}
		}
	})
	t.Run("after it, each is told the same place", func(t *testing.T) {
		l, before := restartedLine(t, true)
		for i, c := range l.came {
			if got := l.place(c, 55*s, false); got != before[i] {
				t.Errorf("visitor %d told %d ahead after the restart, %d before", i, got, before[i])
			}
		}
	})
	t.Run("without what it saved, the first would be told the slot's share", func(t *testing.T) {
		// The case the saved places are for: if this stops failing, the
		// test above proves nothing.
		l, _ := restartedLine(t, false)
		if got := l.place(l.came[0], 55*s, false); got == 0 {
			t.Errorf("a fresh chain told the first 0 ahead: the restart test cannot tell the saved places from none")
		}
	})
	t.Run("each other node's curve is kept too: its let-ins still take its own earliest", func(t *testing.T) {
		// The first line of TestEachOtherNodesGoneAreItsOwnEarliest,
		// its node down from 25 to 30 s.
		l := newLine(t)
		l.came = []time.Duration{12 * s, 16 * s}
		l.away = []awayVisitor{{node: crdt.NewReplicaID("cairo", 1), came: 5 * s}, {node: dublin, came: 15 * s, in: 20 * s}}
		if got := l.place(12*s, 25*s, false); got != 1 {
			t.Fatalf("before the restart the first here is told %d ahead, want 1", got)
		}
		var err error
		if l.chain, err = policy.ResumeChain(nairobi, policy.Continuous, l.chain.Last().SavePlaces()); err != nil {
			t.Fatal(err)
		}
		l.now = 30 * s
		if got := l.place(12*s, 35*s, false); got != 1 {
			t.Errorf("after it, told %d ahead, want 1", got)
		}
	})
	t.Run("places saved by the version before, without the other nodes' curves, are taken back", func(t *testing.T) {
		v1 := []byte{1, 0, 0, 1, 2, 1, 4, 1, 0, 2, 4, 0, 0} // one slot, one point
		if _, err := policy.ResumeChain(nairobi, policy.Continuous, v1); err != nil {
			t.Error(err)
		}
	})
	t.Run("a node with nobody in line saves nothing", func(t *testing.T) {
		l := newLine(t)
		if b := l.until(10 * s).SavePlaces(); b != nil {
			t.Errorf("saved %d bytes", len(b))
		}
	})
}

func TestPlacesThatCannotBeReadStartAFreshChain(t *testing.T) {
	l := newLine(t)
	l.came = []time.Duration{11 * time.Second, 12 * time.Second}
	saved := l.until(40 * time.Second).SavePlaces()
	tests := []struct {
		name string
		b    []byte
	}{
		{"another version", append([]byte{99}, saved[1:]...)},
		{"cut short", saved[:len(saved)-1]},
		{"with bytes after its end", append(append([]byte{}, saved...), 0)},
		{"a single byte", []byte{1}},
	}
	for _, tt := range tests {
		t.Run("a file "+tt.name+" is refused", func(t *testing.T) {
			c, err := policy.ResumeChain(nairobi, policy.Continuous, tt.b)
			if err == nil {
				t.Fatal("taken back")
			}
			if c.Last() != nil {
				t.Fatal("the chain beside the error is not fresh")
			}
		})
	}
}

// FuzzResumeChain takes arbitrary bytes back as a node's saved places: the
// file is sealed, but a node must survive whatever it reads (a disk that
// rots, a binary of another version). What is taken back is then put to
// every call of the allocations of a FIFO queue, and what the first of them
// saves is taken back in turn.
//
// Run it longer with
//
//	go test -run '^$' -fuzz '^FuzzResumeChain$' -fuzztime 5m ./policy/
func FuzzResumeChain(f *testing.F) {
	ll := newLine(&testing.T{})
	ll.came = []time.Duration{11 * time.Second, 11*time.Second + 100*time.Millisecond, 12 * time.Second, 31 * time.Second}
	ll.until(45 * time.Second)
	f.Add(ll.chain.Last().SavePlaces(), uint16(45))
	f.Add([]byte{1, 0, 0, 1, 2, 1, 4, 1, 0, 2, 4, 0, 0}, uint16(3))
	f.Add([]byte{2, 0, 0, 1, 2, 1, 4, 1, 0, 2, 4, 0, 0, 1, 7, 4, 1, 0, 2, 2}, uint16(3))
	f.Add([]byte{1}, uint16(0))
	start := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	m := start.Unix() / 60
	id := crdt.NewReplicaID("n1", 1)
	state := crdt.New()
	for _, e := range []crdt.Entry{
		{Key: crdt.Key{Room: "shop", Kind: crdt.WaitingPlus, Bucket: m - 1, Minute: m}, Replica: id, Value: 30},
		{Key: crdt.Key{Room: "shop", Kind: crdt.WaitingPlus, Bucket: m, Minute: m}, Replica: id, Value: 12},
		{Key: crdt.Key{Room: "shop", Kind: crdt.QueuedAt, Bucket: (m - 1) * 60, Minute: m - 1}, Replica: id, Value: 20},
		{Key: crdt.Key{Room: "shop", Kind: crdt.QueuedAt, Bucket: (m-1)*60 + 40, Minute: m - 1}, Replica: id, Value: 10},
		{Key: crdt.Key{Room: "shop", Kind: crdt.QueuedAt, Bucket: m * 60, Minute: m}, Replica: id, Value: 12},
		{Key: crdt.Key{Room: "shop", Kind: crdt.Admitted, Bucket: 0, Minute: m - 1}, Replica: id, Value: 5},
		{Key: crdt.Key{Room: "shop", Kind: crdt.VisitorsQueued, Bucket: 0, Minute: m}, Replica: id, Value: 14},
	} {
		state.Apply(e)
	}
	room := policy.Room{TotalActiveUsers: 10, NewUsersPerMinute: 5, SessionDuration: 5, Nodes: 1}
	f.Fuzz(func(t *testing.T, b []byte, at uint16) {
		c, err := policy.ResumeChain(id, policy.Continuous, b)
		if err != nil {
			return
		}
		now := start.Add(time.Duration(at%120) * time.Second)
		r := rand.New(rand.NewPCG(uint64(at), uint64(len(b))))
		var first *policy.Allocation
		for _, dt := range []time.Duration{0, 250 * time.Millisecond, 20 * time.Second} {
			snap := state.Snapshot("shop", now.Add(dt).Unix(), room.Windows())
			var a *policy.Allocation
			a, c = c.Allocate(room, &snap, now.Add(dt))
			if first == nil {
				first = a
			}
			buckets := probeBuckets(&snap)
			calls := make([]call, 40)
			for i := range calls {
				calls[i] = call{
					v:   policy.Visitor{Bucket: buckets[r.IntN(len(buckets))], Queued: r.IntN(2) == 0, Arrived: uint16(r.IntN(700))},
					how: r.IntN(3), group: -1, heldMs: r.IntN(10_000),
				}
			}
			exercise(t, room, &snap, a, calls)
		}
		if again := first.SavePlaces(); again != nil {
			if _, err := policy.ResumeChain(id, policy.Continuous, again); err != nil {
				t.Fatalf("what a resumed chain saved cannot be taken back: %v", err)
			}
		}
	})
}

func TestAClockStepBackKeepsThePlaces(t *testing.T) {
	s := time.Second
	l := newLine(t)
	// Three who came early in their slot: its share would tell the third 0.
	l.came = []time.Duration{2 * s, 2*s + 300*time.Millisecond, 2*s + 600*time.Millisecond}
	before := l.place(l.came[2], 40*s, false)
	// The ring's time steps back by 300 ms, as a node's first clock
	// correction after it joins may: the chain starts afresh.
	_, l.chain = l.chain.Allocate(l.room, l.snap(l.now-300*time.Millisecond), l.start.Add(l.now-300*time.Millisecond))
	if got := l.place(l.came[2], 41*s, false); got != before || before != 2 {
		t.Errorf("the third told %d ahead after the step, %d before; want 2 both times", got, before)
	}
}
