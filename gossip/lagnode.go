package gossip

import (
	"encoding/binary"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/waitroom/waitroom/crdt"
)

// featureStamped, in a node's memberlist meta, says that the node reads
// stamped entries messages (msgStampedEntries). Nodes that predate it have
// no meta, so they keep getting plain entries messages.
const featureStamped byte = 1 << 0

// updateStampPeersLocked sets stampPeers when every other member reads
// stamped entries. n.peersMu must be held.
func (n *Node) updateStampPeersLocked() {
	all := true
	for name, m := range n.peers {
		if name != n.cfg.Name && (len(m.Meta) == 0 || m.Meta[0]&featureStamped == 0) {
			all = false
			break
		}
	}
	n.stampPeers.Store(all)
}

// pinger is the node as memberlist's PingDelegate: every probe's ack
// carries the responder's clock, so the prober learns its clock offset.
type pinger Node

// ackPayloadSize is a version byte and a unix time in nanoseconds.
const ackPayloadSize = 9

// AckPayload is this node's clock, answered to a peer's probe.
func (p *pinger) AckPayload() []byte {
	b := make([]byte, ackPayloadSize)
	b[0] = 1
	binary.BigEndian.PutUint64(b[1:], uint64((*Node)(p).clock().UnixNano()))
	return b
}

// NotifyPingComplete takes the peer's clock from its ack: it read its clock
// about rtt/2 before the ack arrived.
func (p *pinger) NotifyPingComplete(other *memberlist.Node, rtt time.Duration, payload []byte) {
	n := (*Node)(p)
	off, ok := offsetFromAck(payload, rtt, n.clock())
	if !ok || other == nil || other.Name == n.cfg.Name {
		return
	}
	n.lag.addOffset(other.Name, n.clock(), off, rtt)
}

// offsetFromAck is the responder's clock minus ours, from an ack payload
// received at now after a round trip of rtt; false for a payload this node
// does not read (a node that predates it sends none).
func offsetFromAck(payload []byte, rtt time.Duration, now time.Time) (time.Duration, bool) {
	if len(payload) != ackPayloadSize || payload[0] != 1 || rtt < 0 {
		return 0, false
	}
	theirs := int64(binary.BigEndian.Uint64(payload[1:]))
	return time.Duration(theirs + int64(rtt/2) - now.UnixNano()), true
}

// noteDelay records how late the stamped change reached this node: at is the
// origin's clock (unix ms) when the oldest change the message carried was
// made, received at now. The origin is the replica of the entries; a message
// that mixes replicas, or whose origin's name or clock offset is not known
// yet, gives no sample.
func (n *Node) noteDelay(entries []crdt.Entry, at int64, now time.Time) {
	r := entries[0].Replica
	for _, e := range entries[1:] {
		if e.Replica != r {
			return
		}
	}
	n.noteDelayOf(r, at, now)
}

// noteDelayOf records the delay of a change replica r made at unix ms at
// (its clock), received at now.
func (n *Node) noteDelayOf(r crdt.ReplicaID, at int64, now time.Time) {
	n.peersMu.Lock()
	name, ok := n.names[r]
	n.peersMu.Unlock()
	if !ok || name == n.cfg.Name {
		return
	}
	off, _, ok := n.lag.offset(name, now)
	if !ok {
		return
	}
	n.lag.addDelay(name, now, delayOf(at, now, off))
}

// delayOf is how long ago, at now, a change was made at unix ms at on a
// clock that reads off ahead of ours.
func delayOf(at int64, now time.Time, off time.Duration) time.Duration {
	return now.Sub(time.UnixMilli(at).Add(-off))
}

// livePeers are the names of the other live members.
func (n *Node) livePeers() []string {
	n.peersMu.Lock()
	defer n.peersMu.Unlock()
	out := make([]string, 0, len(n.peers))
	for name := range n.peers {
		if name != n.cfg.Name {
			out = append(out, name)
		}
	}
	return out
}

// Lag is how late the live peers' changes reach this node, as measured
// over the last LagWindow, with each peer's clock offset.
func (n *Node) Lag(now time.Time) RingLag {
	return n.lag.ring(n.livePeers(), now)
}

type cachedLag struct {
	at       time.Time
	delay    time.Duration
	measured bool
}

// lagCacheFor is how long RingDelay reuses its figure: allocations are
// recomputed after every merge, and a figure over a minute of samples does
// not move faster than this.
const lagCacheFor = 250 * time.Millisecond

// RingDelay is Lag's ring-wide delay, and whether every live peer's delay is
// measured well enough to use; cheap enough to ask on every allocation.
func (n *Node) RingDelay(now time.Time) (time.Duration, bool) {
	if c := n.lagCache.Load(); c != nil && !now.Before(c.at) && now.Sub(c.at) < lagCacheFor {
		return c.delay, c.measured
	}
	l := n.Lag(now)
	n.lagCache.Store(&cachedLag{at: now, delay: l.Delay, measured: l.Measured})
	return l.Delay, l.Measured
}

// checkClock logs, at most once a minute, when this node's clock is more
// than ClockSkewLimit off the median of its peers' clocks: counts are
// bucketed by each node's own clock, so such a node counts into other
// minutes than its peers.
func (n *Node) checkClock(now time.Time) {
	l := n.Lag(now)
	var offs []time.Duration
	for _, p := range l.Peers {
		if p.OffsetKnown {
			offs = append(offs, p.offset)
		}
	}
	skew, off := clockSkew(offs, ClockSkewLimit)
	if !off {
		return
	}
	n.peersMu.Lock()
	due := n.skewLogged.IsZero() || now.Sub(n.skewLogged) >= time.Minute || now.Before(n.skewLogged)
	if due {
		n.skewLogged = now
	}
	n.peersMu.Unlock()
	if due {
		n.log.Warn().Dur("skew", skew).Int("peers", len(offs)).Msgf("this node's clock is %s off the median of its peers' clocks: set it right (NTP)", skew.Round(time.Second))
	}
}
