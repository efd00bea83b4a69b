package gossip

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/waitroom/waitroom/crdt"
)

// How late the other data centers' figures reach a node. A data center's
// admissions reach another's nodes by a longer path than its own members'
// cells: to its carrier over its pool, a wait for the carrier's next round,
// the crossing between data centers, and the relay into the other data
// center. The lag a node measures among its peers covers none of it, so
// the carrier stamps each batch of figures with the ring's time when it
// first held a change the batch sums (EncodeFigures), every copy and relay
// keeps the stamp, and a node that merges the batch first takes its age,
// on its own ring time, as a sample of that data center (crdt.Delays).
// The ring's time is each data center's (its members' clocks' median), so
// a sample is right to within how far the two data centers' ring times
// differ: nothing for clocks kept by NTP. DatacenterDelay reads the samples
// by crdt's rule (crdt.DatacenterDelay), from which the edge assumes the
// lag for the other data centers' share of the admissions (policy.Room's
// FarLag).

// dcDelays are a node's delay samples per other data center.
type dcDelays struct {
	mu sync.Mutex
	by map[string]*crdt.Delays
}

// add records a sample of data center dc at now (the node's clock).
func (d *dcDelays) add(dc string, now time.Time, delay time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.by == nil {
		d.by = map[string]*crdt.Delays{}
	}
	ds := d.by[dc]
	if ds == nil {
		ds = &crdt.Delays{}
		d.by[dc] = ds
	}
	ds.Add(now, delay)
}

// at summarises every data center's samples at now, by name.
func (d *dcDelays) at(now time.Time) map[string]crdt.PeerDelay {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]crdt.PeerDelay, len(d.by))
	for dc, ds := range d.by {
		p := ds.At(now)
		if p.Samples == 0 {
			delete(d.by, dc) // nothing within the window: a data center gone quiet or away
			continue
		}
		// The stamps are on the ring's time, which needs no offset.
		p.OffsetKnown = true
		out[dc] = p
	}
	return out
}

// noteFigureDelay records how late a batch of data center dc's figures
// stamped at (ring ms; 0: no stamp) reached this node, at now (ring ms),
// when it changed the node's state.
func (n *Node) noteFigureDelay(dc string, at, now int64) {
	if at <= 0 || n.dc == nil || dc == n.dc.name {
		return
	}
	d := time.Duration(now-at) * time.Millisecond
	if _, steady := n.steps.steady(d); !steady {
		return // the delay spans a step of this node's clock (clockstep.go)
	}
	n.dc.delays.add(dc, n.clock(), d)
}

// DatacenterLag is how late one other data center's figures reach this
// node, as measured over crdt.DelayWindow.
type DatacenterLag struct {
	Datacenter string `json:"datacenter"`
	// DelayMs is the crdt.DelayQuantile of the figures' ages on arrival,
	// DelayMaxMs the longest, from Samples batches.
	DelayMs    float64 `json:"delay_ms"`
	DelayMaxMs float64 `json:"delay_max_ms"`
	Samples    int     `json:"samples"`
}

// DatacenterLags lists the other data centers' measured delays at now, by
// name; none when the node names no data center.
func (n *Node) DatacenterLags(now time.Time) []DatacenterLag {
	if n.dc == nil {
		return nil
	}
	by := n.dc.delays.at(now)
	out := make([]DatacenterLag, 0, len(by))
	for _, dc := range slices.Sorted(maps.Keys(by)) {
		p := by[dc]
		out = append(out, DatacenterLag{Datacenter: dc, DelayMs: ms(p.Delay), DelayMaxMs: ms(p.Max), Samples: p.Samples})
	}
	return out
}

// DatacenterDelay is how late the other data centers' figures reach this
// node (crdt.DatacenterDelay: the slowest data center that gave enough
// samples within the window), and whether any did; false when the node
// names no data center.
// The figure is reused for crdt.DelayReuse, as RingDelay's is: the edge
// asks on every allocation.
func (n *Node) DatacenterDelay(now time.Time) (time.Duration, bool) {
	if n.dc == nil {
		return 0, false
	}
	if c := n.dc.farCache.Load(); c != nil && crdt.ReuseDelay(c.at, now) {
		return c.delay, c.measured
	}
	by := n.dc.delays.at(now)
	ds := make([]crdt.PeerDelay, 0, len(by))
	for _, p := range by {
		ds = append(ds, p)
	}
	d, ok := crdt.DatacenterDelay(ds)
	n.dc.farCache.Store(&cachedLag{at: now, delay: d, measured: ok})
	return d, ok
}
