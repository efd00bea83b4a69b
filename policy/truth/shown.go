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
	// page, all whole minutes.
	WaitKnown            bool
	Wait, Wait25, Wait75 int
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
	// Random counts the random queue's estimates judged (every visitor
	// shown one who was later admitted or was still waiting at the end),
	// and RandomBy25, RandomBy50, RandomBy75 the shares admitted within
	// their 25th, 50th and 75th percentile estimates, which should be near
	// 25, 50 and 75 %.
	Random                             int
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

// JudgeShown judges what the visitors were shown against the history.
func JudgeShown(h *History, shown []Shown) ShownVerdict {
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
		if s.Wait25 != s.Wait75 {
			// A random queue's range.
			if !w.Admitted && w.To != Never {
				continue // gave up: never judged
			}
			v.Random++
			left := w.To - s.At
			for _, c := range []struct {
				n *int
				m int
			}{{&by25, s.Wait25}, {&by50, s.Wait}, {&by75, s.Wait75}} {
				if w.Admitted && left <= time.Duration(c.m)*time.Minute {
					*c.n++
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
	if v.Random > 0 {
		n := float64(v.Random)
		v.RandomBy25, v.RandomBy50, v.RandomBy75 = float64(by25)/n, float64(by50)/n, float64(by75)/n
	}
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
