package truth

import (
	"cmp"
	"slices"
	"sort"
	"time"
)

// Shown is what a waiting visitor was told at one instant: the estimated
// wait and, under FIFO, its place in line. The simulator and the fidelity
// run's crowd record one per visitor (the first it saw in the steady
// state), and ShownVerdict judges them against the history.
type Shown struct {
	At      time.Duration
	Visitor int
	// Arrived is when the visitor's try began, as in its events.
	Arrived time.Duration
	// WaitKnown: an estimate was shown. Wait is it (the median under
	// random queueing), Wait25 and Wait75 the range of a random queue's
	// page, all whole minutes. Random says the room queued at random, so
	// the three are percentiles (they can all be one minute alike).
	WaitKnown            bool
	Wait, Wait25, Wait75 int
	Random               bool
	// PositionKnown: a place in line was shown, Position.
	PositionKnown bool
	Position      int64
}

// MinJudgedWait is the shortest remaining wait an estimate is judged on:
// estimates are whole minutes rounded up, and below five minutes the
// rounding alone can exceed 20 %.
const MinJudgedWait = 5 * time.Minute

// ShownVerdict is how true what the visitors were shown came out.
type ShownVerdict struct {
	// Estimates counts the FIFO estimates judged: of visitors later
	// admitted, with a remaining wait of at least MinJudgedWait;
	// EstimateWithin20 is the share within ±20 % of the remaining wait.
	Estimates        int
	EstimateWithin20 float64
	// Random counts the random queue's estimates judged: every visitor
	// shown one who did not give up, and whose 25th percentile ran out
	// before the log ended. RandomBy25, RandomBy50, RandomBy75 are the
	// shares admitted within their 25th, 50th and 75th percentile
	// estimates, which should be near 25, 50 and 75 %, each of the
	// visitors whose percentile ran out before the end (Random25,
	// Random50, Random75 of them): of a visitor still waiting at the end
	// whose 75th percentile lies beyond it, nobody knows yet whether it
	// gets in within it, and counting it as late made a run that ends
	// with a queue read as if every estimate were short.
	Random                             int
	Random25, Random50, Random75       int
	RandomBy25, RandomBy50, RandomBy75 float64
	// Positions counts the places in line judged (every one shown);
	// PositionWithin10 is the share within ±10 % of the true number ahead:
	// the visitors who arrived earlier and were still waiting then, as
	// the history has them. PositionError90 is the 90th percentile of
	// |shown − true| / max(true, 1).
	Positions        int
	PositionWithin10 float64
	PositionError90  float64
}

// JudgeShown judges what the visitors were shown against the history,
// whose log ended at end (Never: every wait still open stays open for
// ever).
func JudgeShown(h *History, shown []Shown, end time.Duration) ShownVerdict {
	var v ShownVerdict
	admitted := map[int][]Wait{}
	for _, w := range h.waits {
		admitted[w.Visitor] = append(admitted[w.Visitor], w)
	}
	// waitAt is the visitor's wait under way at s.At.
	waitAt := func(s Shown) (Wait, bool) {
		for _, w := range admitted[s.Visitor] {
			if w.From <= s.At && s.At <= w.To {
				return w, true
			}
		}
		return Wait{}, false
	}
	var within, by25, by50, by75 int
	var posQ []Shown
	for _, s := range shown {
		if s.PositionKnown {
			posQ = append(posQ, s)
		}
		if !s.WaitKnown {
			continue
		}
		w, ok := waitAt(s)
		if !ok {
			continue
		}
		if s.Random {
			if !w.Admitted && w.To != Never {
				continue // gave up: never judged
			}
			left := w.To - s.At
			for _, c := range []struct {
				judged, by *int
				m          int
			}{{&v.Random25, &by25, s.Wait25}, {&v.Random50, &by50, s.Wait}, {&v.Random75, &by75, s.Wait75}} {
				due := time.Duration(c.m) * time.Minute
				if end != Never && s.At+due > end {
					continue // not run out yet when the log ended
				}
				*c.judged++
				if w.Admitted && left <= due {
					*c.by++
				}
			}
			continue
		}
		if !w.Admitted {
			continue
		}
		left := w.To - s.At
		if left < MinJudgedWait {
			continue
		}
		v.Estimates++
		if d := time.Duration(s.Wait)*time.Minute - left; d <= left/5 && -d <= left/5 {
			within++
		}
	}
	if v.Estimates > 0 {
		v.EstimateWithin20 = float64(within) / float64(v.Estimates)
	}
	v.Random = v.Random25 // the 25th runs out first
	share := func(by, n int) float64 {
		if n == 0 {
			return 0
		}
		return float64(by) / float64(n)
	}
	v.RandomBy25, v.RandomBy50, v.RandomBy75 = share(by25, v.Random25), share(by50, v.Random50), share(by75, v.Random75)
	truths := h.aheadOf(posQ)
	var errs []float64
	ok := 0
	for i, s := range posQ {
		t := float64(truths[i])
		d := float64(s.Position) - t
		if d < 0 {
			d = -d
		}
		if d <= 0.1*t || d < 0.5 {
			ok++
		}
		errs = append(errs, d/max(t, 1))
	}
	if v.Positions = len(posQ); v.Positions > 0 {
		v.PositionWithin10 = float64(ok) / float64(v.Positions)
		slices.Sort(errs)
		v.PositionError90 = errs[min(len(errs)-1, int(0.9*float64(len(errs))))]
	}
	return v
}

// aheadOf is, for each of shown, the number of waits under way at its At
// whose visitor arrived before its Arrived: waits with Arrived earlier,
// From ≤ At and To > At. It counts those begun by At, less those also
// ended by At, each by a sweep over time with a Fenwick tree over the
// arrival order.
func (h *History) aheadOf(shown []Shown) []int {
	out := make([]int, len(shown))
	if len(shown) == 0 {
		return out
	}
	arr := make([]time.Duration, len(h.waits))
	for i, w := range h.waits {
		arr[i] = w.Arrived
	}
	slices.Sort(arr)
	rank := func(a time.Duration) int { return sort.Search(len(arr), func(i int) bool { return arr[i] >= a }) }
	order := make([]int, len(shown))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(shown[a].At, shown[b].At) })
	sweep := func(at func(Wait) time.Duration, sign int) {
		ws := slices.Clone(h.waits)
		slices.SortFunc(ws, func(a, b Wait) int { return cmp.Compare(at(a), at(b)) })
		tree := make([]int, len(arr)+1)
		j := 0
		for _, q := range order {
			for j < len(ws) && at(ws[j]) <= shown[q].At {
				if at(ws[j]) != Never {
					for k := rank(ws[j].Arrived) + 1; k < len(tree); k += k & -k {
						tree[k]++
					}
				}
				j++
			}
			n := 0
			for k := rank(shown[q].Arrived); k > 0; k -= k & -k {
				n += tree[k]
			}
			out[q] += sign * n
		}
	}
	sweep(func(w Wait) time.Duration { return w.From }, 1)
	sweep(func(w Wait) time.Duration { return w.To }, -1)
	return out
}
