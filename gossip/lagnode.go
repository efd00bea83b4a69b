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
	defer (*Node)(p).recoverAs(PanicPing)
	b := make([]byte, ackPayloadSize)
	b[0] = 1
	binary.BigEndian.PutUint64(b[1:], uint64((*Node)(p).clock().UnixNano()))
	return b
}

// NotifyPingComplete takes the peer's clock from its ack: it read its clock
// about rtt/2 before the ack arrived.
func (p *pinger) NotifyPingComplete(other *memberlist.Node, rtt time.Duration, payload []byte) {
	n := (*Node)(p)
	defer n.recoverAs(PanicPing)
	now, steady := n.steps.steady(rtt)
	if other != nil && other.Name != n.cfg.Name {
		n.noteHeard(other.Name, now)
	}
	off, ok := offsetFromAck(payload, rtt, now)
	if !ok || !steady || other == nil || other.Name == n.cfg.Name {
		return // no offset, or one read across a step of this node's clock (clockstep.go)
	}
	n.lag.addOffset(other.Name, now, off, rtt)
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
	name, ok := n.nameOf(r)
	if !ok || name == n.cfg.Name {
		return
	}
	off, _, ok := n.lag.offset(name, now)
	if !ok {
		return
	}
	d := delayOf(at, now, off)
	if _, steady := n.steps.steady(d); !steady {
		return // the delay spans a step of this node's clock (clockstep.go)
	}
	n.lag.addDelay(name, now, d)
}

// nameOf is the name of the node of replica r, when it announced itself.
func (n *Node) nameOf(r crdt.ReplicaID) (string, bool) {
	n.peersMu.Lock()
	defer n.peersMu.Unlock()
	name, ok := n.names[r]
	return name, ok
}

// delayOf is how long ago, at now, a change was made at unix ms at on a
// clock that reads off ahead of ours.
func delayOf(at int64, now time.Time, off time.Duration) time.Duration {
	return crdt.ChangeDelay(at, now, off)
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

// RingDelay is Lag's ring-wide delay, and whether every live peer's delay is
// measured well enough to use; cheap enough to ask on every allocation.
func (n *Node) RingDelay(now time.Time) (time.Duration, bool) {
	// The figure is reused for crdt.DelayReuse: allocations are recomputed
	// after every merge.
	if c := n.lagCache.Load(); c != nil && crdt.ReuseDelay(c.at, now) {
		return c.delay, c.measured
	}
	l := n.Lag(now)
	n.lagCache.Store(&cachedLag{at: now, delay: l.Delay, measured: l.Measured})
	return l.Delay, l.Measured
}

// checkClock logs, at most once a minute, when this node's clock is more
// than ClockSkewLimit off the median of its peers' clocks. The ring's time
// (RingNow) keeps its counts in the ring's minutes all the same, but a clock
// that far off is broken, and whatever else on the machine reads it is wrong.
func (n *Node) checkClock(now time.Time) {
	l := n.Lag(now)
	if !l.ClockFarOff {
		return
	}
	if n.skewDue(now) {
		n.log.Warn().Dur("skew", l.skew).Dur("ring_offset", l.ringOffset).Int("peers", len(l.Peers)).Msgf("this node's clock is %s off the median of its peers' clocks: the ring's time is used for its counts, but set the clock right (NTP)", l.skew.Round(time.Second))
	}
}

// skewDue reports whether a line about the clock's skew is due at now, and
// if so records that it is logged.
func (n *Node) skewDue(now time.Time) bool {
	n.peersMu.Lock()
	defer n.peersMu.Unlock()
	due := n.skewLogged.IsZero() || now.Sub(n.skewLogged) >= time.Minute || now.Before(n.skewLogged)
	if due {
		n.skewLogged = now
	}
	return due
}

// ringCacheFor is how long RingNow reuses its offset: the offsets move only
// when a probe finds a shorter round trip or a peer comes or goes. It is
// timed on the machine's monotonic clock, not the node's, so that a node
// whose clock stands still (a test's fake clock) still takes in new probes.
const ringCacheFor = 250 * time.Millisecond

type cachedRing struct {
	at     time.Time // the node's clock
	real   time.Time // the machine's monotonic clock
	offset time.Duration
}

// ringOffset is the correction from this node's clock to the ring's time at
// now (its clock): crdt.RingOffset of the live peers' measured offsets.
func (n *Node) ringOffset(now time.Time) time.Duration {
	if c := n.ringCache.Load(); c != nil && !now.Before(c.at) && time.Since(c.real) < ringCacheFor {
		return c.offset
	}
	offs := n.lag.offsets(n.livePeers(), now)
	off := crdt.RingOffset(offs)
	prev := n.ringCache.Swap(&cachedRing{at: now, real: time.Now(), offset: off})
	if was := time.Duration(0); prev == nil || prev.offset != off {
		if prev != nil {
			was = prev.offset
		}
		if d := off - was; d > crdt.RingHold || d < -crdt.RingHold {
			n.log.Info().Dur("ring_offset", off).Dur("was", was).Int("peers", len(offs)).Msgf("this node's time now follows the ring's: its clock corrected by %s", off.Round(time.Millisecond))
		}
	}
	return off
}

// ClockSettled reports whether this node has measured the clocks of more
// than half of its live peers, or has none: until then its ring time is a
// guess from a few of them (a node that just joined, whose clock may be far
// off, reads its own clock until its first probes return).
func (n *Node) ClockSettled(now time.Time) bool {
	live := n.livePeers()
	return len(live) == 0 || 2*len(n.lag.offsets(live, now)) > len(live)
}

// RingNow is the ring's time: this node's clock corrected by the median of
// its live peers' clock offsets (see crdt.RingOffset and crdt.RingNow). The
// counters' minutes, and everything dated by them, are in ring time, so
// nodes with clocks apart still close each minute together. Offsets and
// delays are measured on the node's own clock, which stays as it is.
func (n *Node) RingNow() time.Time {
	local := n.clock()
	off := n.ringOffset(local)
	for {
		last := n.ringLast.Load()
		var lastT time.Time
		if last != 0 {
			lastT = time.Unix(0, last)
		}
		t := crdt.RingNow(local, off, lastT)
		if t.UnixNano() == last || n.ringLast.CompareAndSwap(last, t.UnixNano()) {
			return t
		}
	}
}
