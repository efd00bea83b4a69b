package truth

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"time"
)

// Shown is what a waiting visitor was told at one instant, on one queue
// page: the estimated wait and, under FIFO, its place in line. The
// simulator and the fidelity run's crowd record one for every page a
// visitor is shown, its first included, and JudgeShown judges them all
// against the history: a visitor reads every page, and the first is the
// one it reads most closely.
//
// A run shows millions of pages (the simulator's 10× step: two million),
// so the booleans sit together at the end, where they share one word.
type Shown struct {
	At      time.Duration
	Visitor int
	// Arrived is when the visitor's try began, as in its events.
	Arrived time.Duration
	// Wait is the estimate shown, when WaitKnown (the median under random
	// queueing), Wait25 and Wait75 the range of a random queue's page, as
	// the page says them: whole minutes, or seconds for a random queue's
	// percentile under a minute.
	Wait, Wait25, Wait75 time.Duration
	// Position is the place in line shown, when PositionKnown.
	Position int64
	// First: the page answered the try's first request, before the
	// visitor's cookie came back (the ring counts a visitor in the line
	// from then on).
	First bool
	// WaitKnown: an estimate was shown. Random says the room queued at
	// random, so the three waits are percentiles (they can all be one
	// minute alike).
	WaitKnown, Random bool
	// PositionKnown: a place in line was shown.
	PositionKnown bool
	// Until, when above zero, is when the room stopped queueing as the
	// page said it did: its operator switched the queueing method after
	// the page. A random queue's percentile that runs out after it is not
	// judged, as one that runs out after the log's end is not: switched
	// back to FIFO, the room lets its visitors in by their arrival, which
	// no percentile of a lottery speaks of. (In the real-process run that
	// switches FIFO → random → FIFO, the random pages' 50th and 75th
	// percentiles, most of which ran out after the switch back, read 70 and
	// 98 %; of those that ran out before it, 51 and 71 %.)
	Until time.Duration
}

// MinJudgedWait is the shortest remaining wait an estimate is judged on:
// estimates are whole minutes rounded up, and below five minutes the
// rounding alone can exceed 20 %.
const MinJudgedWait = 5 * time.Minute

// ShownVerdict is how true what the visitors were shown came out, page by
// page.
type ShownVerdict struct {
	// Estimates counts the FIFO estimates judged: the pages of visitors
	// later admitted, with a remaining wait of at least MinJudgedWait;
	// EstimateWithin20 is the share within ±20 % of the remaining wait.
	// EstimateErrorP50 and EstimateErrorP90 are the median and the 90th
	// percentile of |estimate − remaining| / remaining, and EstimateBias
	// the median of the signed error (positive: the estimate was long).
	Estimates                          int
	EstimateWithin20                   float64
	EstimateErrorP50, EstimateErrorP90 float64
	EstimateBias                       float64
	// FirstEstimates and FirstEstimateWithin20 are the same of the first
	// pages alone.
	FirstEstimates        int
	FirstEstimateWithin20 float64
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
	//
	// RandomMargin are the half-widths of the shares' 95 % confidence
	// intervals (see clusteredMargins), zero where fewer than two visitors
	// were judged.
	Random                             int
	Random25, Random50, Random75       int
	RandomBy25, RandomBy50, RandomBy75 float64
	RandomMargin                       [3]float64
	// Positions counts the places in line judged (every one shown);
	// PositionWithin10 is the share within ±10 % of the true number ahead:
	// the visitors who arrived earlier and were still waiting then, as
	// the history has them. Below ten ahead a tenth is less than one
	// visitor, so there the place must be exact. PositionError90 is the
	// 90th percentile of |shown − true| / max(true, 1).
	Positions        int
	PositionWithin10 float64
	PositionError90  float64
	// FirstPositions and FirstPositionWithin10 are the same of the first
	// pages alone; FrontPositions and FrontPositionExact of the places
	// shown to the first ten in line (fewer than ten truly ahead), where
	// within a tenth is exact.
	FirstPositions        int
	FirstPositionWithin10 float64
	FrontPositions        int
	FrontPositionExact    float64
	// Heads counts the places shown to a visitor with nobody truly ahead,
	// and HeadsToldZero the share of them told so.
	Heads         int
	HeadsToldZero float64
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
	var within, firstWithin, by25, by50, by75 int
	randomOf := map[int][3][2]int{} // per visitor and percentile: judged, let in by it
	var errs, signed []float64
	var posQ []int32 // the pages that showed a place, by index
	for i, s := range shown {
		if s.PositionKnown {
			posQ = append(posQ, int32(i))
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
			mine := randomOf[s.Visitor]
			for j, c := range []struct {
				judged, by *int
				due        time.Duration
			}{{&v.Random25, &by25, s.Wait25}, {&v.Random50, &by50, s.Wait}, {&v.Random75, &by75, s.Wait75}} {
				due := c.due
				if end != Never && s.At+due > end {
					continue // not run out yet when the log ended
				}
				if s.Until > 0 && s.At+due > s.Until {
					continue // not run out yet when the room stopped queueing at random
				}
				*c.judged++
				mine[j][0]++
				if w.Admitted && left <= due {
					*c.by++
					mine[j][1]++
				}
			}
			randomOf[s.Visitor] = mine
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
		d := s.Wait - left
		in := d <= left/5 && -d <= left/5
		if in {
			within++
		}
		if s.First {
			v.FirstEstimates++
			if in {
				firstWithin++
			}
		}
		e := d.Seconds() / left.Seconds()
		signed = append(signed, e)
		errs = append(errs, math.Abs(e))
	}
	if v.Estimates > 0 {
		v.EstimateWithin20 = float64(within) / float64(v.Estimates)
		slices.Sort(errs)
		slices.Sort(signed)
		v.EstimateErrorP50, v.EstimateErrorP90 = Quantile(errs, 0.5), Quantile(errs, 0.9)
		v.EstimateBias = Quantile(signed, 0.5)
	}
	if v.FirstEstimates > 0 {
		v.FirstEstimateWithin20 = float64(firstWithin) / float64(v.FirstEstimates)
	}
	v.Random = v.Random25 // the 25th runs out first
	share := func(by, n int) float64 {
		if n == 0 {
			return 0
		}
		return float64(by) / float64(n)
	}
	v.RandomBy25, v.RandomBy50, v.RandomBy75 = share(by25, v.Random25), share(by50, v.Random50), share(by75, v.Random75)
	v.RandomMargin = clusteredMargins(randomOf, [3]float64{v.RandomBy25, v.RandomBy50, v.RandomBy75})
	v.judgePlaces(h, shown, posQ)
	return v
}

// clusteredMargins are the half-widths of the 95 % confidence intervals of
// the shares p, each the share of judged pages let in by their percentile,
// where per[visitor][j] counts visitor's pages judged for the j-th share
// and those of them let in by it. A visitor's pages are not independent
// draws: one who waits long misses its percentile on every page it is
// shown. So the variance is the cluster-robust one of a ratio, by visitor:
// k/(k−1) · Σ (by − p·judged)² / (Σ judged)², over the k visitors judged.
// A run of 30 random-queue visitors has margins of ten points, twice the
// goal's tolerance: its share alone cannot say whether the goal is met.
func clusteredMargins(per map[int][3][2]int, p [3]float64) (out [3]float64) {
	for j := range out {
		var k, n, ss float64
		for _, c := range per {
			if c[j][0] == 0 {
				continue
			}
			k++
			n += float64(c[j][0])
			d := float64(c[j][1]) - p[j]*float64(c[j][0])
			ss += d * d
		}
		if k < 2 {
			continue
		}
		out[j] = 1.96 * math.Sqrt(k/(k-1)*ss) / n
	}
	return out
}

// judgePlaces judges the places in line shown on the pages posQ of shown
// against the true number ahead of each.
func (v *ShownVerdict) judgePlaces(h *History, shown []Shown, posQ []int32) {
	truths := h.aheadOf(shown, posQ)
	var errs []float64
	var ok, firstOK, front, frontOK, heads, headsOK int
	for i, k := range posQ {
		s := &shown[k]
		t := float64(truths[i])
		d := math.Abs(float64(s.Position) - t)
		within := d <= 0.1*t || d < 0.5
		if within {
			ok++
		}
		if s.First {
			v.FirstPositions++
			if within {
				firstOK++
			}
		}
		if truths[i] < 10 {
			front++
			if within {
				frontOK++
			}
		}
		if truths[i] == 0 {
			heads++
			if s.Position == 0 {
				headsOK++
			}
		}
		errs = append(errs, d/max(t, 1))
	}
	share := func(n, of int) float64 {
		if of == 0 {
			return 0
		}
		return float64(n) / float64(of)
	}
	if v.Positions = len(posQ); v.Positions > 0 {
		v.PositionWithin10 = share(ok, v.Positions)
		slices.Sort(errs)
		v.PositionError90 = Quantile(errs, 0.9)
	}
	v.FirstPositionWithin10 = share(firstOK, v.FirstPositions)
	v.FrontPositions, v.FrontPositionExact = front, share(frontOK, front)
	v.Heads, v.HeadsToldZero = heads, share(headsOK, heads)
}

// aheadOf is, for each of the pages idx of shown, the number of waits under
// way at its At whose visitor arrived before its Arrived: waits with
// Arrived earlier, From ≤ At and To > At. It counts those begun by At, less
// those also ended by At, each by a sweep over time with a Fenwick tree over
// the arrival order.
func (h *History) aheadOf(shown []Shown, idx []int32) []int {
	out := make([]int, len(idx))
	if len(idx) == 0 {
		return out
	}
	arr := make([]time.Duration, len(h.waits))
	for i, w := range h.waits {
		arr[i] = w.Arrived
	}
	slices.Sort(arr)
	rank := func(a time.Duration) int { return sort.Search(len(arr), func(i int) bool { return arr[i] >= a }) }
	order := make([]int32, len(idx))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return cmp.Compare(shown[idx[a]].At, shown[idx[b]].At) })
	sweep := func(at func(Wait) time.Duration, sign int) {
		ws := slices.Clone(h.waits)
		slices.SortFunc(ws, func(a, b Wait) int { return cmp.Compare(at(a), at(b)) })
		tree := make([]int, len(arr)+1)
		j := 0
		for _, q := range order {
			s := &shown[idx[q]]
			for j < len(ws) && at(ws[j]) <= s.At {
				if at(ws[j]) != Never {
					for k := rank(ws[j].Arrived) + 1; k < len(tree); k += k & -k {
						tree[k]++
					}
				}
				j++
			}
			n := 0
			for k := rank(s.Arrived); k > 0; k -= k & -k {
				n += tree[k]
			}
			out[q] += sign * n
		}
	}
	sweep(func(w Wait) time.Duration { return w.From }, 1)
	sweep(func(w Wait) time.Duration { return w.To }, -1)
	return out
}

// Quantile is the q-quantile of sorted values by nearest rank (0 for none):
// the value at or below which a share q of them lie.
func Quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// Figures are what the visitors were shown as a report gives them: the
// verdict's shares, each nil where nothing was judged for it, beside the
// number judged. The simulator's results and the fidelity run's both carry
// them, so both print the same figures under the same names.
type Figures struct {
	EstimateSamples       int      `json:"estimate_samples"`
	EstimateWithin20      *float64 `json:"estimate_within_20pct"`
	EstimateErrorP50      *float64 `json:"estimate_error_p50"`
	EstimateErrorP90      *float64 `json:"estimate_error_p90"`
	EstimateBias          *float64 `json:"estimate_bias_p50"`
	FirstEstimateSamples  int      `json:"first_page_estimate_samples"`
	FirstEstimateWithin20 *float64 `json:"first_page_estimate_within_20pct"`
	RandomSamples         int      `json:"random_samples"`
	// RandomSamplesBy counts, for the 25th, 50th and 75th percentile, the
	// pages whose percentile ran out before the log ended: the ones each
	// share is of.
	RandomSamplesBy [3]int   `json:"random_samples_by_percentile"`
	RandomBy25      *float64 `json:"random_admitted_by_p25"`
	RandomBy50      *float64 `json:"random_admitted_by_p50"`
	RandomBy75      *float64 `json:"random_admitted_by_p75"`
	// RandomMargin are the half-widths of the three shares' 95 %
	// confidence intervals, the pages of one visitor taken together.
	RandomMargin          [3]float64 `json:"random_admitted_margin_95pct"`
	PositionSamples       int        `json:"position_samples"`
	PositionWithin10      *float64   `json:"position_within_10pct"`
	PositionErrorP90      *float64   `json:"position_error_p90"`
	FirstPositionSamples  int        `json:"first_page_position_samples"`
	FirstPositionWithin10 *float64   `json:"first_page_position_within_10pct"`
	FrontPositionSamples  int        `json:"first_ten_position_samples"`
	FrontPositionExact    *float64   `json:"first_ten_position_exact"`
	Heads                 int        `json:"first_in_line_samples"`
	HeadsToldZero         *float64   `json:"first_in_line_told_zero"`
}

// Figures are the verdict as a report gives it (see Figures).
func (v ShownVerdict) Figures() Figures {
	some := func(n int, x float64) *float64 {
		if n == 0 {
			return nil
		}
		return &x
	}
	return Figures{
		EstimateSamples: v.Estimates, EstimateWithin20: some(v.Estimates, v.EstimateWithin20),
		EstimateErrorP50: some(v.Estimates, v.EstimateErrorP50), EstimateErrorP90: some(v.Estimates, v.EstimateErrorP90),
		EstimateBias:         some(v.Estimates, v.EstimateBias),
		FirstEstimateSamples: v.FirstEstimates, FirstEstimateWithin20: some(v.FirstEstimates, v.FirstEstimateWithin20),
		RandomSamples: v.Random, RandomSamplesBy: [3]int{v.Random25, v.Random50, v.Random75},
		RandomBy25: some(v.Random, v.RandomBy25), RandomBy50: some(v.Random, v.RandomBy50), RandomBy75: some(v.Random, v.RandomBy75), RandomMargin: v.RandomMargin,
		PositionSamples: v.Positions, PositionWithin10: some(v.Positions, v.PositionWithin10), PositionErrorP90: some(v.Positions, v.PositionError90),
		FirstPositionSamples: v.FirstPositions, FirstPositionWithin10: some(v.FirstPositions, v.FirstPositionWithin10),
		FrontPositionSamples: v.FrontPositions, FrontPositionExact: some(v.FrontPositions, v.FrontPositionExact),
		Heads: v.Heads, HeadsToldZero: some(v.Heads, v.HeadsToldZero),
	}
}
