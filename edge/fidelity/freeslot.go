package fidelity

import (
	"slices"
	"time"
)

// RefreshWindow is the longest a queued visitor goes between two check-ins:
// the queue page's refresh interval, 20 s, with its jitter of ± 3 s. A slot
// that opens can go to a waiting visitor only at its next check-in, so a
// slot left free for up to this long while people wait is the queue's
// rhythm; longer, and the room is holding back a slot it could give.
const RefreshWindow = 23 * time.Second

// longestFreeSlot is the longest span within the run during which a slot was
// free, active sessions below total_active_users and the wall-clock minute's
// admissions below new_users_per_minute, while some visitor had been
// waiting for longer than RefreshWindow since it was first queued (and was
// not let in and had not given up yet), and when that span began. Only
// such visitors count: one queued less than a refresh interval ago may not
// have checked in since the slot opened. sessions are the run's sessions
// (sessionsOf); the state is constant between the instants where a session
// begins or ends, a minute turns, or a waiter starts or stops counting, so
// the spans are read off those instants.
func longestFreeSlot(log Log, l Limits, sessions []session) (time.Duration, time.Time) {
	type waiter struct{ from, until time.Time } // counts on [from, until)
	admissions := map[string][]time.Time{}      // in order: sessions are
	for _, s := range sessions {
		admissions[s.visitor] = append(admissions[s.visitor], s.admitted)
	}
	// letIn is the visitor's first admission after t.
	letIn := func(visitor string, t time.Time) (time.Time, bool) {
		for _, in := range admissions[visitor] {
			if in.After(t) {
				return in, true
			}
		}
		return time.Time{}, false
	}
	var ws []waiter
	var instants []time.Time
	for _, a := range log.Arrivals {
		if a.Queued.IsZero() {
			continue
		}
		w := waiter{from: a.Queued.Add(RefreshWindow), until: log.End}
		if in, ok := letIn(a.Visitor, a.Queued); ok && (w.until.IsZero() || in.Before(w.until)) {
			w.until = in
		}
		if !a.GaveUp.IsZero() && (w.until.IsZero() || a.GaveUp.Before(w.until)) {
			w.until = a.GaveUp
		}
		if !w.until.IsZero() && !w.from.Before(w.until) {
			continue
		}
		ws = append(ws, w)
		instants = append(instants, w.from)
		if !w.until.IsZero() {
			instants = append(instants, w.until)
		}
	}
	if len(ws) == 0 {
		return 0, time.Time{}
	}
	for _, s := range sessions {
		instants = append(instants, s.admitted, s.end, s.admitted.Truncate(time.Minute).Add(time.Minute))
	}
	if !log.End.IsZero() {
		instants = append(instants, log.End)
	}
	slices.SortFunc(instants, func(a, b time.Time) int { return a.Compare(b) })
	instants = slices.CompactFunc(instants, func(a, b time.Time) bool { return a.Equal(b) })

	// free reports whether, from t until the next instant, a slot is free
	// while a long waiter waits.
	free := func(t time.Time) bool {
		waiting := false
		for _, w := range ws {
			if !t.Before(w.from) && (w.until.IsZero() || t.Before(w.until)) {
				waiting = true
				break
			}
		}
		if !waiting {
			return false
		}
		active, thisMinute := 0, 0
		minute := t.Truncate(time.Minute)
		for _, s := range sessions {
			if !s.admitted.After(t) && s.end.After(t) {
				active++
			}
			if !s.admitted.Before(minute) && !s.admitted.After(t) {
				thisMinute++
			}
		}
		return active < l.TotalActiveUsers && thisMinute < l.NewUsersPerMinute
	}
	var longest time.Duration
	var longestAt, since time.Time
	for i, t := range instants {
		if !log.End.IsZero() && !t.Before(log.End) {
			break
		}
		if !free(t) {
			since = time.Time{}
			continue
		}
		if since.IsZero() {
			since = t
		}
		end := log.End
		if i+1 < len(instants) {
			end = instants[i+1]
		}
		if end.IsZero() {
			continue
		}
		if d := end.Sub(since); d > longest {
			longest, longestAt = d, since
		}
	}
	return longest, longestAt
}
