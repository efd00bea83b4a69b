package gossip

import (
	"fmt"

	"github.com/hashicorp/memberlist"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/waitroom/waitroom/crdt"
)

// delegate is the node as memberlist's Delegate.
type delegate Node

func (d *delegate) node() *Node { return (*Node)(d) }

// NodeMeta announces the wire features this node reads (see featureStamped).
func (d *delegate) NodeMeta(limit int) []byte {
	defer d.node().recoverAs(PanicMeta)
	return []byte{featureStamped}
}

// NotifyMsg merges a broadcast from a peer and relays what was new here:
// without the relay, most nodes of a large ring would wait for push-pull.
// A message whose merge panics is dropped and counted like a bad one.
func (d *delegate) NotifyMsg(b []byte) {
	n := d.node()
	defer n.recoverAs(PanicMessage, n.dropPanicked)
	n.stats.msgsIn.Add(1)
	n.heard()
	n.stats.bytesIn.Add(uint64(len(b)))
	m, err := Decode(b, MaxReliableMessage)
	switch {
	case err != nil:
	case m.Type == msgFull || m.Type == msgFullDC:
		err = fmt.Errorf("%w: a full state outside push-pull", errType)
	case (m.Type == msgEntries || m.Type == msgFigures) && len(b) > MaxPacketMessage:
		// Nodes send entries one per broadcast, far under a packet.
		err = fmt.Errorf("%w: entries message of %d bytes > %d", errOversize, len(b), MaxPacketMessage)
	}
	if err != nil {
		n.stats.drop(dropReason(err))
		n.log.Debug().Err(err).Int("bytes", len(b)).Msg("dropped gossip message")
		return
	}
	if m.Type == msgBeat {
		n.onBeat(b, m, n.clock())
		return
	}
	if m.Type == msgMarks {
		n.onMarks(m)
		return
	}
	if m.Type == msgFigures {
		// Other data centers' figures, relayed by a carrier of this one.
		if n.dc == nil {
			n.stats.drop(DroppedWrongPool)
			return
		}
		n.onFigures(b, m, false)
		return
	}
	// Peers date cells and stamps in the ring's time; the delay is taken
	// on this node's own clock, in which the offsets are measured.
	at := n.clock()
	now := n.RingNow().UnixMilli()
	delta := n.screen(m.Delta, now)
	changed := n.mergeRelayed(delta, now, m.At)
	n.noteNodeInfo(changed.Registers)
	if m.At > 0 && len(changed.Entries) > 0 {
		n.noteDelay(changed.Entries, m.At, at)
	}
	if !changed.Empty() {
		k := uint64(len(changed.Entries) + len(changed.Registers))
		n.stats.merged.Add(k)
		n.stats.relayed.Add(k)
		n.changed()
	}
}

// mergeRelayed merges a peer's screened delta at now (ring ms) and marks
// what changed for relaying, stamped at (the origin's, 0 when unknown).
func (n *Node) mergeRelayed(delta crdt.Delta, now, at int64) crdt.Delta {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.hook(PanicMessage)
	changed := n.state.MergeAt(delta, now)
	for _, e := range changed.Entries {
		id := cellID{e.Key, e.Replica}
		n.dirty[id] = struct{}{}
		n.markCarry(e.Key)
		// Relayed with the origin's stamp: the oldest change not yet sent.
		if old, ok := n.dirtyAt[id]; at > 0 && (!ok || old == 0 || at < old) {
			n.dirtyAt[id] = at
		} else if !ok {
			n.dirtyAt[id] = 0
		}
	}
	for _, r := range changed.Registers {
		n.dirtyRegs[r.Name] = struct{}{}
	}
	return changed
}

func (n *Node) changed() {
	if n.cfg.OnChange != nil {
		n.cfg.OnChange()
	}
}

// GetBroadcasts is called by memberlist for every gossip packet; dirty cells
// are encoded here, so they leave with the very next packet. A panic sends
// none with this packet; the cells it took wait for push-pull.
func (d *delegate) GetBroadcasts(overhead, limit int) [][]byte {
	n := d.node()
	defer n.recoverAs(PanicBroadcasts)
	n.flush()
	out := n.queue.GetBroadcasts(overhead, limit)
	n.stats.msgsOut.Add(uint64(len(out)))
	return out
}

// LocalState is this node's side of push-pull: the whole state. A panic
// sends an empty one (nil), which peers skip: the ring keeps its push-pull,
// and the next one carries this node's state again.
func (d *delegate) LocalState(join bool) []byte {
	n := d.node()
	defer n.recoverAs(PanicLocalState)
	full, horizon := n.fullState()
	for i, r := range full.Registers {
		full.Registers[i] = n.outgoing(r)
	}
	b, err := EncodeFull(full, horizon)
	if err != nil {
		n.log.Error().Err(err).Msg("encode full state")
		return nil
	}
	if len(b) > MaxFullState {
		n.log.Error().Int("bytes", len(b)).Msg("full state exceeds the push-pull bound; peers will drop it")
	}
	return b
}

// fullState is the whole state and its pruning horizon, for push-pull.
func (n *Node) fullState() (crdt.Delta, int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.hook(PanicLocalState)
	return n.state.Full(), n.state.Horizon()
}

// MergeRemoteState merges a peer's whole state. The peer's horizon is not
// adopted: every node prunes from its own clock, so a peer with a clock far
// ahead cannot erase the counts here. A state whose merge panics is
// dropped and counted like a bad one.
func (d *delegate) MergeRemoteState(buf []byte, join bool) {
	n := d.node()
	defer n.recoverAs(PanicMergeState, n.dropPanicked)
	m, ok := n.decodeState(buf, "push-pull state")
	if !ok {
		return
	}
	if n.dc == nil && (len(m.Delta.Aggregates) > 0 || len(m.Delta.Groups) > 0) {
		// Figures of data centers mean nothing to a node that names none.
		n.stats.drop(DroppedWrongPool)
		m.Delta.Aggregates, m.Delta.Groups = nil, nil
	}
	n.heard()
	n.noteNodeInfo(n.mergeRemote(m.Delta).Registers)
}

// decodeState decodes a peer's whole state, or counts and logs (as what)
// why it is dropped.
func (n *Node) decodeState(buf []byte, what string) (Message, bool) {
	if len(buf) == 0 {
		return Message{}, false
	}
	m, err := Decode(buf, MaxFullState)
	if err == nil && m.Type != msgFull && m.Type != msgFullDC {
		err = errType
	}
	if err != nil {
		n.stats.drop(dropReason(err))
		n.log.Warn().Err(err).Int("bytes", len(buf)).Msg("dropped " + what)
		return Message{}, false
	}
	return m, true
}

// mergeRemote screens and merges a peer's whole state d, and returns what
// changed.
func (n *Node) mergeRemote(d crdt.Delta) crdt.Delta {
	n.stats.pushPulls.Add(1)
	now := n.RingNow().UnixMilli()
	changed := n.mergeState(n.screen(d, now), now)
	if !changed.Empty() {
		n.stats.merged.Add(uint64(len(changed.Entries) + len(changed.Registers) + len(changed.Aggregates) + len(changed.Groups)))
		n.changed()
	}
	return changed
}

// mergeState merges a peer's screened whole state at now (ring ms).
func (n *Node) mergeState(delta crdt.Delta, now int64) crdt.Delta {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.hook(PanicMergeState)
	changed := n.state.MergeAt(delta, now)
	for _, e := range changed.Entries {
		n.markCarry(e.Key)
	}
	return changed
}

func encodeNodeInfo(ni crdt.NodeInfo) ([]byte, error) { return msgpack.Marshal(ni) }

// events logs membership changes: one line per event an operator cares about.
// It also keeps the node's copy of the member list (see Node.peers): memberlist
// calls these with its node lock held, the one time m can be read safely.
type events Node

func (e *events) NotifyJoin(m *memberlist.Node) {
	defer (*Node)(e).recoverAs(PanicEvents)
	(*Node)(e).setPeer(m)
	if m.Name == (*Node)(e).cfg.Name {
		return
	}
	(*Node)(e).log.Info().Str("peer", m.Name).Str("addr", m.Address()).Msg("peer joined")
	if (*Node)(e).hasMarks() {
		go (*Node)(e).sendAllMarks(*m) // not under memberlist's node lock
	}
}
func (e *events) NotifyLeave(m *memberlist.Node) {
	n := (*Node)(e)
	defer n.recoverAs(PanicEvents)
	n.dropPeer(m)
	if m.Name == n.cfg.Name {
		return // our own leave, already logged by Close
	}
	// A clean leave and a failure cannot be told apart here: memberlist
	// v0.7.0 keeps a member's state in a field of its private nodeState that
	// shadows Node.State, so m.State is always StateAlive (0).
	n.log.Warn().Str("peer", m.Name).Str("addr", m.Address()).Msg("peer left or failed")
}
func (e *events) NotifyUpdate(m *memberlist.Node) {
	defer (*Node)(e).recoverAs(PanicEvents)
	(*Node)(e).setPeer(m)
}
