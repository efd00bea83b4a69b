package crdt

import (
	"slices"
	"time"
)

// The ring's measured gossip delay. Every node leaves room in its
// allocation for what its peers admitted that it has not heard of yet, so
// it must know how late their counts reach it. Each change a peer sends
// carries the peer's clock when it was made; its first arrival gives a
// delay sample (ChangeDelay), kept per peer for DelayWindow (Delays). A
// peer's delay is the DelayQuantile of its samples; the ring's is the
// highest over the live peers, and only once every live peer has given
// DelayMinSamples recent samples with its clock offset known: a peer that
// has said nothing lately may be slower than the others, so until then the
// node keeps its configured bound (RingDelay).
//
// The rule lives here, pure and taking now, so that the gossip layer that
// measures delays at the edge and the simulator that replays its deliveries
// assume the same delay for the same samples.

// Measurement bounds.
const (
	// DelayWindow is how long a delay sample counts.
	DelayWindow = time.Minute
	// DelayMinSamples is how many delay samples within DelayWindow a peer
	// must have given before its delay is trusted.
	DelayMinSamples = 8
	// DelayQuantile is the percentile of a peer's delays reported as its
	// delay.
	DelayQuantile = 0.99
	// DelayKeep is how many samples are kept per peer: the most recent.
	DelayKeep = 512
	// DelayReuse is how long a ring's delay figure may be reused:
	// allocations are recomputed after every merge, and a figure over a
	// minute of samples does not move faster than this (see ReuseDelay).
	DelayReuse = 250 * time.Millisecond
	// BeatInterval is how long a node that has sent no counts of its own
	// waits before it beats (its clock, to every peer) so that its peers
	// keep getting delay samples from it: enough for DelayMinSamples
	// within DelayWindow with room to spare. It checks BeatChecks times
	// per interval whether a beat is due.
	BeatInterval = 2 * time.Second
	BeatChecks   = 4
)

// ChangeDelay is how long ago, at now (this node's clock), a change was
// made at unix ms at on a peer's clock that reads off ahead of this node's.
func ChangeDelay(at int64, now time.Time, off time.Duration) time.Duration {
	return now.Sub(time.UnixMilli(at).Add(-off))
}

type delaySample struct {
	at time.Time // when it was taken, this node's clock
	d  time.Duration
}

// Delays are one peer's recent delay samples, the most recent DelayKeep in a
// ring buffer. The zero value is empty and ready; it is not safe for
// concurrent use.
type Delays struct {
	s    []delaySample
	next int
}

// Add records that a change reached this node d after it was made, at now.
// A negative figure (the clock offset's error exceeds the delay) counts as
// zero.
func (ds *Delays) Add(now time.Time, d time.Duration) {
	s := delaySample{at: now, d: max(d, 0)}
	if len(ds.s) < DelayKeep {
		ds.s = append(ds.s, s)
		return
	}
	ds.s[ds.next] = s
	ds.next = (ds.next + 1) % DelayKeep
}

// PeerDelay summarises one peer's delay samples at a time.
type PeerDelay struct {
	// Delay is the DelayQuantile of the samples within DelayWindow (zero
	// without samples), Max the longest of them, Samples how many.
	Delay, Max time.Duration
	Samples    int
	// OffsetKnown: the peer's clock offset, which its samples are read
	// with, is known now. Delays.At leaves it false; the caller that knows
	// the offset sets it (a simulator that models clocks exactly, always).
	OffsetKnown bool
}

// Trusted reports whether the peer's delay is measured well enough to use:
// its clock offset is known and it gave DelayMinSamples within the window.
func (p PeerDelay) Trusted() bool { return p.OffsetKnown && p.Samples >= DelayMinSamples }

// At summarises the samples taken within DelayWindow before now (none
// after it): their nearest-rank DelayQuantile, their maximum and count.
func (ds *Delays) At(now time.Time) PeerDelay {
	var out PeerDelay
	// The answer is the k-th longest of the n samples in the window, and
	// k is small (6 of 512 at the 99th percentile), so one pass keeps the
	// longest few instead of sorting them all; n is not known before the
	// pass, so it keeps enough for the most samples there can be.
	var topBuf [16]time.Duration
	keep := DelayKeep - nearestRank(DelayKeep, DelayQuantile)
	if keep > len(topBuf) {
		return ds.atSorted(now)
	}
	top := topBuf[:0] // ascending, at most keep long
	for _, s := range ds.s {
		if now.Sub(s.at) > DelayWindow || s.at.After(now) {
			continue
		}
		out.Samples++
		if len(top) < keep {
			i, _ := slices.BinarySearch(top, s.d)
			top = slices.Insert(top, i, s.d)
		} else if s.d > top[0] {
			i, _ := slices.BinarySearch(top, s.d)
			copy(top[:i-1], top[1:i])
			top[i-1] = s.d
		}
	}
	if out.Samples == 0 {
		return out
	}
	n := out.Samples
	// The k-th longest is at index rank of the ascending n; top holds the
	// longest min(n, keep), ending with the longest.
	k := n - nearestRank(n, DelayQuantile)
	out.Delay = top[len(top)-k]
	out.Max = top[len(top)-1]
	return out
}

// atSorted is At by sorting, for a quantile too low for At's single pass.
func (ds *Delays) atSorted(now time.Time) PeerDelay {
	var in []time.Duration
	for _, s := range ds.s {
		if now.Sub(s.at) <= DelayWindow && !s.at.After(now) {
			in = append(in, s.d)
		}
	}
	out := PeerDelay{Samples: len(in)}
	if len(in) > 0 {
		out.Delay = Quantile(in, DelayQuantile)
		out.Max = slices.Max(in)
	}
	return out
}

// nearestRank is the index, in n ascending figures, of their nearest-rank
// q-quantile.
func nearestRank(n int, q float64) int {
	i := int(q*float64(n)+0.999999999) - 1
	return min(max(i, 0), n-1)
}

// Quantile is the nearest-rank q-quantile of ds (sorted in place); ds must
// not be empty.
func Quantile(ds []time.Duration, q float64) time.Duration {
	slices.Sort(ds)
	return ds[nearestRank(len(ds), q)]
}

// RingDelay is the delay of a ring whose live peers' delays are peers: the
// highest of them, and whether it is measured, which it is when there is at
// least one live peer and every one is Trusted. When it is not, the node
// assumes its configured bound instead.
func RingDelay(peers []PeerDelay) (delay time.Duration, measured bool) {
	measured = len(peers) > 0
	for _, p := range peers {
		if !p.Trusted() {
			measured = false
		}
		delay = max(delay, p.Delay)
	}
	return delay, measured
}

// ReuseDelay reports whether a ring delay figure taken at may still be used
// at now: for less than DelayReuse, and never by a clock that went back.
func ReuseDelay(at, now time.Time) bool {
	return !now.Before(at) && now.Sub(at) < DelayReuse
}
