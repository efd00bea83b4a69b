package crdt_test

import (
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/waitroom/waitroom/crdt"
)

func TestNewGroup(t *testing.T) {
	cases := []struct {
		name string
		in   []crdt.ReplicaID
		want []crdt.ReplicaID
	}{
		{"replicas are sorted", []crdt.ReplicaID{3, 1, 2}, []crdt.ReplicaID{1, 2, 3}},
		{"a replica named twice is summed once", []crdt.ReplicaID{2, 1, 2}, []crdt.ReplicaID{1, 2}},
		{"the zero replica is no replica", []crdt.ReplicaID{0, 5}, []crdt.ReplicaID{5}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := crdt.NewGroup("east", c.in)
			if !slices.Equal(g.Replicas, c.want) || g.Datacenter != "east" {
				t.Fatalf("NewGroup(east, %v) = %+v, want replicas %v", c.in, g, c.want)
			}
			if err := g.Check(); err != nil {
				t.Fatalf("a group NewGroup made fails its check: %v", err)
			}
		})
	}
}

func TestGroupID(t *testing.T) {
	abc := crdt.NewGroup("east", []crdt.ReplicaID{1, 2, 3})
	cases := []struct {
		name string
		a, b crdt.Group
		same bool
	}{
		{"the order replicas are given in does not matter", abc, crdt.NewGroup("east", []crdt.ReplicaID{3, 2, 1}), true},
		{"another set of the same data center is another group", abc, crdt.NewGroup("east", []crdt.ReplicaID{1, 2}), false},
		{"the same set in another data center is another group", abc, crdt.NewGroup("west", []crdt.ReplicaID{1, 2, 3}), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.a.ID() == c.b.ID(); got != c.same {
				t.Fatalf("%+v and %+v: same id %v, want %v", c.a, c.b, got, c.same)
			}
		})
	}
}

func TestGroupCheck(t *testing.T) {
	long := make([]byte, crdt.MaxDatacenterName+1)
	for i := range long {
		long[i] = 'a'
	}
	many := make([]crdt.ReplicaID, crdt.MaxGroupReplicas+1)
	for i := range many {
		many[i] = crdt.ReplicaID(i + 1)
	}
	cases := []struct {
		name string
		g    crdt.Group
		ok   bool
	}{
		{"a data center and its replicas pass", crdt.Group{Datacenter: "east", Replicas: []crdt.ReplicaID{1, 2}}, true},
		{"a group without a data center fails", crdt.Group{Replicas: []crdt.ReplicaID{1}}, false},
		{"a data center's name past the bound fails", crdt.Group{Datacenter: string(long), Replicas: []crdt.ReplicaID{1}}, false},
		{"a group of no replica fails", crdt.Group{Datacenter: "east"}, false},
		{"a group of too many replicas fails", crdt.Group{Datacenter: "east", Replicas: many}, false},
		{"replicas out of order fail", crdt.Group{Datacenter: "east", Replicas: []crdt.ReplicaID{2, 1}}, false},
		{"a replica named twice fails", crdt.Group{Datacenter: "east", Replicas: []crdt.ReplicaID{1, 1}}, false},
		{"the zero replica fails", crdt.Group{Datacenter: "east", Replicas: []crdt.ReplicaID{0, 1}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.g.Check(); (err == nil) != c.ok {
				t.Fatalf("Check() = %v, want ok %v", err, c.ok)
			}
		})
	}
}

func TestCheckAggregate(t *testing.T) {
	now := base * 60_000
	k := crdt.Key{Room: "tickets", Kind: crdt.Admitted, Minute: base}
	cases := []struct {
		name     string
		e        crdt.Entry
		replicas int
		reason   string // "" when accepted
	}{
		{"a sum of three replicas may pass one node's bound", crdt.Entry{Key: k, Replica: 9, Value: 3 * crdt.MaxEntryValue}, 3, ""},
		{"a sum past every replica's bound is refused", crdt.Entry{Key: k, Replica: 9, Value: 3*crdt.MaxEntryValue + 1}, 3, crdt.RefusedImpossibleValue},
		{"a cell dated past the clock offset is refused", crdt.Entry{Key: crdt.Key{Room: "tickets", Kind: crdt.Admitted, Minute: base + 3}, Replica: 9, Value: 1}, 3, crdt.RefusedFutureMinute},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := crdt.CheckAggregate(c.e, c.replicas, now)
			var oob *crdt.OutOfBounds
			switch {
			case c.reason == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.reason != "" && (!errors.As(err, &oob) || oob.Reason != c.reason):
				t.Fatalf("CheckAggregate = %v, want a refusal for %s", err, c.reason)
			}
		})
	}
}

// eastCarried is what a carrier of east, whose live members are a and b
// and whose replica c was lost, writes for one cell where a counted 4, b 5
// and c 2.
func eastCarried(k crdt.Key) (crdt.Delta, crdt.Group) {
	east := crdt.New()
	east.SetDatacenter("east")
	east.Add(k, 0xa, 4)
	east.Add(k, 0xb, 5)
	east.Add(k, 0xc, 2)
	return east.Carry("east", []crdt.ReplicaID{0xa, 0xb}, nil), crdt.NewGroup("east", []crdt.ReplicaID{0xa, 0xb})
}

func TestCarry(t *testing.T) {
	k := crdt.Key{Room: "tickets", Kind: crdt.Admitted, Minute: base}
	d, ab := eastCarried(k)
	c := crdt.NewGroup("east", []crdt.ReplicaID{0xc})
	t.Run("the live members are summed under one group and a lost replica under its own", func(t *testing.T) {
		want := map[crdt.ReplicaID]uint64{ab.ID(): 9, c.ID(): 2}
		if len(d.Aggregates) != len(want) {
			t.Fatalf("aggregates %+v, want %v", d.Aggregates, want)
		}
		for _, e := range d.Aggregates {
			if e.Key != k || want[e.Replica] != e.Value {
				t.Fatalf("aggregate %+v, want %v", e, want)
			}
		}
	})
	t.Run("every group an aggregate names goes with it", func(t *testing.T) {
		var ids []crdt.ReplicaID
		for _, g := range d.Groups {
			ids = append(ids, g.ID())
		}
		slices.Sort(ids)
		want := []crdt.ReplicaID{ab.ID(), c.ID()}
		slices.Sort(want)
		if !slices.Equal(ids, want) {
			t.Fatalf("groups %v, want %v", d.Groups, want)
		}
	})
	t.Run("carrying again with nothing new writes nothing", func(t *testing.T) {
		east := crdt.New()
		east.Add(k, 0xa, 1)
		east.Carry("east", []crdt.ReplicaID{0xa}, nil)
		if again := east.Carry("east", []crdt.ReplicaID{0xa}, []crdt.Key{k}); !again.Empty() {
			t.Fatalf("second carry sent %+v", again)
		}
	})
}

func TestSnapshotOfAnotherDatacenter(t *testing.T) {
	k := crdt.Key{Room: "tickets", Kind: crdt.Admitted, Minute: base}
	d, _ := eastCarried(k)
	west := crdt.New()
	west.SetDatacenter("west")
	west.Add(k, 0x1, 3)
	west.Merge(d)
	eastID := crdt.DatacenterReplica("east")

	t.Run("a node sums its own replicas and another data center's figure", func(t *testing.T) {
		snap := west.Snapshot("tickets", base*60+30, crdt.Windows{})
		m := snap.AdmittedIn(base)
		if m.Total != 14 || m.Of(0x1) != 3 || m.Of(eastID) != 11 || len(m.ByReplica) != 2 {
			t.Fatalf("admitted %+v, want 14 in all: 3 of replica 1 and 11 of east as one replica", m)
		}
		if v := west.Value(k); v != 14 {
			t.Fatalf("Value = %d, want 14", v)
		}
	})
	t.Run("a data center left out by keep is not summed", func(t *testing.T) {
		snap := west.SnapshotOf("tickets", base*60+30, crdt.Windows{}, func(r crdt.ReplicaID) bool { return r != eastID })
		if m := snap.AdmittedIn(base); m.Total != 3 {
			t.Fatalf("admitted %+v, want only the own 3", m)
		}
	})
	t.Run("a node never sums its own data center's aggregates", func(t *testing.T) {
		east := crdt.New()
		east.SetDatacenter("east")
		east.Add(k, 0xa, 4)
		east.Merge(d) // heard back from another carrier
		if v := east.Value(k); v != 4 {
			t.Fatalf("Value = %d, want its own replicas' 4 only", v)
		}
	})
	t.Run("the data centers read are listed", func(t *testing.T) {
		if dcs := west.Datacenters(); !slices.Equal(dcs, []string{"east"}) {
			t.Fatalf("Datacenters() = %v, want [east]", dcs)
		}
	})
	t.Run("a cell only other data centers wrote is listed and summed", func(t *testing.T) {
		only := crdt.New()
		only.SetDatacenter("west")
		only.Merge(d)
		if keys := only.Keys("tickets", crdt.Admitted); len(keys) != 1 || keys[0] != k {
			t.Fatalf("Keys = %v, want [%v]", keys, k)
		}
		if got := only.SumByBucket("tickets", crdt.Admitted, base, base); got[0] != 11 {
			t.Fatalf("SumByBucket = %v, want 11 in bucket 0", got)
		}
	})
	t.Run("analytics count other data centers", func(t *testing.T) {
		ak := crdt.Key{Room: "tickets", Kind: crdt.VisitorsAdmitted, Minute: base}
		ad, _ := eastCarried(ak)
		s := crdt.New()
		s.SetDatacenter("west")
		s.Merge(ad)
		if a := s.Analytics("tickets", base, base); a.Counters[crdt.VisitorsAdmitted] != 11 {
			t.Fatalf("analytics %v, want 11 admitted", a.Counters)
		}
	})
}

func TestAggregatePruning(t *testing.T) {
	k := crdt.Key{Room: "tickets", Kind: crdt.Admitted, Minute: base}
	d, _ := eastCarried(k)
	s := crdt.New()
	s.SetDatacenter("west")
	s.Merge(d)
	if st := s.Stats(); st.Aggregates != 2 || st.Groups != 2 || st.AggregateCells != 1 {
		t.Fatalf("stats %+v before pruning", st)
	}
	s.Prune(base + 1)
	t.Run("pruning drops the cells and the groups no entry names", func(t *testing.T) {
		if st := s.Stats(); st.Aggregates != 0 || st.Groups != 0 || st.Rooms != 0 {
			t.Fatalf("stats %+v after pruning", st)
		}
	})
	t.Run("a late aggregate of a pruned minute is not taken", func(t *testing.T) {
		if changed := s.Merge(d); len(changed.Aggregates) != 0 || s.Value(k) != 0 {
			t.Fatalf("merged %+v after pruning; value %d", changed, s.Value(k))
		}
	})
}

func TestPackingOfOneDatacentersGroups(t *testing.T) {
	k := crdt.Key{Room: "tickets", Kind: crdt.Admitted, Minute: base}
	g := func(rs ...crdt.ReplicaID) crdt.Group { return crdt.NewGroup("east", rs) }
	type write struct {
		g crdt.Group
		v uint64
	}
	cases := []struct {
		name   string
		writes []write
		want   uint64
	}{
		{"one group is read as it is", []write{{g(1, 2, 3), 7}}, 7},
		{"the two sides of a split add up", []write{{g(1, 2, 3), 7}, {g(1, 2), 8}, {g(3), 4}, {g(1), 3}, {g(2), 2}}, 12},
		{"overlapping groups are never added", []write{{g(1, 2, 3), 9}, {g(1, 2, 3, 4), 10}}, 10},
		{"a larger old sum wins over a partial new one", []write{{g(1, 2, 3), 9}, {g(1, 2), 5}}, 9},
		{"lost replicas' own groups complete the live members' one", []write{{g(1, 2), 5}, {g(3), 2}, {g(4), 1}}, 8},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := crdt.New()
			s.SetDatacenter("west")
			var d crdt.Delta
			for _, w := range c.writes {
				d.Groups = append(d.Groups, w.g)
				d.Aggregates = append(d.Aggregates, crdt.Entry{Key: k, Replica: w.g.ID(), Value: w.v})
			}
			s.Merge(d)
			if got := s.Value(k); got != c.want {
				t.Fatalf("read %d, want %d", got, c.want)
			}
		})
	}
	t.Run("an entry whose group has not arrived counts only alone", func(t *testing.T) {
		s := crdt.New()
		s.SetDatacenter("west")
		known := g(1, 2)
		s.Merge(crdt.Delta{Groups: []crdt.Group{known}, Aggregates: []crdt.Entry{
			{Key: k, Replica: known.ID(), Value: 5},
			{Key: k, Replica: g(3).ID(), Value: 4}, // group not sent
		}})
		if got := s.Value(k); got != 5 {
			t.Fatalf("read %d, want the known group's 5 (the other may overlap it)", got)
		}
		s.AddGroup(g(3))
		if got := s.Value(k); got != 9 {
			t.Fatalf("read %d once the group arrived, want 9", got)
		}
	})
}

func TestOtherDatacenterNodes(t *testing.T) {
	east3 := crdt.NewGroup("east", []crdt.ReplicaID{1, 2, 3})
	east1 := crdt.NewGroup("east", []crdt.ReplicaID{4})
	west2 := crdt.NewGroup("west", []crdt.ReplicaID{5, 6})
	home := crdt.NewGroup("home", []crdt.ReplicaID{7, 8, 9, 10})
	cases := []struct {
		name   string
		local  string
		groups []crdt.Group
		nodes  map[string]int
		others int
	}{
		{"a node that names no data center counts none", "", []crdt.Group{east3, west2}, map[string]int{"east": 3, "west": 2}, 0},
		{"each other data center counts the replicas of its largest group", "home", []crdt.Group{east3, east1, west2}, map[string]int{"east": 3, "west": 2}, 5},
		{"the node's own data center is not another", "home", []crdt.Group{home, west2}, map[string]int{"west": 2}, 2},
		{"no groups held, no other nodes", "home", nil, map[string]int{}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := crdt.New()
			s.SetDatacenter(c.local)
			for _, g := range c.groups {
				s.AddGroup(g)
			}
			if got := s.DatacenterNodes(); !maps.Equal(got, c.nodes) {
				t.Fatalf("DatacenterNodes() = %v, want %v", got, c.nodes)
			}
			if got := s.OtherDatacenterNodes(); got != c.others {
				t.Fatalf("OtherDatacenterNodes() = %d, want %d", got, c.others)
			}
		})
	}
}
