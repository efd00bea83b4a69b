package policy

import (
	"math"
	"time"
)

// The queue page's refresh intervals, in seconds, each jittered per check-in
// so that check-ins spread out: about twenty seconds, Cloudflare's Waiting
// Room's as the outside analysis "Cloudflare Waiting Room internals: the
// JWT, the estimated wait, and edge coordination" reads it, for most of the
// line; about five for the visitors near its front (see
// Allocation.RefreshInterval).
const (
	RefreshBase       = 20
	RefreshJitter     = 3 // ± seconds
	NearRefreshBase   = 5
	NearRefreshJitter = 1 // ± seconds
)

// NearCheckIn is the longest interval between two check-ins of a visitor
// near the front of the line: the near refresh interval with its jitter.
const NearCheckIn = (NearRefreshBase + NearRefreshJitter) * time.Second

// JitteredRefresh is the refresh interval, in seconds, of a queue page that
// is not for a visitor in line (one in the infinite queue, or held for the
// challenge): RefreshBase ± RefreshJitter, picked by draw, a number from 0
// up to 1 that the caller draws at random.
func JitteredRefresh(draw float64) uint16 {
	return jittered(RefreshBase, RefreshJitter, draw)
}

// jittered picks one of the 2·jitter+1 whole seconds around base by draw
// (0 ≤ draw < 1).
func jittered(base, jitter int, draw float64) uint16 {
	k := int(math.Floor(draw * float64(2*jitter+1)))
	k = min(max(k, 0), 2*jitter)
	return uint16(base - jitter + k)
}

// RefreshInterval is the refresh interval, in seconds, that a visitor of
// bucket queued on this allocation is given, draw being a number from 0 up
// to 1 that the caller draws at random for the jitter.
//
// Visitors near the front of the line (in a covered bucket, the partial
// bucket the pool reaches into, or the bucket after it, or anyone while
// nobody waits yet) check in every NearCheckIn at most, the rest of the line
// every Room's check-in interval. The slots that open go to the front: when
// the per-minute limit binds, the minute's slots open at :00 and the oldest
// bucket's visitors take them at their next check-in, while newer buckets
// are held back until those check-ins had their chance (see holdBack); a
// newer bucket's visitor turned away meanwhile comes back one interval
// later again. With twenty seconds for everyone a slot stayed free for up to
// 32 s in the policy's ring model of a regional 4:1:1 flood (39 s at the
// origin with real processes); checking in often where it matters lets the
// hold end after the short interval (a bucket near for long enough has all
// its visitors on it) and the slots be taken within seconds.
//
// Refreshing faster still gains nothing: the interval is in the signed
// token, and a check-in before it is over counts nothing (EarlyCheckIn); a
// visitor near the front is asked for the short interval by the rule, not
// by its own choice. The rest of the line keeps the long one, so the extra
// check-ins are those of a few buckets. A random queue has no front, and the
// reference strategy holds nobody back: both give everyone the long one.
func (a *Allocation) RefreshInterval(bucket int64, draw float64) uint16 {
	if a.near(bucket) {
		return jittered(NearRefreshBase, NearRefreshJitter, draw)
	}
	return JitteredRefresh(draw)
}

// near reports whether a visitor of bucket is near the front of the line
// (see RefreshInterval).
func (a *Allocation) near(bucket int64) bool {
	if a.mode != modeDecide || a.method == Random || a.strategy != Continuous {
		return false
	}
	return a.nearAll || bucket <= a.nearThrough
}

// nears remembers, along a chain, since when each bucket near the front of
// the line has been so without a break: once a bucket has been near for a
// check-in interval (and a lag, for the other nodes to agree), every one of
// its visitors who still waits has been given the short interval.
type nears struct {
	b [maxHolds + 2]struct {
		bucket int64
		since  int64 // unix nanoseconds
	}
	n int
}

func (h *nears) find(bucket int64) (since int64, ok bool) {
	for i := range h.n {
		if h.b[i].bucket == bucket {
			return h.b[i].since, true
		}
	}
	return 0, false
}

func (h *nears) add(bucket, since int64) bool {
	if h.n == len(h.b) {
		return false
	}
	h.b[h.n].bucket, h.b[h.n].since = bucket, since
	h.n++
	return true
}

// markNear records which waiting buckets are near the front, given the
// index of the newest covered one (last, −1 for none): the covered ones,
// the partial one and the one after it; everyone when no bucket is left
// beyond those.
func (a *Allocation) markNear(last int) {
	through := last + 2
	a.nearAll = through >= len(a.buckets)
	if !a.nearAll {
		a.nearThrough = a.buckets[through].bucket
	}
	now := a.now.UnixNano()
	var next nears
	for _, b := range a.buckets[:min(through+1, len(a.buckets))] {
		since := now
		if s, ok := a.nearSeen.find(b.bucket); ok {
			since = s
		}
		if !next.add(b.bucket, since) {
			break
		}
	}
	a.nearSeen = next
}

// checkInOf is the longest a visitor of covered bucket may take to check in
// from now: NearCheckIn once the bucket has been near the front for long
// enough that all its visitors have the short interval, the room's check-in
// interval before.
func (a *Allocation) checkInOf(bucket int64) time.Duration {
	long := a.room.checkIn()
	since, ok := a.nearSeen.find(bucket)
	if ok && a.now.UnixNano()-since >= (long+2*a.lag).Nanoseconds() {
		return min(long, NearCheckIn)
	}
	return long
}
