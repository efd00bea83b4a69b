package crdt

import (
	"hash/fnv"
	"strconv"
)

// ReplicaID identifies one writer: a node name together with the incarnation
// it chose at start. It is a 64-bit hash so that counter cells stay small (a
// room with 50 nodes and an hour-long queue holds tens of thousands of them);
// the readable name travels in the node's NodeInfo register.
type ReplicaID uint64

// NewReplicaID derives the replica id of node name at incarnation inc. Callers
// choose inc so that it grows across restarts (start time in nanoseconds is
// the usual choice); any change of inc yields a fresh id.
func NewReplicaID(name string, inc uint64) ReplicaID {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write(strconv.AppendUint(nil, inc, 10))
	id := ReplicaID(h.Sum64())
	if id == 0 { // zero means "no replica" in registers
		id = 1
	}
	return id
}

// String renders the id as 16 hex digits.
func (r ReplicaID) String() string {
	const hex = "0123456789abcdef"
	var b [16]byte
	for i := 15; i >= 0; i-- {
		b[i] = hex[r&0xf]
		r >>= 4
	}
	return string(b[:])
}

// NodeInfo is the per-node fact each replica publishes about itself in an LWW
// register, so that other nodes can show names and addresses instead of ids.
type NodeInfo struct {
	Name        string `msgpack:"n" json:"name"`
	Incarnation uint64 `msgpack:"i" json:"incarnation"`
	Addr        string `msgpack:"a" json:"addr,omitempty"`
	// Left is set by a node that is shutting down cleanly, just before it
	// leaves the ring: its peers then stop expecting it back.
	Left bool `msgpack:"l,omitempty" json:"left,omitempty"`
	// Datacenter is the data center the node belongs to, when it names
	// one; WAN is its address in the pool between data centers while it
	// carries its data center's figures there. Both are empty on a node
	// that is a data center of its own, whose announcement is then as it
	// always was.
	Datacenter string `msgpack:"d,omitempty" json:"datacenter,omitempty"`
	WAN        string `msgpack:"w,omitempty" json:"wan,omitempty"`
}
