package policy

import (
	"math"
	"time"
)

// RoundingWindow is how long one offset of the systematic rounding of the
// nodes' shares lasts (see roundedPart): a span of the ring's time that
// every node cuts at the same instants, whatever lag it assumes.
const RoundingWindow = time.Second

// roundedPart is how many of v slots the interval [lo, hi) of the line that
// every node divides (see continuousSplit) gets by systematic rounding at
// now: every node rounds its interval with one offset, so the rounded parts
// of the nodes add up to v (to at most v when v is not whole) and none gets
// a slot another one does.
//
// That holds only while the nodes draw the same offset. The offset turns
// every RoundingWindow of the ring's time, which the nodes share within the
// clock offsets they correct for, whatever lag each assumes. It was keyed on
// the node's own lag before (now / lag), and each edge assumes the lag it
// measures, so two nodes drew unrelated offsets and their parts could add
// up to one more than the pool: in a fresh room flooded at three real
// processes two queued visitors were let in 25 ms apart at two nodes into
// the one slot a session's end had freed (41 of 40). In the policy's ring
// model, a fresh flood with browsing visitors and lags of 0.15 to 0.8 s at
// the three nodes went over the limit in 62 of 180 runs with the offset
// keyed on the lag, in 7 with the second.
//
// What is left: an admission counts against a node's allowance for one
// lag, and within that lag the offset may turn, so a node that took the
// last slot just before a turn and one that rounds with the next offset
// just after, not having heard of it, may both have it. Keeping each node to
// the least of its parts under the offsets of every window its last lag
// reaches into closes most of that (2 of the 180 runs), but a lone free slot is
// then nobody's for most of a lag after every turn, and with lags of a
// second or more for most of the time: it stayed free for up to 31 s while
// visitors waited (1-minute sessions, lag 2 s), and a fresh flood queued at
// 0.90 of its limits. A window of a second turns seldom enough within
// the lags the edge measures (0.15 to 0.8 s) and often enough that a slot
// no visitor at its node takes goes to another node within the second.
func roundedPart(room string, v, lo, hi float64, now time.Time) int64 {
	u := unitHash(room, floorDiv(now.UnixNano(), RoundingWindow.Nanoseconds()))
	return int64(math.Floor(tidy(v*hi)+u)) - int64(math.Floor(tidy(v*lo)+u))
}

// floorDiv is x / d rounded down, for d > 0.
func floorDiv(x, d int64) int64 {
	q := x / d
	if x%d != 0 && x < 0 {
		q--
	}
	return q
}
