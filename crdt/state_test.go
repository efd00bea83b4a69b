package crdt_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/waitroom/waitroom/crdt"
)

func TestRestartedNode(t *testing.T) {
	admitted := crdt.Key{Room: "tickets", Kind: crdt.Admitted, Minute: now}
	active := crdt.Key{Room: "tickets", Kind: crdt.SessionPlus, Bucket: now*60 + 300, Minute: now + 5}
	w := crdt.Windows{History: 3}

	// pop-ams admits 5 visitors, pop-fra 3; both know everything.
	ams1 := crdt.NewReplicaID("pop-ams", 1000)
	fraID := crdt.NewReplicaID("pop-fra", 2000)
	ams, fra := crdt.New(), crdt.New()
	for _, k := range []crdt.Key{admitted, active} {
		e, _ := ams.Add(k, ams1, 5)
		fra.Apply(e)
		e, _ = fra.Add(k, fraID, 3)
		ams.Apply(e)
	}
	old := ams // the state pop-ams had before it restarted; peers may still echo it

	t.Run("a restarted node gets a new replica id", func(t *testing.T) {
		if crdt.NewReplicaID("pop-ams", 1001) == ams1 {
			t.Fatal("the same id after a restart")
		}
	})

	t.Run("a restarted node neither double counts nor loses others' counts", func(t *testing.T) {
		ams2 := crdt.NewReplicaID("pop-ams", 1001)
		fra := fra.Clone()
		ams := crdt.New()
		ams.MergeState(fra) // push-pull on join
		var delta crdt.Delta
		for _, k := range []crdt.Key{admitted, active} {
			e, _ := ams.Add(k, ams2, 2)
			delta.Entries = append(delta.Entries, e)
		}
		fra.Merge(delta)
		// Late and repeated messages from the old incarnation change nothing.
		fra.Merge(old.Full())
		ams.Merge(old.Full())
		ams.Merge(old.Full())

		for name, s := range map[string]*crdt.State{"restarted node": ams, "peer": fra} {
			snap := s.Snapshot("tickets", now*60, w)
			if got := snap.AdmittedIn(now); got.Total != 10 || got.Of(ams1) != 5 || got.Of(ams2) != 2 || got.Of(fraID) != 3 {
				t.Errorf("%s: admitted %+v, want 10 = 5 (old incarnation) + 2 (new) + 3 (peer)", name, got)
			}
			if snap.Active != 10 {
				t.Errorf("%s: active %d, want 10", name, snap.Active)
			}
		}
		if !ams.Equal(fra) {
			t.Errorf("restarted node and peer differ:\n%s\n%s", dump(ams), dump(fra))
		}
	})

	t.Run("a restarted node that kept its replica id would have its new counts hidden by max-merge", func(t *testing.T) {
		fra := fra.Clone()
		fresh := crdt.New()
		e, _ := fresh.Add(admitted, ams1, 2) // entry 2, below the 5 peers already hold
		if fra.Apply(e) {
			t.Fatal("a smaller entry changed the peer")
		}
		if got := fra.Value(admitted); got != 8 {
			t.Errorf("admitted %d, want 8: the 2 new admissions are invisible", got)
		}
	})
}

func TestNewReplicaID(t *testing.T) {
	t.Run("every incarnation of a node gets its own id", func(t *testing.T) {
		seen := map[crdt.ReplicaID]uint64{}
		for inc := range uint64(10_000) {
			inc := 1_763_700_000_000_000_000 + inc*1_000_000_007
			id := crdt.NewReplicaID("pop-ams", inc)
			if prev, dup := seen[id]; dup {
				t.Fatalf("incarnations %d and %d share id %v", prev, inc, id)
			}
			seen[id] = inc
		}
	})
	t.Run("the same name and incarnation give the same id", func(t *testing.T) {
		//lint:ignore SA4000 the two calls are compared on purpose: the test is that they agree
		if crdt.NewReplicaID("pop-ams", 7) != crdt.NewReplicaID("pop-ams", 7) {
			t.Fatal("not deterministic")
		}
	})
	t.Run("nodes with different names get different ids", func(t *testing.T) {
		if crdt.NewReplicaID("pop-ams", 7) == crdt.NewReplicaID("pop-fra", 7) {
			t.Fatal("same id")
		}
	})
	t.Run("digits of the name are not confused with digits of the incarnation", func(t *testing.T) {
		if crdt.NewReplicaID("a1", 2) == crdt.NewReplicaID("a", 12) {
			t.Fatal(`"a1"/2 and "a"/12 share an id`)
		}
	})
	t.Run("no id is zero, which means no replica", func(t *testing.T) {
		for inc := range uint64(1000) {
			if crdt.NewReplicaID("", inc) == 0 {
				t.Fatalf("zero id for incarnation %d", inc)
			}
		}
	})
	t.Run("an id prints as sixteen hex digits", func(t *testing.T) {
		if got := crdt.ReplicaID(0xab).String(); got != "00000000000000ab" {
			t.Fatalf("got %q", got)
		}
	})
}

func TestHLC(t *testing.T) {
	next := []struct {
		name string
		last crdt.HLC
		now  int64
		want crdt.HLC
	}{
		{"a wall clock past the last stamp starts a new millisecond", crdt.HLC{Wall: 100, Logical: 7}, 101, crdt.HLC{Wall: 101}},
		{"a second stamp in the same millisecond raises the logical counter", crdt.HLC{Wall: 100, Logical: 7}, 100, crdt.HLC{Wall: 100, Logical: 8}},
		{"a wall clock behind a stamp already seen keeps that stamp's wall", crdt.HLC{Wall: 100, Logical: 0}, 40, crdt.HLC{Wall: 100, Logical: 1}},
		{"a spent logical counter moves on to the next millisecond", crdt.HLC{Wall: 100, Logical: math.MaxUint32}, 100, crdt.HLC{Wall: 101}},
	}
	for _, tt := range next {
		t.Run("Next: "+tt.name, func(t *testing.T) {
			got := tt.last.Next(tt.now)
			if got != tt.want {
				t.Errorf("Next(%d) after %+v = %+v, want %+v", tt.now, tt.last, got, tt.want)
			}
			if !tt.last.Less(got) {
				t.Errorf("Next(%d) = %+v is not after %+v", tt.now, got, tt.last)
			}
		})
	}

	maxes := []struct {
		name string
		a, b crdt.HLC
		want crdt.HLC
	}{
		{"the larger wall wins", crdt.HLC{Wall: 2}, crdt.HLC{Wall: 1, Logical: 9}, crdt.HLC{Wall: 2}},
		{"on equal walls the larger logical counter wins", crdt.HLC{Wall: 2, Logical: 1}, crdt.HLC{Wall: 2, Logical: 3}, crdt.HLC{Wall: 2, Logical: 3}},
		{"equal stamps give that stamp", crdt.HLC{Wall: 2, Logical: 1}, crdt.HLC{Wall: 2, Logical: 1}, crdt.HLC{Wall: 2, Logical: 1}},
	}
	for _, tt := range maxes {
		t.Run("Max: "+tt.name, func(t *testing.T) {
			if got := tt.a.Max(tt.b); got != tt.want {
				t.Errorf("%+v.Max(%+v) = %+v, want %+v", tt.a, tt.b, got, tt.want)
			}
			if got := tt.b.Max(tt.a); got != tt.want {
				t.Errorf("%+v.Max(%+v) = %+v, want %+v", tt.b, tt.a, got, tt.want)
			}
		})
	}

	t.Run("a node that has seen a stamp from a fast peer writes after it", func(t *testing.T) {
		s := crdt.New()
		s.ApplyRegister(crdt.RegisterEntry{Name: "room/tickets", Reg: crdt.LWW[[]byte]{Value: []byte("peer"), Stamp: crdt.HLC{Wall: 5000, Logical: 3}, Replica: nodeB}})
		e := s.SetRegister("room/tickets", []byte("mine"), nodeA, 1000) // our clock is 4 s behind
		if want := (crdt.HLC{Wall: 5000, Logical: 4}); e.Reg.Stamp != want {
			t.Fatalf("stamp %+v, want %+v", e.Reg.Stamp, want)
		}
		if r, _ := s.Register("room/tickets"); string(r.Value) != "mine" {
			t.Fatalf("register %q, want our later write", r.Value)
		}
	})
}

func TestLWWTies(t *testing.T) {
	stamp := crdt.HLC{Wall: 1000}
	fromA := crdt.LWW[string]{Value: "a", Stamp: stamp, Replica: nodeA}
	fromB := crdt.LWW[string]{Value: "b", Stamp: stamp, Replica: nodeB}
	later := crdt.LWW[string]{Value: "late", Stamp: crdt.HLC{Wall: 1000, Logical: 1}, Replica: nodeA}
	tests := []struct {
		name  string
		order []crdt.LWW[string]
		want  string
	}{
		{"equal stamps: the larger replica wins when it arrives last", []crdt.LWW[string]{fromA, fromB}, "b"},
		{"equal stamps: the larger replica wins when it arrives first", []crdt.LWW[string]{fromB, fromA}, "b"},
		{"a larger stamp wins over a larger replica", []crdt.LWW[string]{fromB, later}, "late"},
		{"a larger stamp wins whichever arrives first", []crdt.LWW[string]{later, fromB, fromA}, "late"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l crdt.LWW[string]
			for _, w := range tt.order {
				l.Merge(w)
			}
			if l.Value != tt.want {
				t.Errorf("settled on %q, want %q", l.Value, tt.want)
			}
		})
	}

	t.Run("two nodes writing in the same millisecond settle on the larger replica's value", func(t *testing.T) {
		a, b := crdt.New(), crdt.New()
		ea := a.SetRegister("room/tickets", []byte("from a"), nodeA, 1000)
		eb := b.SetRegister("room/tickets", []byte("from b"), nodeB, 1000)
		if ea.Reg.Stamp != eb.Reg.Stamp {
			t.Fatalf("stamps %+v and %+v, want a tie", ea.Reg.Stamp, eb.Reg.Stamp)
		}
		if !a.ApplyRegister(eb) || b.ApplyRegister(ea) {
			t.Fatal("the tie went to the smaller replica on one side")
		}
		for _, s := range []*crdt.State{a, b} {
			if r, _ := s.Register("room/tickets"); string(r.Value) != "from b" {
				t.Errorf("register %q, want %q", r.Value, "from b")
			}
		}
	})
}

func TestStateEdges(t *testing.T) {
	k := crdt.Key{Room: "tickets", Kind: crdt.Admitted, Minute: now}
	tests := []struct {
		name string
		key  crdt.Key
		n    uint64
		ok   bool
	}{
		{"Add counts one admission", k, 1, true},
		{"Add refuses a zero increment", k, 0, false},
		{"Add refuses a minute before the horizon", crdt.Key{Room: "tickets", Kind: crdt.Admitted, Minute: now - 11}, 1, false},
		{"Add accepts the horizon minute itself", crdt.Key{Room: "tickets", Kind: crdt.Admitted, Minute: now - 10}, 1, true},
		{"Add refuses a cell without a room", crdt.Key{Kind: crdt.Admitted, Minute: now}, 1, false},
		{"Add refuses kind zero, which peers would refuse", crdt.Key{Room: "tickets", Minute: now}, 1, false},
		{"Add accepts an analytics kind", crdt.Key{Room: "tickets", Kind: crdt.AnalyticsBase + 3, Minute: now}, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := crdt.New()
			s.Prune(now - 10)
			e, ok := s.Add(tt.key, nodeA, tt.n)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if !ok {
				if st := s.Stats(); st.Cells != 0 || st.Rooms != 0 {
					t.Fatalf("a refused Add left %+v", st)
				}
				return
			}
			if e != (crdt.Entry{Key: tt.key, Replica: nodeA, Value: tt.n}) {
				t.Fatalf("entry %+v", e)
			}
			// What Add accepts, a peer accepts.
			peer := crdt.New()
			peer.Prune(now - 10)
			if !peer.Apply(e) || !peer.Equal(s) {
				t.Fatalf("a peer did not take the entry: %s", dump(peer))
			}
		})
	}

	t.Run("Full lists cells by room, kind, bucket and minute, then replica", func(t *testing.T) {
		s := crdt.New()
		s.Apply(crdt.Entry{Key: crdt.Key{Room: "b", Kind: crdt.Admitted, Minute: 2}, Replica: nodeB, Value: 1})
		s.Apply(crdt.Entry{Key: crdt.Key{Room: "a", Kind: crdt.WaitingPlus, Bucket: 1, Minute: 2}, Replica: nodeB, Value: 1})
		s.Apply(crdt.Entry{Key: crdt.Key{Room: "a", Kind: crdt.WaitingPlus, Bucket: 1, Minute: 2}, Replica: nodeA, Value: 1})
		s.Apply(crdt.Entry{Key: crdt.Key{Room: "a", Kind: crdt.Admitted, Minute: 3}, Replica: nodeA, Value: 1})
		s.Apply(crdt.Entry{Key: crdt.Key{Room: "a", Kind: crdt.Admitted, Minute: 1}, Replica: nodeA, Value: 1})
		var got []string
		for _, e := range s.Full().Entries {
			got = append(got, fmt.Sprintf("%s/%d/%d/%d/%x", e.Key.Room, e.Key.Kind, e.Key.Bucket, e.Key.Minute, uint64(e.Replica)))
		}
		want := []string{"a/2/0/1/a", "a/2/0/3/a", "a/5/1/2/a", "a/5/1/2/b", "b/2/0/2/b"}
		if !slices.Equal(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	})

	t.Run("Prune drops old cells, counts them, and ignores a lower horizon", func(t *testing.T) {
		s := crdt.New()
		for m := range int64(5) {
			s.Add(crdt.Key{Room: "tickets", Kind: crdt.Arrivals, Minute: now + m}, nodeA, 1)
		}
		if n := s.Prune(now + 3); n != 3 {
			t.Fatalf("dropped %d cells, want 3", n)
		}
		if n := s.Prune(now + 1); n != 0 || s.Horizon() != now+3 {
			t.Fatalf("a lower horizon dropped %d and moved the horizon to %d", n, s.Horizon()-now)
		}
	})

	t.Run("Clone is independent of the original", func(t *testing.T) {
		s := crdt.New()
		s.Add(k, nodeA, 1)
		s.SetRegister("r", []byte("x"), nodeA, 1)
		c := s.Clone()
		c.Add(k, nodeA, 1)
		c.Add(k, nodeB, 1)
		c.SetRegister("r", []byte("y"), nodeA, 2)
		if s.Value(k) != 1 || s.Get(k, nodeB) != 0 {
			t.Fatalf("original changed: %s", dump(s))
		}
		if r, _ := s.Register("r"); string(r.Value) != "x" {
			t.Fatalf("original register changed to %q", r.Value)
		}
	})

	t.Run("a register keeps its own copy of the written bytes", func(t *testing.T) {
		s := crdt.New()
		v := []byte("abc")
		e := s.SetRegister("r", v, nodeA, 1)
		v[0] = 'X'
		peer := crdt.New()
		peer.ApplyRegister(e)
		e.Reg.Value[1] = 'Y'
		if r, _ := s.Register("r"); string(r.Value) == "Xbc" {
			t.Fatalf("SetRegister kept the caller's slice")
		}
		if r, _ := peer.Register("r"); string(r.Value) != "abc" {
			t.Fatalf("ApplyRegister kept the message's slice: %q", r.Value)
		}
	})
}
