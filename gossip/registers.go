package gossip

import "github.com/waitroom/waitroom/crdt"

// SeedRegister writes a named register with an explicit wall-clock stamp
// (milliseconds) unless the node already holds a newer write. It is how a
// config file seeds room settings: stamped with the file's modification time,
// a file edited after a runtime change wins over it, and a runtime change
// made after the file was written wins over the file.
func (n *Node) SeedRegister(name string, value []byte, wallMillis int64) bool {
	e := crdt.RegisterEntry{Name: name, Reg: crdt.LWW[[]byte]{Value: value, Stamp: crdt.HLC{Wall: wallMillis}, Replica: n.replica}}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.state.ApplyRegister(e) {
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
