package truth

import (
	"cmp"
	"container/heap"
	"slices"
	"time"
)

// Verdict is the truth of a run: the figures the goals judge and what they
// were made of. Each figure is computed by a function of its own in Judge;
// a new figure over the history (one over the Active and Waiting curves,
// say) is one more field here and one more function there.
type Verdict struct {
	// Admissions counts the admissions before the end.
	Admissions int
	// PeakActive is the most visitors active at once, first reached at
	// PeakActiveAt; PeakActiveRatio is it over total_active_users.
	PeakActive      int
	PeakActiveAt    time.Duration
	PeakActiveRatio float64
	// PeakNewPerMinute is the most admissions in one wall-clock minute,
	// PeakMinute that minute (minutes since t = 0); PeakNewRatio is it over
	// new_users_per_minute.
	PeakNewPerMinute int
	PeakMinute       int64
	PeakNewRatio     float64
	// FirstQueue is when the first visitor was queued (Queued false:
	// nobody was before the end). Then ActiveAtFirstQueue visitors were
	// active and AdmittedAtFirstQueue had been let in that minute;
	// Utilisation is the binding one of those over its limit, Binds names
	// the limit.
	Queued               bool
	FirstQueue           time.Duration
	ActiveAtFirstQueue   int
	AdmittedAtFirstQueue int
	Utilisation          float64
	Binds                string
	// Inversions are the admissions that were FIFO inversions;
	// InversionShare is their share of the admissions. Of those, PassedOver
	// counts the ones after which an earlier arrival still waiting was
	// turned away at a check-in within PassedOverWindow (its place was
	// taken), and Newcomers the ones whose visitor was let in at its first
	// request, never queued (let in past the queue).
	Inversions     []Inversion
	InversionShare float64
	PassedOver     int
	Newcomers      int
}

// Inversion is one FIFO inversion: Later was let in while Earlier, a wait
// of someone who arrived in an earlier wall-clock minute, went on for more
// than InversionGrace (or for good).
type Inversion struct {
	Later Admission
	// Earlier is the earliest arrival passed over if any was, else the
	// earliest arrival still waiting.
	Earlier Wait
	// PassedOver: an earlier arrival still waiting was turned away at a
	// check-in within PassedOverWindow after Later's admission.
	PassedOver bool
}

// Judge gives the verdict over [0, end) (end Never: all of the log). An
// admission within InversionGrace of a finite end cannot be judged for
// fairness (whoever waited may be let in just after) and is not counted as
// an inversion.
func (h *History) Judge(end time.Duration) Verdict {
	var v Verdict
	active := h.Active()
	adms := h.admissionsBefore(end)
	v.Admissions = len(adms)
	h.peakActive(&v, active, end)
	h.peakNewPerMinute(&v, adms)
	h.firstQueueing(&v, active, end)
	v.Inversions = Inversions(adms, h.waits, end)
	for _, in := range v.Inversions {
		if in.PassedOver {
			v.PassedOver++
		}
		if !in.Later.Queued {
			v.Newcomers++
		}
	}
	v.InversionShare = ratio(len(v.Inversions), v.Admissions)
	return v
}

func (h *History) admissionsBefore(end time.Duration) []Admission {
	n := len(h.adms)
	for n > 0 && h.adms[n-1].At >= end {
		n--
	}
	return h.adms[:n]
}

func (h *History) peakActive(v *Verdict, active Curve, end time.Duration) {
	v.PeakActive, v.PeakActiveAt = active.Peak(min(0, h.start()), end)
	v.PeakActiveRatio = ratio(v.PeakActive, h.lim.TotalActiveUsers)
}

// start is the first instant of the history (0 if it begins later).
func (h *History) start() time.Duration {
	if len(h.spans) > 0 {
		return h.spans[0].From
	}
	return 0
}

func (h *History) peakNewPerMinute(v *Verdict, adms []Admission) {
	for i := 0; i < len(adms); {
		m := MinuteOf(adms[i].At)
		j := i
		for j < len(adms) && MinuteOf(adms[j].At) == m {
			j++
		}
		if j-i > v.PeakNewPerMinute {
			v.PeakNewPerMinute, v.PeakMinute = j-i, m
		}
		i = j
	}
	v.PeakNewRatio = ratio(v.PeakNewPerMinute, h.lim.NewUsersPerMinute)
}

func (h *History) firstQueueing(v *Verdict, active Curve, end time.Duration) {
	if h.firstQueue < 0 || h.firstQueue >= end {
		return
	}
	v.Queued, v.FirstQueue = true, h.firstQueue
	v.Utilisation, v.Binds, v.ActiveAtFirstQueue, v.AdmittedAtFirstQueue = h.Utilisation(active, h.firstQueue)
}

// Inversions finds the admissions that are FIFO inversions against the
// waits: someone who arrived in an earlier wall-clock minute was waiting at
// the admission and was let in more than InversionGrace later, or never.
// Admissions are in time order, waits in the order they began; admissions
// within InversionGrace of end are not judged.
//
// A min-heap of the waits begun so far, by arrival, answers each admission:
// a wait that ends within the grace of an admission ends within the grace of
// every later one too, so it leaves the heap for good, and the top is then
// the earliest arrival still waiting.
func Inversions(adms []Admission, waits []Wait, end time.Duration) []Inversion {
	h := &waitHeap{waits: waits}
	var checkIns []checkIn // every turned-away check-in, by time; built when first needed
	next := 0
	var out []Inversion
	for _, a := range adms {
		if end != Never && a.At > end-InversionGrace {
			break
		}
		for next < len(waits) && waits[next].From <= a.At {
			heap.Push(h, next)
			next++
		}
		for h.Len() > 0 && waits[h.idx[0]].To <= a.At+InversionGrace {
			heap.Pop(h)
		}
		if h.Len() == 0 || waits[h.idx[0]].Minute() >= a.Minute() {
			continue
		}
		in := Inversion{Later: a, Earlier: waits[h.idx[0]]}
		// Passed over: an earlier arrival still waiting was turned away
		// soon after. The earliest arrival first; else any, the earliest
		// of them named.
		if turnedAwayWithin(waits[h.idx[0]].CheckIns, a.At) {
			in.PassedOver = true
		} else {
			if checkIns == nil {
				checkIns = allCheckIns(waits)
			}
			if w := passedOver(checkIns, waits, a); w >= 0 {
				in.Earlier, in.PassedOver = waits[w], true
			}
		}
		out = append(out, in)
	}
	return out
}

// turnedAwayWithin reports whether a check-in falls in (at, at+PassedOverWindow].
func turnedAwayWithin(checkIns []time.Duration, at time.Duration) bool {
	i, found := slices.BinarySearch(checkIns, at)
	if found {
		i++
	}
	return i < len(checkIns) && checkIns[i] <= at+PassedOverWindow
}

type checkIn struct {
	at   time.Duration
	wait int
}

func allCheckIns(waits []Wait) []checkIn {
	out := []checkIn{}
	for i, w := range waits {
		for _, t := range w.CheckIns {
			out = append(out, checkIn{t, i})
		}
	}
	slices.SortStableFunc(out, func(a, b checkIn) int { return cmp.Compare(a.at, b.at) })
	return out
}

// passedOver is the earliest-arriving wait turned away in the window after
// admission a that a passed over, or -1.
func passedOver(checkIns []checkIn, waits []Wait, a Admission) int {
	i, _ := slices.BinarySearchFunc(checkIns, a.At, func(c checkIn, t time.Duration) int {
		if c.at <= t {
			return -1
		}
		return 1
	})
	best := -1
	for ; i < len(checkIns) && checkIns[i].at <= a.At+PassedOverWindow; i++ {
		w := &waits[checkIns[i].wait]
		if w.From > a.At || w.To <= a.At+InversionGrace || w.Minute() >= a.Minute() {
			continue
		}
		if best < 0 || w.Arrived < waits[best].Arrived {
			best = checkIns[i].wait
		}
	}
	return best
}

// waitHeap orders indexes of waits by arrival, then end.
type waitHeap struct {
	waits []Wait
	idx   []int
}

func (h *waitHeap) Len() int { return len(h.idx) }
func (h *waitHeap) Less(i, j int) bool {
	a, b := &h.waits[h.idx[i]], &h.waits[h.idx[j]]
	if a.Arrived != b.Arrived {
		return a.Arrived < b.Arrived
	}
	if a.To != b.To {
		return a.To < b.To
	}
	return h.idx[i] < h.idx[j]
}
func (h *waitHeap) Swap(i, j int) { h.idx[i], h.idx[j] = h.idx[j], h.idx[i] }
func (h *waitHeap) Push(x any)    { h.idx = append(h.idx, x.(int)) }
func (h *waitHeap) Pop() any {
	x := h.idx[len(h.idx)-1]
	h.idx = h.idx[:len(h.idx)-1]
	return x
}
