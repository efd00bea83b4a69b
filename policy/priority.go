package policy

// Priority groups: visitors holding a valid priority code go in ahead of the
// line, each group within a share of the node's admissions. A priority
// admission ahead of the line takes a slot of this node's pool (its share
// of the partial bucket and the new-user remainder), never a covered slot:
// the covered slots are the whole room's, kept at every node for the
// visitors waiting in the covered buckets, each of whom checks in at one
// node, so a node that gave them to the holders it sees took slots every
// other node was giving too, and the room went past new_users_per_minute
// by what the nodes gave together (1.3 × the limit in the simulator, with
// holders at half the limit). From the pool, the room's limits hold
// whatever mix of priority and ordinary traffic arrives; the edge counts it
// through Count like any admission. Past its share, or with no pool slot
// free, a holder is decided as an ordinary visitor: in the line at its own
// bucket, where a covered bucket's slot is its own.

// MaxPriorityGroups is the most priority groups a room may have.
const MaxPriorityGroups = 8

// DecidePriority decides for a visitor of priority group g (its index in
// the room's groups, 0..MaxPriorityGroups-1) whose group may take share
// (above 0, at most 1) of the node's admissions ahead of the line, and on
// Admit consumes one slot of this node's budget. It reports whether the
// admission was one ahead of the line (false: decided as any visitor, by
// Decide). The share is kept over the allocation chain: a group's
// admissions ahead of the line are at most share × the node's admissions
// before them, plus one.
func (a *Allocation) DecidePriority(v Visitor, g int, share float64) (Outcome, bool) {
	if a.mode != modeDecide || g < 0 || g >= MaxPriorityGroups || share <= 0 {
		return a.Decide(v, nil), false
	}
	c := &a.led.prio[g]
	for {
		n := c.Load()
		total := a.led.pool.Load() + a.led.covered.Load()
		if float64(n) > share*float64(total) {
			break
		}
		if !c.CompareAndSwap(n, n+1) {
			continue
		}
		if take(&a.led.pool, a.sp.poolCap) {
			return Admit, true
		}
		c.Add(-1) // no slot: nothing taken
		break
	}
	return a.Decide(v, nil), false
}

// PriorityAdmitted returns how many admissions group g took ahead of the
// line over the allocation chain.
func (a *Allocation) PriorityAdmitted(g int) int64 {
	if g < 0 || g >= MaxPriorityGroups {
		return 0
	}
	return a.led.prio[g].Load()
}
