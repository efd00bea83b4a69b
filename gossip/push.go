package gossip

import (
	"time"

	"github.com/waitroom/waitroom/crdt"
)

// A node's own counts reach its peers by the broadcast queue only at the
// next gossip round (every 200 ms with LAN timings), and most peers only a
// round or two later through a relay. Every node keeps back, in admissions,
// what its peers may have admitted within that delay, so a flood stops short
// of the limit by about that much. The push sends the node's changed own
// cells straight to every live peer, as soon as a short window has gathered
// the increments made meanwhile: one hop, no wait for the round. It is the
// same stamped entries message the broadcast queue carries (peers decode,
// screen and time it alike); the queue still carries the cells too, for
// relays and for the peers a lost packet missed.
const (
	// pushWindow gathers the increments of a burst into one push.
	pushWindow = 15 * time.Millisecond
	// pushMaxRing is the largest ring a node pushes to: the push costs a
	// packet per peer, and in a larger ring the budget below would leave
	// too few pushes a second to beat the gossip round anyway.
	pushMaxRing = 16
	// pushBudget is the most bytes a second a node spends on pushes (a
	// token bucket refilled at this rate, holding at most pushBurst; a push
	// waits until the bucket holds its cost, or is full, and then spends it,
	// going into debt if it cost more than the burst). At
	// 1,000 admissions a second over 10 nodes, gossip alone costs about
	// 13 kB/s per node, and with the push about 16 kB/s (TestMeasureGossipCost),
	// under the 20 kB/s the product allows. When the budget is spent, the
	// next push waits for it: a node of that busy 10-node ring pushes a
	// few times a second (a push of its ~6 changed cells costs ~3.5 kB),
	// and between pushes its changes travel by gossip as before; a node of
	// a 3-node ring, or one admitting a few visitors a second, pushes
	// every change within the window.
	pushBudget = 6000
	pushBurst  = 2 * pushBudget / 5
	// pushOverhead is what a packet costs besides the message: the user
	// message header, the label and the encryption (version, nonce, tag),
	// and the UDP/IP headers.
	pushOverhead = 80
	// pushChunk is how many cells one pushed message holds at most; more
	// changed cells are pushed in several messages.
	pushChunk = 8
)

// pusher is the state of the push: whether one is scheduled, and the budget.
type pusher struct {
	armed  bool
	tokens float64
	last   time.Time // when tokens were last refilled (monotonic)
}

// schedulePush arms the push for the node's changed own cells, unless it is
// already armed: the increments of the window leave together.
func (n *Node) schedulePush() {
	n.pushMu.Lock()
	defer n.pushMu.Unlock()
	if n.push.armed {
		return
	}
	n.push.armed = true
	time.AfterFunc(pushWindow, n.pushOwn)
}

// pushOwn sends the node's dirty own cells to every live peer, within the
// budget; it queues them for gossip as a flush does. It runs on a timer's
// goroutine; a panic disarms the push, so that the next increment arms
// another.
func (n *Node) pushOwn() {
	defer n.recoverAs(PanicPush, n.disarmPush)
	select {
	case <-n.stop:
		return
	default:
	}
	ml := n.mlReady.Load()
	peers := n.otherPeers()
	if ml == nil || len(peers) == 0 || len(peers)+1 > pushMaxRing {
		n.disarmPush()
		n.dropUnpushed()
		return
	}
	// A cell's message is about 60 bytes; guess the cost of the push from
	// what is dirty or owed and wait for the budget if it is spent.
	own := n.ownDirty() + n.unpushedCells()
	if own == 0 {
		n.disarmPush()
		return // pushed meanwhile
	}
	msgs := (own + pushChunk - 1) / pushChunk
	guess := float64(len(peers) * (msgs*pushOverhead + own*60))
	if wait, ok := n.takeBudget(guess); !ok {
		time.AfterFunc(max(wait, pushWindow), n.pushOwn)
		return
	}

	entries, at := n.flushOwn()
	spent := 0
	for _, msg := range n.ownMessages(entries, at) {
		for i := range peers {
			if err := ml.SendBestEffort(&peers[i], msg); err != nil {
				n.log.Debug().Err(err).Str("peer", peers[i].Name).Msg("push own counts")
				continue
			}
			n.stats.msgsOut.Add(1)
			spent += len(msg) + pushOverhead
		}
	}
	n.pushMu.Lock()
	defer n.pushMu.Unlock()
	n.push.tokens -= float64(spent)
}

// stampedEntry is an own cell a gossip round flushed before the push, and
// the stamp it was queued with.
type stampedEntry struct {
	e     crdt.Entry
	stamp int64
}

// pushArmed reports whether a push is scheduled.
func (n *Node) pushArmed() bool {
	n.pushMu.Lock()
	defer n.pushMu.Unlock()
	return n.push.armed
}

// unpushedCells counts the own cells the push owes (see Node.unpushed).
func (n *Node) unpushedCells() int {
	n.flushMu.Lock()
	defer n.flushMu.Unlock()
	return len(n.unpushed)
}

// dropUnpushed forgets the cells the push owes, when it will not run: the
// broadcast queue carries them.
func (n *Node) dropUnpushed() {
	n.flushMu.Lock()
	defer n.flushMu.Unlock()
	clear(n.unpushed)
}

func (n *Node) disarmPush() {
	n.pushMu.Lock()
	defer n.pushMu.Unlock()
	n.push.armed = false
}

// ownDirty counts the node's own dirty cells.
func (n *Node) ownDirty() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	own := 0
	for id := range n.dirty {
		if id.replica == n.replica {
			own++
		}
	}
	return own
}

// takeBudget refills the push's budget and, when it holds what a push
// guessed to cost that much needs, disarms the push and reports true;
// otherwise it reports how long to wait for the budget.
func (n *Node) takeBudget(guess float64) (time.Duration, bool) {
	n.pushMu.Lock()
	defer n.pushMu.Unlock()
	now := time.Now()
	if n.push.last.IsZero() {
		n.push.tokens = pushBurst
	} else {
		n.push.tokens = min(pushBurst, n.push.tokens+now.Sub(n.push.last).Seconds()*pushBudget)
	}
	n.push.last = now
	// A push larger than the burst goes once the bucket is full, and its
	// cost is owed: the average stays within the budget.
	if need := min(guess, pushBurst); n.push.tokens < need {
		return time.Duration((need - n.push.tokens) / pushBudget * float64(time.Second)), false
	}
	// Disarm before the flush: an increment made from here on arms the
	// next push, and this one carries whatever the flush reads.
	n.push.armed = false
	return 0, true
}

// flushOwn flushes the dirty cells into the broadcast queue and returns the
// node's own cells among them, with the oldest of their stamps (unix ms):
// the stamp of the pushed message, so that its delay is never understated.
func (n *Node) flushOwn() ([]crdt.Entry, int64) {
	var own []crdt.Entry
	var at int64
	n.flushWith(func(e crdt.Entry, stamp int64) {
		if e.Replica != n.replica {
			return
		}
		own = append(own, e)
		if stamp > 0 && (at == 0 || stamp < at) {
			at = stamp
		}
	})
	return own, at
}

// ownMessages encodes this node's own cells, flushed at at, as packet-sized
// messages for its peers, stamped when the peers read stamps. A chunk that
// does not encode within a packet is left out: the broadcast queue, which
// the flush filled too, carries it.
func (n *Node) ownMessages(own []crdt.Entry, at int64) [][]byte {
	return n.entryMessages(own, at, n.stampPeers.Load())
}

// entryMessages encodes own as packet-sized messages, stamped with at when
// stamped is set; a chunk that does not encode within a packet is left out.
func (n *Node) entryMessages(own []crdt.Entry, at int64, stamped bool) [][]byte {
	var msgs [][]byte
	for len(own) > 0 {
		chunk := own[:min(pushChunk, len(own))]
		own = own[len(chunk):]
		var msg []byte
		var err error
		if stamped {
			msg, err = EncodeStampedEntries(chunk, at)
		} else {
			msg, err = EncodeEntries(chunk)
		}
		if err == nil && len(msg) <= MaxPacketMessage {
			msgs = append(msgs, msg)
		}
	}
	return msgs
}
