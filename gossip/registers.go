package gossip

import "github.com/waitroom/waitroom/crdt"

// SeedRegister writes a named register with an explicit wall-clock stamp
// (milliseconds) unless the node already holds a newer write. It is how a
// config file seeds room settings: stamped with the file's modification time,
// a file edited after a runtime change wins over it, and a runtime change
// made after the file was written wins over the file.
//
// A file cannot have been written in the future: a modification time ahead
// of the node's clock is taken as now. A register held with a stamp beyond
// the allowed clock offset does not hold the file's settings back (see
// crdt.State.ApplyRegisterAt).
func (n *Node) SeedRegister(name string, value []byte, wallMillis int64) bool {
	now := n.RingNow().UnixMilli()
	e := crdt.RegisterEntry{Name: name, Reg: crdt.LWW[[]byte]{Value: value, Stamp: crdt.HLC{Wall: min(wallMillis, now)}, Replica: n.replica}}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.state.ApplyRegisterAt(e, now) {
		return false
	}
	n.dirtyRegs[name] = struct{}{}
	return true
}

// Registers returns a copy of every register whose name starts with prefix.
func (n *Node) Registers(prefix string) map[string]crdt.LWW[[]byte] {
	out := map[string]crdt.LWW[[]byte]{}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.state.Registers(prefix, func(name string, r crdt.LWW[[]byte]) { out[name] = r })
	return out
}
