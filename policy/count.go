package policy

import (
	"time"

	"github.com/waitroom/waitroom/crdt"
)

// The counter rule: what one request moves in a room's replicated counters.
// It is the only place that says so. The edge calls it for every counted
// request (copying its cookie's fields to and from Counting), the simulator
// and the ring model call it for theirs, and the tests check it; nothing
// else writes arrivals, admissions, session and waiting counts, the order
// inside a bucket, revocations, the visitor and challenge analytics or a
// priority group's code uses and admissions.
//
// A new visitor who is queued is counted nowhere until it proves that it
// keeps cookies: its first queue page refreshes after ProofRefresh, and
// that request, carrying the cookie the page set, is the first that counts
// it as waiting. A client that keeps no cookie (a flood of cookieless
// requests, a bot that never comes back) never gets that far, so it never
// takes a place in the waiting count: it cannot fill max_queue, hold slots
// reserved for the people counted in its bucket, or hold back the buckets
// behind it for the five minutes of the waiting window. Nor does it count
// an arrival: a queued new visitor's arrival is counted at its proof too,
// because arrivals decide each node's share of the new-user slots, and a
// flood of cookieless first requests at one node would otherwise pull the
// slots to that node, away from the real visitors queued at the others.
//
// A visitor is counted in at most one place at a time: a waiting cell
// (arrival bucket, minute of its last counted check-in) while it waits, a
// session cell (the second its session expires, rounded up to the room's
// session slice) while it is admitted. Each step of the rule takes the
// visitor out of where Counting says it is counted and puts it where it is
// counted now, so applied to a chain of states (each step's result the next
// one's input) the counts telescope to exactly one per visitor. Two steps
// from the same old state (a replayed cookie, parallel requests of one
// browser) would each add a count; that is what the edge's per-node table
// of counted tokens prevents (see edge's counted table), by handing the rule
// the newest state this node knows instead of the cookie's.

// Counting is the part of a visitor's token that the counter rule reads and
// writes. The edge copies it to and from its sealed cookie; the simulator
// keeps it per visitor.
type Counting struct {
	// Bucket is the arrival bucket: the unix minute of the first request
	// (a shuffle at an event's start may replace it).
	Bucket int64
	// AcceptedAt is the unix second of the admission; 0 while not admitted.
	AcceptedAt int64
	// LastCheckIn is the unix second of the last counted request.
	LastCheckIn int64
	// RefreshInterval is how many seconds after LastCheckIn the next
	// check-in counts.
	RefreshInterval uint16
	// Counted is where the visitor is counted now: for a waiting visitor
	// the unix minute of its waiting cell (its bucket being Bucket); for an
	// admitted one the expiry second of its session cell; 0 when it is
	// counted nowhere (a held visitor, one turned away by a full queue, a
	// revoked session).
	Counted int64
	// ExpiresAt is the unix second after which the token is worthless.
	ExpiresAt int64
	// Arrived is when inside its bucket's minute the visitor came, in
	// tenths of a second (0..599): its place in the bucket's order. The
	// rule sets it when it gives the visitor a bucket; a first request
	// keeps the caller's finer value for the current minute.
	Arrived uint16
}

// ProofRefresh is the refresh interval, in seconds, of a new visitor's
// first queue page: how soon it comes back with the cookie that page set,
// proving that it keeps cookies, and is counted as waiting (see Count).
// Until then the visitor is invisible to every count but the count of new
// visitors queued (even its arrival is counted at the proof), so the
// interval is short: two seconds,
// the time the truth allows between two admissions before it calls one out
// of order, so a visitor this late to be counted is not put behind anyone
// by it. The page after the proof is the same queue page, so the visitor
// loses nothing by seeing the first one briefly. Shorter was tried: at one
// second the ring model's fresh flood (three nodes, gossip as slow as the
// lag) let in 41 of 40, proofs being decided on views that differ while a
// second's visitors are counted nowhere; at two it holds the limits in
// every ring and cut test.
// It is shorter than any refresh a queue page gives otherwise, which is how
// the rule tells a visitor on its way to the proof (Proving) from one
// counted nowhere for another reason.
const ProofRefresh = 2

// Admitted reports whether the visitor has been let through to the origin.
func (c Counting) Admitted() bool { return c.AcceptedAt != 0 }

// Waiting reports whether the visitor is counted in a waiting cell: what
// Decide's Visitor.Queued must say. A visitor counted nowhere (held for the
// challenge, or turned away by a full queue) is not, so Decide places it
// behind everyone counted, never in a bucket whose reserved slots belong to
// the people counted in it.
func (c Counting) Waiting() bool { return c.Counted != 0 && !c.Admitted() }

// ProofGrace is how long, in seconds, after its first request a visitor's
// proof keeps the first request's bucket when a minute boundary passed in
// between (see Count): the proof interval and a slow round trip. A visitor
// that comes back later is counted like any other that was counted nowhere
// for a while, in the current minute's bucket.
const ProofGrace = 2 * ProofRefresh

// Proving reports whether the visitor got its first queue page and has not
// come back since: counted nowhere, its arrival not counted yet (the proof
// counts it), its next check-in due ProofRefresh later.
func (c Counting) Proving() bool {
	return c.Counted == 0 && !c.Admitted() && c.LastCheckIn != 0 && c.RefreshInterval == ProofRefresh
}

// EarlyCheckInSlack is how early (seconds) a check-in may come and still
// count. Zero: the token stores whole seconds rounded down and a browser
// refreshes no sooner than the interval after the answer, so an honest
// check-in is never early, and any slack would let a client that refreshes
// every second attempt a little more often than one that follows the page.
const EarlyCheckInSlack = 0

// QueuedTokenLife is how long, in seconds, a queued visitor's token lives
// after its last counted check-in: the waiting window, so that a token
// outlives its waiting count by less than a minute.
const QueuedTokenLife = crdt.DefaultWaitingWindow * 60

// EarlyCheckIn reports whether a waiting visitor's request at second now
// comes before its refresh interval is over: such a request counts nothing
// and is not decided on, so refreshing faster gains nothing.
func EarlyCheckIn(c Counting, now int64) bool {
	return now < c.LastCheckIn+int64(c.RefreshInterval)-EarlyCheckInSlack
}

// SessionSlice is the width, in seconds, of the session cells of a room
// whose sessions last sessionMinutes: the narrowest that cuts a session into
// at most 120 slices (1 s up to 2-minute sessions, 3 s at 5 minutes, 5 s at
// 10, 15 s at 30). A session is counted up to its expiry rounded up to the
// slice (SessionCell): never less than its cookie lets the visitor in, at
// most one slice more. The bound keeps the number of live session cells,
// and so the state, the same for every session length. Narrow slices matter
// beyond the count itself: the slots of sessions that end together open
// together, and coarse steps let whoever checks in right after a step take
// them out of arrival order (the simulator's reference experiment: 0 % FIFO
// inversions with 1-second slices for its 1-minute sessions, 3.4 % with
// 5-second ones, 13 % with whole minutes).
func SessionSlice(sessionMinutes int) int64 {
	const maxSlices = 120
	d := int64(max(sessionMinutes, 1)) * 60
	return max(1, (d+maxSlices-1)/maxSlices)
}

// SessionCell is the expiry second of the session cell that counts a session
// expiring at second expires: the first multiple of the slice g after it. A
// cookie still opens at its expiry second, and a snapshot at second t counts
// the cells whose second is after t, so the session is counted through its
// expiry second and at most g seconds longer.
func SessionCell(expires, g int64) int64 {
	g = max(g, 1)
	c := expires / g * g
	for c <= expires {
		c += g
	}
	return c
}

// Step is what happened to a visitor, as far as the counters go.
type Step uint8

const (
	// StepSession is a request of an admitted visitor within its session:
	// the session's count follows its expiry (unless renewal is disabled)
	// and its time on the origin grows.
	StepSession Step = iota
	// StepDecided is a request that Decide decided on (Event.Outcome): a
	// first request, or a waiting visitor's check-in that is not early.
	StepDecided
	// StepHold is a request that is not decided on: a visitor held for the
	// bot challenge while the room queues, or one in the infinite queue.
	// Neither is counted as waiting.
	StepHold
	// StepRevoke is an origin's command to end the visitor's session.
	StepRevoke
	// StepCodeUse is a priority code's use claimed for the visitor: one
	// more use of a code of group Event.Group. The visitor's counting is
	// left as it was.
	StepCodeUse
	// StepSeed counts a visitor who joined the queue before the node
	// counted anything (the spoofed buckets of Cloudflare's experiment in
	// "Waiting Room: Random Queueing and Custom Web/Mobile Apps"): its
	// arrival, its place in its bucket's order and its waiting count this
	// minute, as if its last check-in was counted a minute ago.
	StepSeed
)

// Verdict is what the bot challenge made of a visitor on one request, for
// the challenge analytics.
type Verdict uint8

const (
	// VerdictNone: no verdict on this request (no challenge, a solved one
	// remembered in the token, or a verifier that could not be asked).
	VerdictNone Verdict = iota
	// VerdictSolved: the visitor sent a solution the verifier accepted.
	VerdictSolved
	// VerdictFailed: the verifier refused the visitor's solution.
	VerdictFailed
	// VerdictUnsolved: a queued visitor checked in without a solution
	// while the room queues.
	VerdictUnsolved
)

// verdictKinds are the counts of the challenge verdicts.
var verdictKinds = [...]crdt.Kind{
	VerdictSolved:   crdt.ChallengesSolved,
	VerdictFailed:   crdt.ChallengesFailed,
	VerdictUnsolved: crdt.ChallengesUnsolved,
}

// Event is one request, or one command, for the counter rule.
type Event struct {
	Step Step
	// Fresh: the request carried no valid token (a first request).
	Fresh bool
	// Outcome is Decide's answer, for StepDecided.
	Outcome Outcome
	// Shuffled, when not zero, is the arrival bucket a shuffle at the
	// event's start gives the visitor (StepDecided).
	Shuffled int64
	// Challenged: the queue page shown carries the bot challenge
	// (StepDecided with Queue).
	Challenged bool
	// Infinite: a StepHold visitor is in the infinite queue (otherwise it
	// is held for the challenge).
	Infinite bool
	// Verdict is what the bot challenge made of the visitor on this
	// request (StepDecided and StepHold).
	Verdict Verdict
	// Group is the priority group of the code used (StepCodeUse), or of
	// the holder admitted (StepDecided with Admit); "" for none.
	Group string
	// Refresh is the refresh interval, in seconds, the next token gets when
	// the visitor is shown the queue page (drawn, with its jitter, by the
	// caller so that the rule stays pure). A first request that is queued
	// gets ProofRefresh instead, whatever Refresh says.
	Refresh uint16
	// ID is the session's id, for StepRevoke: every node learns it and
	// refuses the old cookie (crdt.Revocations). 0 when the token has none.
	ID uint64
	// At is when the request came (or the command was given), in unix
	// seconds: the rule never reads a clock.
	At int64
}

// Count applies the counter rule: for visitor state c and what happened
// (ev, at ev.At) in room (named name), it appends to dst the increments to
// add to this node's entries and returns them with the visitor's new state.
// It never reads a clock and never allocates beyond growing dst (ten
// increments at most).
//
//   - A first request that is admitted counts an arrival, the admission
//     and a session in the cell of its expiry. Queued, it counts only a new
//     visitor queued, not even an arrival: the token's refresh interval is
//     ProofRefresh, and the visitor is counted nowhere until that next
//     request (Proving).
//   - The proof request, like any decided request of a visitor counted
//     nowhere, counts an arrival and a place in the waiting count of its
//     bucket: the minute of its first request, even when a minute boundary
//     passed since, as long as it comes within ProofGrace (otherwise the
//     current minute's). So a queued visitor's arrival comes ProofRefresh
//     late, and a client that never proves counts none.
//   - A waiting visitor's counted check-in counts an arrival in each minute
//     it is seen, and moves its waiting count to (its bucket, this minute)
//     when the minute or the bucket changed. Admitted, the waiting count
//     goes and the session comes.
//   - Rejected, a waiting visitor's count goes.
//   - A session's request counts an arrival in each minute it is seen,
//     moves its session count to the slice of its renewed expiry when that
//     slice differs (never with disable_session_renewal: counted once at
//     admission), and moves its time-on-origin histogram count.
//   - Held (challenge, infinite queue), a visitor is counted nowhere.
//   - A waiting visitor let in, turned away, held or moved to another
//     bucket leaves the line of the arrival slot it had joined
//     (crdt.LeftAt), so the ring knows each slot's line; one that stops
//     coming back is taken off its bucket only, as its count lapses.
//   - Revoked, the session's count goes from the cell it is counted in.
//   - A challenge's verdict counts in its analytics; a priority holder's
//     admission counts in its group's admissions too (GroupAdmittedKey),
//     and a code's use in its group's code uses.
//   - A seeded visitor (StepSeed) counts as one that arrived, joined its
//     bucket's order and checked in, all in this minute.
func Count(dst []crdt.Inc, room Room, name string, c Counting, ev Event) ([]crdt.Inc, Counting) {
	k := counter{
		dst: dst, name: name, c: c,
		now: ev.At, nowMin: floorMinute(ev.At),
		waiting: c.Waiting(),
		dur:     int64(room.Session()) * 60,
		g:       SessionSlice(room.Session()),
	}
	// seen: the visitor is seen, counted, for the first time this minute
	// (a waiting visitor's count sits in the minute it was last counted in;
	// a session's last request is its last check-in). A visitor counted
	// nowhere is always seen: one on its way to the proof counted no arrival
	// at its first request, and the proof counts it.
	last := floorMinute(c.LastCheckIn)
	if k.waiting {
		last = c.Counted
	}
	k.seen = c.Counted == 0 || last != k.nowMin

	if ev.Verdict != VerdictNone && int(ev.Verdict) < len(verdictKinds) {
		k.inc(verdictKinds[ev.Verdict], 0, k.nowMin)
	}
	switch ev.Step {
	case StepSession:
		k.session(room.DisableSessionRenewal)
	case StepHold:
		k.hold(ev)
	case StepRevoke:
		k.revoke(ev)
	case StepCodeUse:
		k.inc(crdt.PriorityCodeUses, crdt.GroupBucket(ev.Group), k.nowMin)
	case StepSeed:
		k.seed()
	default:
		k.decided(ev)
	}
	return k.dst, k.c
}

// counter applies the counter rule to one event: the visitor's state as it
// goes, and the increments so far.
type counter struct {
	dst         []crdt.Inc
	name        string // the room's
	c           Counting
	now, nowMin int64 // unix second and minute of the event
	waiting     bool  // the visitor is counted as waiting (as it came)
	seen        bool  // first seen this minute: its arrival counts
	dur         int64 // the session's length, in seconds
	g           int64 // the session slice (SessionSlice)
}

func (k *counter) inc(kind crdt.Kind, bucket, minute int64) {
	k.dst = append(k.dst, crdt.Inc{Key: crdt.Key{Room: k.name, Kind: kind, Bucket: bucket, Minute: minute}, N: 1})
}

// sessionCell counts kind in a session cell, in the minute the cell is in.
func (k *counter) sessionCell(kind crdt.Kind, cell int64) { k.inc(kind, cell, floorMinute(cell)) }

// arrival counts the visitor's arrival this minute, once a minute.
func (k *counter) arrival() {
	if k.seen {
		k.inc(crdt.Arrivals, 0, k.nowMin)
	}
}

// leaveWaiting takes a waiting visitor out of the waiting count it is in.
func (k *counter) leaveWaiting() {
	if k.waiting {
		k.inc(crdt.WaitingMinus, k.c.Bucket, k.c.Counted)
	}
}

// leaveLine takes a waiting visitor out of its bucket's line: out of the
// waiting count, and out of the line of the arrival slot it joined, arrived
// tenths of a second into the bucket's minute (crdt.LeftAt).
func (k *counter) leaveLine(arrived uint16) {
	if k.waiting {
		k.leaveWaiting()
		k.inc(crdt.LeftAt, crdt.ArrivalSlot(k.c.Bucket, arrived), k.c.Bucket)
	}
}

// session counts a request of an admitted visitor within its session.
func (k *counter) session(noRenewal bool) {
	c := &k.c
	k.arrival()
	from := crdt.HistogramBin(float64(c.LastCheckIn - c.AcceptedAt))
	to := crdt.HistogramBin(float64(k.now - c.AcceptedAt))
	if from != to {
		// The cells of the admission minute: each session counts once,
		// at its latest duration, however long it lasts.
		m := floorMinute(c.AcceptedAt)
		k.inc(crdt.TimeOnOriginMinus, from, m)
		k.inc(crdt.TimeOnOrigin, to, m)
	}
	if !noRenewal {
		c.ExpiresAt = k.now + k.dur
		if cell := SessionCell(c.ExpiresAt, k.g); cell != c.Counted {
			if c.Counted != 0 {
				k.sessionCell(crdt.SessionMinus, c.Counted)
			}
			k.sessionCell(crdt.SessionPlus, cell)
			c.Counted = cell
		}
	}
	c.LastCheckIn = k.now
}

// hold counts a visitor held for the challenge or in the infinite queue.
func (k *counter) hold(ev Event) {
	c := &k.c
	k.leaveLine(c.Arrived)
	if ev.Infinite {
		if !ev.Fresh {
			k.inc(crdt.InfiniteQueueRefreshes, 0, k.nowMin)
		}
	} else {
		k.inc(crdt.ChallengesIssued, 0, k.nowMin)
	}
	if ev.Fresh {
		k.inc(crdt.VisitorsQueued, 0, k.nowMin)
	}
	c.Counted, c.LastCheckIn = 0, k.now
	c.RefreshInterval = ev.Refresh
	c.ExpiresAt = k.now + QueuedTokenLife
}

// revoke ends an admitted visitor's session at the origin's command.
func (k *counter) revoke(ev Event) {
	c := &k.c
	if !c.Admitted() || c.Counted == 0 {
		return
	}
	k.sessionCell(crdt.SessionMinus, c.Counted)
	k.inc(crdt.SessionsRevoked, 0, k.nowMin)
	if ev.ID != 0 {
		k.inc(crdt.Revocations, int64(ev.ID), k.nowMin)
	}
	c.Counted = 0
}

// heldSeconds is how many seconds before its decision a new visitor's
// arrival may be dated: a hold lasts MaxHold at most, and its start and
// end may fall in different seconds.
const heldSeconds = uint16(MaxHold/time.Second) + 1

// decided counts a request Decide decided on, by its outcome. Bypass (a
// suspended room) is uncounted and leaves the state as it was.
func (k *counter) decided(ev Event) {
	if ev.Fresh {
		arrived := arrivedAt(k.nowMin, k.now*1000)
		if k.c.Bucket == k.nowMin && k.c.Arrived/10 <= arrived/10 && arrived/10-k.c.Arrived/10 <= heldSeconds {
			// The caller's tenths of the same second, or of its first
			// request before a hold (HeldArrival).
			arrived = k.c.Arrived
		}
		k.c = Counting{Bucket: k.nowMin, Arrived: arrived}
		k.waiting, k.seen = false, true
	}
	bucket := k.c.Bucket
	if ev.Shuffled != 0 {
		bucket = ev.Shuffled
	}
	switch ev.Outcome {
	case Admit:
		k.admit(ev, bucket)
	case Queue:
		k.queue(ev, bucket)
	case Reject:
		k.reject(ev)
	}
}

// admit counts an admission: the arrival, the admission (a priority
// holder's in its group's too), the session in the cell of its expiry, and
// the waiting count left.
func (k *counter) admit(ev Event, bucket int64) {
	c := &k.c
	if ev.Group != "" {
		k.inc(crdt.PriorityAdmitted, crdt.GroupBucket(ev.Group), k.nowMin)
	}
	k.arrival()
	c.ExpiresAt = k.now + k.dur
	cell := SessionCell(c.ExpiresAt, k.g)
	k.inc(crdt.Admitted, 0, k.nowMin)
	k.sessionCell(crdt.SessionPlus, cell)
	k.inc(crdt.VisitorsAdmitted, 0, k.nowMin)
	k.inc(crdt.TimeOnOrigin, crdt.HistogramBin(0), k.nowMin)
	if !ev.Fresh {
		// Time in queue of those who waited; the arrival second is not
		// kept, so the middle of the arrival minute stands for it.
		waited := float64(k.now - (bucket*60 + 30))
		k.inc(crdt.TimeInQueue, crdt.HistogramBin(waited), k.nowMin)
	}
	k.leaveLine(c.Arrived)
	if bucket != c.Bucket {
		c.Arrived = arrivedAt(bucket, k.now*1000)
	}
	c.Bucket, c.AcceptedAt, c.LastCheckIn, c.Counted = bucket, k.now, k.now, cell
}

// queue counts a visitor given the queue page: a first request only as a
// new visitor queued; any other as an arrival and a place in the waiting
// count of its bucket.
func (k *counter) queue(ev Event, bucket int64) {
	c := &k.c
	if ev.Fresh {
		// Not counted as waiting, nor as an arrival, until it proves
		// that it keeps cookies (see the top of this file): its next
		// request comes after ProofRefresh, and the token says it is on
		// its way there, so that request is not early and counts the
		// arrival. A client that never comes back leaves nothing behind
		// but the count of new visitors queued.
		k.inc(crdt.VisitorsQueued, 0, k.nowMin)
		if ev.Challenged {
			k.inc(crdt.ChallengesIssued, 0, k.nowMin)
		}
		c.Counted = 0
		c.Bucket, c.LastCheckIn = bucket, k.now
		c.RefreshInterval = ProofRefresh
		c.ExpiresAt = k.now + QueuedTokenLife
		return
	}
	k.arrival()
	if !k.waiting && !(c.Proving() && k.now <= c.LastCheckIn+ProofGrace) && ev.Shuffled == 0 && bucket < k.nowMin {
		// Counted again after a while counted nowhere (held, or turned
		// away by a full queue): it joins the current minute's bucket.
		// An older bucket may already be reserved in full, for the
		// people counted in it, and any node admits those; one more in
		// it would be admitted over the limits.
		//
		// Not so a proof that comes when its page said, even when a
		// minute boundary passed since the first request: it keeps its
		// first minute's bucket. Within ProofGrace that bucket is the
		// previous minute's, the newest of the older ones, and one more
		// counted in it ends that bucket's coverage (coverage sticks
		// only while no more wait in a bucket than were covered) before
		// the visitor's next check-in, a refresh later, can be admitted
		// as covered; the proof itself is decided as a new visitor's.
		// In the next minute's bucket instead, it would be behind every
		// newcomer of that minute who checks in before it: in the ring
		// model, every visitor arriving in a minute's last two seconds
		// let half of the next minute's in before it. A proof much
		// later is what the reason above is about (at the edge, forty
		// visitors proving a minute late in their old bucket were let
		// in over the minute's limit by half).
		//
		// A proof held up past ProofGrace by no fault of the visitor's
		// (the node that gave the first page was killed, and the proof
		// came back through another node seconds later) joins the current
		// minute's bucket too, and the origin counts the visitor from its
		// first request: a FIFO inversion in the truth's terms, for that
		// visitor alone. The token cannot tell that delay from a client
		// that proves when it pleases (it carries the first request's
		// time, which every late proof has), and keeping the old bucket
		// for late proofs is what let the forty in over the limit, so the
		// grace is not widened for it: a visitor put back by at most one
		// minute against a limit that could be overrun.
		bucket = k.nowMin
	}
	joined := c.Arrived
	if bucket != c.Bucket {
		c.Arrived = arrivedAt(bucket, k.now*1000)
	}
	if !k.waiting || bucket != c.Bucket {
		// Joins the bucket's queue: its place in the bucket's order.
		k.inc(crdt.QueuedAt, crdt.ArrivalSlot(bucket, c.Arrived), bucket)
	}
	if !k.waiting || c.Counted != k.nowMin || bucket != c.Bucket {
		if bucket != c.Bucket {
			k.leaveLine(joined)
		} else {
			// The minute's count moves on; the line stays.
			k.leaveWaiting()
		}
		k.inc(crdt.WaitingPlus, bucket, k.nowMin)
	}
	if ev.Challenged {
		k.inc(crdt.ChallengesIssued, 0, k.nowMin)
	}
	c.Counted = k.nowMin
	c.Bucket, c.LastCheckIn = bucket, k.now
	c.RefreshInterval = ev.Refresh
	c.ExpiresAt = k.now + QueuedTokenLife
}

// seed counts a visitor who joined its bucket's queue before the node
// counted anything: its arrival, its place in the bucket's order and its
// waiting count in this minute. Its token says it was last counted a minute
// ago, a refresh interval before, so its next check-in counts.
func (k *counter) seed() {
	c := &k.c
	k.inc(crdt.Arrivals, 0, k.nowMin)
	k.inc(crdt.QueuedAt, crdt.ArrivalSlot(c.Bucket, c.Arrived), c.Bucket)
	k.inc(crdt.WaitingPlus, c.Bucket, k.nowMin)
	c.Counted, c.LastCheckIn = k.nowMin, k.now-60
	c.RefreshInterval = RefreshBase
	c.ExpiresAt = k.now + QueuedTokenLife
}

// reject counts a visitor turned away: one who waited before the room
// turned to reject (or whose queue filled) no longer waits.
func (k *counter) reject(ev Event) {
	c := &k.c
	k.arrival()
	k.leaveLine(c.Arrived)
	c.Counted, c.LastCheckIn = 0, k.now
	c.RefreshInterval = ev.Refresh
}

// floorMinute is the unix minute of unix second s.
func floorMinute(s int64) int64 {
	m := s / 60
	if s%60 != 0 && s < 0 {
		m--
	}
	return m
}
