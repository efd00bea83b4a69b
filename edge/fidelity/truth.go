package fidelity

import (
	"slices"
	"sort"
	"time"
)

// Limits are a room's settings the truth is judged against.
type Limits struct {
	TotalActiveUsers  int `json:"total_active_users"`
	NewUsersPerMinute int `json:"new_users_per_minute"`
	// SessionDuration is how long a session lasts after the last request
	// to the origin (after the admission with DisableSessionRenewal).
	SessionDuration       time.Duration `json:"session_duration_ns"`
	DisableSessionRenewal bool          `json:"disable_session_renewal,omitempty"`
}

// Hit is one request the origin saw: whose, and when.
type Hit struct {
	Visitor string
	At      time.Time
}

// Arrival is one visitor as the crowd saw it.
type Arrival struct {
	Visitor string
	// Node is the node (0 is the first) the visitor sends its requests to.
	Node int
	// Arrived is the visitor's first request to the waiting room.
	Arrived time.Time
	// Queued is when it first got a queue page; zero if it never did.
	Queued time.Time
	// GaveUp is when it stopped waiting without being let in; zero if it
	// never did. A visitor still waiting when the run ends has not given up.
	GaveUp time.Time
	// TurnedAway are the times of its check-ins answered with the queue
	// page again (the first page not included).
	TurnedAway []time.Time
}

// Log is what a run recorded: the crowd's arrivals and the origin's hits.
// End is when the run stopped watching.
type Log struct {
	End      time.Time
	Arrivals []Arrival
	Hits     []Hit
}

// InversionGrace is how much later than an admission an earlier arrival may
// still be let in without the admission counting as a FIFO inversion.
const InversionGrace = 2 * time.Second

// PassedOverWindow is how soon after an inversion the earlier arrival must
// have been turned away at a check-in for the inversion to count as passed
// over: one refresh interval (20 s ± 3 s) and a second.
const PassedOverWindow = 24 * time.Second

// Truth is what the origin saw, by wall-clock time, whatever the nodes'
// minute buckets say.
type Truth struct {
	// Admissions are sessions begun: a visitor's first request to the
	// origin, or its first one after its session had lapsed.
	Admissions int `json:"admissions"`
	// PeakActive is the most sessions live at once; a session is live from
	// its admission until SessionDuration after its last request (after the
	// admission without renewal).
	PeakActive   int       `json:"peak_active"`
	PeakActiveAt time.Time `json:"peak_active_at"`
	// PeakNewPerMinute is the most admissions in one wall-clock minute.
	PeakNewPerMinute int       `json:"peak_new_per_minute"`
	PeakMinute       time.Time `json:"peak_minute"`
	// FirstQueued is when the first visitor was queued (zero: nobody was);
	// at that moment ActiveAtFirstQueue sessions were live and
	// AdmittedAtFirstQueue admissions had been made in that minute.
	FirstQueued          time.Time `json:"first_queued"`
	ActiveAtFirstQueue   int       `json:"active_at_first_queue"`
	AdmittedAtFirstQueue int       `json:"admitted_at_first_queue"`
	// UtilisationAtFirstQueue is the binding one of ActiveAtFirstQueue /
	// TotalActiveUsers and AdmittedAtFirstQueue / NewUsersPerMinute.
	UtilisationAtFirstQueue float64 `json:"utilisation_at_first_queue"`
	// Inversions counts admissions made while someone who arrived in an
	// earlier wall-clock minute, and had not given up, still waited and
	// was let in more than InversionGrace later (or not at all). An
	// admission within InversionGrace of the end cannot be judged and is
	// not counted.
	Inversions int `json:"fifo_inversions"`
	// PassedOver counts the inversions after which such an earlier arrival
	// was turned away at a check-in within PassedOverWindow: its place was
	// taken. The others let a later arrival into a slot while the earlier
	// one had not checked in again yet.
	PassedOver int `json:"fifo_passed_over"`
	// Newcomers counts the inversions whose later arrival was let in at its
	// first request, never queued: let in past the queue.
	Newcomers int `json:"fifo_newcomers"`
	// Waited counts the visitors who were queued and then let in, and
	// MedianWait is the middle of their waits (arrival to admission).
	Waited     int           `json:"waited"`
	MedianWait time.Duration `json:"median_wait_ns"`
	// StillWaiting counts the visitors who arrived, were never let in and
	// had not given up when the run ended.
	StillWaiting int `json:"still_waiting"`
	// LongestFreeSlot is the longest any one slot stayed free (left by
	// both total_active_users and the wall-clock minute's
	// new_users_per_minute) while someone first queued more than a refresh
	// interval earlier still waited (see longestFreeSlot);
	// LongestFreeSlotAt is when that slot's wait began.
	LongestFreeSlot   time.Duration `json:"longest_free_slot_ns"`
	LongestFreeSlotAt time.Time     `json:"longest_free_slot_at,omitzero"`
	// Unidentified counts origin requests that named no visitor: they are
	// left out of every figure above.
	Unidentified int `json:"unidentified_hits"`
	// InvertedPairs names, for each inversion, the visitor let in and the
	// earliest arrival it went before: what an operator needs to see
	// where the order broke (which nodes, which minutes, how long after).
	InvertedPairs []InvertedPair `json:"fifo_inverted_pairs,omitempty"`
}

// InvertedPair is one FIFO inversion: Later was let in while Earlier, who
// arrived in an earlier wall-clock minute, still waited, and Earlier was
// let in more than InversionGrace after (or not at all).
type InvertedPair struct {
	Later   Passage `json:"later"`
	Earlier Passage `json:"earlier"`
	// PassedOver: Earlier was turned away at a check-in within
	// PassedOverWindow after Later's admission.
	PassedOver bool `json:"passed_over,omitempty"`
}

// Passage is one visitor's way through the room.
type Passage struct {
	Visitor string    `json:"visitor"`
	Node    int       `json:"node"`
	Arrived time.Time `json:"arrived"`
	// Queued: the visitor got a queue page at least once.
	Queued bool `json:"queued"`
	// Admitted is when the origin first saw it; zero: never within the
	// run.
	Admitted time.Time `json:"admitted,omitzero"`
	// LastTurnedAway is its last check-in answered with the queue page
	// before the other's admission; zero if none.
	LastTurnedAway time.Time `json:"last_turned_away,omitzero"`
}

// ActiveRatio is PeakActive over the room's total_active_users.
func (t Truth) ActiveRatio(l Limits) float64 {
	return ratio(t.PeakActive, l.TotalActiveUsers)
}

// NewPerMinuteRatio is PeakNewPerMinute over the room's
// new_users_per_minute.
func (t Truth) NewPerMinuteRatio(l Limits) float64 {
	return ratio(t.PeakNewPerMinute, l.NewUsersPerMinute)
}

// InversionShare is Inversions as a share of Admissions.
func (t Truth) InversionShare() float64 {
	return ratio(t.Inversions, t.Admissions)
}

func ratio(n, d int) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / float64(d)
}

// session is one visitor's stay on the origin.
type session struct {
	visitor       string
	admitted, end time.Time // end: when the session stops being live
	last          time.Time // its latest request
}

// sessionsOf turns the origin's hits into sessions, in order of admission:
// a request within a live session renews it (unless renewal is off); one
// after it lapsed begins a new one, a new admission. Hits that name no
// visitor are left out and counted.
func sessionsOf(hits []Hit, l Limits) (sessions []session, unidentified int) {
	hits = slices.Clone(hits)
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].At.Before(hits[j].At) })
	open := map[string]int{} // visitor → index of its latest session
	for _, h := range hits {
		if h.Visitor == "" {
			unidentified++
			continue
		}
		if i, ok := open[h.Visitor]; ok && h.At.Before(sessions[i].end) {
			s := &sessions[i]
			s.last = h.At
			if !l.DisableSessionRenewal {
				s.end = h.At.Add(l.SessionDuration)
			}
			continue
		}
		open[h.Visitor] = len(sessions)
		sessions = append(sessions, session{visitor: h.Visitor, admitted: h.At, last: h.At, end: h.At.Add(l.SessionDuration)})
	}
	return sessions, unidentified
}

// Judge computes the truth of a run from its log. It is a pure function of
// its arguments.
func Judge(log Log, l Limits) Truth {
	var t Truth
	sessions, unidentified := sessionsOf(log.Hits, l)
	t.Unidentified = unidentified
	t.Admissions = len(sessions)
	t.LongestFreeSlot, t.LongestFreeSlotAt = longestFreeSlot(log, l, sessions)

	// Peak active: sweep admissions and ends; at the same instant an end
	// goes first (a session that ends as another begins is not live with
	// it).
	type edge struct {
		at    time.Time
		delta int
	}
	edges := make([]edge, 0, 2*len(sessions))
	for _, s := range sessions {
		edges = append(edges, edge{s.admitted, +1}, edge{s.end, -1})
	}
	sort.Slice(edges, func(i, j int) bool {
		if !edges[i].at.Equal(edges[j].at) {
			return edges[i].at.Before(edges[j].at)
		}
		return edges[i].delta < edges[j].delta
	})
	live := 0
	for _, e := range edges {
		live += e.delta
		if live > t.PeakActive {
			t.PeakActive, t.PeakActiveAt = live, e.at
		}
	}

	// New users per wall-clock minute.
	perMinute := map[int64]int{}
	for _, s := range sessions {
		m := s.admitted.Truncate(time.Minute).Unix()
		perMinute[m]++
		if n := perMinute[m]; n > t.PeakNewPerMinute {
			t.PeakNewPerMinute, t.PeakMinute = n, time.Unix(m, 0)
		}
	}

	// Utilisation when the first visitor was queued.
	for _, a := range log.Arrivals {
		if !a.Queued.IsZero() && (t.FirstQueued.IsZero() || a.Queued.Before(t.FirstQueued)) {
			t.FirstQueued = a.Queued
		}
	}
	if !t.FirstQueued.IsZero() {
		q := t.FirstQueued
		minuteStart := q.Truncate(time.Minute)
		for _, s := range sessions {
			if !s.admitted.After(q) && s.end.After(q) {
				t.ActiveAtFirstQueue++
			}
			if !s.admitted.Before(minuteStart) && !s.admitted.After(q) {
				t.AdmittedAtFirstQueue++
			}
		}
		t.UtilisationAtFirstQueue = max(ratio(t.ActiveAtFirstQueue, l.TotalActiveUsers), ratio(t.AdmittedAtFirstQueue, l.NewUsersPerMinute))
	}

	// Waiting: from arrival to the first admission (or giving up).
	type waiter struct {
		visitor                   string
		node                      int
		arrived, admitted, gaveUp time.Time
		queued                    bool
		turnedAway                []time.Time
	}
	waiters := map[string]*waiter{}
	for _, a := range log.Arrivals {
		waiters[a.Visitor] = &waiter{visitor: a.Visitor, node: a.Node, arrived: a.Arrived, gaveUp: a.GaveUp, queued: !a.Queued.IsZero(), turnedAway: a.TurnedAway}
	}
	passage := func(w *waiter, before time.Time) Passage {
		p := Passage{Visitor: w.visitor, Node: w.node, Arrived: w.arrived, Queued: w.queued, Admitted: w.admitted}
		for _, ta := range w.turnedAway {
			if ta.Before(before) {
				p.LastTurnedAway = ta
			}
		}
		return p
	}
	for _, s := range sessions {
		w, ok := waiters[s.visitor]
		if !ok {
			// Not in the crowd's log: it arrived when it was let in.
			w = &waiter{visitor: s.visitor, node: -1, arrived: s.admitted}
			waiters[s.visitor] = w
		}
		if w.admitted.IsZero() {
			w.admitted = s.admitted
		}
	}
	var waits []time.Duration
	for _, w := range waiters {
		switch {
		case !w.admitted.IsZero():
			if w.queued {
				waits = append(waits, w.admitted.Sub(w.arrived))
			}
		case w.gaveUp.IsZero() && !w.arrived.After(log.End):
			t.StillWaiting++
		}
	}
	t.Waited = len(waits)
	if len(waits) > 0 {
		slices.Sort(waits)
		t.MedianWait = median(waits)
	}

	// FIFO inversions, judged on each admission: was someone from an
	// earlier arrival minute waiting then, and left waiting for longer
	// than the grace? The earliest such arrival is the one listed.
	ws := make([]*waiter, 0, len(waiters))
	for _, w := range waiters {
		ws = append(ws, w)
	}
	sort.Slice(ws, func(i, j int) bool {
		if !ws[i].arrived.Equal(ws[j].arrived) {
			return ws[i].arrived.Before(ws[j].arrived)
		}
		return ws[i].visitor < ws[j].visitor
	})
	for _, s := range sessions {
		x := waiters[s.visitor]
		at := s.admitted
		if !log.End.IsZero() && at.Add(InversionGrace).After(log.End) {
			continue
		}
		xMinute := x.arrived.Truncate(time.Minute)
		deadline := at.Add(InversionGrace)
		inverted, passedOver := false, false
		var first *waiter
		for _, y := range ws {
			if !y.arrived.Truncate(time.Minute).Before(xMinute) || y.arrived.After(at) {
				continue
			}
			if !y.gaveUp.IsZero() && !y.gaveUp.After(at) {
				continue // gone before this admission
			}
			stillOut := y.admitted.IsZero() || y.admitted.After(deadline)
			if !stillOut || (!y.gaveUp.IsZero() && !y.gaveUp.After(deadline)) {
				continue
			}
			inverted = true
			if first == nil {
				first = y
			}
			for _, ta := range y.turnedAway {
				if ta.After(at) && !ta.After(at.Add(PassedOverWindow)) {
					passedOver = true
					break
				}
			}
			if passedOver {
				first = y
				break
			}
		}
		if inverted {
			t.Inversions++
			if !x.queued {
				t.Newcomers++
			}
			t.InvertedPairs = append(t.InvertedPairs, InvertedPair{Later: passage(x, at), Earlier: passage(first, at), PassedOver: passedOver})
		}
		if passedOver {
			t.PassedOver++
		}
	}
	return t
}

func median(sorted []time.Duration) time.Duration {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}
