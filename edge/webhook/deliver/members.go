package deliver

import (
	"cmp"
	"slices"
)

// memberChange is a notice a change in the ring calls for: typ about node.
type memberChange struct {
	typ, node string
}

// memberChanges are the ring's notices between two rounds of watching: the
// live members before and now, and the ones this node suspected before and
// now (alive but not heard from, gossip.Member.Suspected). A member is told
// of as suspected once, when it becomes so; one that recovers and is
// suspected again is told of again. A member that left is told of as left,
// not as suspected. Sorted, so that a round's notices come in one order.
func memberChanges(before, now, suspectedBefore, suspectedNow map[string]bool) []memberChange {
	var out []memberChange
	for name := range now {
		if !before[name] {
			out = append(out, memberChange{"node.joined", name})
		}
		if suspectedNow[name] && !suspectedBefore[name] {
			out = append(out, memberChange{"node.suspected", name})
		}
	}
	for name := range before {
		if !now[name] {
			out = append(out, memberChange{"node.left", name})
		}
	}
	slices.SortFunc(out, func(a, b memberChange) int {
		return cmp.Or(cmp.Compare(a.node, b.node), cmp.Compare(a.typ, b.typ))
	})
	return out
}
