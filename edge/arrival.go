package edge

import "time"

// arrivedIn is when, inside its minute, a request at t came: tenths of a
// second since the minute began (cookie.Token.Arrived). t is the ring's
// time, as the bucket is. The counter rule keeps it while the visitor stays
// in its bucket and sets it, to the second, when it gives it another.
func arrivedIn(t time.Time) uint16 {
	ms := t.UnixMilli() - unixMinute(t)*60_000
	return uint16(min(max(ms/100, 0), 599))
}
