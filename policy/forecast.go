package policy

import (
	"math"
	"sort"
	"sync"
	"time"

	"github.com/waitroom/waitroom/crdt"
)

// The forecast of admissions. A rate read from past admissions foretells the
// wait only while the room lets visitors in at a steady pace. When
// total_active_users binds it does not: a room with 5-minute sessions lets
// in new_users_per_minute until its active slots are full, then nobody
// until the first sessions end, then a wave as they do. A rate read before
// the pause told the visitors queued then one or two minutes, and they
// waited five or more.
//
// The ring knows more than the rate: every session is counted in the cell
// of its expiry second, so the snapshot lists when the running sessions'
// slots free up (crdt.RoomSnapshot.Expiring). A visitor who left has a
// fixed expiry; one still browsing renews its session with every request,
// so its cell sits in the last stretch of the session window (the live
// band) and its slot frees only once it leaves. Little's law splits the
// two: the sessions in the window before the band are those who left over
// that stretch, which gives the pace at which visitors leave, and those in
// the band beyond that pace are still browsing, for about as long on
// average as that pace takes to see as many leave. A session thus holds its
// slot for the browse plus the session duration (life), and every slot that
// frees is taken by the next visitor in line and frees again one life
// later. The k-th admission comes when the k-th slot has freed and the
// per-minute budget allows it (the budget paced evenly at the per-minute
// rate).

// forecast is the admission schedule of one allocation, computed when the
// first estimate asks for it: pieces, in order, each letting in n visitors
// evenly from minute t0 to t1 after the allocation's time.
type forecast struct {
	now      int64            // the snapshot's second
	expiring []crdt.SlotCount // the snapshot's session cells
	admitted []uint64         // the snapshot's admissions per minute
	pace     float64          // the budget's pace (forecastBook.pace)
	once     sync.Once
	pieces   []piece

	lotteryOnce sync.Once
	lottery     [3]PageWait // a random queue's percentile waits, when lotteryOK
	lotteryOK   bool
}

// piece is a run of n admissions spread evenly from t0 to t1 minutes ahead,
// k of them coming before it.
type piece struct {
	k, n   float64
	t0, t1 float64
}

// releaseGroup is a run of n slots freeing evenly from t0 to t1 minutes
// ahead.
type releaseGroup struct {
	n, t0, t1 float64
}

// liveBandMax is the widest live band: a visitor who makes no request for
// a minute is taken as gone.
const liveBandMax = 60

// maxForecastPieces bounds the work of one forecast; a queue longer than
// the pieces reach is forecast at the rate beyond them.
const maxForecastPieces = 4096

// liveBand is the width, in seconds, of the last stretch of the session
// window where a browsing visitor's session cell sits: a quarter of the
// session, at most liveBandMax; none when sessions are not renewed.
func liveBand(room Room) float64 {
	if room.DisableSessionRenewal {
		return 0
	}
	return math.Min(liveBandMax, float64(room.Session()*60)/4)
}

// browsing splits the running sessions of the snapshot at second now: live
// is how many visitors are still browsing, pace how many leave per minute
// and inBand how many sessions the live band holds (all zero without
// renewals, where every cell is final).
func browsing(room Room, now int64, expiring []crdt.SlotCount) (live, pace, inBand float64) {
	band := liveBand(room)
	if band == 0 {
		return 0, 0, 0
	}
	sessionSec := float64(room.Session() * 60)
	edge := float64(now) + sessionSec - band
	var left float64
	for _, c := range expiring {
		if float64(c.Second) > edge {
			inBand += float64(c.N)
		} else {
			left += float64(c.N)
		}
	}
	pace = left / ((sessionSec - band) / 60)
	return math.Max(0, inBand-pace*band/60), pace, inBand
}

// meanBrowse is the time, in minutes, a visitor browses, from the
// admissions of the last minutes (admitted, oldest first, ending with the
// minute of second now) and the visitors still browsing now (live), as if
// visitors left in the order they came in: those admitted in the last B
// minutes are the ones still browsing, so B is how far back the
// admissions add up to live. In a steady stream that is Little's law
// (browsing over admissions per minute); it also holds while the room
// fills and when the admissions come in waves a session apart. Little's
// law on the leaving visitors instead read fifty minutes while the room
// filled and nobody had had the time to leave, and swung from half a
// minute to six and a half in the simulator's 5-minute sessions, where
// visitors browse three; an exponential browse fitted to the cohorts read
// four and a half there while the room filled, and spread the slots of
// those still browsing over twice the time they took to free. While all
// the admitted still browse it reads twice the oldest admission's age, the
// least the evidence allows stretched by as much again. ok is false when
// nobody browses or nobody was admitted.
func meanBrowse(admitted []uint64, now int64, live float64) (minutes float64, ok bool) {
	if live <= 0 {
		return 0, false
	}
	var acc float64
	oldest := -1.0
	for c := range cohorts(admitted, now) {
		if acc+c.n >= live {
			x := (live - acc) / c.n // the share of the cohort still browsing
			return (float64(now) - (c.s1 - x*(c.s1-c.s0))) / 60, true
		}
		acc += c.n
		oldest = (float64(now) - c.s0) / 60
	}
	if oldest < 0 {
		return 0, false
	}
	return 2 * oldest, true
}

// cohort is the n visitors admitted between the seconds s0 and s1.
type cohort struct{ s0, s1, n float64 }

// cohorts yields the admissions per minute (admitted, oldest first, ending
// with the minute of second now), newest first, the current minute's up to
// now, minutes without any left out.
func cohorts(admitted []uint64, now int64) func(func(cohort) bool) {
	return func(yield func(cohort) bool) {
		minute := floorDiv(now, 60)
		first := minute - int64(len(admitted)) + 1
		for i := len(admitted) - 1; i >= 0; i-- {
			if admitted[i] == 0 {
				continue
			}
			s0 := float64((first + int64(i)) * 60)
			s1 := math.Min(s0+60, float64(now))
			if !yield(cohort{s0: s0, s1: math.Max(s1, s0+1), n: float64(admitted[i])}) {
				return
			}
		}
	}
}

// liveReleases spreads the slots of the live visitors still browsing as
// they were admitted, a browse later: those admitted between browse
// minutes ago and now leave in that order over the next browse minutes,
// and their slots free a session after.
func liveReleases(admitted []uint64, now int64, live, browse, session float64) []releaseGroup {
	var out []releaseGroup
	var sum float64
	from := float64(now) - browse*60
	for c := range cohorts(admitted, now) {
		s0 := math.Max(c.s0, from)
		if s0 >= c.s1 {
			break
		}
		n := c.n * (c.s1 - s0) / (c.s1 - c.s0)
		out = append(out, releaseGroup{n: n, t0: (s0-from)/60 + session, t1: (c.s1-from)/60 + session})
		sum += n
	}
	if sum <= 0 {
		// No admissions in the window to go by: evenly over the browse.
		return []releaseGroup{{n: live, t0: session, t1: session + browse}}
	}
	for i := range out {
		out[i].n *= live / sum
	}
	return out
}

// forecastBook is the mean browse (meanBrowse) averaged along an allocation
// chain over about a minute. The number still browsing, which it is read
// from, is a count of a few dozen in a small room, and a browse read from
// one snapshot swung by a third from one quarter-minute to the next in the
// simulator's mirror of the real-process long queue, and with it every
// wait that the slots freeing again several times decide.
//
// It also remembers the minutes in which the active limit was seen full
// (fewer free slots than a tenth of the per-minute limit): the pace of
// those minutes says how fast sessions ended, not how fast the ring lets
// visitors in, which the other minutes do (see pace).
type forecastBook struct {
	at     int64   // the snapshot second of the last update
	browse float64 // minutes
	ok     bool
	full   [HistoryMinutes]int64 // minutes seen full, by minute mod HistoryMinutes (+1, zero is none)
}

// browseSmoothing is the time over which forecastBook averages.
var browseSmoothing = time.Minute

// update folds the browse read from a snapshot at second now into the book;
// a chain reads it once a second at most.
func (b forecastBook) update(room Room, now int64, active float64, expiring []crdt.SlotCount, admitted []uint64) forecastBook {
	if float64(room.TotalActiveUsers)-active < max(1, float64(room.NewUsersPerMinute)/10) {
		m := floorDiv(now, 60)
		b.full[m%HistoryMinutes] = m + 1
	}
	if b.ok && now <= b.at {
		return b
	}
	live, _, _ := browsing(room, now, expiring)
	x, ok := meanBrowse(admitted, now, live)
	if !ok {
		x = 0
	}
	if !b.ok {
		return forecastBook{at: now, browse: x, ok: true, full: b.full}
	}
	w := math.Exp(-float64(now-b.at) * float64(time.Second) / float64(browseSmoothing))
	return forecastBook{at: now, browse: w*b.browse + (1-w)*x, ok: true, full: b.full}
}

// wasFull reports whether the active limit was seen full in minute m.
func (b *forecastBook) wasFull(m int64) bool { return b.full[m%HistoryMinutes] == m+1 }

// pace is the per-minute budget's pace in the forecast: the admissions per
// minute of the last five full minutes in which the active limit left room,
// averaged from the first with any admission as admissionRate does, and
// never above new_users_per_minute; the limit itself without such a
// minute. A ring that lets in less than the limit while slots are free
// (a crashed node's part held back, gossip slower than the lag) goes on
// doing so; the minutes in which sessions ended too slowly to fill the
// budget say nothing of the ring's pace once they end faster.
func (b *forecastBook) pace(snap *crdt.RoomSnapshot, limit float64) float64 {
	var sum float64
	n := 0
	for m := snap.Minute - 5; m < snap.Minute; m++ {
		c := snap.AdmittedIn(m).Total
		if b.wasFull(m) || (n == 0 && (c == 0 || begunWithin(snap, m))) {
			continue
		}
		sum += float64(c)
		n++
	}
	if n == 0 || limit <= 0 {
		return limit
	}
	return min(sum/float64(n), limit)
}

// releases is the first freeing of every slot under total_active_users
// (the slots free now, the sessions of those who left at their expiry, the
// browsing visitors' over the time they keep browsing) and a session's
// life, both in minutes from the snapshot's second now. ok is false when
// the active limit cannot bind before the need-th admission.
func releases(room Room, now int64, active float64, expiring []crdt.SlotCount, admitted []uint64, book forecastBook, need float64) (first []releaseGroup, life float64, ok bool) {
	total := float64(room.TotalActiveUsers)
	free := math.Max(0, total-active)
	if total <= 0 || free >= need {
		return nil, 0, false
	}
	session := float64(room.Session())
	if free > 0 {
		first = append(first, releaseGroup{n: free})
	}
	live, _, inBand := browsing(room, now, expiring)
	browse := book.browse // zero while nobody browses
	keep := 1.0           // of the live band, the share of visitors who left within it
	edge := float64(now) + session*60 - liveBand(room)
	if inBand > 0 {
		keep = 1 - live/inBand
	}
	for _, c := range expiring {
		n := float64(c.N)
		if float64(c.Second) > edge {
			n *= keep
		}
		if n <= 0 {
			continue
		}
		t := math.Max(0, float64(c.Second-now)/60)
		first = append(first, releaseGroup{n: n, t0: t, t1: t})
	}
	life = session + browse
	if live > 0 {
		first = append(first, liveReleases(admitted, now, live, browse, session)...)
	}
	sort.SliceStable(first, func(i, j int) bool { return first[i].t0 < first[j].t0 })
	return first, life, true
}

// build computes the pieces for the first need admissions at the budget
// rate perMinute (no budget when zero), the slots freeing as first and
// again one life after each admission.
func (f *forecast) build(first []releaseGroup, life, perMinute, need float64) {
	budget := func(k float64) float64 {
		if perMinute <= 0 {
			return 0
		}
		return k / perMinute
	}
	var again []releaseGroup // freeing again, in the order admitted
	k := 0.0
	for k < need && len(f.pieces) < maxForecastPieces && (len(first) > 0 || len(again) > 0) {
		var g releaseGroup
		if len(again) == 0 || (len(first) > 0 && first[0].t0 <= again[0].t0) {
			g, first = first[0], first[1:]
		} else {
			g, again = again[0], again[1:]
		}
		if g.n <= 0 {
			continue
		}
		p := piece{k: k, n: g.n, t0: math.Max(g.t0, budget(k+1)), t1: math.Max(g.t1, budget(k+g.n))}
		if p.t1 > maxWaitMinutes {
			break
		}
		f.pieces = append(f.pieces, p)
		k += g.n
		if life > 0 {
			again = append(again, releaseGroup{n: g.n, t0: p.t0 + life, t1: p.t1 + life})
		}
	}
}

// admissionAt is the forecast minute, from the allocation's time, at which
// the k-th admission from now comes (k ≥ 1), or ok false when the forecast
// does not reach it.
func (f *forecast) admissionAt(k float64) (t float64, ok bool) {
	i := sort.Search(len(f.pieces), func(i int) bool { return f.pieces[i].k+f.pieces[i].n >= k })
	if i == len(f.pieces) {
		return 0, false
	}
	p := f.pieces[i]
	if p.n <= 1 {
		return p.t1, true
	}
	x := math.Min(math.Max((k-p.k-1)/(p.n-1), 0), 1)
	return p.t0 + x*(p.t1-p.t0), true
}

// admissionAt is the minute, from now, at which the k-th admission from now
// is forecast (k ≥ 1): when total_active_users binds, from when the slots
// free (see above); otherwise, and beyond the forecast, at the admission
// rate.
func (a *Allocation) admissionAt(k float64) float64 {
	r := a.waitRate()
	if a.fc == nil || a.cut || a.strategy != Continuous {
		return k / r
	}
	a.forecastOnce()
	if len(a.fc.pieces) == 0 {
		return k / r
	}
	if t, ok := a.fc.admissionAt(k); ok {
		return t
	}
	last := a.fc.pieces[len(a.fc.pieces)-1]
	return last.t1 + (k-last.k-last.n)/r
}

// forecastOnce computes the forecast the first time an estimate asks for
// it: as far as those waiting now, and under random queueing those who
// join for as long as they are taken to (joiningFor) too, since they
// compete for the same slots.
func (a *Allocation) forecastOnce() {
	a.fc.once.Do(func() {
		need := a.newcomerPosition() + 1
		if a.method == Random {
			need += a.joining * crowdHorizons(a.joinFor)[0] // the longest
		}
		first, life, ok := releases(a.room, a.fc.now, a.activeEff, a.fc.expiring, a.fc.admitted, a.book, need)
		if ok {
			a.fc.build(first, life, a.fc.pace, need)
		}
	})
}

// lotteryWaitsOnce is lotteryForecast for the 25th, 50th and 75th
// percentiles, computed once per allocation: under random queueing every
// visitor waiting has the same chances.
func (a *Allocation) lotteryWaitsOnce() ([3]PageWait, bool) {
	a.fc.lotteryOnce.Do(func() {
		a.fc.lottery, a.fc.lotteryOK = a.lotteryForecast([3]float64{0.25, 0.5, 0.75})
	})
	return a.fc.lottery, a.fc.lotteryOK
}
