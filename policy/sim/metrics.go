package sim

import (
	"math"
	"slices"
	"time"

	"github.com/waitroom/waitroom/policy/truth"
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
	Restarts   []float64 `json:"restarts_s,omitempty"`
	// Partitions has one entry per partition: what the room and each side
	// did while the ring was cut.
	Partitions []PartitionStat `json:"partitions,omitempty"`
	// Groups has one entry per priority group of the room: what its
	// holders got.
	Groups []GroupStat `json:"priority_groups,omitempty"`

	series1s []Point // every second, for the plots
}

// EverySecond is the run sampled every second, as the plots draw it (Series
// keeps every SeriesStep-th of these for the JSON).
func (res *Result) EverySecond() []Point { return res.series1s }

// Limits are the room's limits, for the reader of the JSON.
type Limits struct {
	TotalActiveUsers  int `json:"total_active_users"`
	NewUsersPerMinute int `json:"new_users_per_minute"`
}

// Figures are the fidelity and fairness figures. The first four are the
// truth the goals judge (package truth): what the origin saw, by the simulated
// wall clock, whatever the nodes' minute buckets say. Optional figures are
// null where they do not apply (nobody queued, no estimate).
type Figures struct {
	// PeakActive is the most visitors active at once (from the admission
	// until session_duration after the last request the origin saw), over
	// total_active_users.
	PeakActive float64 `json:"peak_active_over_limit"`
	// TimeAboveLimit is the share of the run with more visitors active than
	// total_active_users.
	TimeAboveLimit float64 `json:"share_of_time_above_limit"`
	// PeakNewPerMinute is the most admissions in one wall-clock minute,
	// over new_users_per_minute.
	PeakNewPerMinute float64 `json:"peak_new_per_minute_over_limit"`
	// FirstQueueUtilisation is the room's utilisation at the moment the
	// first visitor was queued: active / total_active_users or the
	// minute's admissions so far / new_users_per_minute, whichever is
	// larger; FirstQueueBinds names that limit.
	FirstQueueUtilisation *float64 `json:"utilisation_at_first_queue"`
	FirstQueueBinds       string   `json:"binding_limit_at_first_queue,omitempty"`
	// QueuedEarly counts new visitors queued while the utilisation was
	// below 0.97 and nobody else waited: queued with the room not full.
	QueuedEarly int `json:"queued_below_097"`
	// UtilisationWhileQueueing is the mean utilisation (active visitors or
	// admissions of the last 60 s, whichever is nearer its limit) while
	// anyone waited: how close to the limits the room runs when it queues.
	UtilisationWhileQueueing *float64 `json:"utilisation_while_queueing"`
	// FIFOInversions is the share of admissions that were FIFO inversions:
	// admitted while someone who arrived in an earlier wall-clock minute
	// still waited and was let in more than truth.InversionGrace later (or
	// not at all). Minutes are true arrival minutes, so clock skew that files a
	// visitor in the wrong bucket counts against fairness. Inversions
	// counts them.
	FIFOInversions float64 `json:"fifo_inversions"`
	Inversions     int     `json:"fifo_inversion_count"`
	// Of the inversions, InversionsPassedOver counts those after which an
	// earlier arrival still waiting was turned away at a check-in within
	// truth.PassedOverWindow (its place was taken), InversionsNewcomers
	// those whose visitor was let in at its first request, never queued.
	InversionsPassedOver int `json:"fifo_passed_over"`
	InversionsNewcomers  int `json:"fifo_newcomers"`
	// OutsideSession counts requests that a node let through to the origin
	// although the visitor's session had run out by the wall clock (a node
	// whose clock is behind honours a token a little longer); each opens a
	// session from then, counted in the active figures.
	OutsideSession int `json:"origin_requests_outside_session"`
	// WaitCorrelation is Pearson's r between arrival minute and wait over
	// the admitted visitors; WaitSlope the least-squares slope in seconds
	// of wait per arrival minute.
	WaitCorrelation float64 `json:"wait_arrival_correlation"`
	WaitSlope       float64 `json:"wait_arrival_slope_s_per_min"`
	// What visitors were shown, judged by the truth (truth.JudgeShown) on
	// every queue page, the first included: the FIFO estimates against
	// the wait that then remained (of five minutes or more: estimates are
	// whole minutes, rounded up), a random queue's shares admitted within
	// their percentiles, and the places in line against the true number
	// ahead (see truth.ShownVerdict).
	truth.Figures
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
	// Held: requests held for the node's next allocation at least once
	// (policy.Allocation.Held).
	Held          int `json:"held,omitempty"`
	Admissions    int `json:"admissions"`
	Queued        int `json:"queued_visitors"`
	NeverAdmitted int `json:"never_admitted"`
	Rejected      int `json:"rejected"`
	Abandoned     int `json:"abandoned"`
	// Cookieless visitors queued or turned away at their first request,
	// gone for good (Phase.Cookieless).
	Cookieless   int `json:"cookieless_gone,omitempty"`
	Rerouted     int `json:"rerouted"`
	Messages     int `json:"gossip_messages"`
	MessagesLost int `json:"gossip_messages_lost"`
	MessagesCut  int `json:"gossip_messages_cut,omitempty"` // lost to a partition
	PushPulls    int `json:"push_pulls"`
	Allocations  int `json:"allocations"`
	// MeasuredLag: allocations that assumed a measured lag below the
	// configured one; Beats: beat messages sent (not in Messages).
	MeasuredLag int `json:"allocations_measured_lag,omitempty"`
	Beats       int `json:"beats,omitempty"`
	// Figures: copies of a data center's figures sent between data
	// centers (not in Messages), and those lost and sent again.
	Figures     int `json:"figures,omitempty"`
	FiguresLost int `json:"figures_lost,omitempty"`
}

// MinuteStat is one wall-clock minute.
type MinuteStat struct {
	Minute     int     `json:"minute"`
	Arrivals   int     `json:"arrivals"`
	Admitted   int     `json:"admitted"`
	PeakActive int     `json:"peak_active"`
	Waiting    int     `json:"waiting_at_end"`
	Util       float64 `json:"utilisation"`
}

// Point is one sample: the visitors active and waiting by the truth, and
// the same as the first live node's allocation saw them.
type Point struct {
	T           float64 `json:"t_s"`
	Active      int     `json:"active"`
	Waiting     int     `json:"waiting"`
	ViewActive  float64 `json:"node_view_active"`
	ViewWaiting int64   `json:"node_view_waiting"`
}

// Heatmap counts admitted visitors by arrival minute (X) and wait (Y), as
// the numpy.histogram2d of Cloudflare's "Waiting Room: Random Queueing and Custom Web/Mobile Apps", with 30 × 30 bins.
type Heatmap struct {
	XBins  int     `json:"x_bins"`
	YBins  int     `json:"y_bins"`
	XMax   float64 `json:"x_max_minute"`
	YMax   float64 `json:"y_max_wait_s"`
	Counts [][]int `json:"counts"` // [x][y]
}

// GroupStat is what the holders of one priority group's codes got, by the
// simulated wall clock.
type GroupStat struct {
	Name string `json:"name"`
	// Visitors is how many visitors presented the group's code.
	Visitors int `json:"visitors"`
	// Admitted counts the admissions of the group's holders, Ahead those
	// of them ahead of the line (within the group's share and cap).
	Admitted int `json:"admitted"`
	Ahead    int `json:"admitted_ahead"`
	// PerMinute counts the holders' admissions in each wall-clock minute,
	// and AheadPerMinute those ahead of the line; PeakAheadPerMinute is
	// the most of those in one minute, which the group's own
	// new_users_per_minute bounds.
	PerMinute          []int `json:"admitted_per_minute"`
	AheadPerMinute     []int `json:"ahead_per_minute"`
	PeakAheadPerMinute int   `json:"peak_ahead_per_minute"`
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

// recorder keeps the ground truth outside the nodes: it logs every
// admission, refusal and request that reached the origin, by the simulated
// wall clock, for the truth to judge, and samples what node 0 believed.
type recorder struct {
	r          *run
	log        []truth.Event
	shown      []truth.Shown   // what visitors were shown, for truth.JudgeShown
	try        []time.Duration // when each visitor's current try began, -1 before its first decision
	waiting    []bool
	newQueued  []time.Duration
	firstQueue time.Duration
	crashes    []time.Duration
	leaves     []time.Duration
	restarts   []time.Duration
	cuts       []cutSpan
	views      []viewSample
	queued     int
	groups     []GroupStat // by group index
}

func newRecorder(r *run) *recorder {
	c := &recorder{r: r, firstQueue: -1,
		try: make([]time.Duration, len(r.vis)), waiting: make([]bool, len(r.vis))}
	for i := range c.try {
		c.try[i] = -1
	}
	minutes := int((r.end + time.Minute - 1) / time.Minute)
	for _, g := range r.sc.Room.PriorityGroups {
		c.groups = append(c.groups, GroupStat{Name: g.Name, PerMinute: make([]int, minutes), AheadPerMinute: make([]int, minutes)})
	}
	for _, a := range r.arr {
		if a.group > 0 && a.at < r.end {
			c.groups[a.group-1].Visitors++
		}
	}
	return c
}

// groupAdmit records an admission of a holder of priority group g (an
// index plus one), ahead of the line or not.
func (c *recorder) groupAdmit(g int, ahead bool) {
	st := &c.groups[g-1]
	m := min(int(c.r.now/time.Minute), len(st.PerMinute)-1)
	st.Admitted++
	st.PerMinute[m]++
	if ahead {
		st.Ahead++
		st.AheadPerMinute[m]++
		st.PeakAheadPerMinute = max(st.PeakAheadPerMinute, st.AheadPerMinute[m])
	}
}

// tryOf is when visitor i's current try began: its arrival (the claimed one
// in a spoofed experiment, as fairness is judged by when people say they
// came), or, for a visitor back without a session after an earlier one, the
// request that found it gone.
func (c *recorder) tryOf(i int, fresh bool) time.Duration {
	if fresh && c.r.vis[i].admitted >= 0 && !c.waiting[i] {
		c.try[i] = c.r.now
	}
	if c.try[i] < 0 {
		c.try[i] = c.r.arr[i].claimed
	}
	return c.try[i]
}

// admit and queue record the room's decisions, keyed by the wall-clock
// minute of the visitor's arrival: with skewed clocks a node's bucket can
// put a later arrival in an earlier minute, and fairness is judged by when
// people really came.
func (c *recorder) admit(i int, bucket int64, fresh bool) {
	c.event(truth.Admit, i, c.tryOf(i, fresh))
	c.waiting[i] = false
	c.r.counts.Admissions++
}

func (c *recorder) queue(i int, bucket int64, fresh bool) {
	c.event(truth.Queue, i, c.tryOf(i, fresh))
	c.waiting[i] = true
	if c.firstQueue < 0 {
		c.firstQueue = c.r.now
	}
	if fresh {
		c.newQueued = append(c.newQueued, c.r.now)
	}
}

// origin records a request of visitor i that reached the origin now.
func (c *recorder) origin(i int) { c.event(truth.Origin, i, c.try[i]) }

// event logs what happened to visitor i now, at its node, in the try that
// began at arrived.
func (c *recorder) event(k truth.Kind, i int, arrived time.Duration) {
	c.log = append(c.log, truth.Event{At: c.r.now, Kind: k, Visitor: i, Arrived: arrived, Node: int(c.r.vis[i].node)})
}

// endSession is told when the visitor's token no longer lets it in, or it
// stops browsing. The truth needs nothing from it (a session lasts
// session_duration after the last request the origin saw, whatever the
// token says); the visitor's own bookkeeping does.
func (c *recorder) endSession(v *visitor) { v.inSession = false }

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

// bin is the time step of the mean utilisation while queueing.
const bin = 100 * time.Millisecond

func (c *recorder) result() *Result {
	r := c.r
	sc := r.sc
	lim := Limits{sc.Room.TotalActiveUsers, sc.Room.NewUsersPerMinute}
	res := &Result{
		Scenario: sc.Name, Strategy: r.name, Seed: sc.Seed,
		Limits: lim, Counts: r.counts, SeriesStep: 5,
	}
	res.Crashes, res.Leaves, res.Restarts = seconds(c.crashes), seconds(c.leaves), seconds(c.restarts)
	c.closeVisitors(res)
	tr := truth.Replay(c.log, truth.Limits{TotalActiveUsers: lim.TotalActiveUsers, NewUsersPerMinute: lim.NewUsersPerMinute, SessionDuration: r.session})
	c.log = nil
	j := judged{tr: tr, active: tr.Active(), waiting: tr.Waiting(),
		T: float64(lim.TotalActiveUsers), N: float64(lim.NewUsersPerMinute)}
	c.truthFigures(res, j)
	c.minutes(res, j)
	c.utilisation(&res.Figures, j)
	c.waits(res)
	c.shownFigures(&res.Figures, tr)
	for _, cs := range c.cuts {
		res.Partitions = append(res.Partitions, c.partitionStat(tr, cs, j.active, res.Minutes))
	}
	c.series(res, j)
	roundFigures(&res.Figures)
	res.Groups = c.groups
	return res
}

// judged is the truth's replay of a run's log, with the room's limits.
type judged struct {
	tr              *truth.History
	active, waiting truth.Curve
	T, N            float64 // total_active_users and new_users_per_minute
}

// seconds returns ts in seconds, nil when empty.
func seconds(ts []time.Duration) []float64 {
	var out []float64
	for _, t := range ts {
		out = append(out, t.Seconds())
	}
	return out
}

// closeVisitors logs every give-up for the truth and counts the visitors
// queued and those queued and never let in, gone nor given up.
func (c *recorder) closeVisitors(res *Result) {
	r := c.r
	for i := range r.vis {
		v := &r.vis[i]
		if v.abandoned >= 0 {
			c.log = append(c.log, truth.Event{At: v.abandoned, Kind: truth.GiveUp, Visitor: i, Node: -1})
		}
		if v.firstQueued < 0 {
			continue
		}
		c.queued++
		if v.admitted < 0 && v.abandoned < 0 && v.st != vsGone {
			res.Counts.NeverAdmitted++
		}
	}
	res.Counts.Queued = c.queued
}

// truthFigures sets the figures the truth's verdict judges: the peaks, the
// time above the limit, the utilisation at the first queueing, the FIFO
// inversions and the requests outside a session.
func (c *recorder) truthFigures(res *Result, j judged) {
	r := c.r
	verdict := j.tr.Judge(r.end)
	f := &res.Figures
	f.PeakActive = verdict.PeakActiveRatio
	f.TimeAboveLimit = float64(j.active.Above(res.Limits.TotalActiveUsers, 0, r.end)) / float64(r.end)
	f.PeakNewPerMinute = verdict.PeakNewRatio
	if verdict.Queued {
		f.FirstQueueUtilisation, f.FirstQueueBinds = ptr(verdict.Utilisation), verdict.Binds
	}
	f.FIFOInversions, f.Inversions = verdict.InversionShare, len(verdict.Inversions)
	f.InversionsPassedOver, f.InversionsNewcomers = verdict.PassedOver, verdict.Newcomers
	f.OutsideSession = j.tr.OriginOpened()
}

// minutes sets one row per wall-clock minute: admissions, peak active,
// waiting at its end, utilisation and arrivals.
func (c *recorder) minutes(res *Result, j judged) {
	r := c.r
	perMinute := j.tr.PerMinute(r.end)
	res.Minutes = make([]MinuteStat, len(perMinute))
	for m := range res.Minutes {
		ms := &res.Minutes[m]
		ms.Minute, ms.Admitted = m, perMinute[m]
		lo, hi := time.Duration(m)*time.Minute, min(time.Duration(m+1)*time.Minute, r.end)
		ms.PeakActive, _ = j.active.Peak(lo, hi)
		ms.Waiting = j.waiting.At(hi - 1)
		ms.Util = max(float64(ms.PeakActive)/j.T, float64(ms.Admitted)/j.N)
	}
	for i := range r.vis {
		if r.vis[i].node >= 0 && r.arr[i].at < r.end {
			res.Minutes[int(r.arr[i].at/time.Minute)].Arrivals++
		}
	}
}

// utilisation counts the visitors queued early and sets the mean
// utilisation while anyone waited.
func (c *recorder) utilisation(f *Figures, j judged) {
	r := c.r
	for _, t := range c.newQueued {
		if u, _, _, _ := j.tr.Utilisation(j.active, t); u < MinQueueUtil && j.waiting.At(t-1) == 0 {
			f.QueuedEarly++
		}
	}
	// The mean utilisation while anyone waited, every bin: live sessions,
	// or admissions of the last 60 s, whichever is nearer its limit.
	var uSum float64
	var uN int
	for t := time.Duration(0); t < r.end; t += bin {
		if j.waiting.At(t) > 0 {
			adm := j.tr.AdmittedBetween(t-time.Minute+1, t)
			uSum += max(float64(j.active.At(t))/j.T, float64(adm)/j.N)
			uN++
		}
	}
	if uN > 0 {
		f.UtilisationWhileQueueing = ptr(uSum / float64(uN))
	}
}

// waits sets the waits, the heatmap and the correlation, over admitted
// visitors.
func (c *recorder) waits(res *Result) {
	r := c.r
	f := &res.Figures
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
	f.WaitP50, f.WaitP90 = truth.Quantile(sorted, 0.5), truth.Quantile(sorted, 0.9)
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
}

// shownFigures judges what the visitors were shown by the truth.
func (c *recorder) shownFigures(f *Figures, tr *truth.History) {
	f.Figures = truth.JudgeShown(tr, c.shown, c.r.end).Figures()
	c.shown = nil
}

// series samples the truth and node 0's view every second for the plots,
// and every SeriesStep seconds for the result.
func (c *recorder) series(res *Result, j judged) {
	r := c.r
	for s := 0; s < len(c.views); s++ {
		t := min(time.Duration(s)*time.Second, r.end-1)
		p := Point{T: float64(s), Active: j.active.At(t), Waiting: j.waiting.At(t), ViewActive: round2(c.views[s].active), ViewWaiting: c.views[s].waiting}
		res.series1s = append(res.series1s, p)
		if s%res.SeriesStep == 0 {
			res.Series = append(res.Series, p)
		}
	}
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
	for _, p := range []*float64{f.FirstQueueUtilisation, f.UtilisationWhileQueueing, f.EstimateErrorP50, f.EstimateErrorP90, f.EstimateWithin20, f.EstimateBias, f.FirstEstimateWithin20,
		f.RandomBy25, f.RandomBy50, f.RandomBy75, f.PositionWithin10, f.PositionErrorP90, f.FirstPositionWithin10, f.FrontPositionExact, f.HeadsToldZero} {
		if p != nil {
			*p = round6(*p)
		}
	}
	for i := range f.RandomMargin {
		f.RandomMargin[i] = round6(f.RandomMargin[i])
	}
}
