package sim

import (
	"math"
	"slices"
	"sort"
	"time"
)

// Result is what one run measured. Everything in it is a deterministic
// function of the scenario and the strategy.
type Result struct {
	Scenario string  `json:"scenario"`
	Strategy string  `json:"strategy"`
	Seed     uint64  `json:"seed"`
	Limits   Limits  `json:"limits"`
	Figures  Figures `json:"figures"`
	Counts   Counts  `json:"counts"`
	// Minutes holds one row per minute of true time.
	Minutes []MinuteStat `json:"minutes"`
	// Series samples the run every SeriesStep seconds.
	SeriesStep int       `json:"series_step_seconds"`
	Series     []Point   `json:"series"`
	Heatmap    Heatmap   `json:"heatmap"`
	Crashes    []float64 `json:"crashes_s,omitempty"`
	Leaves     []float64 `json:"leaves_s,omitempty"`
	// Partitions has one entry per partition: what the room and each side
	// did while the ring was cut.
	Partitions []PartitionStat `json:"partitions,omitempty"`

	series1s []Point // every second, for the plots
}

// Limits are the room's limits, for the reader of the JSON.
type Limits struct {
	TotalActiveUsers  int `json:"total_active_users"`
	NewUsersPerMinute int `json:"new_users_per_minute"`
}

// Figures are the fidelity and fairness figures: how closely the room held
// its limits and how fair it was to those waiting. Optional figures are null
// where they do not apply (nobody queued, no estimate).
type Figures struct {
	// PeakActive is the most sessions live at once (a session lives from its
	// admission to session_duration after its last request), over the
	// limit.
	PeakActive float64 `json:"peak_active_over_limit"`
	// TimeAboveLimit is the share of the run with more live sessions than
	// total_active_users.
	TimeAboveLimit float64 `json:"share_of_time_above_limit"`
	// PeakNewPerMinute is the most admissions in one minute of true time,
	// over new_users_per_minute.
	PeakNewPerMinute float64 `json:"peak_new_per_minute_over_limit"`
	// FirstQueueUtilisation is the room's utilisation when the first
	// visitor was queued: the larger of live sessions / total_active_users
	// and admissions so far this minute / new_users_per_minute.
	FirstQueueUtilisation *float64 `json:"utilisation_at_first_queue"`
	// QueuedEarly counts new visitors queued while the utilisation was
	// below 0.97 and nobody else waited: queued with the room not full.
	QueuedEarly int `json:"queued_below_097"`
	// UtilisationWhileQueueing is the mean utilisation (live sessions or
	// admissions of the last 60 s, whichever is nearer its limit) while
	// anyone waited: how close to the limits the room runs when it queues.
	UtilisationWhileQueueing *float64 `json:"utilisation_while_queueing"`
	// FIFOInversions is the share of admissions after which, within one
	// refresh interval, a visitor who arrived in an earlier minute was
	// refused: a later bucket went in while an earlier one still waited.
	// Minutes are true arrival minutes, so clock skew that files a visitor
	// in the wrong bucket counts against fairness.
	FIFOInversions float64 `json:"fifo_inversions"`
	// PassedOver counts the refusals behind those inversions: check-ins
	// refused within one refresh interval after a later bucket went in.
	PassedOver int `json:"passed_over_check_ins"`
	// WaitCorrelation is Pearson's r between arrival minute and wait over
	// the admitted visitors; WaitSlope the least-squares slope in seconds
	// of wait per arrival minute.
	WaitCorrelation float64 `json:"wait_arrival_correlation"`
	WaitSlope       float64 `json:"wait_arrival_slope_s_per_min"`
	// The estimate a visitor was shown at their first check-in in the
	// steady state (steady_after after the first visitor was queued)
	// against the wait that then remained, for remaining waits of five
	// minutes or more (estimates are whole minutes, rounded up):
	// |estimate − actual| / actual at the median and the 90th percentile,
	// the share within ±20%, and the median signed error (positive: the
	// estimate was too long).
	EstimateErrorP50 *float64 `json:"estimate_error_p50"`
	EstimateErrorP90 *float64 `json:"estimate_error_p90"`
	EstimateWithin20 *float64 `json:"estimate_within_20pct"`
	EstimateBias     *float64 `json:"estimate_bias_p50"`
	EstimateSamples  int      `json:"estimate_samples"`
	// EstimateWithin20HalfBucket is a what-if for the policy: the share
	// within ±20% had the estimate counted half of the visitor's own
	// bucket as ahead of them.
	EstimateWithin20HalfBucket *float64 `json:"estimate_within_20pct_if_half_own_bucket"`
	// Waits of the admitted visitors, in seconds.
	WaitP50 float64 `json:"wait_p50_s"`
	WaitP90 float64 `json:"wait_p90_s"`
	WaitMax float64 `json:"wait_max_s"`
}

// Counts are the run's totals.
type Counts struct {
	Visitors      int `json:"visitors"`
	Requests      int `json:"requests"`
	Attempts      int `json:"attempts"`
	EarlyCheckIns int `json:"early_check_ins"`
	Admissions    int `json:"admissions"`
	Queued        int `json:"queued_visitors"`
	NeverAdmitted int `json:"never_admitted"`
	Rejected      int `json:"rejected"`
	Abandoned     int `json:"abandoned"`
	Rerouted      int `json:"rerouted"`
	Messages      int `json:"gossip_messages"`
	MessagesLost  int `json:"gossip_messages_lost"`
	MessagesCut   int `json:"gossip_messages_cut,omitempty"` // lost to a partition
	PushPulls     int `json:"push_pulls"`
	Allocations   int `json:"allocations"`
}

// MinuteStat is one minute of true time.
type MinuteStat struct {
	Minute     int     `json:"minute"`
	Arrivals   int     `json:"arrivals"`
	Admitted   int     `json:"admitted"`
	PeakActive int     `json:"peak_active"`
	Waiting    int     `json:"waiting_at_end"`
	Util       float64 `json:"utilisation"`
}

// Point is one sample: true live sessions and waiting visitors, and the
// same as the first live node's allocation saw them.
type Point struct {
	T           float64 `json:"t_s"`
	Active      int     `json:"active"`
	Waiting     int     `json:"waiting"`
	ViewActive  float64 `json:"node_view_active"`
	ViewWaiting int64   `json:"node_view_waiting"`
}

// Heatmap counts admitted visitors by arrival minute (X) and wait (Y), as
// the numpy.histogram2d with 30 × 30 bins of Cloudflare's "Waiting Room:
// Random Queueing and Custom Web/Mobile Apps".
type Heatmap struct {
	XBins  int     `json:"x_bins"`
	YBins  int     `json:"y_bins"`
	XMax   float64 `json:"x_max_minute"`
	YMax   float64 `json:"y_max_wait_s"`
	Counts [][]int `json:"counts"` // [x][y]
}

type span struct {
	from, to time.Duration
	node     int32
}

type mark struct {
	at     time.Duration
	bucket int64
	node   int32
}

// cutSpan is a partition as it happened: when, and each node's side.
type cutSpan struct {
	from, to time.Duration
	groups   []int
}

type viewSample struct {
	active  float64
	waiting int64
}

type recorder struct {
	r          *run
	sessions   []span
	admissions []mark
	refusals   []mark
	newQueued  []time.Duration
	firstQueue time.Duration
	steadyFrom time.Duration // firstQueue + steady_after
	crashes    []time.Duration
	leaves     []time.Duration
	cuts       []cutSpan
	views      []viewSample
	queued     int
}

func newRecorder(r *run) *recorder {
	return &recorder{r: r, firstQueue: -1, steadyFrom: time.Duration(math.MaxInt64)}
}

// admit and queue record decisions for the fairness figures, keyed by the
// visitor's true arrival minute (the claimed one in a spoofed experiment):
// with skewed clocks a node's bucket can put a later arrival in an earlier
// minute, and fairness is judged by when people really came.
func (c *recorder) admit(i int, bucket int64, fresh bool) {
	c.admissions = append(c.admissions, mark{c.r.now, c.arrivalMinute(i), int32(c.r.vis[i].node)})
	c.r.counts.Admissions++
}

func (c *recorder) queue(i int, bucket int64, fresh bool) {
	c.refusals = append(c.refusals, mark{c.r.now, c.arrivalMinute(i), int32(c.r.vis[i].node)})
	if c.firstQueue < 0 {
		c.firstQueue = c.r.now
		c.steadyFrom = c.firstQueue + c.r.sc.SteadyAfter.D()
	}
	if fresh {
		c.newQueued = append(c.newQueued, c.r.now)
	}
}

func (c *recorder) arrivalMinute(i int) int64 { return int64(c.r.arr[i].claimed / time.Minute) }

func (c *recorder) endSession(v *visitor) {
	if !v.inSession {
		return
	}
	v.inSession = false
	c.sessions = append(c.sessions, span{v.sessionStart, v.lastReq + c.r.session, v.sessionNode})
}

func (c *recorder) sample() {
	var s viewSample
	for _, n := range c.r.nodes {
		if n.up && n.alloc != nil {
			sum := n.alloc.Summary()
			s = viewSample{sum.ActiveUsers, sum.QueuedUsers}
			break
		}
	}
	c.views = append(c.views, s)
}

// minEstimateWait is the shortest remaining wait whose estimate is scored.
const minEstimateWait = 5 * time.Minute

// bin is the time resolution of the live-session and waiting counts.
const bin = 100 * time.Millisecond

// inversionWindow is one refresh interval at its longest (plus a second of
// latency): a visitor waiting when another was admitted has checked in
// within it.
const inversionWindow = (refreshBase + refreshJitter + 1) * time.Second

func (c *recorder) result() *Result {
	r := c.r
	sc := r.sc
	T := float64(sc.Room.TotalActiveUsers)
	N := float64(sc.Room.NewUsersPerMinute)
	res := &Result{
		Scenario: sc.Name, Strategy: r.name, Seed: sc.Seed,
		Limits: Limits{sc.Room.TotalActiveUsers, sc.Room.NewUsersPerMinute},
		Counts: r.counts, SeriesStep: 5,
	}
	for _, t := range c.crashes {
		res.Crashes = append(res.Crashes, t.Seconds())
	}
	for _, t := range c.leaves {
		res.Leaves = append(res.Leaves, t.Seconds())
	}
	// Close the sessions still open: those still browsing run past the end.
	for i := range r.vis {
		v := &r.vis[i]
		if v.inSession {
			if v.st == vsBrowsing {
				v.lastReq = max(v.lastReq, r.end)
			}
			c.endSession(v)
		}
	}
	nb := int(r.end/bin) + 1
	active := make([]int, nb+1)
	waiting := make([]int, nb+1)
	for _, s := range c.sessions {
		addSpan(active, s.from, s.to, nb)
	}
	for i := range r.vis {
		v := &r.vis[i]
		if v.firstQueued < 0 {
			continue
		}
		c.queued++
		stop := r.end
		switch {
		case v.admitted >= 0:
			stop = v.admitted
		case v.abandoned >= 0:
			stop = v.abandoned
		default:
			if v.st != vsGone {
				res.Counts.NeverAdmitted++
			}
		}
		addSpan(waiting, v.firstQueued, stop, nb)
	}
	res.Counts.Queued = c.queued
	prefix(active)
	prefix(waiting)
	// Admissions per bin, cumulative, for the trailing-minute rate.
	admCum := make([]int, nb+1)
	for _, a := range c.admissions {
		admCum[min(int(a.at/bin), nb)]++
	}
	prefix(admCum)
	perMin := int(time.Minute / bin)
	util := func(k int) float64 {
		k = min(max(k, 0), nb-1)
		a := float64(active[k]) / T
		lo := k - perMin
		adm := admCum[k]
		if lo >= 0 {
			adm -= admCum[lo]
		}
		return max(a, float64(adm)/N)
	}
	// The utilisation at one instant, against this minute's admissions so
	// far (the per-minute limit counts calendar minutes).
	utilAt := func(t time.Duration) float64 {
		k := min(int(t/bin), nb-1)
		m0 := t.Truncate(time.Minute)
		n := sort.Search(len(c.admissions), func(i int) bool { return c.admissions[i].at >= t }) -
			sort.Search(len(c.admissions), func(i int) bool { return c.admissions[i].at >= m0 })
		return max(float64(active[k])/T, float64(n)/N)
	}

	f := &res.Figures
	peak, above := 0, 0
	for k := range nb {
		peak = max(peak, active[k])
		if float64(active[k]) > T {
			above++
		}
	}
	f.PeakActive = float64(peak) / T
	f.TimeAboveLimit = float64(above) / float64(nb)

	minutes := int((r.end + time.Minute - 1) / time.Minute)
	res.Minutes = make([]MinuteStat, minutes)
	for m := range res.Minutes {
		res.Minutes[m].Minute = m
	}
	for _, a := range c.admissions {
		if m := int(a.at / time.Minute); m < minutes {
			res.Minutes[m].Admitted++
		}
	}
	for i := range r.vis {
		if r.vis[i].node >= 0 && r.arr[i].at < r.end {
			res.Minutes[int(r.arr[i].at/time.Minute)].Arrivals++
		}
	}
	peakNew := 0
	for m := range res.Minutes {
		ms := &res.Minutes[m]
		peakNew = max(peakNew, ms.Admitted)
		lo, hi := m*perMin, min((m+1)*perMin, nb)
		for k := lo; k < hi; k++ {
			ms.PeakActive = max(ms.PeakActive, active[k])
		}
		ms.Waiting = waiting[max(hi-1, 0)]
		ms.Util = max(float64(ms.PeakActive)/T, float64(ms.Admitted)/N)
	}
	f.PeakNewPerMinute = float64(peakNew) / N

	if c.firstQueue >= 0 {
		f.FirstQueueUtilisation = ptr(utilAt(c.firstQueue))
	}
	for _, t := range c.newQueued {
		k := int(t / bin)
		if utilAt(t) < 0.97 && (k == 0 || waiting[k-1] == 0) {
			f.QueuedEarly++
		}
	}
	var uSum float64
	var uN int
	for k := range nb {
		if waiting[k] > 0 {
			uSum += util(k)
			uN++
		}
	}
	if uN > 0 {
		f.UtilisationWhileQueueing = ptr(uSum / float64(uN))
	}
	f.FIFOInversions = inversions(c.admissions, c.refusals)
	f.PassedOver = passedOver(c.admissions, c.refusals)

	// Waits, the heatmap and the correlation, over admitted visitors.
	var xs, ys []float64
	for i := range r.vis {
		v := &r.vis[i]
		if v.admitted < 0 {
			continue
		}
		xs = append(xs, math.Floor(r.arr[i].claimed.Minutes()))
		ys = append(ys, (v.admitted - r.arr[i].at).Seconds())
	}
	f.WaitCorrelation, f.WaitSlope = pearson(xs, ys)
	sorted := slices.Clone(ys)
	slices.Sort(sorted)
	f.WaitP50, f.WaitP90 = quantile(sorted, 0.5), quantile(sorted, 0.9)
	if len(sorted) > 0 {
		f.WaitMax = sorted[len(sorted)-1]
	}
	nx := 30
	if len(xs) > 0 {
		// Whole arrival minutes per column when they fit, as the reference's
		// 30 bins over 30 minutes.
		span := int(slices.Max(xs)) + 1
		nx = min(max(span, 1), 30)
	}
	res.Heatmap = heatmap(xs, ys, nx, 30)

	// Estimates: the first one each visitor saw in the steady state against
	// the wait that remained. Estimates are whole minutes rounded up, so
	// only remaining waits of at least minEstimateWait are scored: below
	// that the rounding alone can exceed 20%.
	var errs, signed []float64
	within, withinHalf := 0, 0
	for i := range r.vis {
		v := &r.vis[i]
		if !v.estKnown || v.admitted < 0 || v.estAt < 0 {
			continue
		}
		actual := (v.admitted - v.estAt).Seconds()
		if actual < minEstimateWait.Seconds() {
			continue
		}
		e := (float64(v.est.WaitTime)*60 - actual) / actual
		signed = append(signed, e)
		errs = append(errs, math.Abs(e))
		if math.Abs(e) <= 0.2 {
			within++
		}
		if h := (v.estHalf*60 - actual) / actual; math.Abs(h) <= 0.2 {
			withinHalf++
		}
	}
	f.EstimateSamples = len(errs)
	if len(errs) > 0 {
		f.EstimateWithin20HalfBucket = ptr(float64(withinHalf) / float64(len(errs)))
	}
	if len(errs) > 0 {
		slices.Sort(errs)
		slices.Sort(signed)
		f.EstimateErrorP50 = ptr(quantile(errs, 0.5))
		f.EstimateErrorP90 = ptr(quantile(errs, 0.9))
		f.EstimateWithin20 = ptr(float64(within) / float64(len(errs)))
		f.EstimateBias = ptr(quantile(signed, 0.5))
	}

	for _, cs := range c.cuts {
		res.Partitions = append(res.Partitions, c.partitionStat(cs, active, res.Minutes))
	}

	// Series.
	for s := 0; s < len(c.views); s++ {
		k := min(s*int(time.Second/bin), nb-1)
		p := Point{T: float64(s), Active: active[k], Waiting: waiting[k], ViewActive: round2(c.views[s].active), ViewWaiting: c.views[s].waiting}
		res.series1s = append(res.series1s, p)
		if s%res.SeriesStep == 0 {
			res.Series = append(res.Series, p)
		}
	}
	roundFigures(f)
	return res
}

// addSpan adds one to every bin from from up to (not including) to, as a
// difference array.
func addSpan(d []int, from, to time.Duration, nb int) {
	a := max(int(from/bin), 0)
	b := min(int(to/bin), nb)
	if a >= b {
		if a < nb && to > from {
			b = a + 1 // shorter than a bin: count it once
		} else {
			return
		}
	}
	d[a]++
	d[b]--
}

func prefix(d []int) {
	for i := 1; i < len(d); i++ {
		d[i] += d[i-1]
	}
}

// inversions is the share of admissions followed, within one refresh
// interval, by a refusal of an earlier bucket.
func inversions(adm, ref []mark) float64 {
	if len(adm) == 0 {
		return 0
	}
	return float64(inversionCount(adm, ref)) / float64(len(adm))
}

// inversionCount counts the admissions followed, within one refresh
// interval, by a refusal of an earlier bucket. Both lists are in time
// order; a sliding-window minimum over the refusals' buckets answers each
// admission in amortised constant time.
func inversionCount(adm, ref []mark) int {
	var dq []int // indexes into ref, buckets increasing
	hi, n := 0, 0
	for _, a := range adm {
		for hi < len(ref) && ref[hi].at <= a.at+inversionWindow {
			for len(dq) > 0 && ref[dq[len(dq)-1]].bucket >= ref[hi].bucket {
				dq = dq[:len(dq)-1]
			}
			dq = append(dq, hi)
			hi++
		}
		for len(dq) > 0 && ref[dq[0]].at <= a.at {
			dq = dq[1:]
		}
		if len(dq) > 0 && ref[dq[0]].bucket < a.bucket {
			n++
		}
	}
	return n
}

// passedOver counts the refusals preceded, within one refresh interval, by
// an admission of a later bucket.
func passedOver(adm, ref []mark) int {
	var dq []int // indexes into adm, buckets decreasing
	hi, n := 0, 0
	for _, x := range ref {
		for hi < len(adm) && adm[hi].at < x.at {
			for len(dq) > 0 && adm[dq[len(dq)-1]].bucket <= adm[hi].bucket {
				dq = dq[:len(dq)-1]
			}
			dq = append(dq, hi)
			hi++
		}
		for len(dq) > 0 && adm[dq[0]].at < x.at-inversionWindow {
			dq = dq[1:]
		}
		if len(dq) > 0 && adm[dq[0]].bucket > x.bucket {
			n++
		}
	}
	return n
}

// pearson returns the correlation of xs and ys and the slope of ys on xs.
func pearson(xs, ys []float64) (r, slope float64) {
	n := float64(len(xs))
	if n < 2 {
		return 0, 0
	}
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= n
	my /= n
	var sxy, sxx, syy float64
	for i := range xs {
		dx, dy := xs[i]-mx, ys[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return 0, 0
	}
	return sxy / math.Sqrt(sxx*syy), sxy / sxx
}

// quantile of sorted values, nearest rank.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func heatmap(xs, ys []float64, nx, ny int) Heatmap {
	h := Heatmap{XBins: nx, YBins: ny, Counts: make([][]int, nx)}
	for i := range h.Counts {
		h.Counts[i] = make([]int, ny)
	}
	for i := range xs {
		h.XMax = max(h.XMax, xs[i]+1)
		h.YMax = max(h.YMax, ys[i])
	}
	if h.YMax == 0 {
		h.YMax = 1
	}
	for i := range xs {
		x := min(int(xs[i]/h.XMax*float64(nx)), nx-1)
		y := min(int(ys[i]/h.YMax*float64(ny)), ny-1)
		h.Counts[max(x, 0)][max(y, 0)]++
	}
	return h
}

func ptr(f float64) *float64 { return &f }

// round keeps the JSON readable: six significant decimals.
func round6(f float64) float64 { return math.Round(f*1e6) / 1e6 }
func round2(f float64) float64 { return math.Round(f*100) / 100 }

func roundFigures(f *Figures) {
	for _, p := range []*float64{&f.PeakActive, &f.TimeAboveLimit, &f.PeakNewPerMinute, &f.FIFOInversions, &f.WaitCorrelation, &f.WaitSlope, &f.WaitP50, &f.WaitP90, &f.WaitMax} {
		*p = round6(*p)
	}
	for _, p := range []*float64{f.FirstQueueUtilisation, f.UtilisationWhileQueueing, f.EstimateErrorP50, f.EstimateErrorP90, f.EstimateWithin20, f.EstimateBias, f.EstimateWithin20HalfBucket} {
		if p != nil {
			*p = round6(*p)
		}
	}
}
