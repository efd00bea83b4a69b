package edge

import (
	"github.com/waitroom/waitroom/crdt"
)

// PoisonPolicy makes the policy panic, from now until restore is called, on
// every snapshot that poisoned says is poisoned, at where poisoned says
// (see policyFault): a state that takes the policy down, as every node of a
// ring would merge it. Test-only.
func PoisonPolicy(poisoned func(room string, snap *crdt.RoomSnapshot) string) (restore func()) {
	policyFault.Store(&poisoned)
	return func() { policyFault.Store(nil) }
}
