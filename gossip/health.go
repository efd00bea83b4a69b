package gossip

import "time"

// heard records that a message or a push-pull from a peer arrived.
func (n *Node) heard() {
	n.heardAt.Store(n.clock().UnixNano())
	n.hadPeers.Store(true)
}

// LastHeard is when the node last received gossip from a peer (zero if
// never).
func (n *Node) LastHeard() time.Time {
	ns := n.heardAt.Load()
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// Stale reports whether the node has lost touch with the cluster it
// belongs to: it was given seeds or has heard from peers before, and now
// either sees no other member or has heard nothing for longer than after.
// A node that was never meant to have peers is never stale.
func (n *Node) Stale(now time.Time, after time.Duration) bool {
	expect := len(n.cfg.Seeds) > 0 || n.hadPeers.Load()
	if !expect {
		return false
	}
	if n.ml.NumMembers() <= 1 {
		return true
	}
	last := n.LastHeard()
	if last.IsZero() {
		last = n.started
	}
	return now.Sub(last) > after
}

// peakMemory is how long the largest ring seen counts in ExpectedMembers
// after it last had that size.
const peakMemory = 10 * time.Minute

// ExpectedMembers is how many nodes share the cluster's traffic, as far as
// this node can tell: the live members, but never fewer than its seeds and
// itself, nor than the largest ring it has seen in the last ten minutes.
// Dividing slots by it keeps a node that has not finished joining (or whose
// peers are briefly unreachable) from assuming it alone may fill the room.
// Nodes that announced a clean leave (Close) are not expected: a planned
// scale-down or a rolling restart gives back their part at once, while a
// crashed node, which cannot be told from a partitioned one, keeps its part
// for the ten minutes, and for as long as it is a seed of this node.
func (n *Node) ExpectedMembers(now time.Time) int {
	live := n.ml.NumMembers()
	peak, goneFromPeak, goneSeeds := n.ringHistory(now)
	return max(live, len(n.seeds)-goneSeeds+1, peak-goneFromPeak)
}

// ringHistory records the ring's size at now and returns its peak and how
// many nodes left it cleanly, of the peak and of the seeds (goneCounts).
func (n *Node) ringHistory(now time.Time) (peak, goneFromPeak, goneSeeds int) {
	n.peersMu.Lock()
	defer n.peersMu.Unlock()
	n.observeRingLocked(now)
	goneFromPeak, goneSeeds = n.goneCounts(n.seeds)
	return int(n.peakMembers.Load()), goneFromPeak, goneSeeds
}
