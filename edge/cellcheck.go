package edge

import (
	"fmt"

	"github.com/waitroom/waitroom/crdt"
)

// checkCell refuses a peer's count beyond what its room's limits make
// possible (policy.CellLimits.Ceiling); gossip counts and logs it. A cell
// of a room this node does not have passes: only crdt.MaxEntryValue bounds
// it.
func (s *Server) checkCell(e crdt.Entry) error {
	t := s.table.Load() // nil while the node starts: no room yet
	if t == nil || t.rooms[e.Key.Room] == nil {
		return nil
	}
	rm := t.rooms[e.Key.Room]
	if ceil, ok := rm.cells.Ceiling(e.Key.Kind); ok && e.Value > ceil {
		return &crdt.OutOfBounds{Reason: crdt.RefusedBeyondRoom, Detail: fmt.Sprintf("room %q kind %d minute %d value %d > %d, which its limits make possible", e.Key.Room, e.Key.Kind, e.Key.Minute, e.Value, ceil)}
	}
	return nil
}
