package edge

import (
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/policy"
)

// PoisonPolicy makes the policy panic, from now until restore is called, on
// every snapshot that poisoned says is poisoned, at where poisoned says
// (see policyFault): a state that takes the policy down, as every node of a
// ring would merge it. Test-only.
func PoisonPolicy(poisoned func(room string, snap *crdt.RoomSnapshot) string) (restore func()) {
	policyFault.Store(&poisoned)
	return func() { policyFault.Store(nil) }
}

// RingNow is the ring's time as this node reads it (gossip.Node.RingNow).
func (s *Server) RingNow() time.Time { return s.ringNow() }

// CurrentAllocation is the room's allocation as the request path reads it
// (nil for a room the node does not have), for tests that check who
// replaces it.
func (s *Server) CurrentAllocation(room string) *policy.Allocation {
	for _, rm := range s.rooms() {
		if rm.name == room {
			return rm.alloc.Load().Allocation
		}
	}
	return nil
}

// CheckCertificateFiles looks at the certificate files for a change now, as
// the next TLS connection after a second would, so that a test can hold
// what a reload did without waiting for that second. Test-only.
func (s *Server) CheckCertificateFiles() {
	if s.tls != nil && s.tls.files != nil {
		s.tls.files.nextCheck.Store(0)
		s.tls.files.reloadIfChanged(time.Now())
	}
}
