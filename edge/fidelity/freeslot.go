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

// session is one visitor's stay on the origin, as the judge's history
// replayed it.
type session struct {
	visitor       string
	admitted, end time.Time // end: when the session stops being live
}

// longestFreeSlot is the longest any one slot stayed free while someone
// waited, and when that slot's wait began. Free slots are what both limits
// leave: total_active_users less the sessions live, or new_users_per_minute
// less the wall-clock minute's admissions, whichever is fewer. A slot opens
// when that number rises (a session ends, a minute turns) and is taken when
// it falls (an admission), the oldest free slot first, which is the order
// that keeps the longest wait of any slot the shortest. A slot's wait counts
// only while some visitor waits who was first queued more than
// RefreshWindow ago and has been neither let in nor given up: one queued
// more recently may not have checked in since the slot opened, and nobody
// waiting leaves nobody a slot is held from. sessions are the run's
// sessions, in the order they began; the free slots and the waiting change only at the
// instants where a session begins or ends, a minute turns, or a waiter
// starts or stops counting.
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

	// free is the number of free slots from t on, and waiting whether a
	// visitor counts as waiting then.
	free := func(t time.Time) (n int, waiting bool) {
		for _, w := range ws {
			if !t.Before(w.from) && (w.until.IsZero() || t.Before(w.until)) {
				waiting = true
				break
			}
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
		return max(0, min(l.TotalActiveUsers-active, l.NewUsersPerMinute-thisMinute)), waiting
	}
	var longest time.Duration
	var longestAt time.Time
	// slots holds the free slots, oldest first, each with when its wait
	// began; zero while nobody waits, when a free slot keeps nobody out.
	var slots []time.Time
	waited := func(t time.Time, since time.Time) {
		if d := t.Sub(since); !since.IsZero() && d > longest {
			longest, longestAt = d, since
		}
	}
	for _, t := range instants {
		if !log.End.IsZero() && t.After(log.End) {
			break
		}
		n, waiting := free(t)
		if n < len(slots) {
			for _, since := range slots[:len(slots)-n] {
				waited(t, since)
			}
			slots = slots[len(slots)-n:]
		}
		for len(slots) < n {
			slots = append(slots, time.Time{})
		}
		for i, since := range slots {
			switch {
			case waiting && since.IsZero():
				slots[i] = t
			case !waiting && !since.IsZero():
				waited(t, since)
				slots[i] = time.Time{}
			}
		}
	}
	end := log.End
	if end.IsZero() && len(instants) > 0 {
		end = instants[len(instants)-1]
	}
	for _, since := range slots {
		waited(end, since)
	}
	return longest, longestAt
}
