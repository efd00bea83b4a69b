package edge

import (
	"bytes"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/edge/roomreg"
)

// Where a room's settings in force came from, as the room API and the
// state document show it (RoomSource).
const (
	// SourceFile: this node's config file. The file's settings are stamped
	// with its modification time, so a file edited after a change made at
	// run time wins over it, and a change made after the file was written
	// wins over the file.
	SourceFile = "file"
	// SourceAPI: a change made through this node's admin API (or console)
	// since it started.
	SourceAPI = "api"
	// SourceRestored: taken back from the node's data directory at start,
	// a change made at run time before the node stopped, and newer than
	// both the file and anything the ring has told the node since.
	SourceRestored = "restored"
	// SourceRing: learned from a peer: a change made through another
	// node's admin API, or a room of another node's config file.
	SourceRing = "ring"
)

// roomOrigin is a room register as written by a known source.
type roomOrigin struct {
	stamp   crdt.HLC
	replica crdt.ReplicaID
	value   []byte
	from    string
}

// noteSource records that the room register name holds what from wrote,
// when the register holds it now.
func (s *Server) noteSource(name, from string) {
	reg, ok := s.node.Register(roomreg.Name(name))
	if !ok {
		return
	}
	s.sourcesMu.Lock()
	defer s.sourcesMu.Unlock()
	if s.sources == nil {
		s.sources = map[string]roomOrigin{}
	}
	s.sources[name] = roomOrigin{stamp: reg.Stamp, replica: reg.Replica, value: reg.Value, from: from}
}

// RoomSource says where the named room's settings in force came from:
// SourceFile, SourceAPI, SourceRestored or SourceRing; "" for a room the
// node does not have.
func (s *Server) RoomSource(name string) string {
	reg, ok := s.node.Register(roomreg.Name(name))
	if !ok || len(reg.Value) == 0 {
		return ""
	}
	s.sourcesMu.Lock()
	o, known := s.sources[name]
	s.sourcesMu.Unlock()
	// The same settings under the same stamp are the same write, whichever
	// replica's copy won: a file seeded again after a restart ties with
	// the copy of it that was restored.
	if known && o.stamp == reg.Stamp && bytes.Equal(o.value, reg.Value) {
		return o.from
	}
	return SourceRing
}
