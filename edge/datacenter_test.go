package edge_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/gossip/testkit"
)

// A ring of two data centers: paris, three nodes behind a round-robin
// balancer, and tokyo, one node. Paris's nodes share its slots as one node
// would hold them, tokyo reads paris's figures and queues once they are
// used, and no node's own cells leave its data center. A data center
// appears to the others with its first figures.
func TestDatacenters(t *testing.T) {
	const perMinute = 6
	dcs := []string{"paris", "paris", "paris", "tokyo"}
	c := newCluster(t, len(dcs), clusterOpts{
		Rooms:      []config.Room{room("shop", 100, perMinute)},
		Datacenter: func(i int) string { return dcs[i] },
	})
	paris, tokyo := c.Nodes[:3], c.Nodes[3]
	admitted := func(n *clusterNode) int64 { return roomStatus(t, n.Admin, "shop").NewUsersThisMinute }

	t.Run("three nodes of a data center admit no more than one node would", func(t *testing.T) {
		var in int64
		for i := range 18 {
			nd := paris[i%3]
			if resp := newVisitor().Get(nd.Server, "http://shop.test/"); resp.Header.Get("X-Origin") == "yes" {
				in++
			}
			for _, other := range c.Nodes {
				testkit.Eventually(t, testkit.Wait{What: fmt.Sprintf("%s (%s) seeing %d admitted", other.Name, other.Datacenter(), in), Timeout: 10 * time.Second}, func() bool {
					return admitted(other) == in
				})
			}
			c.Advance(3 * time.Second) // 18 visitors over the rest of the minute
		}
		if in != perMinute {
			t.Fatalf("paris's three nodes let in %d over the minute; one node lets in the limit, %d", in, perMinute)
		}
	})

	t.Run("the other data center queues once the data center's figures used the minute's slots", func(t *testing.T) {
		resp := newVisitor().Get(tokyo.Server, "http://shop.test/")
		if resp.Header.Get("X-Origin") == "yes" || resp.Header.Get("Refresh") == "" {
			t.Fatalf("tokyo let a visitor in (status %d) after paris used the minute's %d slots", resp.StatusCode, perMinute)
		}
	})

	t.Run("once both have counted, every node sees its data center's members and the other data center's nodes", func(t *testing.T) {
		testkit.Eventually(t, testkit.Wait{What: "every node knowing both data centers", Timeout: 20 * time.Second, Seen: func() string {
			var s string
			for _, n := range c.Nodes {
				s += fmt.Sprintf("\n  %s: %+v", n.Name, n.Server.StateDoc().Datacenters)
			}
			return s
		}}, func() bool {
			for _, n := range c.Nodes {
				d := n.Server.StateDoc()
				if d.Datacenter != n.Datacenter() || len(d.Datacenters) != 2 || !d.Datacenters[0].Own || d.Datacenters[0].Name != n.Datacenter() {
					return false
				}
				want := map[string]int{"paris": 3, "tokyo": 1}
				for _, v := range d.Datacenters {
					if v.Nodes != want[v.Name] {
						return false
					}
				}
			}
			return true
		})
	})

	t.Run("the metrics count each data center's nodes and say whether the node carries", func(t *testing.T) {
		for _, n := range c.Nodes {
			if got := metric(t, n.Admin, `waitroom_datacenter_nodes{datacenter="paris",own="`+own(n, "paris")+`"}`); got != 3 {
				t.Errorf("%s counts %v nodes in paris, want 3", n.Name, got)
			}
			if got := metric(t, n.Admin, `waitroom_datacenter_nodes{datacenter="tokyo",own="`+own(n, "tokyo")+`"}`); got != 1 {
				t.Errorf("%s counts %v nodes in tokyo, want 1", n.Name, got)
			}
		}
		if got := metric(t, tokyo.Admin, `waitroom_datacenter_carrier{datacenter="tokyo"}`); got != 1 {
			t.Errorf("tokyo's only node says carrier %v, want 1", got)
		}
	})

	t.Run("a node measures the lag it assumes among its data center's members only", func(t *testing.T) {
		dcOf := map[string]string{}
		for _, n := range c.Nodes {
			dcOf[n.Name] = n.Datacenter()
		}
		for _, n := range c.Nodes {
			d := n.Server.StateDoc()
			for _, m := range d.Members {
				if dcOf[m.Name] != n.Datacenter() {
					t.Errorf("%s (%s) counts %s (%s) a member", n.Name, n.Datacenter(), m.Name, dcOf[m.Name])
				}
			}
			if d.Lag == nil {
				continue
			}
			for _, p := range d.Lag.Ring.Peers {
				if dcOf[p.Name] != n.Datacenter() {
					t.Errorf("%s (%s) measures its lag to %s (%s)", n.Name, n.Datacenter(), p.Name, dcOf[p.Name])
				}
			}
		}
	})

	t.Run("a node holds per-node cells of its own data center's nodes only", func(t *testing.T) {
		replicas := map[crdt.ReplicaID]string{}
		for _, n := range c.Nodes {
			replicas[n.Server.Node().Replica()] = n.Datacenter()
		}
		for _, n := range c.Nodes {
			var foreign []string
			n.Server.Node().Read(func(s *crdt.State) {
				for _, e := range s.Full().Entries {
					if dc, ok := replicas[e.Replica]; ok && dc != n.Datacenter() {
						foreign = append(foreign, fmt.Sprintf("%v of %s", e.Key, dc))
					}
				}
			})
			if len(foreign) > 0 {
				t.Errorf("%s (%s) holds cells of another data center's nodes: %v", n.Name, n.Datacenter(), foreign)
			}
		}
	})
}

// own is the metrics' label saying whether dc is node n's data center.
func own(n *clusterNode, dc string) string {
	if n.Datacenter() == dc {
		return "1"
	}
	return "0"
}
