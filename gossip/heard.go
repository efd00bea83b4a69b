package gossip

import "time"

// heardRounds is how many full probe rounds a live member may go without
// acking a probe before this node lists it as suspected. memberlist probes
// the members round-robin, one every ProbeInterval, reshuffling after each
// round, so a member is probed at least once in any two rounds; missing
// two rounds' worth of acks (plus one probe's timeout) is what memberlist
// itself would have suspected it for, had it kept the state in sight.
const heardRounds = 2

// SuspectAfter is how long a live member of a ring of size members may go
// unheard (no probe ack) before it is suspected: heardRounds rounds of
// members-1 probes each, ProbeInterval apart, plus a probe's timeout.
func SuspectAfter(members int, probeInterval, probeTimeout time.Duration) time.Duration {
	return time.Duration(heardRounds*max(members-1, 1))*probeInterval + probeTimeout
}

// Suspected reports whether a member last heard at lastHeard is suspected
// at now, given the threshold after; a member never heard of is not (it is
// heard when it joins).
func Suspected(lastHeard, now time.Time, after time.Duration) bool {
	return !lastHeard.IsZero() && now.Sub(lastHeard) > after
}

// noteHeard records that name was heard from at now. n.peersMu must not
// be held.
func (n *Node) noteHeard(name string, now time.Time) {
	n.peersMu.Lock()
	defer n.peersMu.Unlock()
	if _, ok := n.peers[name]; ok {
		n.acked[name] = now
	}
}
