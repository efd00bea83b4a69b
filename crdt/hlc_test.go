package crdt_test

import (
	"fmt"
	"testing"

	"github.com/waitroom/waitroom/crdt"
	"pgregory.net/rapid"
)

// TestOneReplicaNeverStampsTwoWritesAlike writes registers locally, again and
// again within the same millisecond, while peers' registers arrive (some
// stamped far ahead, which a local write passes over) and the wall clock
// stands still, moves on or steps back. Every local write must get a stamp
// greater than the one before: two writes sharing (stamp, replica) would
// leave peers disagreeing for good on which value won.
func TestOneReplicaNeverStampsTwoWritesAlike(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		const me = crdt.ReplicaID(7)
		s := crdt.New()
		now := rapid.Int64Range(1e12, 2e12).Draw(t, "start")
		offset := crdt.MaxClockOffset.Milliseconds()
		names := []string{"room/a", "room/b", "node/x"}
		var last crdt.HLC
		steps := rapid.IntRange(1, 60).Draw(t, "steps")
		for i := range steps {
			switch rapid.IntRange(0, 5).Draw(t, fmt.Sprintf("op%d", i)) {
			case 0: // the clock moves on, or steps back
				now += rapid.Int64Range(-2*offset, 3).Draw(t, fmt.Sprintf("tick%d", i))
			case 1: // a peer's write within the bound
				st := crdt.HLC{Wall: now + rapid.Int64Range(-5, offset).Draw(t, fmt.Sprintf("peerwall%d", i)), Logical: rapid.Uint32Range(0, 3).Draw(t, fmt.Sprintf("peerlog%d", i))}
				s.ApplyRegisterAt(crdt.RegisterEntry{Name: rapid.SampledFrom(names).Draw(t, fmt.Sprintf("peername%d", i)), Reg: crdt.LWW[[]byte]{Value: []byte("peer"), Stamp: st, Replica: 9}}, now)
			case 2: // a peer's write stamped far ahead, taken without the bound
				st := crdt.HLC{Wall: now + offset + rapid.Int64Range(1, 1e6).Draw(t, fmt.Sprintf("farwall%d", i))}
				s.ApplyRegister(crdt.RegisterEntry{Name: rapid.SampledFrom(names).Draw(t, fmt.Sprintf("farname%d", i)), Reg: crdt.LWW[[]byte]{Value: []byte("far"), Stamp: st, Replica: 9}})
			default: // a local write
				name := rapid.SampledFrom(names).Draw(t, fmt.Sprintf("name%d", i))
				e := s.SetRegister(name, []byte{byte(i)}, me, now)
				if !last.Less(e.Reg.Stamp) {
					t.Fatalf("write %d of %s at %d ms got stamp %+v, not after this replica's previous %+v", i, name, now, e.Reg.Stamp, last)
				}
				last = e.Reg.Stamp
			}
		}
	})
}
