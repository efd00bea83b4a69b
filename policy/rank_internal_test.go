package policy

import (
	"testing"
	"unsafe"

	"github.com/waitroom/waitroom/crdt"
)

// TestASlotFollowsAtMostSoManyOtherReplicas: in a ring of 300 data centers
// a slot follows the first maxReplicaCurves other replicas it sees grow,
// and those keep growing; the rest are left to the coarser rule.
func TestASlotFollowsAtMostSoManyOtherReplicas(t *testing.T) {
	self := crdt.ReplicaID(1)
	counts := make([]crdt.Count, 300)
	for i := range counts {
		counts[i] = crdt.Count{Replica: crdt.ReplicaID(i + 1), N: 1}
	}
	cv := slotCurve{curve: curve{tip: new(int)}}
	cv.growReplicas(counts, self, 100)
	t.Run("the first look follows the bound's number of the others", func(t *testing.T) {
		if len(cv.by) != maxReplicaCurves {
			t.Fatalf("follows %d replicas, want %d", len(cv.by), maxReplicaCurves)
		}
		if cv.replica(self) != nil {
			t.Error("follows its own replica")
		}
	})
	for i := range counts {
		counts[i].N = 2
	}
	cv.growReplicas(counts, self, 200)
	t.Run("those followed grow at the next look, and no other is taken on", func(t *testing.T) {
		if len(cv.by) != maxReplicaCurves {
			t.Fatalf("follows %d replicas, want %d", len(cv.by), maxReplicaCurves)
		}
		for _, rc := range cv.by {
			if rc.last() != 2 {
				t.Fatalf("replica %v at %d, want 2", rc.id, rc.last())
			}
		}
	})
}

// TestCurvesOfARingOfDataCentersStayBounded: an hour's queue (180 slots)
// whose every slot grew at 300 data centers over four looks holds its
// replicas' curves, and saves them, within bounds a node can keep per
// room.
func TestCurvesOfARingOfDataCentersStayBounded(t *testing.T) {
	const slots, limit, fileLimit = 180, 1 << 20, 512 << 10
	self := crdt.ReplicaID(1)
	counts := make([]crdt.Count, 300)
	for i := range counts {
		counts[i].Replica = crdt.ReplicaID(i + 2)
	}
	c := &arrivalCurves{self: self, slots: make([]slotCurve, slots)}
	for look := range 4 {
		for i := range counts {
			counts[i].N = uint64(look + 1)
		}
		for j := range c.slots {
			if look == 0 {
				c.slots[j] = slotCurve{start: int64(j * 20), curve: curve{tip: new(int)}}
			}
			c.slots[j].growReplicas(counts, self, int32(look*250))
		}
	}
	var size, curves int
	for j := range c.slots {
		curves += len(c.slots[j].by)
		for _, rc := range c.slots[j].by {
			size += int(unsafe.Sizeof(rc)) + cap(rc.pts)*int(unsafe.Sizeof(curvePoint{})) + 8
		}
	}
	a := &Allocation{arr: c}
	file := len(a.SavePlaces())
	// Measured: 5,760 curves, 720 KiB held, 119 KiB saved; without the
	// bound 54,000 curves, 6,750 KiB and 1,139 KiB.
	t.Logf("%d slots of 300 data centers: %d curves, %d KiB held, %d KiB saved", slots, curves, size>>10, file>>10)
	if size > limit {
		t.Errorf("the curves hold %d KiB, want at most %d", size>>10, limit>>10)
	}
	if file > fileLimit {
		t.Errorf("the places file is %d KiB, want at most %d", file>>10, fileLimit>>10)
	}
}
