package crdt

import "hash/fnv"

// Priority counters: per room and minute, G-counters of what priority codes
// did, one cell per priority group (Bucket holds GroupBucket of the group's
// name, so a group keeps its counts when the room's list of groups is
// reordered). They sit apart from the analytics kinds so that new analytics
// counters never collide with them.
const (
	PriorityAdmitted Kind = AnalyticsBase + 64 // admissions of code holders
	PriorityCodeUses Kind = AnalyticsBase + 65 // codes redeemed (one use each)
)

// GroupBucket is the Bucket of a priority group's cells: a 63-bit hash of
// its name.
func GroupBucket(group string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(group))
	return int64(h.Sum64() >> 1)
}

// SumByBucket sums a room's cells of kind k over minutes from..to
// (inclusive) by Bucket, other data centers' figures included.
func (s *State) SumByBucket(roomName string, k Kind, from, to int64) map[int64]uint64 {
	out := map[int64]uint64{}
	r := s.rooms[roomName]
	if r == nil {
		return out
	}
	s.eachCell(r, func(ck cellKey, c cellCounts) {
		if ck.Kind == k && ck.Minute >= from && ck.Minute <= to {
			out[ck.Bucket] += c.sum()
		}
	})
	return out
}
