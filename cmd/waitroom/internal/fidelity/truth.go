package fidelity

import (
	"slices"
	"time"

	"github.com/waitroom/waitroom/policy/truth"
)

// Limits are a room's settings the truth is judged against.
type Limits = truth.Limits

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
	// Arrived is when the visitor sent its first request that the waiting
	// room answered. A request to a node that is down reached no waiting
	// room, and nobody could have placed its visitor by it: dated from it,
	// the node-restart scenario's visitors refused while their node was
	// down were ahead of everyone who came at the other nodes meanwhile,
	// and those were told too few (in front of real points of presence,
	// anycast takes such a request to another).
	Arrived time.Time
	// Queued is when it first got a queue page; zero if it never did.
	Queued time.Time
	// GaveUp is when it stopped waiting without being let in; zero if it
	// never did. A visitor still waiting when the run ends has not given up.
	GaveUp time.Time
	// TurnedAway are the times of its check-ins answered with the queue
	// page again (the first page not included).
	TurnedAway []time.Time
	// Priority: the visitor held a priority code, and was meant to pass
	// the line.
	Priority bool `json:",omitempty"`
	// Pages are what its queue answers told it about its wait and its
	// place in line, every one of them in order, its first page first,
	// when it was an app that read them (see shown.go).
	Pages []Shown `json:",omitempty"`
}

// Log is what a run recorded: the crowd's arrivals and the origin's hits.
// End is when the run stopped watching; Switches, when the operator
// switched the room's queueing method (as made through the admin API).
type Log struct {
	End      time.Time
	Arrivals []Arrival
	Hits     []Hit
	Switches []time.Time `json:",omitempty"`
}

// Truth is what the origin saw, by wall-clock time, whatever the nodes'
// minute buckets say, as package truth judges it (the simulator's judge).
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
	// was let in more than truth.InversionGrace later (or not at all). An
	// admission within truth.InversionGrace of the end cannot be judged and is
	// not counted.
	Inversions int `json:"fifo_inversions"`
	// PassedOver counts the inversions after which such an earlier arrival
	// was turned away at a check-in within truth.PassedOverWindow: its place was
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
	// HeldThroughFreeSlot are the visitors who waited while that slot was
	// free, the earliest queued first.
	HeldThroughFreeSlot []HeldWaiter `json:"held_through_free_slot,omitempty"`
	// Unidentified counts origin requests that named no visitor: they are
	// left out of every figure above.
	Unidentified int `json:"unidentified_hits"`
	// Priority are the priority code holders' figures, in a run with
	// holders (see priority.go).
	Priority *PriorityTruth `json:"priority,omitempty"`
	// Shown is how true what the apps among the crowd were told came out
	// (see shown.go); nil when none was told anything.
	Shown *ShownTruth `json:"shown,omitempty"`
	// InvertedPairs names, for each inversion, the visitor let in and the
	// earliest arrival it went before: what an operator needs to see
	// where the order broke (which nodes, which minutes, how long after).
	InvertedPairs []InvertedPair `json:"fifo_inverted_pairs,omitempty"`
}

// InvertedPair is one FIFO inversion: Later was let in while Earlier, who
// arrived in an earlier wall-clock minute, still waited, and Earlier was
// let in more than truth.InversionGrace after (or not at all).
type InvertedPair struct {
	Later   Passage `json:"later"`
	Earlier Passage `json:"earlier"`
	// PassedOver: Earlier was turned away at a check-in within
	// truth.PassedOverWindow after Later's admission.
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

// Judge computes the truth of a run from its log. It is a pure function of
// its arguments: the crowd's queue pages, check-ins and give-ups and the
// origin's hits become one log of events for package truth, whose
// admissions are the sessions the origin saw begin.
func Judge(log Log, l Limits) Truth {
	var t Truth
	j := newJudging(log)
	var events []truth.Event
	events, t.Unidentified = j.events()
	end := truth.Never
	if !log.End.IsZero() {
		end = j.since(log.End)
	}
	hist := truth.Replay(events, l)
	v := hist.Judge(end)

	t.Admissions = v.Admissions
	if v.Admissions > 0 {
		t.PeakActive, t.PeakActiveAt = v.PeakActive, j.when(v.PeakActiveAt)
		t.PeakNewPerMinute, t.PeakMinute = v.PeakNewPerMinute, j.when(time.Duration(v.PeakMinute)*time.Minute)
	}
	if v.Queued {
		t.FirstQueued = j.when(v.FirstQueue)
		t.ActiveAtFirstQueue, t.AdmittedAtFirstQueue = v.ActiveAtFirstQueue, v.AdmittedAtFirstQueue
		t.UtilisationAtFirstQueue = v.Utilisation
	}
	v.Inversions, v.PassedOver, v.Newcomers = j.withoutHolders(v.Inversions)
	t.Inversions, t.PassedOver, t.Newcomers = len(v.Inversions), v.PassedOver, v.Newcomers
	t.LongestFreeSlot, t.LongestFreeSlotAt, t.HeldThroughFreeSlot = longestFreeSlot(log, l, j.sessions(hist))

	t.Shown = j.shown(hist, end)
	admitted, waits := j.firstAdmissions(hist)
	t.Priority = j.priority(hist)
	t.Waited = len(waits)
	if len(waits) > 0 {
		t.MedianWait = median(waits)
	}
	for v, a := range j.arrs {
		if a != nil && admitted[v].IsZero() && a.GaveUp.IsZero() && !a.Arrived.After(log.End) {
			t.StillWaiting++
		}
	}
	for _, in := range v.Inversions {
		at := j.when(in.Later.At)
		t.InvertedPairs = append(t.InvertedPairs, InvertedPair{
			Later:      j.passage(in.Later.Visitor, admitted, at),
			Earlier:    j.passage(in.Earlier.Visitor, admitted, at),
			PassedOver: in.PassedOver,
		})
	}
	return t
}

// judging is a run's log on its way to package truth: its times counted
// from a wall-clock minute boundary before everything, and its visitors by
// number, in the order of the crowd's log, then any the origin saw that the
// crowd did not log (they arrived when let in).
type judging struct {
	log   Log
	epoch time.Time
	ids   map[string]int
	names []string
	arrs  []*Arrival // the crowd's log of each visitor; nil for one it did not log
}

func newJudging(log Log) *judging {
	var first time.Time
	note := func(at time.Time) {
		if !at.IsZero() && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	for _, a := range log.Arrivals {
		note(a.Arrived)
		note(a.Queued)
	}
	for _, h := range log.Hits {
		note(h.At)
	}
	return &judging{log: log, epoch: first.Truncate(time.Minute), ids: map[string]int{}}
}

func (j *judging) since(at time.Time) time.Duration { return at.Sub(j.epoch) }

func (j *judging) when(d time.Duration) time.Time { return j.epoch.Add(d) }

// id is the visitor's number, given at its first mention.
func (j *judging) id(name string) int {
	i, ok := j.ids[name]
	if !ok {
		i = len(j.names)
		j.ids[name] = i
		j.names = append(j.names, name)
		j.arrs = append(j.arrs, nil)
	}
	return i
}

// events is the log as package truth reads it, and how many of the
// origin's hits named no visitor.
func (j *judging) events() (events []truth.Event, unidentified int) {
	for k := range j.log.Arrivals {
		a := &j.log.Arrivals[k]
		v := j.id(a.Visitor)
		j.arrs[v] = a
		if a.Queued.IsZero() {
			continue
		}
		// It waited from its first request the room answered (Arrived).
		ev := truth.Event{At: j.since(a.Arrived), Kind: truth.Arrive, Visitor: v, Arrived: j.since(a.Arrived), Node: a.Node}
		events = append(events, ev)
		ev.At, ev.Kind = j.since(a.Queued), truth.Queue
		events = append(events, ev)
		for _, ta := range a.TurnedAway {
			ev.At = j.since(ta)
			events = append(events, ev)
		}
		if !a.GaveUp.IsZero() {
			events = append(events, truth.Event{At: j.since(a.GaveUp), Kind: truth.GiveUp, Visitor: v, Node: a.Node})
		}
	}
	for _, h := range j.log.Hits {
		if h.Visitor == "" {
			unidentified++
			continue
		}
		v := j.id(h.Visitor)
		ev := truth.Event{At: j.since(h.At), Kind: truth.Origin, Visitor: v, Arrived: j.since(h.At), Node: -1}
		if a := j.arrs[v]; a != nil {
			ev.Arrived, ev.Node = j.since(a.Arrived), a.Node
		}
		events = append(events, ev)
	}
	return events, unidentified
}

// sessions are the sessions the origin honoured, as the shared history
// replayed them, for the free-slot figure.
func (j *judging) sessions(hist *truth.History) []session {
	spans := hist.Spans()
	sessions := make([]session, 0, len(spans))
	for _, sp := range spans {
		sessions = append(sessions, session{visitor: j.names[sp.Visitor], admitted: j.when(sp.From), end: j.when(sp.To)})
	}
	return sessions
}

// firstAdmissions is each visitor's first admission (zero: none), and the
// waits of those who were queued before it, sorted.
func (j *judging) firstAdmissions(hist *truth.History) ([]time.Time, []time.Duration) {
	admitted := make([]time.Time, len(j.names))
	var waits []time.Duration
	for _, a := range hist.Admissions() {
		if !admitted[a.Visitor].IsZero() {
			continue
		}
		admitted[a.Visitor] = j.when(a.At)
		if a.Queued {
			waits = append(waits, a.At-a.Arrived)
		}
	}
	slices.Sort(waits)
	return admitted, waits
}

// passage is visitor v's way through the room, for the listing of an
// inversion at before.
func (j *judging) passage(v int, admitted []time.Time, before time.Time) Passage {
	p := Passage{Visitor: j.names[v], Node: -1, Admitted: admitted[v]}
	if a := j.arrs[v]; a != nil {
		p.Node, p.Arrived, p.Queued = a.Node, a.Arrived, !a.Queued.IsZero()
		for _, ta := range a.TurnedAway {
			if ta.Before(before) {
				p.LastTurnedAway = ta
			}
		}
	} else {
		p.Arrived = admitted[v]
	}
	return p
}

func median(sorted []time.Duration) time.Duration {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}
