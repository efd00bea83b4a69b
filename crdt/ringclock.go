package crdt

import (
	"slices"
	"time"
)

// The ring's clock. Every counter cell is dated by a minute (an arrival
// bucket, the minute of an admission or of a session's last request), and a
// room's budgets are per minute, so nodes must agree on when a minute
// begins: with clocks 30 s apart, one node stamps a visitor into a bucket its
// peers have already closed, and each node spends a fresh minute's budget at
// its own boundary. "Keep NTP running" is advice, not a guarantee, so the
// nodes agree among themselves instead.
//
// Each node measures its live peers' clocks against its own (their clock
// minus its own, over the gossip layer's probes). Its ring time is its own
// clock corrected by the median of those offsets with its own, zero, among
// them. The median of (clock_j − clock_i) over the ring is the median of the
// ring's clocks minus clock_i, so every node that hears the same peers
// arrives at the same time, the median clock of the ring, whatever its own
// clock says; with an even number of clocks the mean of the middle two
// keeps that true. A majority of correct clocks outvotes any minority of bad
// ones, however far off; a node alone keeps its own clock; and one peer
// that comes and goes moves the median only to a neighbouring clock, which
// in a ring of mostly correct clocks is a correct one.
//
// Ring time never runs backwards by a little: a correction that would move
// it back by at most RingHold holds it still instead, until the clock
// catches up. Small backward moves come from measurement noise (a new probe
// with a shorter round trip) and would stamp a visitor into a minute that
// has just closed. A larger backward move means the ring's time really is
// elsewhere (this node just joined with a clock ahead, or the peer that
// made the median left a two-node ring); then agreeing with the ring at
// once matters more than a clock that only goes forward, since holding still
// for minutes would date every count of this node in the ring's future.

// RingHold is the largest backward correction that RingNow absorbs by
// holding the ring time still rather than stepping back.
const RingHold = 5 * time.Second

// RingOffset is the correction from a node's clock to ring time: the median
// of its peers' offsets (each a peer's clock minus its own) together with
// its own offset, zero. With no peer it is zero.
func RingOffset(peers []time.Duration) time.Duration {
	if len(peers) == 0 {
		return 0
	}
	s := make([]time.Duration, 0, len(peers)+1)
	s = append(s, 0)
	s = append(s, peers...)
	slices.Sort(s)
	k := len(s)
	if k%2 == 1 {
		return s[k/2]
	}
	lo, hi := s[k/2-1], s[k/2]
	return lo + (hi-lo)/2
}

// RingNow is the ring time at local, this node's clock, given the ring
// offset (RingOffset) and the last ring time this node gave out (zero
// before the first): local + offset, unless that is before last by at most
// RingHold, in which case last.
func RingNow(local time.Time, offset time.Duration, last time.Time) time.Time {
	t := local.Add(offset)
	if !last.IsZero() && t.Before(last) && last.Sub(t) <= RingHold {
		return last
	}
	return t
}
