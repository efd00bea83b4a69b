package sim

import (
	"time"

	"github.com/waitroom/waitroom/crdt"
)

// Data centers (nodes.datacenters). Within a data center the nodes gossip
// as a ring without data centers does (sim.go: flush, push-pull, beats),
// among its members only, so the lag a node assumes and its ring's time are
// its data center's. Between data centers only figures travel, as a gossip
// node's carriers send them (gossip's datacenter.go): every gossip.wan.round
// each data center's carrier sums the cells that changed at it
// (crdt.State.Carry, over the replicas of the members it counts live) and
// sends the aggregate entries that grew, with the groups they name, to
// every other data center's carrier; that one merges them
// (crdt.State.MergeAt) and relays what was new to its members over the LAN.
// A node's snapshot then sums its own data center's replicas and one
// figure per other data center (crdt), and its Room.Nodes adds the other
// data centers' nodes (crdt.State.OtherDatacenterNodes) to its expected
// members: the same code a node runs.

// isCarrier reports whether node n carries its data center's figures: its
// first member (the sim models no crash with data centers, so the first
// member is always live).
func (r *run) isCarrier(n *node) bool {
	return r.dcMembers != nil && r.dcMembers[r.sc.datacenterOf(n.id)][0] == n.id
}

// markCarry records that cell k changed at node n, to be summed at its
// next round between data centers when n carries (gossip's markCarry).
func (n *node) markCarry(k crdt.Key) {
	if n.dirtySet == nil {
		return
	}
	if _, ok := n.dirtySet[k]; ok {
		return
	}
	n.dirtySet[k] = struct{}{}
	n.dirty = append(n.dirty, k)
}

// carry is a carrier's round between data centers: it sums the changed
// cells and sends the figures that grew to every other data center, each
// copy delayed by the WAN's delay and jitter; a lost copy goes at a later
// round.
func (r *run) carry(n *node) {
	if !n.up || !r.isCarrier(n) || len(n.dirty) == 0 {
		return
	}
	var members []crdt.ReplicaID
	members = append(members, n.replica)
	for _, j := range n.peers {
		if n.sees[j] {
			members = append(members, r.nodes[j].replica)
		}
	}
	d := n.state.Carry(n.state.Datacenter(), members, n.dirty)
	n.dirty = n.dirty[:0]
	clear(n.dirtySet)
	if len(d.Aggregates) == 0 {
		return
	}
	m := &message{from: int32(n.id), figs: &d}
	own := r.sc.datacenterOf(n.id)
	for k, members := range r.dcMembers {
		if k == own {
			continue
		}
		r.counts.Figures++
		at := r.now + r.wanDelay()
		for r.wan.Loss > 0 && r.rng.Float64() < r.wan.Loss {
			r.counts.FiguresLost++
			at += r.wan.Round.D()
		}
		r.schedule(event{at: at, kind: evFigures, node: int32(members[0]), msg: m})
	}
}

// wanDelay is one copy's delay between data centers.
func (r *run) wanDelay() time.Duration {
	d := r.wan.Delay.D()
	if r.wan.Jitter > 0 {
		d += time.Duration((2*r.rng.Float64() - 1) * float64(r.wan.Jitter))
	}
	return max(d, 0)
}

// figures merges another data center's figures at carrier n and relays
// what was new to its data center's members, each copy delayed and
// possibly lost like any gossip message within the data center (a member
// that lost every copy gets it by push-pull). A member gets a copy from
// each of its data center's carriers (crdt.DefaultCarriers), as a gossip
// node does: with one copy, a batch lost on the relay was heard again
// only at the next push-pull once its data center stopped admitting, and
// the short run of thirty data centers admitted 1.116 × the new-user
// limit (1.016 × with the copies).
func (r *run) figures(n *node, m *message) {
	if !n.up {
		return
	}
	changed := n.state.MergeAt(*m.figs, r.clock(n, r.now).UnixMilli())
	if changed.Empty() {
		return
	}
	r.kick(n)
	relay := &message{from: int32(n.id), figs: &changed}
	copies := min(crdt.DefaultCarriers, len(n.peers)+1)
	for _, j := range n.peers {
		if !n.sees[j] || !r.nodes[j].up {
			continue
		}
		for range copies {
			r.counts.Messages++
			if r.sc.Gossip.Loss > 0 && r.rng.Float64() < r.sc.Gossip.Loss {
				r.counts.MessagesLost++
				continue
			}
			r.schedule(event{at: r.now + r.gossipDelay(), kind: evDeliver, node: int32(j), msg: relay})
		}
	}
}

// fullMessage is node n's whole state for a push-pull: its cells, and with
// data centers the figures and groups it holds.
func (r *run) fullMessage(n *node) *message {
	full := n.state.Full()
	m := &message{entries: full.Entries, from: int32(n.id)}
	if len(full.Aggregates) > 0 || len(full.Groups) > 0 {
		m.figs = &crdt.Delta{Aggregates: full.Aggregates, Groups: full.Groups}
	}
	return m
}
