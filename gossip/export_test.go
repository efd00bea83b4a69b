package gossip

// SetTestHook makes the node started with cfg call hook(where), with a
// Panic constant, where a test may make it panic: at the start of merging a
// message (PanicMessage) or a push-pull state (PanicMergeState) and of
// building its push-pull state (PanicLocalState), each under the node's
// lock, and at the start of each turn of the join, prune and beat loops.
func SetTestHook(cfg *Config, hook func(where string)) { cfg.testHook = hook }

// CarrierRank is how many live members of its data center rank above n as
// carrier: the first (0) sends the data center's figures.
func CarrierRank(n *Node) int { return n.rank() }

// TakeBroadcasts is a gossip round's ask for broadcasts (it flushes the
// dirty cells first), whose messages then go nowhere: a round whose
// packets were all lost.
func TakeBroadcasts(n *Node) int { return len((*delegate)(n).GetBroadcasts(0, 64*1024)) }
