package gossip

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/waitroom/waitroom/crdt"
)

// goneNode is a node that announced it was leaving for good.
type goneNode struct {
	incarnation uint64
	addr        string
	// inPeak: the node was a member when the peak ring size was last
	// recorded, so its leave shrinks the ring expected from the peak.
	inPeak bool
}

// announceLeave tells the peers that this node is leaving for good, so that
// they stop holding its part of the room's limits for it (see
// ExpectedMembers), and hands over its last counts before memberlist's
// leave: what it admitted since its last gossip round would otherwise be
// lost with it, and so would what it pushed or gossiped in the last
// handOverWindow if those packets were lost. Both go to every live peer
// over TCP (handOver): the counts first, then the announcement. The counts
// also go into the broadcast queue, for which it waits up to three gossip
// intervals, so that relays carry them to a peer the stream missed.
func (n *Node) announceLeave() {
	if n.mlReady.Load() == nil || n.ml.NumMembers() <= 1 {
		return
	}
	n.publishNodeInfo(true)
	// The flush queues every dirty cell and register for gossip, the
	// Left announcement among them, and returns the node's own cells.
	own, at := n.flushOwn()
	msgs := n.ownMessages(own, at)
	// The cells pushed or queued shortly before went out as packets that
	// may have been lost: they are handed over again, unstamped, since
	// their stamps would read the leave's delay as the ring's gossip lag.
	msgs = append(msgs, n.entryMessages(n.recentOwnCells(own), 0, false)...)
	if reg, ok := n.Register(NodeInfoRegister(n.replica)); ok {
		if msg, err := EncodeRegisters([]crdt.RegisterEntry{{Name: NodeInfoRegister(n.replica), Reg: reg}}); err == nil {
			msgs = append(msgs, msg)
		}
	}
	n.handOver(msgs)
	deadline := time.Now().Add(3 * n.gossipInterval)
	tick := time.NewTicker(n.gossipInterval / 4)
	defer tick.Stop()
	for n.queue.NumQueued() > 0 && time.Now().Before(deadline) {
		<-tick.C
	}
}

// handOverWindow is how far back a clean leave hands over the node's own
// cells again. Older changes have had many gossip rounds and, on most
// rings, a push-pull with each peer; newer ones may all have gone as
// packets that were lost.
const handOverWindow = 30 * time.Second

// forgetOldOwn drops the cells queued before handOverWindow from recentOwn,
// at most once a second. n.flushMu must be held.
func (n *Node) forgetOldOwn(now int64) {
	if now-n.recentSwept < int64(time.Second) {
		return
	}
	n.recentSwept = now
	for id, at := range n.recentOwn {
		if now-at > int64(handOverWindow) {
			delete(n.recentOwn, id)
		}
	}
}

// recentOwnCells returns the node's own cells queued within handOverWindow,
// at their current values, leaving out those in except.
func (n *Node) recentOwnCells(except []crdt.Entry) []crdt.Entry {
	skip := make(map[cellID]bool, len(except))
	for _, e := range except {
		skip[cellID{e.Key, e.Replica}] = true
	}
	return n.cellValues(n.recentOwnIDs(skip))
}

// recentOwnIDs returns the node's own cells queued within handOverWindow,
// leaving out those in skip.
func (n *Node) recentOwnIDs(skip map[cellID]bool) []cellID {
	n.flushMu.Lock()
	defer n.flushMu.Unlock()
	now := n.clock().UnixNano()
	ids := make([]cellID, 0, len(n.recentOwn))
	for id, at := range n.recentOwn {
		if !skip[id] && now-at <= int64(handOverWindow) {
			ids = append(ids, id)
		}
	}
	return ids
}

// cellValues returns the cells of ids at their current values, leaving out
// those pruned meanwhile.
func (n *Node) cellValues(ids []cellID) []crdt.Entry {
	out := make([]crdt.Entry, 0, len(ids))
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, id := range ids {
		if v := n.state.Get(id.key, id.replica); v > 0 {
			out = append(out, crdt.Entry{Key: id.key, Replica: id.replica, Value: v})
		}
	}
	return out
}

// handOver sends msgs, in order, to every live peer over memberlist's TCP
// stream, to all peers at once: a peer that died unnoticed then costs one
// stream timeout, not one per peer. It gives up on a peer at its first
// failure (the broadcast queue still carries the counts to it).
func (n *Node) handOver(msgs [][]byte) {
	ml := n.mlReady.Load()
	peers := n.otherPeers()
	if ml == nil || len(msgs) == 0 || len(peers) == 0 {
		return
	}
	var wg sync.WaitGroup
	var reached atomic.Int64
	for i := range peers {
		wg.Add(1)
		go func(m *memberlist.Node) {
			defer wg.Done()
			defer n.recoverAs(PanicLeave)
			for _, msg := range msgs {
				if err := ml.SendReliable(m, msg); err != nil {
					n.log.Warn().Err(err).Str("peer", m.Name).Msg("hand over last counts")
					return
				}
				n.stats.msgsOut.Add(1)
			}
			reached.Add(1)
		}(&peers[i])
	}
	wg.Wait()
	n.log.Info().Int("messages", len(msgs)).Int64("peers", reached.Load()).Int("of", len(peers)).Msg("handed over last counts and leave to peers")
}

// noteNodeInfo records what a peer's NodeInfo register says about its
// leaving: a Left announcement marks the node gone, and a newer incarnation
// of it (the node came back) clears the mark.
func (n *Node) noteNodeInfo(changed []crdt.RegisterEntry) {
	for _, r := range changed {
		if !strings.HasPrefix(r.Name, "node/") {
			continue
		}
		ni, err := DecodeNodeInfo(r.Reg.Value)
		if err != nil || ni.Name == n.cfg.Name {
			continue
		}
		if n.noteLeave(r.Reg.Replica, ni) {
			n.log.Info().Str("peer", ni.Name).Msg("member announced a clean leave")
		}
	}
}

// noteLeave records the name of replica r and whether its node, by its
// announcement ni, left for good; it reports whether ni is a new leave.
func (n *Node) noteLeave(r crdt.ReplicaID, ni crdt.NodeInfo) bool {
	n.peersMu.Lock()
	defer n.peersMu.Unlock()
	n.names[r] = ni.Name
	g, known := n.gone[ni.Name]
	switch {
	case ni.Left && (!known || ni.Incarnation >= g.incarnation):
		n.gone[ni.Name] = goneNode{incarnation: ni.Incarnation, addr: ni.Addr, inPeak: true}
		return true
	case !ni.Left && known && ni.Incarnation > g.incarnation:
		delete(n.gone, ni.Name)
	}
	return false
}

// observeRingLocked records the ring's size as the peak when it is at least
// the peak, or when the peak is older than peakMemory; nodes that left
// cleanly before then are not part of the new peak. n.peersMu must be held.
func (n *Node) observeRingLocked(now time.Time) {
	c := int64(len(n.peers))
	at := n.peakAt.Load()
	if c < n.peakMembers.Load() && at != 0 && now.Sub(time.Unix(0, at)) < peakMemory {
		return
	}
	n.peakMembers.Store(c)
	n.peakAt.Store(now.UnixNano())
	for name, g := range n.gone {
		if _, live := n.peers[name]; !live && g.inPeak {
			g.inPeak = false
			n.gone[name] = g
		}
	}
}

// goneCounts counts the nodes that announced a clean leave and are no
// longer members: those that were part of the peak ring, and those at one
// of the addresses in seeds.
func (n *Node) goneCounts(seeds []string) (fromPeak, seeded int) {
	for name, g := range n.gone {
		if _, live := n.peers[name]; live {
			continue
		}
		if g.inPeak {
			fromPeak++
		}
		for _, s := range seeds {
			if s == g.addr {
				seeded++
				break
			}
		}
	}
	return fromPeak, seeded
}
