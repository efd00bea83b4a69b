package gossip

import (
	"strconv"
	"time"

	"github.com/waitroom/waitroom/crdt"
)

// Heartbeats. Delay samples come from a peer's counts; a peer with no
// traffic gives none, and the ring's delay would stay unmeasured until the
// very flood it matters for. So a node that has sent no counts of its own
// for BeatInterval broadcasts a beat (msgBeat) carrying its clock: the first
// arrival of each beat is a delay sample like a stamped count, and is
// relayed like one. Beats are not state: nothing is merged or kept but the
// latest beat time per replica. Under load, counts give the samples and no
// beat is sent, so beats cost nothing where the gossip budget is tight.

// BeatInterval is how often an idle node beats (Config.BeatInterval
// overrides it): enough for LagMinSamples within LagWindow with room to
// spare.
const BeatInterval = crdt.BeatInterval

func (n *Node) beatInterval() time.Duration {
	if n.cfg.BeatInterval > 0 {
		return n.cfg.BeatInterval
	}
	return BeatInterval
}

// beatIfIdle queues a beat when the node has queued no counts of its own
// for the beat interval and every peer reads beats.
func (n *Node) beatIfIdle(now time.Time) {
	if now.UnixNano()-n.lastOwn.Load() < n.beatInterval().Nanoseconds() || !n.stampPeers.Load() {
		return
	}
	n.lastOwn.Store(now.UnixNano())
	msg, err := EncodeBeat(n.replica, now.UnixMilli())
	if err != nil {
		n.log.Error().Err(err).Msg("encode beat")
		return
	}
	n.queue.QueueBroadcast(&broadcast{name: beatName(n.replica), msg: msg})
}

func beatName(r crdt.ReplicaID) string { return "b|" + strconv.FormatUint(uint64(r), 16) }

func (n *Node) beatLoop() {
	defer n.wg.Done()
	t := time.NewTicker(n.beatInterval() / crdt.BeatChecks)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
			n.guarded(PanicBeatLoop, func() {
				n.hook(PanicBeatLoop)
				n.beatIfIdle(n.clock())
			})
		}
	}
}

// onBeat takes a delay sample from a beat's first arrival (msg as received,
// m decoded) and relays it; a beat heard before, or one of this node's own,
// is dropped.
func (n *Node) onBeat(msg []byte, m Message, now time.Time) {
	if m.Origin == n.replica {
		return
	}
	if !n.freshBeat(m.Origin, m.At) {
		return
	}
	n.noteDelayOf(m.Origin, m.At, now)
	n.queue.QueueBroadcast(&broadcast{name: beatName(m.Origin), msg: msg})
}

// freshBeat records a beat of origin at at (its clock, unix ms) and reports
// whether it is newer than the latest heard from it.
func (n *Node) freshBeat(origin crdt.ReplicaID, at int64) bool {
	n.peersMu.Lock()
	defer n.peersMu.Unlock()
	if n.beats == nil {
		n.beats = map[crdt.ReplicaID]int64{}
	}
	if at <= n.beats[origin] {
		return false
	}
	n.beats[origin] = at
	return true
}
