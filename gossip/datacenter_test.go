package gossip_test

import (
	"fmt"
	"github.com/hashicorp/memberlist"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/gossip"
	"github.com/waitroom/waitroom/gossip/testkit"
)

// twoDatacenters names the data center of node i in a ring of east and
// west, three nodes each: nodes 0-2 in east, 3-5 in west.
func twoDatacenters(i int) string {
	if i < 3 {
		return "east"
	}
	return "west"
}

// replicasOf are the replicas of the nodes of data center dc.
func (c *cluster) replicasOf(dc string) map[crdt.ReplicaID]bool {
	out := map[crdt.ReplicaID]bool{}
	for i, n := range c.nodes {
		if n != nil && c.dcs[i] == dc {
			out[n.Replica()] = true
		}
	}
	return out
}

// waitCarriers waits until every data center of the cluster has a live
// carrier and every carrier sees every data center between data centers.
func (c *cluster) waitCarriers(timeout time.Duration) {
	c.t.Helper()
	all := map[string]bool{}
	for i, n := range c.nodes {
		if n != nil {
			all[c.dcs[i]] = true
		}
	}
	testkit.Eventually(c.t, testkit.Wait{What: fmt.Sprintf("a carrier in each of %d data centers, seeing the others", len(all)), Timeout: timeout, Seen: func() string {
		var b strings.Builder
		for i, n := range c.nodes {
			if n != nil {
				fmt.Fprintf(&b, "\n  node %d (%s) carrying %v, between data centers %+v", i, c.dcs[i], n.Carrying(), n.WANMembers())
			}
		}
		return b.String()
	}}, func() bool {
		carried := map[string]bool{}
		for i, n := range c.nodes {
			if n == nil || !n.Carrying() {
				continue
			}
			carried[c.dcs[i]] = true
			seen := map[string]bool{}
			for _, m := range n.WANMembers() {
				seen[m.Datacenter] = true
			}
			if len(seen) != len(all) {
				return false
			}
		}
		return len(carried) == len(all)
	})
}

// carrierOf returns the index of a live node of data center dc that
// carries, or -1.
func (c *cluster) carrierOf(dc string) int {
	for i, n := range c.nodes {
		if n != nil && c.dcs[i] == dc && n.Carrying() {
			return i
		}
	}
	return -1
}

// requireOwnCellsOnly fails unless every live node holds per-replica cells
// of its own data center's replicas only.
func (c *cluster) requireOwnCellsOnly(t *testing.T) {
	t.Helper()
	for i, n := range c.nodes {
		if n == nil {
			continue
		}
		own := c.replicasOf(c.dcs[i])
		n.Read(func(s *crdt.State) {
			for _, e := range s.Full().Entries {
				if !own[e.Replica] {
					t.Fatalf("node %d of %s holds a cell of replica %s, not of its data center: %+v", i, c.dcs[i], e.Replica, e)
				}
			}
		})
	}
}

func TestDatacenters(t *testing.T) {
	t.Run("a count at one node reaches every node of both data centers while the nodes' cells stay in theirs", func(t *testing.T) {
		c := newCluster(t, 6, clusterOpts{datacenter: twoDatacenters, carriers: 1})
		c.waitMembers(3, 10*time.Second)
		c.waitCarriers(20 * time.Second)
		k := minuteKey("shop", crdt.Admitted, nowMinute())
		for i, n := range c.nodes {
			n.Add(gossip.Inc{Key: k, N: uint64(i + 1)})
		}
		c.requireValue(t, k, 21, 30*time.Second, "every node's count")
		c.requireOwnCellsOnly(t)
		// The other data center appears as one replica, by name.
		west := crdt.DatacenterReplica("west")
		snap := c.nodes[0].Snapshot("shop", k.Minute*60, crdt.Windows{})
		if got := snap.AdmittedIn(k.Minute).Of(west); got != 4+5+6 {
			t.Fatalf("east's node 0 sees west as %d admissions, want 15: %+v", got, snap.AdmittedIn(k.Minute))
		}
		if name := c.nodes[0].ReplicaNames()[west]; name != "west" {
			t.Fatalf("west's replica is named %q", name)
		}
	})

	t.Run("members and stats name the data center and its carriers", func(t *testing.T) {
		c := newCluster(t, 6, clusterOpts{datacenter: twoDatacenters, carriers: 1})
		c.waitMembers(3, 10*time.Second)
		c.waitCarriers(20 * time.Second)
		for i, n := range c.nodes {
			if n.Datacenter() != c.dcs[i] {
				t.Fatalf("node %d: Datacenter() = %q, want %q", i, n.Datacenter(), c.dcs[i])
			}
			for _, m := range n.Members() {
				if m.Datacenter != c.dcs[i] {
					t.Fatalf("node %d lists member %s of data center %q", i, m.Name, m.Datacenter)
				}
			}
			st := n.Stats()
			if st.Datacenter != c.dcs[i] || st.Carrier != n.Carrying() || st.WAN == nil {
				t.Fatalf("node %d stats: data center %q, carrier %v, between data centers %+v", i, st.Datacenter, st.Carrier, st.WAN)
			}
		}
		carrier := c.nodes[c.carrierOf("east")]
		var dcs []string
		for _, m := range carrier.WANMembers() {
			dcs = append(dcs, m.Datacenter)
		}
		if dcs = slices.Compact(dcs); !slices.Equal(dcs, []string{"east", "west"}) {
			t.Fatalf("east's carrier sees data centers %v between data centers", dcs)
		}
	})

	t.Run("killing a carrier hands the carrying to another member", func(t *testing.T) {
		c := newCluster(t, 6, clusterOpts{datacenter: twoDatacenters, carriers: 1})
		c.waitMembers(3, 10*time.Second)
		c.waitCarriers(20 * time.Second)
		k := minuteKey("shop", crdt.Admitted, nowMinute())
		first := c.carrierOf("east")
		c.nodes[first].Add(gossip.Inc{Key: k, N: 5})
		c.requireValue(t, k, 5, 30*time.Second, "the first carrier's count")
		_ = c.nodes[first].Kill()
		c.nodes[first] = nil
		testkit.Eventually(t, testkit.Wait{What: "another member of east carrying", Timeout: 20 * time.Second}, func() bool {
			return c.carrierOf("east") >= 0
		})
		c.waitCarriers(20 * time.Second)
		var other int
		for i := range 3 {
			if c.nodes[i] != nil {
				other = i
				break
			}
		}
		c.nodes[other].Add(gossip.Inc{Key: k, N: 2})
		c.requireValue(t, k, 7, 30*time.Second, "the dead carrier's 5 and 2 more")
	})

	t.Run("with two carriers the second takes over the sending when the first dies", func(t *testing.T) {
		c := newCluster(t, 6, clusterOpts{datacenter: twoDatacenters, carriers: 2})
		c.waitMembers(3, 10*time.Second)
		c.waitCarriers(20 * time.Second)
		first := -1
		for i := range 3 {
			if gossip.CarrierRank(c.nodes[i]) == 0 {
				first = i
			}
		}
		k := minuteKey("shop", crdt.Admitted, nowMinute())
		c.nodes[first].Add(gossip.Inc{Key: k, N: 5})
		c.requireValue(t, k, 5, 30*time.Second, "the first carrier's count")
		_ = c.nodes[first].Kill()
		c.nodes[first] = nil
		other := (first + 1) % 3
		c.nodes[other].Add(gossip.Inc{Key: k, N: 2})
		c.requireValue(t, k, 7, 40*time.Second, "the first carrier's 5, dead, and 2 more")
	})

	t.Run("room settings and marks cross, node facts stay", func(t *testing.T) {
		c := newCluster(t, 6, clusterOpts{datacenter: twoDatacenters, carriers: 1})
		c.waitMembers(3, 10*time.Second)
		c.waitCarriers(20 * time.Second)
		c.nodes[1].SetRegister("room/shop", []byte(`{"total_active_users":10}`))
		if !c.nodes[1].Mark("code/shop/x", time.Now().Add(time.Hour).Unix()) {
			t.Fatal("a fresh mark was refused")
		}
		testkit.Eventually(t, testkit.Wait{What: "every node holding the room's settings and the mark", Timeout: 10 * time.Second}, func() bool {
			for _, n := range c.nodes {
				if _, ok := n.Register("room/shop"); !ok || !n.HasMark("code/shop/x") {
					return false
				}
			}
			return true
		})
		for i, n := range c.nodes {
			own := c.replicasOf(c.dcs[i])
			for name, r := range n.Registers("node/") {
				if !own[r.Replica] {
					t.Fatalf("node %d of %s holds node fact %s of another data center", i, c.dcs[i], name)
				}
			}
		}
	})
}

// eastOfFour names the data center of node i in a ring of east, four
// nodes (0-3), and west, two (4-5).
func eastOfFour(i int) string {
	if i < 4 {
		return "east"
	}
	return "west"
}

func TestDatacenterSplit(t *testing.T) {
	t.Run("the two sides of a data center cut in half both reach the other data center, and add up", func(t *testing.T) {
		fn := gossip.NewMemNet(3)
		addrs := map[string]string{}
		c := newCluster(t, 6, clusterOpts{datacenter: eastOfFour, carriers: 1,
			transport: func(t testing.TB, name string) memberlist.Transport {
				tr, err := fn.Transport("127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				addrs[name] = tr.Addr()
				return tr
			}})
		testkit.Eventually(t, testkit.Wait{What: "east's four and west's two seeing each other", Timeout: 10 * time.Second}, func() bool {
			for i, n := range c.nodes {
				if want := map[string]int{"east": 4, "west": 2}[c.dcs[i]]; n.NumMembers() != want {
					return false
				}
			}
			return true
		})
		c.waitCarriers(20 * time.Second)
		k := minuteKey("shop", crdt.Admitted, nowMinute())
		for i := range 4 {
			c.nodes[i].Add(gossip.Inc{Key: k, N: 1})
		}
		c.requireValue(t, k, 4, 30*time.Second, "east's first 4")
		// East's pool is cut in two; between data centers nothing is.
		fn.Partition([]string{addrs["node-00"], addrs["node-01"]}, []string{addrs["node-02"], addrs["node-03"]})
		testkit.Eventually(t, testkit.Wait{What: "a carrier on each side of east", Timeout: 30 * time.Second}, func() bool {
			return c.nodes[0].NumMembers() == 2 && c.nodes[2].NumMembers() == 2 &&
				(c.nodes[0].Carrying() || c.nodes[1].Carrying()) && (c.nodes[2].Carrying() || c.nodes[3].Carrying())
		})
		c.nodes[0].Add(gossip.Inc{Key: k, N: 5})
		c.nodes[3].Add(gossip.Inc{Key: k, N: 7})
		// Each side's carrier sums its own side afresh and the other's as
		// last heard, under groups of their own: west adds the two sides.
		c.requireValue(t, k, 16, 40*time.Second, "the split east's 4 + 5 + 7", 4, 5)
		fn.Heal()
		c.requireValue(t, k, 16, 30*time.Second, "east's whole once healed", 0, 1, 2, 3)
	})
}

// The distances between data centers, injected for real processes on one
// machine (Config.WANFaults): the pool between data centers forms across a
// delayed and lossy link, a count still reaches every node, and the
// pool's nodes still keep their cells in their data centers.
func TestDatacentersOverADelayedLink(t *testing.T) {
	faults := gossip.LinkFaults{Delay: 50 * time.Millisecond, Jitter: 100 * time.Millisecond, Loss: 0.01}
	c := newCluster(t, 6, clusterOpts{datacenter: twoDatacenters, carriers: 1, wanFaults: faults})
	c.waitMembers(3, 10*time.Second)
	c.waitCarriers(30 * time.Second)

	t.Run("a count at each node reaches every node of both data centers", func(t *testing.T) {
		k := minuteKey("shop", crdt.Admitted, nowMinute())
		for i, n := range c.nodes {
			n.Add(gossip.Inc{Key: k, N: uint64(i + 1)})
		}
		c.requireValue(t, k, 21, 30*time.Second, "every node's count, across the delayed link")
		c.requireOwnCellsOnly(t)
	})
}

func TestDatacenterConfig(t *testing.T) {
	cases := []struct {
		name, datacenter, label string
		ok                      bool
	}{
		{"a plain name is a data center", "eu-west-1", "", true},
		{"a name with a space is refused", "eu west", "", false},
		{"a name with a control character is refused", "eu\x00west", "", false},
		{"a name past the bound is refused", strings.Repeat("a", crdt.MaxDatacenterName+1), "", false},
		{"a label and name too long for memberlist's label are refused", "dc", strings.Repeat("l", 250), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, err := gossip.Start(gossip.Config{Name: "a", Bind: "127.0.0.1:0", Keys: [][]byte{testKey}, Profile: gossip.Local, Datacenter: c.datacenter, Label: c.label, WANBind: "127.0.0.1:0", Log: testLog(t)})
			if err == nil {
				_ = n.Kill()
			}
			if (err == nil) != c.ok {
				t.Fatalf("Start with data center %q: %v, want ok %v", c.datacenter, err, c.ok)
			}
		})
	}
	t.Run("a node naming its own name as data center is a data center of its own, as if it named none", func(t *testing.T) {
		n, err := gossip.Start(gossip.Config{Name: "pop-1", Bind: "127.0.0.1:0", Keys: [][]byte{testKey}, Profile: gossip.Local, Datacenter: "pop-1", Log: testLog(t)})
		if err != nil {
			t.Fatal(err)
		}
		defer n.Kill()
		st := n.Stats()
		if n.Datacenter() != "pop-1" || st.Datacenter != "" || st.WAN != nil || n.Carrying() {
			t.Fatalf("Datacenter() %q, stats data center %q, between data centers %+v, carrying %v", n.Datacenter(), st.Datacenter, st.WAN, n.Carrying())
		}
		if ms := n.Members(); len(ms) != 1 || ms[0].Datacenter != "pop-1" {
			t.Fatalf("members %+v, want itself as its own data center", ms)
		}
	})
}

// requireValue waits up to timeout until every live node of nodes (all
// when none is given) reads want in cell k, and fails the test naming the
// first that does not, with what it reads, and why the value is wanted.
func (c *cluster) requireValue(t *testing.T, k crdt.Key, want uint64, timeout time.Duration, why string, nodes ...int) {
	t.Helper()
	if len(nodes) == 0 {
		for i := range c.nodes {
			nodes = append(nodes, i)
		}
	}
	for _, i := range nodes {
		if c.nodes[i] == nil || c.waitValue(i, k, want, timeout) {
			continue
		}
		var got uint64
		c.nodes[i].Read(func(s *crdt.State) { got = s.Value(k) })
		t.Fatalf("node %d of %s reads %d, want %d: %s", i, c.dcs[i], got, want, why)
	}
}
