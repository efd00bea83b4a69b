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
// starts or stops counting. held are those who waited while that slot was
// free (see heldThrough).
func longestFreeSlot(log Log, l Limits, sessions []session) (d time.Duration, from time.Time, held []HeldWaiter) {
	f := freeSlots{log: log, limits: l, sessions: sessions, admissions: map[string][]time.Time{}}
	for _, s := range sessions {
		f.admissions[s.visitor] = append(f.admissions[s.visitor], s.admitted)
	}
	instants := f.findWaiters()
	if len(f.waiters) == 0 {
		return 0, time.Time{}, nil
	}
	instants = f.instants(instants)
	for _, t := range instants {
		if !log.End.IsZero() && t.After(log.End) {
			break
		}
		f.step(t)
	}
	end := log.End
	if end.IsZero() && len(instants) > 0 {
		end = instants[len(instants)-1]
	}
	for _, since := range f.slots {
		f.waited(end, since)
	}
	if f.longest == 0 {
		return 0, time.Time{}, nil
	}
	return f.longest, f.longestAt, f.heldThrough(f.longestAt, f.longestAt.Add(f.longest))
}

// HeldWaiter is a visitor who waited while a slot stayed free: whom the
// room held back with room to spare, at which node, turned away at which
// check-ins, and when it let them in. It is what an operator needs to see
// where a free slot came from, as an inverted pair is for the order.
type HeldWaiter struct {
	Visitor string    `json:"visitor"`
	Node    int       `json:"node"`
	Queued  time.Time `json:"queued"`
	// TurnedAway are its check-ins answered with the queue page while the
	// slot was free.
	TurnedAway []time.Time `json:"turned_away,omitempty"`
	// Admitted is its first admission after it was queued; zero: none
	// within the run.
	Admitted time.Time `json:"admitted,omitzero"`
}

// heldThrough is every waiter who counted as waiting at some time in
// [from, to), the earliest queued first.
func (f *freeSlots) heldThrough(from, to time.Time) []HeldWaiter {
	var out []HeldWaiter
	for _, w := range f.waiters {
		if !w.from.Before(to) || (!w.until.IsZero() && !w.until.After(from)) {
			continue
		}
		a := f.log.Arrivals[w.arrival]
		h := HeldWaiter{Visitor: a.Visitor, Node: a.Node, Queued: a.Queued}
		h.Admitted, _ = f.letIn(a.Visitor, a.Queued)
		for _, ta := range a.TurnedAway {
			if !ta.Before(from) && !ta.After(to) {
				h.TurnedAway = append(h.TurnedAway, ta)
			}
		}
		out = append(out, h)
	}
	slices.SortStableFunc(out, func(a, b HeldWaiter) int { return a.Queued.Compare(b.Queued) })
	return out
}

// waiter is a queued visitor (the log's arrival of that index) who counts
// as waiting on [from, until).
type waiter struct {
	from, until time.Time
	arrival     int
}

// freeSlots is one longestFreeSlot in progress.
type freeSlots struct {
	log        Log
	limits     Limits
	sessions   []session
	admissions map[string][]time.Time // by visitor, in order: sessions are
	waiters    []waiter

	// slots holds the free slots, oldest first, each with when its wait
	// began; zero while nobody waits, when a free slot keeps nobody out.
	slots     []time.Time
	longest   time.Duration
	longestAt time.Time
}

// letIn is the visitor's first admission after t.
func (f *freeSlots) letIn(visitor string, t time.Time) (time.Time, bool) {
	for _, in := range f.admissions[visitor] {
		if in.After(t) {
			return in, true
		}
	}
	return time.Time{}, false
}

// findWaiters sets the waiters, each from RefreshWindow after its queueing
// until it was let in, gave up or the run ended, and returns the instants
// where one starts or stops counting.
func (f *freeSlots) findWaiters() []time.Time {
	var instants []time.Time
	for i, a := range f.log.Arrivals {
		if a.Queued.IsZero() {
			continue
		}
		w := waiter{from: a.Queued.Add(RefreshWindow), until: f.log.End, arrival: i}
		if in, ok := f.letIn(a.Visitor, a.Queued); ok && (w.until.IsZero() || in.Before(w.until)) {
			w.until = in
		}
		if !a.GaveUp.IsZero() && (w.until.IsZero() || a.GaveUp.Before(w.until)) {
			w.until = a.GaveUp
		}
		if !w.until.IsZero() && !w.from.Before(w.until) {
			continue
		}
		f.waiters = append(f.waiters, w)
		instants = append(instants, w.from)
		if !w.until.IsZero() {
			instants = append(instants, w.until)
		}
	}
	return instants
}

// instants adds to the waiters' instants those where a session begins or
// ends, its minute turns, and the run ends, and returns them sorted, each
// once.
func (f *freeSlots) instants(instants []time.Time) []time.Time {
	for _, s := range f.sessions {
		instants = append(instants, s.admitted, s.end, s.admitted.Truncate(time.Minute).Add(time.Minute))
	}
	if !f.log.End.IsZero() {
		instants = append(instants, f.log.End)
	}
	slices.SortFunc(instants, func(a, b time.Time) int { return a.Compare(b) })
	return slices.CompactFunc(instants, func(a, b time.Time) bool { return a.Equal(b) })
}

// free is the number of free slots from t on, and waiting whether a
// visitor counts as waiting then.
func (f *freeSlots) free(t time.Time) (n int, waiting bool) {
	for _, w := range f.waiters {
		if !t.Before(w.from) && (w.until.IsZero() || t.Before(w.until)) {
			waiting = true
			break
		}
	}
	active, thisMinute := 0, 0
	minute := t.Truncate(time.Minute)
	for _, s := range f.sessions {
		if !s.admitted.After(t) && s.end.After(t) {
			active++
		}
		if !s.admitted.Before(minute) && !s.admitted.After(t) {
			thisMinute++
		}
	}
	return max(0, min(f.limits.TotalActiveUsers-active, f.limits.NewUsersPerMinute-thisMinute)), waiting
}

// step brings the slots to instant t: the oldest are taken when fewer are
// free, new ones open when more are, and every slot's wait starts when
// someone begins to wait and ends when nobody does.
func (f *freeSlots) step(t time.Time) {
	n, waiting := f.free(t)
	if n < len(f.slots) {
		for _, since := range f.slots[:len(f.slots)-n] {
			f.waited(t, since)
		}
		f.slots = f.slots[len(f.slots)-n:]
	}
	for len(f.slots) < n {
		f.slots = append(f.slots, time.Time{})
	}
	for i, since := range f.slots {
		switch {
		case waiting && since.IsZero():
			f.slots[i] = t
		case !waiting && !since.IsZero():
			f.waited(t, since)
			f.slots[i] = time.Time{}
		}
	}
}

// waited records a slot whose wait, begun at since, ended at t.
func (f *freeSlots) waited(t time.Time, since time.Time) {
	if d := t.Sub(since); !since.IsZero() && d > f.longest {
		f.longest, f.longestAt = d, since
	}
}
