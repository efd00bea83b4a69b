package edge

// WaitingNow is the number of visitors waiting in the named room as the
// node's merged state says at its clock, summed afresh rather than taken from
// the last allocation (which the loop may not have recomputed yet): for tools
// that drive load and read the count right after, such as the bench. -1 for
// a room the node does not have.
func (s *Server) WaitingNow(name string) int64 {
	now := s.ringNow()
	for _, rm := range s.rooms() {
		if rm.name == name {
			return rm.s.node.Snapshot(rm.name, now.Unix(), rm.viewAt(now).win).TotalWaiting
		}
	}
	return -1
}
