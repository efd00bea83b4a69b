package sim

import (
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/policy"
)

// The lag each node assumes. A node's gossip layer takes a delay sample
// from the first arrival of every stamped message that changes its state
// (the stamp is the origin's clock when the oldest change it carries was
// made) and of every beat an idle peer sends, keeps them per peer, and
// reads the ring's delay by crdt's rule (crdt.Delays, crdt.RingDelay,
// reused for crdt.DelayReuse); the node then assumes policy.AssumedLag of
// it, or its configured bound while the ring is not measured. The
// simulator records the same samples from its own deliveries and reads them
// by the same code: the clocks are modelled exactly, so every peer a node
// counts live has a known offset, and the delay is crdt.ChangeDelay of the
// stamp on the two nodes' own clocks.

// local is node n's own clock at virtual time t (no ring correction): the
// clock a node takes its delay samples and stamps by.
func (n *node) local(t time.Duration) time.Time { return Epoch.Add(t + n.skew) }

// configuredLag is the bound the scenario configures (room.lag, a node's
// gossip_lag), or the policy's default.
func (r *run) configuredLag() time.Duration {
	if r.room.Lag > 0 {
		return r.room.Lag
	}
	return policy.DefaultLag
}

// lagFor is the lag node n assumes now (Room.Lag of its allocation): the
// measured one once the ring is measured, the configured bound before.
func (r *run) lagFor(n *node) time.Duration {
	conf := r.configuredLag()
	if !r.sc.Gossip.lagMeasured() {
		return conf
	}
	now := n.local(r.now)
	if !n.lagSet || !crdt.ReuseDelay(n.lagAt, now) {
		peers := r.peerDelays[:0]
		for _, j := range n.peers {
			if n.sees[j] {
				p := n.delays[j].At(now)
				p.OffsetKnown = true
				peers = append(peers, p)
			}
		}
		r.peerDelays = peers
		n.ringDelay, n.measured = crdt.RingDelay(peers)
		n.lagAt, n.lagSet = now, true
	}
	if !n.measured {
		return conf
	}
	return policy.AssumedLag(n.ringDelay, conf)
}

// noteDelay records, at node n, the delay of a message from node from that
// changed its state, stamped at (the origin's clock, unix ms; 0: none), as
// gossip.Node.noteDelayOf does: only from a peer it counts live, whose
// offset it then knows.
func (r *run) noteDelay(n *node, from int, at int64) {
	if at <= 0 || from == n.id || !n.sees[from] {
		return
	}
	o := r.nodes[from]
	now := n.local(r.now)
	n.delays[from].Add(now, crdt.ChangeDelay(at, now, o.skew-n.skew))
}

// forgetDelays drops what n measured of peer j (it left n's ring).
func (n *node) forgetDelays(j int) {
	if n.delays != nil {
		n.delays[j] = crdt.Delays{}
	}
}

// beatIfIdle is gossip's beat: a node that has shipped no counts of its
// own for crdt.BeatInterval sends its clock to every peer it counts live,
// each copy delayed and possibly lost like any gossip message. It checks
// crdt.BeatChecks times per interval.
func (r *run) beatIfIdle(n *node) {
	if !n.up {
		return
	}
	r.schedule(event{at: r.now + crdt.BeatInterval/crdt.BeatChecks, kind: evBeat, node: int32(n.id), vis: n.beatLoop})
	now := n.local(r.now)
	if n.ownSet && now.Sub(n.lastOwn) < crdt.BeatInterval {
		return
	}
	n.lastOwn, n.ownSet = now, true
	m := &message{from: int32(n.id), at: now.UnixMilli(), beat: true}
	for _, j := range n.peers {
		o := r.nodes[j]
		if !o.up || !n.sees[o.id] {
			continue
		}
		r.counts.Beats++
		if r.sc.Gossip.Loss > 0 && r.rng.Float64() < r.sc.Gossip.Loss {
			continue
		}
		r.schedule(event{at: r.now + r.gossipDelay(), kind: evDeliver, node: int32(o.id), msg: m})
	}
}

// startBeats starts node n's beat loop, as a gossip node starts it with
// the process; a loop of an earlier process of the node stops.
func (r *run) startBeats(n *node) {
	if !r.sc.Gossip.lagMeasured() || len(r.nodes) < 2 {
		return
	}
	n.beatLoop++
	r.schedule(event{at: r.now + crdt.BeatInterval/crdt.BeatChecks, kind: evBeat, node: int32(n.id), vis: n.beatLoop})
}

// onBeat takes a delay sample from a beat's first arrival.
func (r *run) onBeat(n *node, m *message) {
	if m.at <= n.beats[m.from] {
		return
	}
	n.beats[m.from] = m.at
	r.noteDelay(n, int(m.from), m.at)
}
