package edge

// RefreshAllocations runs one round of the allocation loop now, at the
// node's clock: rooms and revocations synced from gossip, every room's
// allocation recomputed. The loop does this at least every 250 ms; a test
// calls it instead of sleeping for the loop, after moving a fake clock or
// once gossip has brought what it waits for. Test-only: it exists in the
// tests' build of the package.
func (s *Server) RefreshAllocations() { s.refreshAllocations(s.clock()) }
