package gossip

import (
	"github.com/hashicorp/memberlist"

	"github.com/waitroom/waitroom/crdt"
)

// Marks travel apart from the counters: a new mark goes straight to every
// live peer over the reliable stream, and into the broadcast queue for
// relays and for the peers the stream missed; a peer that joins is sent the
// whole set. A node that hears a mark for the first time relays it. The
// full state of push-pull does not carry them, so that nodes of a version
// without marks still read it.

// markChunk is how many marks one message of a whole-set send holds: about
// 30 bytes each, well under the reliable bound.
const markChunk = 1000

// Mark marks id until expires (unix seconds) across the ring. It reports
// false, and sends nothing, when id was already marked and live here: the
// one check a node can make that a thing happens once. Two nodes marking
// the same id before either hears of the other both get true; how long that
// window lasts is the time a reliable send takes to reach a peer.
func (n *Node) Mark(id string, expires int64) bool {
	now := n.RingNow().Unix()
	m, ok := n.addMark(id, expires, now)
	if !ok || m.Expires <= now {
		return false
	}
	n.sendMarks([]crdt.Mark{m}, true)
	return true
}

// addMark adds id until expires unless it is marked and live at now (unix
// seconds, the ring's time); it reports the mark held and whether it was
// added or extended.
func (n *Node) addMark(id string, expires, now int64) (crdt.Mark, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.marks.Has(id, now) {
		return crdt.Mark{}, false
	}
	return n.marks.Add(id, expires)
}

// HasMark reports whether id is marked and live at the ring's time.
func (n *Node) HasMark(id string) bool {
	now := n.RingNow().Unix()
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.marks.Has(id, now)
}

// MarkList returns the marks held, sorted by id.
func (n *Node) MarkList() []crdt.Mark {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.marks.Entries()
}

// pruneMarks drops the marks expired at the ring's time.
func (n *Node) pruneMarks() {
	now := n.RingNow().Unix()
	n.mu.Lock()
	defer n.mu.Unlock()
	n.marks.Prune(now)
}

// onMarks merges a peer's marks (not its horizon: every node prunes by its
// own clock) and relays those that were new here.
func (n *Node) onMarks(m Message) {
	fresh := n.mergeMarks(m.Marks)
	if len(fresh) == 0 {
		return
	}
	n.stats.merged.Add(uint64(len(fresh)))
	n.stats.relayed.Add(uint64(len(fresh)))
	n.sendMarks(fresh, false)
	n.changed()
}

// mergeMarks merges a peer's marks and returns those new here.
func (n *Node) mergeMarks(ms []crdt.Mark) []crdt.Mark {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.hook(PanicMessage)
	return n.marks.Merge(ms)
}

// sendMarks queues ms for gossip, each under its own name so that a later
// copy replaces an earlier one still queued, and, when direct is set, sends
// them to every live peer at once.
func (n *Node) sendMarks(ms []crdt.Mark, direct bool) {
	for _, m := range ms {
		msg, err := EncodeMarks([]crdt.Mark{m}, 0)
		if err != nil || len(msg) > MaxPacketMessage {
			n.log.Error().Err(err).Str("mark", m.ID).Msg("encode mark")
			continue
		}
		n.queue.QueueBroadcast(&broadcast{name: "m|" + m.ID, msg: msg})
		n.queueWAN("m|"+m.ID, msg)
	}
	if !direct {
		return
	}
	msg, err := EncodeMarks(ms, 0)
	if err != nil {
		n.log.Error().Err(err).Msg("encode marks")
		return
	}
	// Off the caller's path: a stream to a peer that is down waits for
	// memberlist's timeout, and the caller is a visitor's request.
	go func() {
		defer n.recoverAs(PanicMarks)
		n.sendReliableToAll(msg)
	}()
}

// sendAllMarks sends the whole set to a peer that joined.
func (n *Node) sendAllMarks(peer memberlist.Node) {
	if ml := n.mlReady.Load(); ml != nil {
		n.sendAllMarksVia(ml, peer)
	}
}

// sendAllMarksVia sends the whole set to a peer that joined the pool ml.
func (n *Node) sendAllMarksVia(ml *memberlist.Memberlist, peer memberlist.Node) {
	defer n.recoverAs(PanicMarks)
	all := n.MarkList()
	for len(all) > 0 {
		k := min(len(all), markChunk)
		msg, err := EncodeMarks(all[:k], 0)
		all = all[k:]
		if err != nil {
			n.log.Error().Err(err).Msg("encode marks")
			return
		}
		if err := ml.SendReliable(&peer, msg); err != nil {
			n.log.Warn().Err(err).Str("peer", peer.Name).Msg("send marks")
			return
		}
	}
}

func (n *Node) hasMarks() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.marks.Len() > 0
}
