package policy

import (
	"math"

	"github.com/waitroom/waitroom/crdt"
)

// The percentiles of a random queue's wait. Each minute lets in about rate
// of those competing, drawn at random; the constant-chance model of
// "Waiting Room: Random Queueing and Custom Web/Mobile Apps" takes the
// number competing as fixed, so a visitor's chance per minute is rate /
// waiting for as long as it waits. But the number competing changes: it
// grows by those who join per minute (joining) and shrinks by those let
// in, so a queue that drains gives its last visitors an ever better chance
// and one that grows an ever worse one. With N(t) = waiting + (joining −
// rate)·t competing after t minutes, the chance to be still waiting is
// S(t) = exp(−∫ rate / N), which is (N(t) / waiting)^(−rate / (joining −
// rate)) and nil once N reaches zero.
//
// A share p of visitors should get in within the p-th percentile shown
// (see pageWait for how it is shown).

// pageWait is a percentile of a random queue's wait as the page shows it:
// t the percentile in minutes, p its share, and share the share of
// visitors let in within a wait given in seconds. The page's minute is the
// whole minute, at least one, whose share comes nearest to p, not the
// percentile rounded up, which in the simulator's random queue, where most
// waits are a few minutes, let 68 % of visitors in by their median and all
// of them by their 75th percentile.
//
// Under a minute the page says seconds, and the same rule picks among the
// page's check-ins and the whole minute: a visitor is let in only when its
// page checks in, so a wait between two check-ins is one nobody has. The
// k-th check-in is k·RefreshBase seconds away on average and has surely
// come by k·checkInBy; the page says the latter, with the share let in by
// the former. Said at k·RefreshBase, about half the visitors whose first
// check-in let them in came after it: the simulator's mirror of the real
// random-regional crowd let 19 % in by a 25th percentile of "20 seconds".
func pageWait(t, p float64, share func(seconds float64) float64) PageWait {
	lo, hi := max(1, int(math.Floor(t))), max(1, int(math.Ceil(t)))
	w := WholeMinutes(lo)
	if math.Abs(share(float64(hi*60))-p) < math.Abs(share(float64(lo*60))-p) {
		w = WholeMinutes(hi)
	}
	if t >= 1 {
		return w
	}
	near := math.Abs(share(float64(w.Seconds)) - p)
	for k := 1; k*checkInBy < 60; k++ {
		if d := math.Abs(share(float64(k*RefreshBase)) - p); d < near || (d == near && k*checkInBy < w.Seconds) {
			w.Seconds, near = k*checkInBy, d
		}
	}
	return w
}

// checkInBy is the time, in seconds, by which a queue page's next check-in
// has surely come: RefreshBase with its jitter, rounded up to five seconds.
const checkInBy = (RefreshBase + RefreshJitter + 4) / 5 * 5

// lotteryWait is the wait within which a share p of a random queue's
// visitors get in, waiting competing, rate let in and joining joining per
// minute, as the page shows it.
func lotteryWait(waiting, rate, joining, p float64) PageWait {
	if rate <= 0 || waiting <= 0 {
		return WholeMinutes(maxWaitMinutes)
	}
	survive := func(t float64) float64 {
		g := joining - rate
		if math.Abs(g) < 1e-9*rate {
			return math.Exp(-rate * t / waiting)
		}
		n := waiting + g*t
		if n <= 0 {
			return 0
		}
		return math.Pow(n/waiting, -rate/g)
	}
	// The continuous percentile: S(t) = 1 − p.
	var t float64
	if g := joining - rate; math.Abs(g) < 1e-9*rate {
		t = -waiting / rate * math.Log1p(-p)
	} else {
		t = waiting * (math.Pow(1-p, -g/rate) - 1) / g
	}
	if math.IsNaN(t) || math.IsInf(t, 0) || t >= maxWaitMinutes {
		return WholeMinutes(maxWaitMinutes)
	}
	return pageWait(t, p, func(s float64) float64 { return 1 - survive(s/60) })
}

// joiningMinutes is how many full minutes of joins joiningRate averages.
const joiningMinutes = 3

// joiningRate is how many new visitors the room queued per minute over the
// last joiningMinutes full minutes (crdt.VisitorsQueued), averaged over
// those since the first one anybody was queued in, as admissionRate is: a
// queue that began a minute ago grows at its one minute's pace, not at a
// third of it, and taking it for a third told the first visitors of the
// real-process random queue a 75th percentile of one minute while the
// number they competed with doubled. Those who join compete for the slots;
// visitors who come back with a queued cookie are already counted as
// waiting.
func joiningRate(snap *crdt.RoomSnapshot) float64 {
	var n uint64
	minutes := 0
	for m := snap.Minute - joiningMinutes; m < snap.Minute; m++ {
		c := snap.QueuedIn(m).Total
		if minutes == 0 && c == 0 {
			continue
		}
		n += c
		minutes++
	}
	if minutes == 0 {
		return 0
	}
	return float64(n) / float64(minutes)
}

// joiningFor is how many minutes a random queue's new visitors have been
// joining without a break (the full minutes with any, back from the
// current one, and the current one's elapsed part), at least one: the
// scale of how much longer its forecast takes them to go on joining
// (crowdHorizons, in lotteryForecast; the steady rate of lotteryWait, for
// a room without a forecast, keeps them joining). A crowd's past length is
// the one measure of its future the ring has; taken to join for the next
// hour instead, a crowd that joined faster than the room let in made the
// number competing grow all that hour, and the 75th percentile ran to 20
// to 59 minutes in three of ten real-process random-regional runs, whose
// crowd stops after two minutes and whose visitors waited under three.
func joiningFor(snap *crdt.RoomSnapshot, frac float64) float64 {
	n := 0.0
	for m := snap.Minute - 1; m >= snap.Minute-HistoryMinutes && snap.QueuedIn(m).Total > 0; m-- {
		n++
	}
	return max(n+frac, 1)
}

// crowdHorizons are the minutes for which a random queue's forecast takes
// its crowd to go on joining, a crowd that has joined for joinFor minutes
// (joiningFor), each as likely as the others; the forecast's chance to be
// still waiting is their average. How long a crowd goes on is the one
// thing about it the ring cannot see. Taking its length to be as likely
// at any scale (J. R. Gott's "Copernican" argument), seen at a moment as
// likely as any other a crowd that has joined for a minutes goes on for
// more than s more with chance a/(a+s). But a page is seen at a moment as
// likely as the number then waiting, and where a crowd outruns the room
// that number grows with the crowd's age; so at a page the chance is
// (a/(a+s))². The horizons are that distribution's middles of equal
// shares, a·(1/√u − 1) at u = 1/16, 3/16, … 15/16: from a thirtieth of a
// to three times it, half of them beyond 0.41·a. Any one horizon gives no
// percentile of the wait, since the chance to be still waiting grows with
// the horizon only up to the wait itself: taken to join for a minutes, the
// first visitors of a long crowd were told too short a 75th percentile
// and its last ones, where most pages are, too long a median. Weighing
// every moment alike (up to fifteen times a), the 75th percentile read
// long there: the real random queue, run until it drained, let 78.3 and
// 85.3 % in by it in two runs. The simulator's mirrors of the real crowds
// let in by the 25th / 50th / 75th percentile, with a alone, the moments
// alike and the pages: the random queue, drained, 25.9 / 57.1 / 79.2, 24.9
// / 51.5 / 78.1 and 24.9 / 49.1 / 74.6 % (six seeds pooled);
// random-regional 33.4 / 50.9 / 85.7, 32.7 / 46.5 / 80.1 and 32.1 / 44.0
// / 73.3 % (20 seeds).
func crowdHorizons(a float64) (out [8]float64) {
	for i := range out {
		u := (float64(i) + 0.5) / float64(len(out))
		out[i] = a * (1/math.Sqrt(u) - 1)
	}
	return out
}

// thinnedJoining is the joining rate, rate per minute over the last full
// minutes, given that n have joined in the current minute's first frac: the
// current minute's pace where so few joined that a crowd still coming at
// rate would hardly have sent them (a chance under thinnedChance, by the
// Chernoff bound of the Poisson count's lower tail), rate otherwise. The
// full minutes go on counting a crowd for up to joiningMinutes after it
// stops; taken for one still coming, the last visitors of the simulator's
// mirror of the real random-regional crowd were told a median of 95 s and
// waited 56 (the crowd had stopped half a minute before), and 84 % got in
// by it. At any one look, a steady crowd's count falls under the bound
// less than once in a hundred (the bound is above the true chance).
func thinnedJoining(rate, n, frac float64) float64 {
	want := rate * frac
	if !(frac > 0) || !(n < want) {
		return rate
	}
	// P(N ≤ n) ≤ exp(n − want + n·ln(want/n)) for N Poisson of mean want.
	bound := n - want
	if n > 0 {
		bound += n * math.Log(want/n)
	}
	if bound < math.Log(thinnedChance) {
		return n / frac
	}
	return rate
}

// thinnedChance is how unlikely the current minute's joins must be, for a
// crowd still coming at the full minutes' rate, for thinnedJoining to take
// the crowd for thinned.
const thinnedChance = 0.01

// lotteryForecast is lotteryWait for the percentiles p of a random queue
// whose admissions follow the allocation's forecast (forecast.go) rather
// than a steady rate: the chance to be let in over a short step is the
// step's admissions over those competing then, so a room whose active
// limit is full lets nobody in until sessions end, and then many. Read at
// a steady rate instead, the first visitors of the real-process random
// queue were told 1 to 1 minutes (the rate of the minutes before the
// active limit filled) and waited several.
func (a *Allocation) lotteryForecast(ps [3]float64) (waits [3]PageWait, ok bool) {
	a.forecastOnce()
	pieces := a.fc.pieces
	if len(pieces) == 0 {
		return waits, false
	}
	r := a.waitRate()
	// Pieces that free again may end before earlier ones, and a piece of
	// less than one admission may end before it starts (its start is when
	// the budget allows one whole admission, its end when it allows the
	// fraction): the histogram reaches the latest time of any piece, and
	// every index is held within it, since every node computes the same
	// forecast from the same merged state and an index past the end would
	// take the whole ring down at once.
	var end float64
	for _, p := range pieces {
		end = math.Max(end, math.Max(p.t0, p.t1))
	}
	if !(end < maxWaitMinutes) {
		end = maxWaitMinutes
	}
	dt := math.Max(1.0/30, end/4000)
	cells := int(math.Ceil(end/dt)) + 1
	hist := make([]float64, cells) // admissions per step up to end
	step := func(t float64) int {
		if !(t > 0) { // negative or NaN
			return 0
		}
		return min(int(t/dt), cells-1)
	}
	for _, p := range pieces {
		if !(p.n > 0) || math.IsInf(p.n, 0) {
			continue
		}
		i0, i1 := step(p.t0), step(p.t1)
		if i1 <= i0 {
			hist[i0] += p.n
			continue
		}
		for i := i0; i <= i1; i++ {
			lo, hi := math.Max(p.t0, float64(i)*dt), math.Min(p.t1, float64(i+1)*dt)
			if hi > lo {
				hist[i] += p.n * (hi - lo) / (p.t1 - p.t0)
			}
		}
	}
	waiting := float64(max(a.waiting, 1))
	horizons := crowdHorizons(a.joinFor)
	var still [len(horizons)]float64 // the chance to be still waiting, by horizon
	for h := range still {
		still[h] = 1
	}
	survive, admitted := 1.0, 0.0
	byMinute := []float64{1} // the chance to be still waiting after each whole minute
	byStep := []float64{1}   // and after each step of the first minute
	var at [3]float64        // the continuous percentiles
	found := 0
	for i := 0; found < 3 || float64(len(byMinute)) <= at[2]+1; i++ {
		t := float64(i) * dt
		if t >= maxWaitMinutes {
			break
		}
		in := r * dt
		if i < cells {
			in = hist[i]
		}
		next := 0.0
		for h, joinFor := range horizons {
			if competing := waiting + a.joining*math.Min(t, joinFor) - admitted; competing > in {
				still[h] *= math.Exp(-in / competing)
			} else {
				still[h] = 0
			}
			next += still[h]
		}
		next /= float64(len(horizons))
		for found < 3 && next <= 1-ps[found] {
			// Where within the step the chance crosses 1 − p.
			x := 1.0
			if survive > next {
				x = (survive - (1 - ps[found])) / (survive - next)
			}
			at[found] = t + x*dt
			found++
		}
		survive, admitted = next, admitted+in
		if t < 1 {
			byStep = append(byStep, survive)
		}
		for float64(len(byMinute)) <= t+dt {
			byMinute = append(byMinute, survive)
		}
	}
	if found < 3 {
		return waits, false
	}
	share := func(s float64) float64 {
		if s < 60 {
			return 1 - byStep[min(int(s/60/dt), len(byStep)-1)]
		}
		return 1 - byMinute[min(int(s/60), len(byMinute)-1)]
	}
	for j, t := range at {
		waits[j] = pageWait(t, ps[j], share)
	}
	return waits, true
}
