package truth

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"time"
)

// Kind is what happened to a visitor.
type Kind uint8

// The events of a visitor's way through the room.
const (
	// Arrive: the visitor sent its first request of a try. A log that has
	// it (a crowd's, whose requests take a while to answer) has the
	// visitor wait from then if the answer is the queue page; a log
	// without it (a simulator's, whose answers are instant) from the
	// queue page.
	Arrive Kind = iota + 1
	// Queue: the room answered with the queue page. The first one of a try
	// starts the visitor's wait; later ones, while it waits, are check-ins
	// turned away.
	Queue
	// Admit: a node let the visitor in. Its session starts, or goes on if
	// it still held one.
	Admit
	// Origin: a request of the visitor reached the origin. Within a session
	// it renews it (unless renewal is off); outside one it begins a new
	// session, an admission as the origin sees it.
	Origin
	// GiveUp: the visitor stopped waiting (closed the tab).
	GiveUp
	// Revoke: the origin ended the visitor's session.
	Revoke
)

// Event is one thing that happened to one visitor.
type Event struct {
	At   time.Duration // since the run's t = 0, a wall-clock minute boundary
	Kind Kind
	// Visitor names the visitor: any int, the same for all its events.
	Visitor int
	// Arrived is, for Queue, Admit and Origin, when the visitor's current
	// try began: its arrival (or the one its token claims: fairness is
	// judged by when people say they came), or the request that found its
	// session gone. FIFO fairness is judged by its wall-clock minute.
	Arrived time.Duration
	// Node is the node that answered (0 is the first), or -1 if unknown.
	Node int
}

// Limits are the room's settings the truth is judged against.
type Limits struct {
	TotalActiveUsers  int `json:"total_active_users"`
	NewUsersPerMinute int `json:"new_users_per_minute"`
	// SessionDuration is how long a session lasts after the last request
	// to the origin (after the admission with DisableSessionRenewal).
	SessionDuration       time.Duration `json:"session_duration_ns"`
	DisableSessionRenewal bool          `json:"disable_session_renewal,omitempty"`
}

// InversionGrace is how much later than an admission an earlier arrival may
// be let in without the admission counting as a FIFO inversion: about one
// request's latency, so that two check-ins racing across nodes do not count.
const InversionGrace = 2 * time.Second

// PassedOverWindow is how soon after an inversion the earlier arrival must
// have been turned away at a check-in for the inversion to count as passed
// over: one refresh interval (20 s ± 3 s) and a second.
const PassedOverWindow = 24 * time.Second

// Never is the end of a span still open when the log ends.
const Never = time.Duration(math.MaxInt64)

// Span is one stretch of time in which a visitor held a session the origin
// honours: [From, To). Node is where it was admitted (-1: unknown).
type Span struct {
	From, To time.Duration
	Visitor  int
	Node     int
}

// Admission is one admission: when, whose, the node that made it, and the
// visitor's try: when it began and whether it waited in the queue.
type Admission struct {
	At      time.Duration
	Visitor int
	Node    int
	Arrived time.Duration
	// Queued: the visitor got a queue page in this try; false: let in at
	// its first request.
	Queued bool
}

// Minute is the wall-clock minute of the try's arrival.
func (a Admission) Minute() int64 { return MinuteOf(a.Arrived) }

// Wait is one visitor's wait: from its first request of a try (Arrive), or
// else its first queue page, to its admission, its giving up, or Never (still waiting when the log ends).
type Wait struct {
	From, To time.Duration
	Visitor  int
	Node     int // where it was first queued
	Arrived  time.Duration
	Admitted bool // To is an admission (not a give-up or the end)
	// CheckIns are its check-ins turned away with the queue page again,
	// in time order.
	CheckIns []time.Duration
}

// Minute is the wall-clock minute of the try's arrival.
func (w Wait) Minute() int64 { return MinuteOf(w.Arrived) }

// MinuteOf is the wall-clock minute of an instant (floor, also before t = 0).
func MinuteOf(d time.Duration) int64 {
	m := int64(d / time.Minute)
	if d < 0 && d%time.Minute != 0 {
		m--
	}
	return m
}

// History is what happened to every visitor, as sessions, admissions and
// waits: the log replayed.
type History struct {
	lim        Limits
	spans      []Span
	adms       []Admission
	waits      []Wait
	firstQueue time.Duration // -1: nobody was queued
	opened     int
}

// visitor is one visitor's state during the replay.
type visitor struct {
	id       int
	active   bool
	from, to time.Duration // the open session: [from, to)
	node     int
	waiting  int  // index in waits of the open wait, or -1
	queued   bool // this try got a queue page
	sent     time.Duration
	hasSent  bool // sent: the try's first request, from an Arrive event
}

// Replay plays a log of events through the definitions. The events may come
// in any order (a crowd's log and an origin's, merged): they are taken by
// time, and events at the same instant in the order given.
func Replay(events []Event, lim Limits) *History {
	evs := events
	if !slices.IsSortedFunc(evs, byAt) {
		evs = slices.Clone(events)
		slices.SortStableFunc(evs, byAt)
	}
	h := &History{lim: lim, firstQueue: -1}
	idx := map[int]int{}
	var vis []visitor
	for _, e := range evs {
		i, ok := idx[e.Visitor]
		if !ok {
			i = len(vis)
			idx[e.Visitor] = i
			vis = append(vis, visitor{id: e.Visitor, waiting: -1, node: -1})
		}
		h.apply(&vis[i], e)
	}
	for i := range vis {
		h.closeSession(&vis[i])
	}
	slices.SortStableFunc(h.spans, func(a, b Span) int { return cmp.Compare(a.From, b.From) })
	slices.SortStableFunc(h.waits, func(a, b Wait) int { return cmp.Compare(a.From, b.From) })
	return h
}

func byAt(a, b Event) int { return cmp.Compare(a.At, b.At) }

func (h *History) apply(x *visitor, e Event) {
	session := h.lim.SessionDuration
	live := x.active && e.At < x.to
	switch e.Kind {
	case Arrive:
		if x.waiting < 0 {
			x.sent, x.hasSent = e.At, true
		}
	case Queue:
		if h.firstQueue < 0 {
			h.firstQueue = e.At
		}
		if x.waiting >= 0 {
			w := &h.waits[x.waiting]
			w.CheckIns = append(w.CheckIns, e.At)
			return
		}
		x.waiting = len(h.waits)
		x.queued = true
		from := e.At
		if x.hasSent {
			from, x.hasSent = min(from, x.sent), false
		}
		h.waits = append(h.waits, Wait{From: from, To: Never, Visitor: e.Visitor, Node: e.Node, Arrived: e.Arrived})
	case Admit:
		h.admit(x, e)
		if live {
			x.to = max(x.to, e.At+session)
			return
		}
		h.closeSession(x)
		x.active, x.from, x.to, x.node = true, e.At, e.At+session, e.Node
	case Origin:
		if live {
			if !h.lim.DisableSessionRenewal {
				x.to = max(x.to, e.At+session)
			}
			return
		}
		// No session covers it: the origin sees a new one begin.
		h.opened++
		h.admit(x, e)
		h.closeSession(x)
		x.active, x.from, x.to, x.node = true, e.At, e.At+session, e.Node
	case GiveUp:
		if x.waiting >= 0 {
			h.waits[x.waiting].To = e.At
			x.waiting = -1
			x.queued = false
		}
	case Revoke:
		if live {
			x.to = max(e.At, x.from)
			h.closeSession(x)
		}
	}
}

// admit records an admission and ends the visitor's wait and try.
func (h *History) admit(x *visitor, e Event) {
	x.hasSent = false
	if x.waiting >= 0 {
		w := &h.waits[x.waiting]
		w.To, w.Admitted = e.At, true
		x.waiting = -1
	}
	h.adms = append(h.adms, Admission{At: e.At, Visitor: e.Visitor, Node: e.Node, Arrived: e.Arrived, Queued: x.queued})
	x.queued = false
}

func (h *History) closeSession(x *visitor) {
	if x.active {
		h.spans = append(h.spans, Span{From: x.from, To: x.to, Visitor: x.id, Node: x.node})
		x.active = false
	}
}

// Limits are the limits the history is judged against.
func (h *History) Limits() Limits { return h.lim }

// Spans returns every session, in the order they began; one still open
// when the log ends runs to its expiry.
func (h *History) Spans() []Span { return h.spans }

// Admissions returns the admissions in time order.
func (h *History) Admissions() []Admission { return h.adms }

// Waits returns the waits in the order they began.
func (h *History) Waits() []Wait { return h.waits }

// FirstQueue is when the first visitor was queued, or -1.
func (h *History) FirstQueue() time.Duration { return h.firstQueue }

// OriginOpened counts the sessions that began with a request to the origin
// and no admission in the log. With a log of the nodes' decisions, each is
// a request a node let through after its session had run out by the wall
// clock (a node whose clock is behind honours a token a little longer).
func (h *History) OriginOpened() int { return h.opened }

// Active is the number of active visitors over time.
func (h *History) Active() Curve { return CurveOf(h.spans) }

// Waiting is the number of visitors waiting over time.
func (h *History) Waiting() Curve {
	return curveOf(len(h.waits), func(i int) (time.Duration, time.Duration) { return h.waits[i].From, h.waits[i].To })
}

// AdmittedBetween counts the admissions in [from, to].
func (h *History) AdmittedBetween(from, to time.Duration) int {
	lo := sort.Search(len(h.adms), func(i int) bool { return h.adms[i].At >= from })
	hi := sort.Search(len(h.adms), func(i int) bool { return h.adms[i].At > to })
	return hi - lo
}

// PerMinute counts the admissions in each wall-clock minute from t = 0
// until end.
func (h *History) PerMinute(end time.Duration) []int {
	out := make([]int, int((end+time.Minute-1)/time.Minute))
	for _, a := range h.adms {
		if m := MinuteOf(a.At); m >= 0 && m < int64(len(out)) {
			out[m]++
		}
	}
	return out
}

// The limit that binds at an instant.
const (
	BindsActive       = "total_active_users"
	BindsNewPerMinute = "new_users_per_minute"
)

// Utilisation is how full the room is at instant d: active visitors over
// total_active_users and the minute's admissions so far over
// new_users_per_minute, whichever is larger, and which limit that is.
// active is h.Active(), passed in so that a caller asking often builds it
// once.
func (h *History) Utilisation(active Curve, d time.Duration) (u float64, binds string, nActive, nAdmitted int) {
	nActive = active.At(d)
	nAdmitted = h.AdmittedBetween(time.Duration(MinuteOf(d))*time.Minute, d)
	a := ratio(nActive, h.lim.TotalActiveUsers)
	n := ratio(nAdmitted, h.lim.NewUsersPerMinute)
	if n > a {
		return n, BindsNewPerMinute, nActive, nAdmitted
	}
	return a, BindsActive, nActive, nAdmitted
}

func ratio(n, d int) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / float64(d)
}
