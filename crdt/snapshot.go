package crdt

import (
	"cmp"
	"slices"
)

// Windows are the spans, in minutes, over which a snapshot sums a room's
// counters. Sessions need none: each session cell carries the second its
// sessions expire, so Active reads exactly the sessions still running.
type Windows struct {
	// Waiting is the life of a queued visitor's cookie (5 minutes): a queued
	// visitor counted in minute m still waits in minutes m..m+Waiting-1.
	Waiting int
	// History is how many minutes, ending with the current one, of
	// per-replica arrivals and admissions the snapshot carries (at least 3,
	// so the share "two minutes earlier" is present).
	History int
	// Admissions is how many minutes, ending with the current one, of
	// room-wide admission totals the snapshot carries in AdmittedTotals (none
	// when zero): the cohorts whose sessions may still be running.
	Admissions int
	// SlotReplicas is how many seconds back from the snapshot's second the
	// slots of Arrived list their counts replica by replica (ByReplica):
	// those still filling, whose growth a node follows per replica. Every
	// slot of Left lists them. None when zero.
	SlotReplicas int
	// WaitingBy asks for RoomSnapshot.WaitingBy, which a random queue's
	// draw needs and nothing else does: it takes every waiting cell's
	// counts replica by replica, which tripled the time of a busy room's
	// snapshot.
	WaitingBy bool
}

// DefaultWaitingWindow is the queued cookie's life in minutes: five, as the
// outside analysis "Cloudflare Waiting Room internals: the JWT, the estimated
// wait, and edge coordination" reports for Cloudflare's queued cookie.
const DefaultWaitingWindow = 5

// BucketCount is the number of visitors waiting in one arrival bucket.
type BucketCount struct {
	Bucket int64 `json:"bucket"`
	N      int64 `json:"n"`
}

// SlotCount is the number of visitors who joined a bucket's queue in one
// arrival slot: Second is when the slot begins (crdt.ArrivalSlot).
type SlotCount struct {
	Second int64 `json:"second"`
	N      int64 `json:"n"`
	// ByReplica is N replica by replica, sorted, where the snapshot lists
	// it (see Windows.SlotReplicas): whose visitors a slot's count holds,
	// so that a node can tell each replica's part of a slot's line.
	ByReplica []Count `json:"by_replica,omitempty"`
}

// Bucket is the arrival bucket of the slot.
func (c SlotCount) Bucket() int64 { return floorDiv(c.Second, 60) }

// ReplicaPart is one replica's part of a count that is shared between the
// replicas in proportion, so not always whole.
type ReplicaPart struct {
	Replica ReplicaID
	N       float64
}

// MinuteCounts is one minute of a per-replica counter.
type MinuteCounts struct {
	Minute    int64   `json:"minute"`
	Total     uint64  `json:"total"`
	ByReplica []Count `json:"by_replica,omitempty"`
}

// Of returns replica r's count in the minute.
func (m MinuteCounts) Of(r ReplicaID) uint64 {
	for _, c := range m.ByReplica {
		if c.Replica == r {
			return c.N
		}
	}
	return 0
}

// RoomSnapshot is the read-only picture of one room at one second: the
// totals the admission policy needs, summed from the merged state.
type RoomSnapshot struct {
	Room   string
	Now    int64 // the unix second the snapshot was taken at
	Minute int64 // the current unix minute, Now / 60

	// Active is the net of the session cells (SessionPlus minus
	// SessionMinus) whose expiry second is after Now, clamped at zero: the
	// sessions whose cookies still let their visitors in, to within the
	// room's session slice.
	Active int64
	// Expiring lists, soonest first, the sessions per session cell whose
	// expiry second (Second) is after Now, cells with none left out: when
	// the slots of the running sessions free up, as far as their visitors'
	// last requests tell. A visitor still browsing renews its session, so
	// its cell is a lower bound on when its slot frees.
	Expiring []SlotCount
	// Waiting lists, oldest bucket first, the visitors waiting per arrival
	// bucket over the waiting window; buckets with nobody waiting are left
	// out. TotalWaiting is their sum.
	Waiting      []BucketCount
	TotalWaiting int64
	// WaitingBy is where the waiting visitors are, replica by replica,
	// sorted by replica, replicas with none left out: each waiting cell's
	// net count (those still counted in it) shared between the replicas
	// whose own plus less minus in the cell is above zero, in proportion
	// (see waitCell.addParts). A waiting visitor's count moves to the
	// current minute's cell at its first check-in of the minute, at the
	// node it checks in at, so within a check-in interval of a minute's turn
	// each one is counted at the node it last came to: a visitor who came to
	// a node that restarted (a new replica) or moved to another node is
	// counted there, not at the node that first counted it. Parts are not
	// whole where visitors moved between nodes within a cell. Listed only
	// when the Windows ask for it.
	WaitingBy []ReplicaPart

	// Admitted and Arrivals hold, oldest first, the History minutes ending
	// with Minute, every one present even when zero.
	Admitted []MinuteCounts
	Arrivals []MinuteCounts
	// Arrived lists, oldest first, how many visitors joined each waiting
	// bucket's queue per arrival slot (QueuedAt), for the buckets in
	// Waiting: the order inside a bucket.
	Arrived []SlotCount
	// Left lists, like Arrived, how many of those who joined each slot
	// left its line since (LeftAt): let in, turned away, held or moved on.
	Left []SlotCount

	// AdmittedTotals holds, oldest first, the room's admissions in each of
	// the Windows.Admissions minutes ending with Minute, every one present
	// even when zero.
	AdmittedTotals []uint64

	// Queued holds, like Admitted, the new visitors queued in each minute
	// (VisitorsQueued): a queued new visitor is not counted as waiting
	// until it comes back with its cookie, so this is what tells every node
	// at once that the room has begun to turn new visitors away.
	Queued []MinuteCounts
}

// AdmittedIn returns the admissions of minute m (zero if out of range).
func (s *RoomSnapshot) AdmittedIn(m int64) MinuteCounts { return minuteOf(s.Admitted, m) }

// QueuedIn returns the new visitors queued in minute m (zero if out of
// range).
func (s *RoomSnapshot) QueuedIn(m int64) MinuteCounts { return minuteOf(s.Queued, m) }

// ArrivalsIn returns the arrivals of minute m (zero if out of range).
func (s *RoomSnapshot) ArrivalsIn(m int64) MinuteCounts { return minuteOf(s.Arrivals, m) }

func minuteOf(ms []MinuteCounts, m int64) MinuteCounts {
	if len(ms) == 0 {
		return MinuteCounts{Minute: m}
	}
	i := m - ms[0].Minute
	if i < 0 || i >= int64(len(ms)) {
		return MinuteCounts{Minute: m}
	}
	return ms[i]
}

// Snapshot sums room's cells as seen at unix second now.
func (s *State) Snapshot(roomName string, now int64, w Windows) RoomSnapshot {
	return s.SnapshotOf(roomName, now, w, nil)
}

// SnapshotOf is Snapshot summing only the entries of the replicas keep
// accepts (all of them when keep is nil). A node cut off from part of the
// ring uses it to tell what its side did from what it last heard of the
// other side.
//
// With keep set, each session cell (one expiry second) and waiting cell (one
// bucket, one minute) is
// taken as at least zero before it is summed. A visitor who moved from a
// replica left out to a kept one (queued at a node that crashed, checking in
// at a survivor) has the kept replica's minus in the old cell, cancelling a
// plus that is not counted, and its plus in the new cell: summed as they are,
// the two would make the visitor vanish.
//
// Session cells dated further ahead than MaxSessionLead minutes cannot be
// real sessions and are left out.
func (s *State) SnapshotOf(roomName string, now int64, w Windows, keep func(ReplicaID) bool) RoomSnapshot {
	if w.History < 3 {
		w.History = 3
	}
	if w.Waiting < 1 {
		w.Waiting = DefaultWaitingWindow
	}
	minute := floorDiv(now, 60)
	snap := RoomSnapshot{Room: roomName, Now: now, Minute: minute}
	first := minute - int64(w.History) + 1
	snap.Admitted = make([]MinuteCounts, w.History)
	snap.Arrivals = make([]MinuteCounts, w.History)
	snap.Queued = make([]MinuteCounts, w.History)
	for i := range snap.Admitted {
		snap.Admitted[i].Minute = first + int64(i)
		snap.Arrivals[i].Minute = first + int64(i)
		snap.Queued[i].Minute = first + int64(i)
	}
	if w.Admissions > 0 {
		snap.AdmittedTotals = make([]uint64, w.Admissions)
	}
	r := s.rooms[roomName]
	if r == nil {
		return snap
	}
	t := snapshotSum{
		snap: snap, keep: keep, now: now, minute: minute, first: first,
		waitFirst:    minute - int64(w.Waiting) + 1,
		lastExpiry:   now + MaxSessionLead*60,
		waiting:      map[int64]int64{},
		arrived:      map[int64]int64{},
		left:         map[int64]int64{},
		sessions:     map[int64]int64{},
		leftBy:       map[int64][]Count{},
		arrivedBy:    map[int64][]Count{},
		replicasFrom: now - int64(w.SlotReplicas),
	}
	if w.SlotReplicas <= 0 {
		t.replicasFrom = now + 1 // none
	}
	if keep != nil {
		t.queued = map[waitingCell]int64{}
	}
	if w.WaitingBy {
		t.waitCells = map[waitingCell]*waitCell{}
	}
	s.eachCell(r, func(ck cellKey, counts cellCounts) {
		c, ok := t.kept(counts)
		if !ok {
			return
		}
		t.add(ck, c)
	})
	t.finish()
	return t.snap
}

// eachCell calls fn with every cell of room r and its counts as this node
// reads them (cellReader.combine), sorted by replica. The counts are valid
// until fn returns.
func (s *State) eachCell(r *room, fn func(ck cellKey, c cellCounts)) {
	var rd cellReader
	if len(r.aggs) == 0 {
		for ck, g := range r.cells {
			fn(ck, cellCounts{g: g, buf: &rd.own})
		}
		return
	}
	for ck, g := range r.cells {
		a, ok := r.aggs[ck]
		if !ok || len(a.b) == 0 {
			fn(ck, cellCounts{g: g, buf: &rd.own})
			continue
		}
		rd.own = g.appendTo(rd.own[:0])
		fn(ck, cellCounts{c: rd.combine(s, rd.own, &a)})
	}
	for ck, a := range r.aggs {
		if _, ok := r.cells[ck]; !ok {
			fn(ck, cellCounts{c: rd.combine(s, nil, &a)})
		}
	}
}

// cellCounts is one cell's counts as eachCell hands them: the cell's own
// entries read in place (g) where it has no other data center's, since
// most readers only sum them, or else the combined counts (c).
type cellCounts struct {
	g   *GCounter
	c   []Count
	buf *[]Count // where list writes g's entries
}

// sum is the cell's total.
func (c cellCounts) sum() uint64 {
	if c.g != nil {
		return c.g.Value()
	}
	return sum(c.c)
}

// list is the cell's counts, sorted by replica, valid until the reader's
// next cell.
func (c cellCounts) list() []Count {
	if c.g != nil {
		*c.buf = c.g.appendTo((*c.buf)[:0])
		return *c.buf
	}
	return c.c
}

// cellReader combines the two halves of a cell with buffers reused from
// cell to cell: counts, and sums per data center (remoteCounts).
type cellReader struct {
	own, remote, merged []Count
	pack                []packItem
	sum                 []uint64
	cnt                 []int32
	touched             []int32
}

// combine is the cell whose replicas' own entries are own (this data
// center's) and whose aggregate entries are agg, as this node reads it:
// own, and one count per other data center under its DatacenterReplica,
// sorted by replica. A data center is never summed both ways: a node holds
// the own entries of its data center only, and its own data center's
// aggregates are left out.
func (rd *cellReader) combine(s *State, own []Count, agg *aggCell) []Count {
	if len(agg.b) == 0 {
		return own
	}
	rd.remote = s.remoteCounts(rd.remote[:0], agg, rd)
	if len(rd.remote) == 0 {
		return own
	}
	rd.merged = addCounts(rd.merged[:0], own, rd.remote)
	return rd.merged
}

// waitingCell is one waiting cell: an arrival bucket in one minute.
type waitingCell struct{ bucket, minute int64 }

// snapshotSum is one SnapshotOf in progress: the frame of the snapshot and
// the sums it gathers from the room's cells.
type snapshotSum struct {
	snap RoomSnapshot
	keep func(ReplicaID) bool

	now, minute, first int64 // the snapshot's second, minute and first minute of history
	waitFirst          int64 // the first minute of the waiting window
	lastExpiry         int64 // the furthest session expiry that can be real

	active  int64
	waiting map[int64]int64 // by arrival bucket
	arrived map[int64]int64 // by arrival slot
	left    map[int64]int64 // by arrival slot
	// arrivedBy and leftBy are arrived and left replica by replica, for
	// the slots listed so (Windows.SlotReplicas).
	arrivedBy, leftBy map[int64][]Count
	replicasFrom      int64           // the first slot second whose arrivals are listed so
	sessions          map[int64]int64 // by expiry second
	queued            map[waitingCell]int64
	waitCells         map[waitingCell]*waitCell // by cell, for WaitingBy; nil unless asked for
	scratch           []Count
}

// kept returns the entries of c that keep accepts (all of them when keep is
// nil), in a scratch slice reused from cell to cell, and whether there are
// any.
func (t *snapshotSum) kept(c cellCounts) (cellCounts, bool) {
	if t.keep == nil {
		return c, true
	}
	t.scratch = t.scratch[:0]
	if g := c.g; g != nil {
		for i, r := range g.ids {
			if t.keep(r) {
				t.scratch = append(t.scratch, Count{Replica: r, N: uint64(g.ns[i])})
			}
		}
		return cellCounts{c: t.scratch}, len(t.scratch) > 0
	}
	for _, e := range c.c {
		if t.keep(e.Replica) {
			t.scratch = append(t.scratch, e)
		}
	}
	return cellCounts{c: t.scratch}, len(t.scratch) > 0
}

// add counts one cell's entries c into the sums its kind feeds.
func (t *snapshotSum) add(ck cellKey, c cellCounts) {
	if ck.Kind == SessionPlus || ck.Kind == SessionMinus {
		t.addSession(ck, c)
		return
	}
	if ck.Minute > t.minute {
		// A peer whose clock runs ahead wrote into a minute that has not
		// begun here; count it as the current minute rather than lose it.
		ck.Minute = t.minute
	}
	switch ck.Kind {
	case WaitingPlus, WaitingMinus:
		t.addWaiting(ck, c)
	case QueuedAt:
		t.arrived[ck.Bucket] += int64(c.sum())
		if ck.Bucket >= t.replicasFrom {
			t.arrivedBy[ck.Bucket] = mergeCounts(t.arrivedBy[ck.Bucket], c.list())
		}
	case LeftAt:
		t.left[ck.Bucket] += int64(c.sum())
		t.leftBy[ck.Bucket] = mergeCounts(t.leftBy[ck.Bucket], c.list())
	case Admitted, Arrivals, VisitorsQueued:
		t.addMinute(ck, c)
	}
}

// addSession counts a session cell while its expiry second is ahead.
func (t *snapshotSum) addSession(ck cellKey, c cellCounts) {
	// Dated by expiry: counted while the expiry second is ahead.
	if ck.Bucket <= t.now || ck.Bucket > t.lastExpiry {
		return
	}
	v := int64(c.sum())
	if ck.Kind == SessionMinus {
		v = -v
	}
	t.sessions[ck.Bucket] += v
}

// addWaiting counts a waiting cell dated within the waiting window.
func (t *snapshotSum) addWaiting(ck cellKey, c cellCounts) {
	if ck.Minute < t.waitFirst {
		return
	}
	v := int64(c.sum())
	if t.waitCells != nil {
		t.addWaitCell(ck, c, v)
	}
	if ck.Kind == WaitingMinus {
		v = -v
	}
	if t.queued != nil {
		t.queued[waitingCell{ck.Bucket, ck.Minute}] += v
	} else {
		t.waiting[ck.Bucket] += v
	}
}

// addWaitCell counts the waiting cell's entries c, summing to v, into its
// waitCell (see RoomSnapshot.WaitingBy).
func (t *snapshotSum) addWaitCell(ck cellKey, c cellCounts, v int64) {
	wc := t.waitCells[waitingCell{ck.Bucket, ck.Minute}]
	if wc == nil {
		wc = &waitCell{}
		t.waitCells[waitingCell{ck.Bucket, ck.Minute}] = wc
	}
	if ck.Kind == WaitingMinus {
		wc.minus += v
		wc.minusBy = mergeCounts(wc.minusBy, c.list())
	} else {
		wc.plus += v
		wc.plusBy = mergeCounts(wc.plusBy, c.list())
	}
}

// waitCell is one waiting cell's plus and minus, and both replica by
// replica.
type waitCell struct {
	plus, minus     int64
	plusBy, minusBy []Count
}

// addParts adds the cell's net count, those still counted in it, to by,
// shared between the replicas whose own plus less minus in the cell is
// above zero, in proportion: a replica's minus is its visitors let in or
// moved on from its own count, or another node's visitors who came to it
// (their plus elsewhere, their minus here), so what is left is at the
// replicas whose visitors did not all leave, and exact while visitors keep
// their node.
func (wc *waitCell) addParts(by map[ReplicaID]float64) {
	net := wc.plus - wc.minus
	if net <= 0 {
		return
	}
	var pos float64
	each := func(fn func(r ReplicaID, n float64)) {
		j := 0
		for _, p := range wc.plusBy {
			for j < len(wc.minusBy) && wc.minusBy[j].Replica < p.Replica {
				j++
			}
			n := float64(p.N)
			if j < len(wc.minusBy) && wc.minusBy[j].Replica == p.Replica {
				n -= float64(wc.minusBy[j].N)
			}
			if n > 0 {
				fn(p.Replica, n)
			}
		}
	}
	each(func(_ ReplicaID, n float64) { pos += n })
	if !(pos > 0) {
		return
	}
	each(func(r ReplicaID, n float64) { by[r] += float64(net) * n / pos })
}

// addMinute adds a per-replica minute counter dated within the history into
// its minute of Admitted, Arrivals or Queued, and an admission counter dated
// within the admissions window into AdmittedTotals.
func (t *snapshotSum) addMinute(ck cellKey, c cellCounts) {
	if n := int64(len(t.snap.AdmittedTotals)); ck.Kind == Admitted && n > 0 {
		if j := ck.Minute - t.minute + n - 1; j >= 0 {
			t.snap.AdmittedTotals[j] += c.sum()
		}
	}
	i := ck.Minute - t.first
	if i < 0 {
		return
	}
	dst := &t.snap.Admitted[i]
	switch ck.Kind {
	case Arrivals:
		dst = &t.snap.Arrivals[i]
	case VisitorsQueued:
		dst = &t.snap.Queued[i]
	}
	dst.Total += c.sum()
	dst.ByReplica = mergeCounts(dst.ByReplica, c.list())
}

// finish sums the cells, taken as at least zero with keep set, then sets
// Active, Expiring and the waiting buckets, oldest first.
func (t *snapshotSum) finish() {
	snap := &t.snap
	for sec, v := range t.sessions {
		if t.keep != nil {
			v = max(v, 0)
		}
		t.active += v
		if v > 0 {
			snap.Expiring = append(snap.Expiring, SlotCount{Second: sec, N: v})
		}
	}
	slices.SortFunc(snap.Expiring, func(a, b SlotCount) int { return cmp.Compare(a.Second, b.Second) })
	for c, v := range t.queued {
		t.waiting[c.bucket] += max(v, 0)
	}
	snap.Active = max(t.active, 0)
	for b, n := range t.waiting {
		if n > 0 {
			snap.Waiting = append(snap.Waiting, BucketCount{Bucket: b, N: n})
			snap.TotalWaiting += n
		}
	}
	slices.SortFunc(snap.Waiting, func(a, b BucketCount) int { return cmp.Compare(a.Bucket, b.Bucket) })
	if snap.TotalWaiting > 0 && t.waitCells != nil {
		// In a fixed order, so that every snapshot of one state adds the
		// same parts the same way.
		cells := make([]waitingCell, 0, len(t.waitCells))
		for c := range t.waitCells {
			cells = append(cells, c)
		}
		slices.SortFunc(cells, func(a, b waitingCell) int {
			return cmp.Or(cmp.Compare(a.bucket, b.bucket), cmp.Compare(a.minute, b.minute))
		})
		by := map[ReplicaID]float64{}
		for _, c := range cells {
			t.waitCells[c].addParts(by)
		}
		for r, n := range by {
			if n > 0 {
				snap.WaitingBy = append(snap.WaitingBy, ReplicaPart{Replica: r, N: n})
			}
		}
		slices.SortFunc(snap.WaitingBy, func(a, b ReplicaPart) int { return cmp.Compare(a.Replica, b.Replica) })
	}
	snap.Arrived = t.slots(t.arrived, t.arrivedBy)
	snap.Left = t.slots(t.left, t.leftBy)
}

// slots lists the slot counts of the buckets someone waits in, oldest
// first, each with its counts replica by replica where replicas has them.
func (t *snapshotSum) slots(by map[int64]int64, replicas map[int64][]Count) []SlotCount {
	var out []SlotCount
	for sec, n := range by {
		if n > 0 && t.waiting[floorDiv(sec, 60)] > 0 {
			out = append(out, SlotCount{Second: sec, N: n, ByReplica: replicas[sec]})
		}
	}
	slices.SortFunc(out, func(a, b SlotCount) int { return cmp.Compare(a.Second, b.Second) })
	return out
}

// floorDiv divides rounding towards minus infinity, so second -1 is in
// minute -1.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func sum(c []Count) uint64 {
	var t uint64
	for _, e := range c {
		t += e.N
	}
	return t
}

// mergeCounts adds the sorted counts b into the sorted counts a.
func mergeCounts(a, b []Count) []Count {
	if len(a) == 0 {
		return append([]Count(nil), b...)
	}
	return addCounts(make([]Count, 0, len(a)+len(b)), a, b)
}

// addCounts appends to out the sorted counts a and b added replica by
// replica, sorted.
func addCounts(out, a, b []Count) []Count {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i].Replica < b[j].Replica):
			out = append(out, a[i])
			i++
		case i == len(a) || b[j].Replica < a[i].Replica:
			out = append(out, b[j])
			j++
		default:
			out = append(out, Count{Replica: a[i].Replica, N: a[i].N + b[j].N})
			i++
			j++
		}
	}
	return out
}
