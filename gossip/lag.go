package gossip

import (
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/waitroom/waitroom/crdt"
)

// How late peers' counts reach this node. The allocation must leave room for
// what other nodes admitted that this node has not heard of yet, and the
// configured bound on that delay (gossip_lag: 1 s, 2 s or 10 s by profile) is
// far above what a ring usually sees (about 0.1 s on loopback, a few hundred
// milliseconds across regions). So the node measures it:
//
//   - every counter broadcast carries the origin's wall-clock time of the
//     oldest change it carries (see msgStampedEntries), kept as it is relayed;
//   - the clock offset to each peer is measured over memberlist's probes, NTP
//     style: the ack carries the responder's clock, and the offset is their
//     time + rtt/2 − our time, taken from the probe with the shortest round
//     trip among the last offsetRecent, less any far from their median
//     (spikeTolerance); a clock stepped since older probes is followed
//     within a few probes;
//   - when a broadcast changes the state here (its first arrival), the delay
//     is receive time − stamp + offset, kept per origin for LagWindow.
//
// The ring's figure is the highest per-peer percentile over the live peers,
// and only once every live peer has given enough recent samples: a peer
// that has said nothing lately may be slower than the others, so then the
// caller keeps its configured bound.

// Measurement bounds. The delay rule (window, percentile, minimum samples,
// the highest over live peers) is crdt's (crdt.Delays, crdt.RingDelay), the
// one the simulator replays too.
const (
	// LagWindow is how long a delay sample counts.
	LagWindow = crdt.DelayWindow
	// LagMinSamples is how many delay samples within LagWindow a peer must
	// have given before its delay is trusted.
	LagMinSamples = crdt.DelayMinSamples
	// LagQuantile is the percentile of a peer's delays reported as its
	// delay.
	LagQuantile = crdt.DelayQuantile
	// OffsetWindow is how long a clock-offset sample counts: a peer is
	// probed about once per probe interval times the ring's size, which on
	// a large WAN ring is minutes.
	OffsetWindow = 10 * time.Minute
	// ClockSkewLimit is how far this node's clock may be from its peers'
	// median before it says so in its log.
	ClockSkewLimit = 5 * time.Minute

	maxDelaySamples  = crdt.DelayKeep // per peer; the most recent are kept
	maxOffsetSamples = 16             // per peer
	// offsetRecent is how many of a peer's latest probes its offset is
	// taken from: enough for one with a short round trip among them, few
	// enough that a stepped clock (an NTP step, a restart) is followed
	// after that many probes rather than after OffsetWindow.
	offsetRecent = 5
	// spikeTolerance is how far a probe's offset may lie from the median
	// of the peer's recent probes and still give the offset. A probe read
	// across a step of either clock is off by the whole step: the step
	// watch (clockstep.go) drops those it can tell, but not one whose ack
	// was handed over more than its grace after it arrived, as on a loaded
	// machine. Honest probes differ by their round trips' asymmetry:
	// milliseconds on a LAN, tens across regions. NTP's clock filter
	// discards such outliers ("popcorn spikes") alike.
	spikeTolerance = 250 * time.Millisecond
)

type offsetSample struct {
	at       time.Time
	off, rtt time.Duration
}

// peerSamples are one peer's recent samples, each kept in a ring buffer.
type peerSamples struct {
	delays  crdt.Delays
	offsets []offsetSample
	onext   int
}

// lagBook keeps the samples of every peer. Its methods take now, so its
// statistics are pure functions of what was added.
type lagBook struct {
	mu    sync.Mutex
	peers map[string]*peerSamples
}

func (b *lagBook) samples(peer string) *peerSamples {
	if b.peers == nil {
		b.peers = map[string]*peerSamples{}
	}
	p := b.peers[peer]
	if p == nil {
		p = &peerSamples{}
		b.peers[peer] = p
	}
	return p
}

// addDelay records that a change made at peer reached this node d after it
// was made. A negative figure (the offset's error exceeds the delay) counts
// as zero.
func (b *lagBook) addDelay(peer string, now time.Time, d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.samples(peer).delays.Add(now, d)
}

// addOffset records one probe of peer: its clock minus ours (off) as
// measured over a round trip of rtt.
func (b *lagBook) addOffset(peer string, now time.Time, off, rtt time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.samples(peer)
	s := offsetSample{at: now, off: off, rtt: rtt}
	if len(p.offsets) < maxOffsetSamples {
		p.offsets = append(p.offsets, s)
		return
	}
	p.offsets[p.onext] = s
	p.onext = (p.onext + 1) % maxOffsetSamples
}

// forget drops what is known of a peer (it left the ring).
func (b *lagBook) forget(peer string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.peers, peer)
}

// offset is peer's clock minus ours at now, from the recent probe with the
// shortest round trip (the one whose rtt/2 guess errs least) among those
// near the recent probes' median.
func (b *lagBook) offset(peer string, now time.Time) (off, rtt time.Duration, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.peers[peer]
	if p == nil {
		return 0, 0, false
	}
	return p.offsetAt(now)
}

func (p *peerSamples) offsetAt(now time.Time) (off, rtt time.Duration, ok bool) {
	// The samples in the order they were taken: the ring buffer's oldest
	// is at onext once it is full.
	var recent [offsetRecent]offsetSample
	k := 0
	n := len(p.offsets)
	for i := max(n-offsetRecent, 0); i < n; i++ {
		s := p.offsets[(p.onext+i)%n]
		if now.Sub(s.at) > OffsetWindow || s.at.After(now) {
			continue
		}
		recent[k] = s
		k++
	}
	// From three probes on, one that lies far from their median is a
	// spike (see spikeTolerance): the rest outvote it.
	var med time.Duration
	if k >= 3 {
		var offs [offsetRecent]time.Duration
		for i, s := range recent[:k] {
			offs[i] = s.off
		}
		slices.Sort(offs[:k])
		med = offs[(k-1)/2]
	}
	for _, s := range recent[:k] {
		if k >= 3 && (s.off-med > spikeTolerance || med-s.off > spikeTolerance) {
			continue
		}
		if !ok || s.rtt < rtt {
			off, rtt, ok = s.off, s.rtt, true
		}
	}
	return off, rtt, ok
}

// PeerLag is what this node has measured of one peer.
type PeerLag struct {
	Name string `json:"name"`
	// ClockOffsetMs is the peer's clock minus this node's, in ms; valid
	// when OffsetKnown.
	ClockOffsetMs float64 `json:"clock_offset_ms"`
	// OffsetRTTMs is the round trip of the probe the offset was taken from:
	// the offset is right within half of it.
	OffsetRTTMs float64 `json:"offset_rtt_ms"`
	OffsetKnown bool    `json:"offset_known"`
	// DelayMs is the LagQuantile of how late the peer's changes reached
	// this node over LagWindow, and DelayMaxMs the longest; Samples is how
	// many that is taken from.
	DelayMs    float64 `json:"delay_ms"`
	DelayMaxMs float64 `json:"delay_max_ms"`
	Samples    int     `json:"samples"`

	offset, delay time.Duration
}

// Offset is the peer's clock minus this node's (zero when unknown).
func (p PeerLag) Offset() time.Duration { return p.offset }

// Delay is the peer's delay percentile (zero when there are no samples).
func (p PeerLag) Delay() time.Duration { return p.delay }

// Trusted reports whether the peer's delay is measured well enough to use:
// its offset is known and it gave LagMinSamples within the window.
func (p PeerLag) Trusted() bool { return p.crdt().Trusted() }

// crdt is the summary the shared delay rule reads.
func (p PeerLag) crdt() crdt.PeerDelay {
	return crdt.PeerDelay{Delay: p.delay, Samples: p.Samples, OffsetKnown: p.OffsetKnown}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// peer summarises one peer's samples at now.
func (b *lagBook) peer(name string, now time.Time) PeerLag {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := PeerLag{Name: name}
	p := b.peers[name]
	if p == nil {
		return out
	}
	if off, rtt, ok := p.offsetAt(now); ok {
		out.offset, out.OffsetKnown = off, true
		out.ClockOffsetMs, out.OffsetRTTMs = ms(off), ms(rtt)
	}
	d := p.delays.At(now)
	out.Samples = d.Samples
	out.delay = d.Delay
	out.DelayMs, out.DelayMaxMs = ms(d.Delay), ms(d.Max)
	return out
}

// RingLag is how late the live peers' changes reach this node.
type RingLag struct {
	// Delay is the highest peer delay; meaningful when Measured.
	Delay time.Duration `json:"-"`
	// DelayMs is Delay in ms.
	DelayMs float64 `json:"delay_ms"`
	// Measured: every live peer's delay is Trusted (and there is at least
	// one peer).
	Measured bool `json:"measured"`
	// Peers are the live peers, by name.
	Peers []PeerLag `json:"peers"`
	// RingOffsetMs is the correction from this node's clock to the ring's
	// time (crdt.RingOffset of the known peers' offsets), in ms: the ring
	// dates arrival buckets and minute budgets by its time, not by any one
	// node's clock.
	RingOffsetMs float64 `json:"ring_offset_ms"`
	// SkewMs is how far this node's clock is from the median of its
	// peers' clocks (ahead when positive), and ClockFarOff whether that is
	// beyond ClockSkewLimit: the ring's time covers for it, but a clock
	// that far off is broken and its node's log says so.
	SkewMs      float64 `json:"clock_skew_ms"`
	ClockFarOff bool    `json:"clock_far_off"`

	ringOffset, skew time.Duration
}

// RingOffset is the correction from this node's clock to ring time.
func (r RingLag) RingOffset() time.Duration { return r.ringOffset }

// Skew is how far this node's clock is ahead of its peers' median.
func (r RingLag) Skew() time.Duration { return r.skew }

// ring summarises the live peers at now.
func (b *lagBook) ring(live []string, now time.Time) RingLag {
	var out RingLag
	ds := make([]crdt.PeerDelay, 0, len(live))
	for _, name := range live {
		p := b.peer(name, now)
		out.Peers = append(out.Peers, p)
		ds = append(ds, p.crdt())
	}
	out.Delay, out.Measured = crdt.RingDelay(ds)
	sort.Slice(out.Peers, func(i, j int) bool { return out.Peers[i].Name < out.Peers[j].Name })
	out.DelayMs = ms(out.Delay)
	var offs []time.Duration
	for _, p := range out.Peers {
		if p.OffsetKnown {
			offs = append(offs, p.offset)
		}
	}
	out.ringOffset = crdt.RingOffset(offs)
	out.skew, out.ClockFarOff = clockSkew(offs, ClockSkewLimit)
	out.RingOffsetMs, out.SkewMs = ms(out.ringOffset), ms(out.skew)
	return out
}

// offsets are the known clock offsets of the live peers at now.
func (b *lagBook) offsets(live []string, now time.Time) []time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []time.Duration
	for _, name := range live {
		if p := b.peers[name]; p != nil {
			if off, _, ok := p.offsetAt(now); ok {
				out = append(out, off)
			}
		}
	}
	return out
}

// clockSkew is how far this node's clock is from the median of its peers'
// (their offsets are their clocks minus ours), and whether that is more than
// limit. With no peer it is zero.
func clockSkew(offsets []time.Duration, limit time.Duration) (time.Duration, bool) {
	if len(offsets) == 0 {
		return 0, false
	}
	s := slices.Clone(offsets)
	slices.Sort(s)
	var med time.Duration
	if k := len(s); k%2 == 1 {
		med = s[k/2]
	} else {
		med = s[k/2-1] + (s[k/2]-s[k/2-1])/2
	}
	// Ours minus theirs: positive when this node's clock is ahead.
	skew := -med
	return skew, skew > limit || skew < -limit
}
