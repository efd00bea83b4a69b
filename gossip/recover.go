package gossip

import (
	"fmt"
	"runtime/debug"
)

// Every node merges the same state, so a state that makes one node panic
// makes every node of the ring panic at once: the whole waiting room would
// go down together. No goroutine of the gossip layer may therefore die of a
// panic: memberlist's callbacks and the node's own goroutines recover, report
// where (Config.OnPanic, or one error line in the node's log) and go on. A
// message whose merge panicked is dropped whole and counted under
// DroppedPanic; a push-pull state that could not be built is sent empty; a
// loop goes on with its next tick.

// Where a recovered panic happened: the where of Config.OnPanic, short
// enough to be a metric label.
const (
	PanicMessage      = "gossip_message"       // merging a peer's broadcast or reliable message (NotifyMsg)
	PanicMergeState   = "gossip_merge_state"   // merging a peer's push-pull state (MergeRemoteState)
	PanicLocalState   = "gossip_local_state"   // building this node's push-pull state (LocalState)
	PanicBroadcasts   = "gossip_broadcasts"    // encoding changed cells for a gossip packet (GetBroadcasts)
	PanicMeta         = "gossip_meta"          // announcing this node's wire features (NodeMeta)
	PanicEvents       = "gossip_events"        // a member joining, leaving or changing (NotifyJoin, NotifyLeave, NotifyUpdate)
	PanicPing         = "gossip_ping"          // the clock a probe's ack carries (AckPayload, NotifyPingComplete)
	PanicJoinLoop     = "gossip_join_loop"     // joining the seeds, looking for lost members
	PanicPruneLoop    = "gossip_prune_loop"    // pruning old counters and marks, checking the clock
	PanicBeatLoop     = "gossip_beat_loop"     // beating while the node has no counts to send
	PanicInsecureLoop = "gossip_insecure_loop" // warning that gossip is unauthenticated
	PanicPush         = "gossip_push"          // pushing own changes straight to the peers
	PanicMarks        = "gossip_marks"         // sending marks to a peer that joined, or to every peer
	PanicLeave        = "gossip_leave"         // handing the last counts over to a peer on a clean leave
	PanicCarrier      = "gossip_carrier"       // choosing whether to carry the data center's figures, joining the pool between data centers
)

// DroppedPanic is the dropped-message reason (Stats.Dropped) of a message or
// push-pull state whose merge panicked.
const DroppedPanic = "panic"

// recoverAs, deferred at the top of a memberlist callback or of one of the
// node's goroutines (defer n.recoverAs(where)), turns a panic there into a
// report under where instead of the end of the process. then runs first, to
// leave the callback's effects right (a drop counted, a push disarmed); a
// callback without named results returns its zero values. The code it
// guards must release its locks by defer, or a recovered panic leaves them
// held and the node stuck.
func (n *Node) recoverAs(where string, then ...func()) {
	r := recover()
	if r == nil {
		return
	}
	stack := debug.Stack()
	for _, f := range then {
		f()
	}
	n.reportPanic(where, r, stack)
}

// guarded runs one turn of a loop of the node: a panic in it is reported
// and the loop goes on with its next turn.
func (n *Node) guarded(where string, turn func()) {
	defer n.recoverAs(where)
	turn()
}

// reportPanic hands a recovered panic to Config.OnPanic, or logs it. An
// OnPanic that panics itself is logged: reporting must not undo the
// recovery.
func (n *Node) reportPanic(where string, r any, stack []byte) {
	if n.cfg.OnPanic == nil {
		n.logPanic(where, r, stack)
		return
	}
	defer func() {
		if r2 := recover(); r2 != nil {
			n.logPanic(where, fmt.Sprintf("%v (and OnPanic panicked reporting it: %v)", r, r2), stack)
		}
	}()
	n.cfg.OnPanic(where, r, stack)
}

func (n *Node) logPanic(where string, r any, stack []byte) {
	n.log.Error().Str("where", where).Str("panic", fmt.Sprint(r)).Str("stack", string(stack)).Msg("recovered from a panic in gossip; the node keeps running")
}

// dropPanicked counts a message or push-pull state whose merge panicked.
func (n *Node) dropPanicked() { n.stats.drop(DroppedPanic) }

// hook calls Config.testHook, where tests make the node panic.
func (n *Node) hook(where string) {
	if h := n.cfg.testHook; h != nil {
		h(where)
	}
}
