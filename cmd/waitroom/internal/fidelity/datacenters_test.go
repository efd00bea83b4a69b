package fidelity

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom/edge/edgetest"
)

// flagValues are the values of every occurrence of flag in args.
func flagValues(args []string, flag string) []string {
	var out []string
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			out = append(out, args[i+1])
		}
	}
	return out
}

func TestDatacentersLayout(t *testing.T) {
	s := datacenters(true)
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	ports := make([]int, portsPerNode(s)*s.Nodes)
	for i := range ports {
		ports[i] = 20000 + i
	}
	nodes := layout(s, "/ring", ringFiles{config: "room.yaml", cookieKey: "cookie.key", gossipKey: "gossip.key"}, ports)
	byGossip, byWAN := map[string]*node{}, map[string]*node{}
	for _, n := range nodes {
		byGossip[n.gossip], byWAN[n.wan] = n, n
	}

	t.Run("three data centers of three nodes each, every node naming its own", func(t *testing.T) {
		count := map[string]int{}
		for _, n := range nodes {
			if got := flagValues(n.args, "--datacenter"); !slices.Equal(got, []string{n.datacenter}) {
				t.Fatalf("%s names data centers %v, want [%s]", n.name, got, n.datacenter)
			}
			count[n.datacenter]++
		}
		if len(count) != 3 || count["paris"] != 3 || count["tokyo"] != 3 || count["sydney"] != 3 {
			t.Fatalf("data centers %v, want paris, tokyo and sydney with 3 nodes each", count)
		}
	})

	t.Run("a node's seed is a node of its own data center, and each data center's first node has none", func(t *testing.T) {
		for i, n := range nodes {
			seeds := flagValues(n.args, "--seed")
			if i%3 == 0 {
				if len(seeds) != 0 {
					t.Fatalf("%s, first of %s, has seeds %v", n.name, n.datacenter, seeds)
				}
				continue
			}
			if len(seeds) != 1 || byGossip[seeds[0]] == nil || byGossip[seeds[0]].datacenter != n.datacenter {
				t.Fatalf("%s (%s) has seeds %v, want one node of its own data center", n.name, n.datacenter, seeds)
			}
		}
	})

	t.Run("a node binds its own address between data centers and seeds there with every node of the other data centers", func(t *testing.T) {
		for _, n := range nodes {
			if got := flagValues(n.args, "--wan-gossip"); !slices.Equal(got, []string{n.wan}) || n.wan == n.gossip {
				t.Fatalf("%s binds %v between data centers (gossip at %s)", n.name, got, n.gossip)
			}
			seeds := flagValues(n.args, "--wan-seed")
			if len(seeds) != 6 {
				t.Fatalf("%s has %d seeds between data centers, want the 6 nodes of the other two", n.name, len(seeds))
			}
			for _, a := range seeds {
				if o := byWAN[a]; o == nil || o.datacenter == n.datacenter {
					t.Fatalf("%s (%s) seeds between data centers at %s, not a node of another data center", n.name, n.datacenter, a)
				}
			}
		}
	})

	t.Run("every node delays and loses what it sends between data centers as the scenario says", func(t *testing.T) {
		for _, n := range nodes {
			got := [][]string{flagValues(n.args, "--test-wan-delay"), flagValues(n.args, "--test-wan-jitter"), flagValues(n.args, "--test-wan-loss")}
			if !slices.Equal(got[0], []string{"50ms"}) || !slices.Equal(got[1], []string{"100ms"}) || !slices.Equal(got[2], []string{"0.01"}) {
				t.Fatalf("%s: delay, jitter and loss flags %v, want 50ms, 100ms, 0.01", n.name, got)
			}
		}
	})

	t.Run("the arrivals are uneven over the data centers and even within each", func(t *testing.T) {
		want := []float64{3, 3, 3, 2, 2, 2, 1, 1, 1}
		if !slices.Equal(s.Weights, want) {
			t.Fatalf("weights %v, want %v", s.Weights, want)
		}
	})

	t.Run("a ring that names no data center is laid out as before", func(t *testing.T) {
		plain := Scenarios(true, 3)[0]
		ps := make([]int, portsPerNode(plain)*plain.Nodes)
		for i := range ps {
			ps[i] = 21000 + i
		}
		ns := layout(plain, "/ring", ringFiles{}, ps)
		if len(ps) != 9 {
			t.Fatalf("%d ports for 3 nodes, want 9", len(ps))
		}
		for i, n := range ns {
			for _, flag := range []string{"--datacenter", "--wan-gossip", "--wan-seed", "--test-wan-delay"} {
				if v := flagValues(n.args, flag); v != nil {
					t.Fatalf("%s has %s %v", n.name, flag, v)
				}
			}
			seeds := flagValues(n.args, "--seed")
			if (i == 0 && seeds != nil) || (i > 0 && !slices.Equal(seeds, []string{ns[0].gossip})) {
				t.Fatalf("%s has seeds %v, want the first node's %s (none for the first)", n.name, seeds, ns[0].gossip)
			}
		}
	})
}

func TestDatacentersScenarioChoice(t *testing.T) {
	named := func(ss []Scenario) bool {
		return slices.ContainsFunc(ss, func(s Scenario) bool { return s.Name == "datacenters-3x3" })
	}
	t.Run("the full run has it", func(t *testing.T) {
		if !named(Scenarios(false, 3)) {
			t.Fatal("not in the full run")
		}
	})
	t.Run("the short run, CI's, has it not", func(t *testing.T) {
		if named(Scenarios(true, 3)) {
			t.Fatal("in the short run")
		}
	})
	t.Run("its short variant runs when named", func(t *testing.T) {
		ss, err := Choose(true, 3, []string{"datacenters-3x3"})
		if err != nil || len(ss) != 1 || ss[0].Length != 3*time.Minute || ss[0].Nodes != 9 {
			t.Fatalf("Choose: %v, %+v", err, ss)
		}
	})
	t.Run("a bad data-center layout is refused before anything starts", func(t *testing.T) {
		for _, c := range []struct {
			name string
			edit func(*Scenario)
		}{
			{"fewer data centers than nodes", func(s *Scenario) { s.Datacenters = s.Datacenters[1:] }},
			{"a node without one", func(s *Scenario) { s.Datacenters[4] = "" }},
			{"a WAN link without data centers", func(s *Scenario) { s.Datacenters = nil }},
			{"a loss of one", func(s *Scenario) { s.WAN.Loss = 1 }},
		} {
			s := datacenters(true)
			c.edit(&s)
			if err := s.Validate(); err == nil {
				t.Errorf("%s: accepted", c.name)
			}
		}
	})
}

// TestDatacentersRingForms starts the datacenters-3x3 ring of real
// processes, with its WAN delay, and reads each node's /state: its pool's
// members are the three nodes of its data center, and its carriers meet
// the other data centers' carriers between data centers.
func TestDatacentersRingForms(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs nine processes: not with -short")
	}
	t.Parallel() // real processes, mostly waiting on them: side by side
	bin := buildBinary(t)
	org := edgetest.NewOrigin(t)
	s := datacenters(true)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := startTestCluster(t, ctx, bin, t.TempDir(), s, org.URL)
	dcOf := map[string]string{}
	for _, n := range c.nodes {
		dcOf[n.name] = n.datacenter
	}
	carriers := map[string]int{}
	for _, n := range c.nodes {
		doc, err := c.view(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if doc.datacenter != n.datacenter {
			t.Errorf("%s says it is in %q, want %q", n.name, doc.datacenter, n.datacenter)
		}
		for _, m := range doc.members {
			if dcOf[m.name] != n.datacenter || m.datacenter != n.datacenter {
				t.Errorf("%s (%s) counts %s (%s, says %s) a member", n.name, n.datacenter, m.name, dcOf[m.name], m.datacenter)
			}
		}
		if doc.alive != 3 {
			t.Errorf("%s sees %d members alive, want its data center's 3", n.name, doc.alive)
		}
		if doc.carrier {
			carriers[n.datacenter]++
			if doc.wanMembers < 6 {
				t.Errorf("%s carries but meets %d members between data centers, want the 6 carriers", n.name, doc.wanMembers)
			}
		}
	}
	for _, dc := range datacenterNames {
		if carriers[dc] < 2 {
			t.Errorf("%s has %d carriers, want 2 (carriers by data center: %v)", dc, carriers[dc], carriers)
		}
	}
}
