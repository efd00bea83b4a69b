package edge

import "github.com/waitroom/waitroom/policy"

// Places across a restart: the ring's state, saved in the data directory,
// holds how many visitors joined each arrival slot, not in what order; the
// node alone saw that (policy.Allocation.SavePlaces). It is saved beside
// the state, and each room's chain takes it back at its first allocation
// after a restart, so that visitors keep their places inside their slot.

// resumeChain is the chain a room starts with: the one its places, taken
// back from the data directory, resume, or a fresh one. Each room's
// places are taken back once.
func (s *Server) resumeChain(name string) policy.Chain {
	s.placesMu.Lock()
	b := s.places[name]
	delete(s.places, name)
	s.placesMu.Unlock()
	c, err := policy.ResumeChain(s.node.Replica(), policy.Continuous, b)
	if err != nil {
		s.log.Warn().Err(err).Str("room", name).Msg("data directory: the order inside the room's arrival slots cannot be taken back; its visitors are placed by their slots' shares")
	}
	return c
}

// Places are the rooms' places to save in the data directory, by room:
// each room's order inside its arrival slots as its latest allocation knows
// it, and the places taken back for a room in force that has not
// allocated yet.
func (s *Server) Places() map[string][]byte {
	rooms := map[string][]byte{}
	s.placesMu.Lock()
	for name, b := range s.places {
		if s.room(name) != nil { // a room deleted meanwhile keeps nothing
			rooms[name] = b
		}
	}
	s.placesMu.Unlock()
	for _, rm := range s.rooms() {
		if a := rm.alloc.Load(); a != nil && !a.fallback {
			if b := a.Allocation.SavePlaces(); len(b) > 0 {
				rooms[rm.name] = b
			}
		}
	}
	return rooms
}
