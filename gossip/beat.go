package gossip

import (
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/waitroom/waitroom/crdt"
)

// Heartbeats. Delay samples come from a peer's counts; a peer with no
// traffic gives none, and the ring's delay would stay unmeasured until the
// very flood it matters for. So a node that has sent no counts of its own
// for BeatInterval writes its beat register, whose value is its clock: its
// first arrival is a delay sample like a stamped count. Under load, counts
// give the samples and no beat is sent, so beats cost nothing where the
// gossip budget is tight.

// BeatInterval is how often an idle node beats: enough for LagMinSamples
// within LagWindow with room to spare.
const BeatInterval = 2 * time.Second

// beatPrefix names the beat registers: beat/<replica>, one per replica,
// written only by it.
const beatPrefix = "beat/"

// RefusedBeat is the refusal reason of a beat register that is not its
// writer's or does not hold a time.
const RefusedBeat = "invalid_beat"

// BeatRegister is the name of replica r's beat register.
func BeatRegister(r crdt.ReplicaID) string { return beatPrefix + r.String() }

func encodeBeat(nowMillis int64) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(nowMillis))
}

func decodeBeat(b []byte) (int64, bool) {
	if len(b) != 8 {
		return 0, false
	}
	ms := int64(binary.BigEndian.Uint64(b))
	return ms, ms > 0
}

// checkBeat accepts a beat register only under its writer's name and
// holding a time.
func checkBeat(r crdt.RegisterEntry) error {
	if r.Name != BeatRegister(r.Reg.Replica) {
		return fmt.Errorf("register %q written by replica %s", r.Name, r.Reg.Replica)
	}
	if _, ok := decodeBeat(r.Reg.Value); !ok {
		return fmt.Errorf("register %q does not hold a time", r.Name)
	}
	return nil
}

// beatIfIdle writes the beat register when the node has queued no counts
// of its own for BeatInterval.
func (n *Node) beatIfIdle(now time.Time) {
	if now.UnixNano()-n.lastOwn.Load() < n.beatInterval().Nanoseconds() {
		return
	}
	n.lastOwn.Store(now.UnixNano())
	n.SetRegister(BeatRegister(n.replica), encodeBeat(now.UnixMilli()))
}

func (n *Node) beatInterval() time.Duration {
	if n.cfg.BeatInterval > 0 {
		return n.cfg.BeatInterval
	}
	return BeatInterval
}

func (n *Node) beatLoop() {
	defer n.wg.Done()
	t := time.NewTicker(n.beatInterval() / 4)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
			n.beatIfIdle(n.clock())
		}
	}
}

// noteBeats takes a delay sample from each peer's beat that first reached
// this node, at now.
func (n *Node) noteBeats(changed []crdt.RegisterEntry, now time.Time) {
	for _, r := range changed {
		if !strings.HasPrefix(r.Name, beatPrefix) {
			continue
		}
		if at, ok := decodeBeat(r.Reg.Value); ok {
			n.noteDelayOf(r.Reg.Replica, at, now)
		}
	}
}
