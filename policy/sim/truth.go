package sim

import (
	"container/heap"
	"math"
	"slices"
	"sort"
	"time"
)

// Truth judges a run the way the origin sees it, by the wall clock,
// whatever the nodes' minute buckets say. It is fed what happened to each
// visitor, in time order, and knows nothing of the room's counters:
//
//   - a visitor is active from its admission until session_duration after
//     its last request to the origin (without renewal, until
//     session_duration after the admission), unless revoked;
//   - new users per minute are the admissions within a wall-clock minute;
//   - a FIFO inversion is an admission while someone who arrived in an
//     earlier wall-clock minute is still waiting and is let in more than
//     InversionGrace later (or not at all: still waiting at the end, or
//     giving up later);
//   - the utilisation at the first queueing is active / total_active_users
//     or admissions this minute / new_users_per_minute, whichever is
//     larger, at the moment the first visitor is queued.
//
// Times are offsets from a wall-clock minute boundary (the run's t = 0).
// Visitors are named by any int; a visitor may be admitted more than once
// (a session that lapsed and a new one), and each admission counts.
//
// The simulator feeds it from its recorder; a run against real processes can
// feed it from what its origin and its visitors saw.
type Truth struct {
	session time.Duration
	renewal bool

	idx   map[int]int32 // visitor → index in vis, in order of first sight
	vis   []truthVisitor
	spans []ActiveSpan
	adms  []Admission
	waits []WaitSpan

	firstQueue time.Duration // -1 until someone is queued
	outside    int
}

// InversionGrace is how much later than an admission an earlier arrival may
// be let in without the admission counting as a FIFO inversion: about one
// request's latency, so that two check-ins racing across nodes do not count.
const InversionGrace = 2 * time.Second

// never is the end of a span still open when the run ends.
const never = time.Duration(math.MaxInt64)

type truthVisitor struct {
	active   bool
	from, to time.Duration // the open active span: [from, to)
	node     int32
	waiting  int32 // index in waits of the open waiting span, or -1
}

// ActiveSpan is one stretch of time in which a visitor held a session the
// origin honours: [From, To). Node is where it was admitted.
type ActiveSpan struct {
	From, To time.Duration
	Node     int32
}

// Admission is one admission: when, the wall-clock minute its visitor
// arrived in (for this try), and the node that admitted it.
type Admission struct {
	At     time.Duration
	Minute int64
	Node   int32
}

// WaitSpan is one visitor's wait: from its first refusal to its admission,
// its giving up, or never (still waiting at the end). Minute is the
// wall-clock minute it arrived in; Node where it was first queued.
type WaitSpan struct {
	From, To time.Duration
	Minute   int64
	Node     int32
	Admitted bool // To is an admission (not a give-up or the end)
}

// NewTruth returns a judge for a room with this session_duration; renewal
// is false for a room with disable_session_renewal.
func NewTruth(session time.Duration, renewal bool) *Truth {
	return &Truth{session: session, renewal: renewal, idx: map[int]int32{}, firstQueue: -1}
}

func (t *Truth) visitor(v int) *truthVisitor {
	i, ok := t.idx[v]
	if !ok {
		i = int32(len(t.vis))
		t.idx[v] = i
		t.vis = append(t.vis, truthVisitor{waiting: -1})
	}
	return &t.vis[i]
}

func minuteOf(d time.Duration) int64 { return int64(d / time.Minute) }

// Queue records that visitor v, who arrived (for this try) at arrived, was
// refused at node at time at: it waits from its first refusal on.
func (t *Truth) Queue(v int, at, arrived time.Duration, node int) {
	x := t.visitor(v)
	if t.firstQueue < 0 {
		t.firstQueue = at
	}
	if x.waiting < 0 {
		x.waiting = int32(len(t.waits))
		t.waits = append(t.waits, WaitSpan{From: at, To: never, Minute: minuteOf(arrived), Node: int32(node)})
	}
}

// Admit records that node admitted visitor v, who arrived (for this try) at
// arrived, at time at: its wait ends, a new user is counted in at's minute,
// and its session starts (or, if it still held one, goes on).
func (t *Truth) Admit(v int, at, arrived time.Duration, node int) {
	x := t.visitor(v)
	if x.waiting >= 0 {
		w := &t.waits[x.waiting]
		w.To, w.Admitted = at, true
		x.waiting = -1
	}
	t.adms = append(t.adms, Admission{At: at, Minute: minuteOf(arrived), Node: int32(node)})
	if x.active && at < x.to {
		x.to = max(x.to, at+t.session)
		return
	}
	t.close(x)
	x.active, x.from, x.to, x.node = true, at, at+t.session, int32(node)
}

// Origin records a request of visitor v that reached the origin at time at
// (besides the admission's own). With renewal it extends the session. A
// request that no session covers (a node let in a visitor whose session had
// run out) opens one from then, counted in OutsideSession.
func (t *Truth) Origin(v int, at time.Duration) {
	x := t.visitor(v)
	if x.active && at < x.to {
		if t.renewal {
			x.to = max(x.to, at+t.session)
		}
		return
	}
	t.close(x)
	t.outside++
	x.active, x.from, x.to, x.node = true, at, at+t.session, -1
}

// Revoke ends visitor v's session at time at (the origin's revoke command).
func (t *Truth) Revoke(v int, at time.Duration) {
	x := t.visitor(v)
	if x.active && at < x.to {
		x.to = max(at, x.from)
		t.close(x)
	}
}

// GiveUp records that visitor v stopped waiting at time at (closed the tab).
func (t *Truth) GiveUp(v int, at time.Duration) {
	x := t.visitor(v)
	if x.waiting >= 0 {
		t.waits[x.waiting].To = at
		x.waiting = -1
	}
}

func (t *Truth) close(x *truthVisitor) {
	if x.active {
		t.spans = append(t.spans, ActiveSpan{x.from, x.to, x.node})
		x.active = false
	}
}

// Spans returns every session, the open ones running to their expiry.
func (t *Truth) Spans() []ActiveSpan {
	out := slices.Clone(t.spans)
	for i := range t.vis {
		if x := &t.vis[i]; x.active {
			out = append(out, ActiveSpan{x.from, x.to, x.node})
		}
	}
	return out
}

// Admissions returns the admissions in time order.
func (t *Truth) Admissions() []Admission { return t.adms }

// Waits returns the waits in the order they began.
func (t *Truth) Waits() []WaitSpan { return t.waits }

// FirstQueue is when the first visitor was queued, or -1.
func (t *Truth) FirstQueue() time.Duration { return t.firstQueue }

// OutsideSession counts requests that reached the origin with no session
// covering them.
func (t *Truth) OutsideSession() int { return t.outside }

// Curve is a count over time that changes at discrete instants: the active
// visitors or the waiting ones.
type Curve struct {
	at []time.Duration // instants at which the count changes, increasing
	n  []int           // the count from at[i] until at[i+1]
}

// curveOf counts the spans [from, to) alive at each instant; a span that
// ends when another starts hands over without counting twice.
func curveOf(spans int, span func(i int) (from, to time.Duration)) Curve {
	type step struct {
		at time.Duration
		d  int
	}
	steps := make([]step, 0, 2*spans)
	for i := range spans {
		from, to := span(i)
		if to <= from {
			continue
		}
		steps = append(steps, step{from, 1})
		if to != never {
			steps = append(steps, step{to, -1})
		}
	}
	slices.SortFunc(steps, func(a, b step) int {
		if a.at != b.at {
			if a.at < b.at {
				return -1
			}
			return 1
		}
		return a.d - b.d
	})
	var c Curve
	n := 0
	for _, s := range steps {
		n += s.d
		if k := len(c.at); k > 0 && c.at[k-1] == s.at {
			c.n[k-1] = n
			continue
		}
		c.at = append(c.at, s.at)
		c.n = append(c.n, n)
	}
	return c
}

// ActiveCurve is the number of active visitors over time.
func (t *Truth) ActiveCurve() Curve {
	sp := t.Spans()
	return curveOf(len(sp), func(i int) (time.Duration, time.Duration) { return sp[i].From, sp[i].To })
}

// WaitingCurve is the number of visitors waiting over time.
func (t *Truth) WaitingCurve() Curve {
	return curveOf(len(t.waits), func(i int) (time.Duration, time.Duration) { return t.waits[i].From, t.waits[i].To })
}

// At is the count at instant d.
func (c Curve) At(d time.Duration) int {
	i, found := slices.BinarySearch(c.at, d)
	if found {
		return c.n[i]
	}
	if i == 0 {
		return 0
	}
	return c.n[i-1]
}

// Peak is the largest count in [from, to), and when it was first reached.
func (c Curve) Peak(from, to time.Duration) (int, time.Duration) {
	best, when := c.At(from), from
	i, _ := slices.BinarySearch(c.at, from)
	for ; i < len(c.at) && c.at[i] < to; i++ {
		if c.n[i] > best {
			best, when = c.n[i], c.at[i]
		}
	}
	return best, when
}

// Above is how long in [from, to) the count was above limit.
func (c Curve) Above(limit int, from, to time.Duration) time.Duration {
	var sum time.Duration
	for i := range c.at {
		a := max(c.at[i], from)
		b := to
		if i+1 < len(c.at) {
			b = min(c.at[i+1], to)
		}
		if b > a && c.n[i] > limit {
			sum += b - a
		}
	}
	return sum
}

// AdmittedBetween counts the admissions in [from, to].
func (t *Truth) AdmittedBetween(from, to time.Duration) int {
	lo := sort.Search(len(t.adms), func(i int) bool { return t.adms[i].At >= from })
	hi := sort.Search(len(t.adms), func(i int) bool { return t.adms[i].At > to })
	return hi - lo
}

// PerMinute counts the admissions in each wall-clock minute before end.
func (t *Truth) PerMinute(end time.Duration) []int {
	out := make([]int, int((end+time.Minute-1)/time.Minute))
	for _, a := range t.adms {
		if m := int(a.At / time.Minute); m >= 0 && m < len(out) {
			out[m]++
		}
	}
	return out
}

// Utilisation is how full the room is at instant d: active visitors over
// total_active_users and the minute's admissions so far over
// new_users_per_minute, whichever is larger, and which limit that is.
func (t *Truth) Utilisation(active Curve, lim Limits, d time.Duration) (float64, string) {
	a := float64(active.At(d)) / float64(lim.TotalActiveUsers)
	n := float64(t.AdmittedBetween(d.Truncate(time.Minute), d)) / float64(lim.NewUsersPerMinute)
	if n > a {
		return n, BindsNewPerMinute
	}
	return a, BindsActive
}

// The limit that binds at the first queueing.
const (
	BindsActive       = "total_active_users"
	BindsNewPerMinute = "new_users_per_minute"
)

// CountInversions counts the admissions that are FIFO inversions against the
// waits: someone who arrived in an earlier minute was waiting at the
// admission and was let in more than InversionGrace later, or never. Both
// lists are in time order (admissions by At, waits by From). A min-heap of
// the waits begun so far, by arrival minute, answers each admission; a wait
// that ends within the grace of an admission ends within the grace of every
// later one too, so it leaves the heap for good.
func CountInversions(adms []Admission, waits []WaitSpan) int {
	h := &waitHeap{}
	next, n := 0, 0
	for _, a := range adms {
		for next < len(waits) && waits[next].From <= a.At {
			heap.Push(h, waits[next])
			next++
		}
		for h.Len() > 0 && (*h)[0].To <= a.At+InversionGrace {
			heap.Pop(h)
		}
		if h.Len() > 0 && (*h)[0].Minute < a.Minute {
			n++
		}
	}
	return n
}

type waitHeap []WaitSpan

func (h waitHeap) Len() int { return len(h) }
func (h waitHeap) Less(i, j int) bool {
	if h[i].Minute != h[j].Minute {
		return h[i].Minute < h[j].Minute
	}
	return h[i].To < h[j].To
}
func (h waitHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *waitHeap) Push(x any)   { *h = append(*h, x.(WaitSpan)) }
func (h *waitHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Verdict is the truth of a run in the four figures the goals judge.
type Verdict struct {
	// PeakActive is the most visitors active at once; PeakActiveRatio that
	// over total_active_users.
	PeakActive      int     `json:"peak_active"`
	PeakActiveRatio float64 `json:"peak_active_over_limit"`
	// PeakNewPerMinute is the most admissions in one wall-clock minute;
	// PeakNewRatio that over new_users_per_minute.
	PeakNewPerMinute int     `json:"peak_new_per_minute"`
	PeakNewRatio     float64 `json:"peak_new_per_minute_over_limit"`
	// FirstQueueUtilisation is nil when nobody was queued; Binds names the
	// limit it was measured against.
	FirstQueueUtilisation *float64 `json:"utilisation_at_first_queue"`
	Binds                 string   `json:"binding_limit,omitempty"`
	// Inversions counts the admissions that were FIFO inversions;
	// InversionShare is their share of the admissions.
	Admissions     int     `json:"admissions"`
	Inversions     int     `json:"fifo_inversions"`
	InversionShare float64 `json:"fifo_inversion_share"`
}

// Judge gives the verdict over [0, end) against the room's limits.
func (t *Truth) Judge(end time.Duration, lim Limits) Verdict {
	act := t.ActiveCurve()
	var v Verdict
	v.PeakActive, _ = act.Peak(0, end)
	v.PeakActiveRatio = float64(v.PeakActive) / float64(lim.TotalActiveUsers)
	for _, n := range t.PerMinute(end) {
		v.PeakNewPerMinute = max(v.PeakNewPerMinute, n)
	}
	v.PeakNewRatio = float64(v.PeakNewPerMinute) / float64(lim.NewUsersPerMinute)
	if t.firstQueue >= 0 && t.firstQueue < end {
		u, b := t.Utilisation(act, lim, t.firstQueue)
		v.FirstQueueUtilisation, v.Binds = &u, b
	}
	var adms []Admission
	for _, a := range t.adms {
		if a.At < end {
			adms = append(adms, a)
		}
	}
	v.Admissions = len(adms)
	v.Inversions = CountInversions(adms, t.waits)
	if v.Admissions > 0 {
		v.InversionShare = float64(v.Inversions) / float64(v.Admissions)
	}
	return v
}
