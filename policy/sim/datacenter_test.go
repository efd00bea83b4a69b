package sim

import (
	"fmt"
	"slices"
	"testing"

	"github.com/waitroom/waitroom/crdt"
)

// TestDataCentersShareOnlyFigures runs three data centers of three nodes
// under the limits, with loss within and between them, and checks once the
// arrivals have stopped what each node holds: its data center's members'
// cells and one figure per other data center, never another data center's
// per-node cells; what it divides the room between (its members and the
// other data centers' nodes, by crdt's count); and that every node counts
// every admission of the ring.
func TestDataCentersShareOnlyFigures(t *testing.T) {
	sc, err := Parse([]byte(`name: dc
seed: 7
duration: 3m
nodes: {count: 9, datacenters: 3}
gossip: {delay: 5ms, jitter: 2ms, loss: 0.02, wan: {delay: 100ms, jitter: 50ms, loss: 0.05}}
room: {total_active_users: 400, new_users_per_minute: 100, session_duration: 5}
visitors:
  datacenter_weights: [4, 1, 1]
  arrival: {curve: uniform, rate: 80, start: 0s, end: 2m}
  time_on_origin: {dist: uniform, min: 30s, max: 1m}
  request_interval: {dist: uniform, min: 5s, max: 20s}
`))
	if err != nil {
		t.Fatal(err)
	}
	r, err := newRun(sc, StrategyOurs, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.loop()
	if r.counts.Figures == 0 || r.counts.FiguresLost == 0 {
		t.Fatalf("no figures crossed, or none was lost: %+v", r.counts)
	}
	admitted := int64(r.rec.result().Counts.Admissions)
	if admitted == 0 {
		t.Fatal("nobody was admitted")
	}
	for _, n := range r.nodes {
		dc := sc.datacenterOf(n.id)
		t.Run(fmt.Sprintf("node %d of %s", n.id, n.state.Datacenter()), func(t *testing.T) {
			if got, want := n.expectedMembers(r.now), 3; got != want {
				t.Errorf("expects %d members, want its data center's %d", got, want)
			}
			if got, want := n.state.OtherDatacenterNodes(), 6; got != want {
				t.Errorf("counts %d nodes in the other data centers, want %d", got, want)
			}
			now := r.clock(n, r.now)
			snap := n.state.Snapshot(roomName, now.Unix(), r.win)
			var total int64
			seen := map[crdt.ReplicaID]bool{}
			for _, m := range snap.Admitted {
				total += int64(m.Total)
				for _, c := range m.ByReplica {
					seen[c.Replica] = true
				}
			}
			if total != admitted {
				t.Errorf("counts %d admissions over the ring, the origin saw %d", total, admitted)
			}
			var want []crdt.ReplicaID
			for k, members := range r.dcMembers {
				if k != dc {
					want = append(want, crdt.DatacenterReplica(r.dcNames[k]))
					continue
				}
				for _, j := range members {
					want = append(want, r.nodes[j].replica)
				}
			}
			var got []crdt.ReplicaID
			for rep := range seen {
				got = append(got, rep)
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("its snapshot splits by replicas %v, want its members' and one per other data center %v", got, want)
			}
		})
	}
}
