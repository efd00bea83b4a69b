package policy

import (
	"math"
	"sort"
	"strconv"
)

// Estimate is what a queued visitor is told. Every value is in minutes; the
// fields map to the queue page variables of the same names.
type Estimate struct {
	WaitTime          int
	WaitTimeKnown     bool
	WaitTimeFormatted string
	// The 25th, 50th and 75th percentiles of the wait under random
	// queueing; under FIFO all three equal WaitTime.
	WaitTime25, WaitTime50, WaitTime75 int
	// WaitSeconds25, WaitSeconds50 and WaitSeconds75 are the same
	// percentiles in seconds, as WaitTimeFormatted says them: a random
	// queue's percentile under a minute to its page's check-ins (a visitor
	// is let in only when its page checks in, RefreshBase apart; see
	// pageWait), every other wait its minutes × 60. In a random queue that
	// drains in a few minutes most percentiles are under a minute, and a
	// page that could only say "1 minute" for all three let 85 to 100 %
	// in by its 25th percentile in the real-process run of such a crowd.
	WaitSeconds25, WaitSeconds50, WaitSeconds75 int
	QueueIsFull                                 bool
	VisitorsAhead                               int64 // waiting in older buckets
	// Position is the number of visitors ahead in line under FIFO (see
	// Allocation.Position); PositionKnown is false where there is none,
	// as under random queueing, and then Position is 0 and never shown.
	Position      int64
	PositionKnown bool
	// Eligible is not a page variable: the visitor's bucket already has
	// reserved slots (FIFO), so its next check-in at any node goes in. The
	// edge may shorten the refresh interval for it.
	Eligible bool

	// newcomer is the place and the wait of a new visitor at its first
	// answer (see ForNewVisitor).
	newcomer newcomer
}

// newcomer is what a new visitor's first answer shows under FIFO: its place
// and, under the continuous strategy, its wait (0: the visitor's own).
type newcomer struct {
	position int64
	wait     int
}

// ForNewVisitor is the estimate as a new visitor's first answer shows it,
// before its cookie has come back: the ring counts a visitor only once it
// proves its cookie (two seconds later), so the visitor is not counted yet,
// nor are the others who came in the last two seconds. Its place is behind
// everyone counted and behind those of the last two seconds who will prove
// (at the share of new visitors who do, as the ring measures it), and its
// wait runs to that place. In a flood, where everyone came in those
// seconds, first answers that counted only the visitors counted said
// "nobody ahead of you" to visitors with hundreds ahead.
func (e Estimate) ForNewVisitor() Estimate {
	if !e.PositionKnown {
		return e
	}
	e.Position = e.newcomer.position
	e.Eligible = false
	if w := e.newcomer.wait; w > 0 && e.WaitTimeKnown {
		e.SetWait(w)
	}
	return e
}

// SetWait sets the estimate to a wait of w minutes, every percentile alike
// (as under FIFO), and says it.
func (e *Estimate) SetWait(w int) {
	e.WaitTime, e.WaitTime25, e.WaitTime50, e.WaitTime75 = w, w, w, w
	e.WaitSeconds25, e.WaitSeconds50, e.WaitSeconds75 = w*60, w*60, w*60
	e.WaitTimeFormatted = FormatWait(w)
}

// SetPercentiles sets a random queue's estimate to the percentiles w (the
// 25th, 50th and 75th) as the page shows them, and says the range from the
// 25th to the 75th.
func (e *Estimate) SetPercentiles(w [3]PageWait) {
	e.WaitTime25, e.WaitTime50, e.WaitTime75 = w[0].Minutes, w[1].Minutes, w[2].Minutes
	e.WaitSeconds25, e.WaitSeconds50, e.WaitSeconds75 = w[0].Seconds, w[1].Seconds, w[2].Seconds
	e.WaitTime = e.WaitTime50
	e.WaitTimeFormatted = FormatSpan(e.WaitSeconds25, e.WaitSeconds75)
}

// PageWait is a wait as a page shows it: in whole minutes, at least one,
// for the reference's page variables, and in seconds, finer under a
// minute where the estimate knows more (Estimate.WaitSeconds25).
type PageWait struct{ Minutes, Seconds int }

// WholeMinutes is a wait of m minutes as a page shows it.
func WholeMinutes(m int) PageWait { return PageWait{m, m * 60} }

// UnknownWait is WaitTimeFormatted when no estimate exists.
const UnknownWait = "unknown"

// maxWaitMinutes caps estimates (a week) so a vanishing admission rate cannot
// overflow them.
const maxWaitMinutes = 7 * 24 * 60

// Estimate is the estimate for a visitor of arrival bucket bucket (the
// current minute for a visitor who is just being queued).
//
// FIFO (as in "Building Waiting Room on Workers and Durable Objects"):
// visitors ahead / admissions per minute, rounded up, at least one minute,
// where ahead are the older buckets (VisitorsAhead). Under the continuous
// strategy the wait spans the visitor's arrival slot instead, which goes in
// together once the older buckets and the earlier slots of its own are in,
// and the estimate is the whole minute within a fifth of the most of that
// span (span.go; Estimate takes the visitor as the first of its bucket).
// Random (as in "Waiting Room: Random Queueing and Custom Web/Mobile
// Apps"): the wait within which a share p of visitors get in, with the
// number competing changing by those who join and those let in each minute
// (lottery.go); WaitTime is the median and the formatted text the 25th to
// the 75th percentile. Without an admission rate, and under queue_all, the
// wait is unknown.
func (a *Allocation) Estimate(bucket int64) Estimate { return a.EstimateAt(bucket, 0) }

// EstimateAt is Estimate for a visitor who came arrived tenths of a second
// into the minute of its bucket. Under FIFO its Position counts the older
// buckets and those of its own bucket who came before it (see order.go);
// its wait under the continuous strategy spans its arrival slot (span.go).
func (a *Allocation) EstimateAt(bucket int64, arrived uint16) Estimate {
	e := Estimate{QueueIsFull: a.full, VisitorsAhead: a.ahead(bucket), WaitTimeFormatted: UnknownWait}
	e.Position, e.PositionKnown = a.Position(bucket, arrived)
	if a.mode != modeDecide {
		return e
	}
	if e.PositionKnown {
		e.newcomer = a.newcomerNow()
	}
	e.Eligible = a.method == FIFO && a.classify(Visitor{Bucket: bucket, Queued: true}) == classCovered
	if a.rate <= 0 {
		return e
	}
	e.WaitTimeKnown = true
	if a.method == Random {
		w, ok := [3]PageWait{}, false
		if a.fc != nil && !a.cut && a.strategy == Continuous {
			w, ok = a.lotteryWaitsOnce() // the forecast's admissions
		}
		if !ok { // a steady rate
			n, in := float64(max(a.waiting, 1)), a.joining // lottery.go
			r := a.waitRate()
			w = [3]PageWait{lotteryWait(n, r, in, 0.25), lotteryWait(n, r, in, 0.50), lotteryWait(n, r, in, 0.75)}
		}
		e.SetPercentiles(w)
		return e
	}
	w := minutes(float64(e.VisitorsAhead) / a.rate) // the reference: older buckets only
	if a.strategy == Continuous {
		w = a.fifoWait(bucket, arrived) // span.go
	}
	if e.Eligible {
		w = 1
	}
	e.SetWait(w)
	return e
}

// newcomerNow is the place and the wait of a new visitor answered now: the
// allocation's newcomer place (computed once: every new visitor of the
// allocation's instant is behind the same visitors) and the node's own new
// visitors queued since the allocation, the one asking aside (its own first
// answer is counted before it is answered, see Decision.Count). In a flood
// a node queues many between two allocations; without them each of those
// was told the place of the first.
func (a *Allocation) newcomerNow() newcomer {
	a.newOnce.Do(func() { a.newBase = a.newcomerPosition() })
	p := a.newBase + float64(max(a.led.proofs.first.Load()-a.firstsAt-1, 0))*a.arr.proofRate
	p += a.provedSince()
	p = max(p-a.led.proofs.leftBefore(math.MaxInt64), 0) // let in since: ahead no more
	n := newcomer{position: int64(p + 0.5)}
	if a.rate > 0 && a.strategy == Continuous {
		d := a.room.checkIn().Minutes() / 2
		// Those waiting at nodes a cut ring cannot reach take none of
		// this part's slots meanwhile.
		t := a.admissionAt(p-float64(a.room.Side.Waiting.stillWaitingAll(a.lines))+1) + d
		n.wait = spanMinutes(t, t)
	}
	return n
}

// ahead is the number of visitors waiting in buckets older than bucket.
func (a *Allocation) ahead(bucket int64) int64 {
	i := sort.Search(len(a.buckets), func(i int) bool { return a.buckets[i].bucket >= bucket })
	if i == len(a.buckets) {
		return a.waiting
	}
	return a.buckets[i].before
}

// minutes rounds a wait up to whole minutes: a queued visitor waits at least
// until a check-in, and an estimate that errs long disappoints less.
func minutes(m float64) int {
	if math.IsNaN(m) || m > maxWaitMinutes {
		return maxWaitMinutes
	}
	return max(1, int(math.Ceil(m-1e-9)))
}

// RandomWait returns the minutes n within which a visitor of a random queue
// gets in with probability p, when each minute lets in a share perMinute of
// those waiting: 1 − (1 − perMinute)^n = p, so n = log(1 − p) / log(1 −
// perMinute). RandomWait(0.1, 0.5) is 6.58.
func RandomWait(perMinute, p float64) float64 {
	switch {
	case p <= 0 || perMinute >= 1:
		return 0
	case perMinute <= 0 || p >= 1:
		return math.Inf(1)
	}
	return math.Log1p(-p) / math.Log1p(-perMinute)
}

// FormatWait renders a wait for people: "1 minute", "10 minutes", "1 hour",
// "1 hour 5 minutes"; zero or less is "less than a minute".
func FormatWait(minutes int) string {
	if minutes <= 0 {
		return "less than a minute"
	}
	if minutes < len(waitTexts) {
		return waitTexts[minutes]
	}
	return formatWait(minutes)
}

// waitTexts are the waits of up to a day, written once: every queued
// answer carries one.
var waitTexts = func() (t [24*60 + 1]string) {
	for m := 1; m < len(t); m++ {
		t[m] = formatWait(m)
	}
	return t
}()

func formatWait(minutes int) string {
	h, m := minutes/60, minutes%60
	switch {
	case h == 0:
		return plural(m, "minute")
	case m == 0:
		return plural(h, "hour")
	}
	return plural(h, "hour") + " " + plural(m, "minute")
}

// FormatSpan renders a random queue's range from lo to hi seconds: a
// wait under a minute in seconds ("20 seconds"), any other in minutes as
// FormatWait has it; one wait when both read the same.
func FormatSpan(lo, hi int) string {
	a, b := formatSeconds(lo), formatSeconds(hi)
	if a == b {
		return a
	}
	return a + " to " + b
}

func formatSeconds(s int) string {
	if s > 0 && s < 60 {
		return plural(s, "second")
	}
	return FormatWait(s / 60)
}

func plural(n int, unit string) string {
	s := strconv.Itoa(n) + " " + unit
	if n != 1 {
		s += "s"
	}
	return s
}

// Status is the room's state as the admin endpoint shows it.
type Status string

// The statuses.
const (
	StatusNotQueueing Status = "not_queueing"
	StatusQueueing    Status = "queueing"
	StatusQueueAll    Status = "queue_all"
	StatusSuspended   Status = "suspended"
)

// Status reports whether the room holds visitors back: queueing while anyone
// waits or no slot is open (a new visitor would be queued), and always under
// the reject method, since nobody goes in.
func (a *Allocation) Status() Status {
	switch a.mode {
	case modeBypass:
		return StatusSuspended
	case modeQueueAll:
		return StatusQueueAll
	case modeRejectAll:
		return StatusQueueing
	case modeAdmitAll:
		return StatusNotQueueing
	}
	if a.waiting > 0 || a.open == 0 {
		return StatusQueueing
	}
	return StatusNotQueueing
}
