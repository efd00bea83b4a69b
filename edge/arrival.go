package edge

import (
	"time"

	"github.com/waitroom/waitroom/cookie"
)

// arrivedIn is when, inside its minute, a request at t came: tenths of a
// second since the minute began (cookie.Token.Arrived). t is the ring's
// time, as the bucket is.
func arrivedIn(t time.Time) uint16 {
	ms := t.UnixMilli() - unixMinute(t)*60_000
	return uint16(min(max(ms/100, 0), 599))
}

// arrivedAt is Arrived for a visitor placed in bucket at unix second sec:
// the offset into the bucket's minute, held to it.
func arrivedAt(bucket, sec int64) uint16 {
	return uint16(min(max((sec-bucket*60)*10, 0), 599))
}

// rebucketed keeps a token's Arrived true to its bucket after the counter
// rule gave it another one (a visitor counted nowhere for a while joins the
// current minute's bucket; a shuffle draws one): the rule stamps
// LastCheckIn with the second it did so, which is when the visitor came
// into that bucket.
func rebucketed(t *cookie.Token, oldBucket int64) {
	if t.Bucket != oldBucket {
		t.Arrived = arrivedAt(t.Bucket, t.LastCheckIn)
	}
}
