// Package bench is the harness of `waitroom bench`: on loopback in this
// process, a small origin, a bare server answering the queue page's exact
// bytes, a plain httputil.ReverseProxy with edge's origin transport settings,
// and a waitroom node ([Env]), each driven in turn with the same load by the
// load generator (cmd/waitroom/internal/loadtest) and reported as ratios
// ([Run]); and the steady-memory check ([Soak]). It starts edge servers,
// which is why it sits apart from the load generator.
//
// Its tests also hold the measurements of nodes in this process that run
// only on request: the benchmarks of the request path, the throughput
// against a plain proxy with the load from another process and the fill of
// a flooded room (WAITROOM_MEASURE=1), and a ring of three under load for
// ten minutes (WAITROOM_SOAK=1).
package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/waitroom/waitroom/cmd/waitroom/internal/loadtest"
)

// Options configure Run.
type Options struct {
	Duration time.Duration // per side per comparison per round (default 5 s)
	// Slice is how long one side runs before the other takes over (default
	// 500 ms): the sides alternate many times within a round, so that a
	// neighbour's burst of CPU on a shared machine falls on both.
	Slice       time.Duration
	Rounds      int // default 3
	Concurrency int // closed-loop visitors (default 16)
	// LatencyLoad sets the open-loop rate of the p99 comparison, as a
	// fraction of the plain proxy's closed-loop throughput in the same round
	// (default 0.25: latency is compared at a moderate load, not at
	// saturation where it only measures queueing).
	LatencyLoad float64
	// Visitors is the step of the memory measurement (default 10,000).
	Visitors int
	Warmup   time.Duration // per side before the first round (default 1 s)
	// NoProxies leaves out the baselines of the proxies operators run
	// (nginx, HAProxy), which are otherwise used when installed.
	NoProxies bool
	// Progress, when set, gets a line per round.
	Progress io.Writer
}

// Plan is what the bench says before it starts: how many rounds of how many
// comparisons (the proxies found installed add theirs), and about how long
// the whole takes.
func (o *Options) Plan() string {
	comparisons := 4
	if !o.NoProxies {
		for _, p := range ExternalProxies {
			if p.Find() != "" {
				comparisons += 3
				if p.Program == "nginx" {
					comparisons += 2
				}
			}
		}
	}
	rounds := max(o.Rounds, 1)
	return fmt.Sprintf("waitroom bench: %d rounds of %d comparisons, %s per side each, then the memory steps (about %s)",
		rounds, comparisons, o.Duration, (time.Duration(rounds*comparisons)*2*o.Duration + 6*time.Second + 15*time.Second).Round(time.Second))
}

// ProfileCPU writes a CPU profile of this whole process (the load
// generator included) to path, until stop is called.
func ProfileCPU(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}

func (o *Options) defaults() {
	if o.Duration <= 0 {
		o.Duration = 5 * time.Second
	}
	if o.Slice <= 0 {
		o.Slice = 500 * time.Millisecond
	}
	o.Slice = min(o.Slice, o.Duration)
	if o.Rounds <= 0 {
		o.Rounds = 3
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
	if o.LatencyLoad <= 0 || o.LatencyLoad > 1 {
		o.LatencyLoad = 0.25
	}
	if o.Visitors <= 0 {
		o.Visitors = 10_000
	}
	if o.Warmup <= 0 {
		o.Warmup = time.Second
	}
}

// Machine describes where the bench ran.
type Machine struct {
	GoVersion  string `json:"go_version"`
	OS         string `json:"os"`
	Arch       string `json:"arch"`
	NumCPU     int    `json:"num_cpu"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	CPUModel   string `json:"cpu_model"`
}

// ThisMachine reads the machine's description.
func ThisMachine() Machine {
	m := Machine{GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), CPUModel: "unknown"}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// Comparison is one goal's figures: the baseline's and waitroom's per round
// (for latencies, the medians of the round's slices), and the median over
// rounds of the per-round ratio (or difference).
type Comparison struct {
	Name     string    `json:"name"`
	Baseline string    `json:"baseline"`
	Unit     string    `json:"unit"`
	Base     []float64 `json:"base"`
	Room     []float64 `json:"waitroom"`
	// PerRound are the rounds' ratios Room/Base, or differences Room−Base
	// when Difference is set (for latencies: the median over the round's
	// slice pairs of the paired differences). Value is their median.
	PerRound   []float64 `json:"per_round"`
	Value      float64   `json:"value"`
	Difference bool      `json:"difference,omitempty"`
	// Inverse is 1/Value, for CPU costs: the throughput ratio they imply.
	Inverse float64 `json:"inverse,omitempty"`
	Goal    string  `json:"goal"`
	OK      bool    `json:"ok"`
}

func (c *Comparison) add(base, room float64) {
	c.Base = append(c.Base, base)
	c.Room = append(c.Room, room)
}

// addDiff adds a round of paired per-slice figures: the round's base and
// room are their medians, its difference the median of the pairs'.
func (c *Comparison) addDiff(base, room []float64) {
	c.add(median(base), median(room))
	c.PerRound = append(c.PerRound, pairedDiff(base, room))
}

func (c *Comparison) finish(goal string, ok func(float64) bool) {
	per := c.PerRound
	if per == nil {
		per = make([]float64, len(c.Base))
		for i := range c.Base {
			if c.Difference {
				per[i] = c.Room[i] - c.Base[i]
			} else if c.Base[i] > 0 {
				per[i] = c.Room[i] / c.Base[i]
			}
		}
		c.PerRound = per
	}
	c.Value = median(per)
	c.Goal = goal
	c.OK = ok(c.Value)
}

// Memory is the heap growth of the whole process (node and idle generator)
// while new visitors join the full room's queue, measured after GC.
type Memory struct {
	Visitors         int    `json:"visitors_per_step"`
	QueuedBefore     int64  `json:"queued_before"` // the room's waiting count before
	QueuedAfter      int64  `json:"queued_after"`
	HeapBefore       uint64 `json:"heap_before"`
	HeapAfterFirst   uint64 `json:"heap_after_first_step"`
	HeapAfterSecond  uint64 `json:"heap_after_second_step"`
	GrowthFirst      int64  `json:"growth_first_step"`  // bytes
	GrowthSecond     int64  `json:"growth_second_step"` // bytes
	GoroutinesBefore int    `json:"goroutines_before"`
	GoroutinesAfter  int    `json:"goroutines_after"`
	Goal             string `json:"goal"`
	OK               bool   `json:"ok"`
}

// memoryGoal: the room's state is per arrival bucket and minute, not per
// visitor (the token is the visitor's state), so 10,000 more waiting visitors
// should cost almost nothing; 1 MiB (105 bytes a visitor) is the limit.
const memoryGoal = 1 << 20

// Report is what Run measured.
type Report struct {
	Machine       Machine       `json:"machine"`
	Duration      time.Duration `json:"duration_per_side_ns"`
	Slice         time.Duration `json:"slice_ns"`
	Rounds        int           `json:"rounds"`
	Concurrency   int           `json:"concurrency"`
	LatencyLoad   float64       `json:"latency_load"`
	QueuePageSize int           `json:"queue_page_bytes"`
	OriginSize    int           `json:"origin_page_bytes"`

	AdmittedThroughput Comparison `json:"admitted_throughput"`
	AdmittedP99        Comparison `json:"admitted_p99_added"`
	QueuedThroughput   Comparison `json:"queued_throughput"`
	// Rates are the open-loop rates of the latency comparison, per round.
	Rates []float64 `json:"latency_rates"`
	// CPU time of the process per request in the throughput runs
	// (generator, origin and server together): less sensitive than
	// throughput to what else runs on the machine.
	AdmittedCPU Comparison `json:"admitted_cpu_per_request"`
	QueuedCPU   Comparison `json:"queued_cpu_per_response"`
	// For reference: p99 in the closed loop (at saturation it measures
	// queueing), and p50 and p99 with one visitor at a time (no queueing:
	// the time the server itself adds).
	ClosedP99 Comparison `json:"closed_loop_admitted_p99_added"`
	SerialP50 Comparison `json:"one_visitor_admitted_p50_added"`
	SerialP99 Comparison `json:"one_visitor_admitted_p99_added"`
	Memory    Memory     `json:"memory"`
	// External are the comparisons with the proxies operators run (nginx,
	// HAProxy), when installed; Proxies names them with their versions.
	External []Comparison `json:"external,omitempty"`
	Proxies  []string     `json:"proxies,omitempty"`
	// Split are the external proxies' own CPU per request, which splits
	// their rows' CPU into the proxy's and the rest's (generator and
	// origin, the same on both sides), and so estimates waitroom's node's
	// own cost.
	Split  []CPUSplit `json:"cpu_split,omitempty"`
	Errors uint64     `json:"errors"`
	Notes  []string   `json:"notes"`
}

// side is one side of a comparison: the load and the transport it keeps
// across slices.
type side struct {
	opt loadtest.Options
	tr  *http.Transport
	// cpu, when set, is the CPU time of a process outside this one that
	// serves the side (an external proxy), added to this process's.
	cpu func() time.Duration
}

// tally is a side's figures summed over the slices of a round.
type tally struct {
	elapsed, cpu time.Duration
	// ext is the part of cpu an external proxy's process used.
	ext                                        time.Duration
	admitted, queued, rejected, errors, missed uint64
	adm                                        loadtest.Histogram
	// p50s and p99s are each slice's admitted latency percentiles, in ms.
	p50s, p99s []float64
}

func (t *tally) add(r *loadtest.Result) {
	t.elapsed += r.Elapsed
	t.admitted += r.Admitted
	t.queued += r.Queued
	t.rejected += r.Rejected
	t.errors += r.Errors
	t.missed += r.Missed
	adm := r.AdmittedHistogram()
	t.adm.Merge(adm)
	t.p50s = append(t.p50s, ms(adm.Percentile(50)))
	t.p99s = append(t.p99s, ms(adm.Percentile(99)))
}

// pairedDiff is the median over slice pairs of room − base: a stall that
// hits one slice (a neighbour's burst on a shared machine) moves one pair,
// not the result.
func pairedDiff(base, room []float64) float64 {
	d := make([]float64, min(len(base), len(room)))
	for i := range d {
		d[i] = room[i] - base[i]
	}
	return median(d)
}

// cpuPer is the process's CPU time per request, in µs: generator, origin and
// server together.
func (t *tally) cpuPer(n uint64) float64 {
	if n == 0 {
		return 0
	}
	return float64(t.cpu) / float64(time.Microsecond) / float64(n)
}

func (t *tally) perSecond(n uint64) float64 {
	if t.elapsed <= 0 {
		return 0
	}
	return float64(n) / t.elapsed.Seconds()
}

// Run starts the Env and compares waitroom with its baselines under the
// same load from the same generator. Within a round the two sides of a
// comparison alternate every Slice (A B A B ..., starting with the other
// side on odd rounds) for Duration each; the report gives, per goal, the
// median over rounds of the per-round ratio.
func Run(ctx context.Context, o Options) (*Report, error) {
	o.defaults()
	env, err := StartEnv(ctx)
	if err != nil {
		return nil, err
	}
	defer env.Close()
	b := newBenchRun(ctx, o, env)
	defer b.closeIdle()
	if !o.NoProxies {
		xs, missing, err := startExternals(env)
		if err != nil {
			return nil, err
		}
		defer func() {
			for _, x := range xs {
				x.Close()
			}
		}()
		for _, x := range xs {
			if err := checkExternal(x); err != nil {
				return nil, err
			}
			b.addExternal(x)
		}
		b.rep.Notes = append(b.rep.Notes, missing...)
	}
	if err := b.warmUp(); err != nil {
		return nil, err
	}
	for round := range o.Rounds {
		if err := b.round(round); err != nil {
			return nil, err
		}
	}
	b.rep.Errors = b.errors
	b.rep.finish()
	b.closeIdle()
	mem, err := MeasureMemory(ctx, env, o.Visitors, o.Concurrency)
	if err != nil {
		return nil, err
	}
	b.rep.Memory = *mem
	if b.rep.Machine.NumCPU <= 4 {
		b.rep.Notes = append(b.rep.Notes, fmt.Sprintf("%d CPUs: the generator, the origin and the server under test share them, so every ratio includes the generator's and the origin's cost on both sides (it understates the server-only overhead); ratios are comparable between runs, absolute figures are not", b.rep.Machine.NumCPU))
	}
	return b.rep, nil
}

// newReport is a report of no rounds yet: the run's settings, and each
// comparison with its name, baseline and unit.
func newReport(o Options, env *Env) *Report {
	return &Report{
		Machine:            ThisMachine(),
		Duration:           o.Duration,
		Slice:              o.Slice,
		Rounds:             o.Rounds,
		Concurrency:        o.Concurrency,
		LatencyLoad:        o.LatencyLoad,
		QueuePageSize:      len(env.QueuePage.Body),
		OriginSize:         len(OriginBody),
		AdmittedThroughput: Comparison{Name: "admitted throughput", Baseline: "plain proxy", Unit: "req/s"},
		AdmittedP99:        Comparison{Name: "admitted p99, fixed rate", Baseline: "plain proxy", Unit: "ms", Difference: true},
		QueuedThroughput:   Comparison{Name: "queued throughput", Baseline: "bare server", Unit: "req/s"},
		AdmittedCPU:        Comparison{Name: "CPU per admitted request", Baseline: "plain proxy", Unit: "µs"},
		QueuedCPU:          Comparison{Name: "CPU per queued response", Baseline: "bare server", Unit: "µs"},
		ClosedP99:          Comparison{Name: "admitted p99, closed loop", Baseline: "plain proxy", Unit: "ms", Difference: true},
		SerialP50:          Comparison{Name: "admitted p50, one visitor", Baseline: "plain proxy", Unit: "ms", Difference: true},
		SerialP99:          Comparison{Name: "admitted p99, one visitor", Baseline: "plain proxy", Unit: "ms", Difference: true},
	}
}

// finish judges each comparison against its goal once every round is in.
func (rep *Report) finish() {
	rep.AdmittedThroughput.finish("≥ 0.95", func(v float64) bool { return v >= 0.95 })
	rep.AdmittedP99.finish("≤ +0.2 ms", func(v float64) bool { return v <= 0.2 })
	rep.QueuedThroughput.finish("≥ 0.90", func(v float64) bool { return v >= 0.9 })
	// CPU per request: the inverse ratio is what the throughput ratio would
	// be on a machine where nothing else runs.
	for _, c := range []*Comparison{&rep.AdmittedCPU, &rep.QueuedCPU} {
		c.finish("", func(float64) bool { return true })
		if c.Value > 0 {
			c.Inverse = 1 / c.Value
		}
	}
	for _, c := range []*Comparison{&rep.ClosedP99, &rep.SerialP50, &rep.SerialP99} {
		c.finish("", func(float64) bool { return true })
	}
	for i := range rep.External {
		c := &rep.External[i]
		c.finish(c.Goal, externalGoals[c.Goal])
		if c.Unit == "µs" && c.Value > 0 {
			c.Inverse = 1 / c.Value
		}
	}
}

// benchRun is one run of the comparisons: the sides driven, and what they
// measured so far.
type benchRun struct {
	ctx        context.Context
	o          Options
	rep        *Report
	transports []*http.Transport
	// errors counts the failed requests of the measured slices (the
	// warm-up's are not counted, when countErrors is false).
	errors      uint64
	countErrors bool

	// The pairs of sides compared: the plain proxy and the open room,
	// closed loop, at a fixed rate and with one visitor; the bare server
	// and the full room, each request a new visitor.
	proxyClosed, roomClosed *side
	proxyOpen, roomOpen     *side
	proxySerial, roomSerial *side
	bareQueued, roomQueued  *side
	// externals are the proxies operators run, when installed.
	externals []*externalSides
	env       *Env
}

func newBenchRun(ctx context.Context, o Options, env *Env) *benchRun {
	b := &benchRun{ctx: ctx, o: o, rep: newReport(o, env), countErrors: true, env: env}
	closed := loadtest.Options{Concurrency: o.Concurrency}
	newVisitors := loadtest.Options{Concurrency: o.Concurrency, RequestsPerVisitor: 1}
	serial := loadtest.Options{Concurrency: 1}
	proxyURL := env.ProxyURL + "open/" // the same path as the room's
	b.proxyClosed, b.roomClosed = b.side(proxyURL, closed), b.side(env.OpenURL, closed)
	b.proxyOpen, b.roomOpen = b.side(proxyURL, loadtest.Options{}), b.side(env.OpenURL, loadtest.Options{})
	b.proxySerial, b.roomSerial = b.side(proxyURL, serial), b.side(env.OpenURL, serial)
	b.bareQueued, b.roomQueued = b.side(env.BareURL, newVisitors), b.side(env.FullURL, newVisitors)
	return b
}

// side is a side driven at u with opt, on a transport of its own.
func (b *benchRun) side(u string, opt loadtest.Options) *side {
	tr := loadtest.NewTransport(max(64, 4*b.o.Concurrency))
	b.transports = append(b.transports, tr)
	opt.Targets = []string{u}
	opt.Transport = tr
	return &side{opt: opt, tr: tr}
}

func (b *benchRun) closeIdle() {
	for _, tr := range b.transports {
		tr.CloseIdleConnections()
	}
}

// run drives s for d and adds what it measured to t.
func (b *benchRun) run(s *side, d time.Duration, t *tally) error {
	opt := s.opt
	opt.Duration = d
	c0 := ProcessCPU()
	cIn := c0
	if s.cpu != nil {
		c0 += s.cpu()
	}
	r, err := loadtest.Run(b.ctx, opt)
	if err != nil {
		return err
	}
	c1 := ProcessCPU()
	if s.cpu != nil {
		e1 := s.cpu()
		t.ext += e1 - (c0 - cIn)
		c1 += e1
	}
	t.cpu += c1 - c0
	if b.countErrors {
		b.errors += r.Errors
	}
	t.add(r)
	return nil
}

// compare alternates base and room every slice for Duration each.
func (b *benchRun) compare(round int, base, room *side) (*tally, *tally, error) {
	var tb, tr tally
	n := max(1, int(b.o.Duration/b.o.Slice))
	for i := range n {
		first, second, t1, t2 := base, room, &tb, &tr
		if (i+round)%2 == 1 {
			first, second, t1, t2 = room, base, &tr, &tb
		}
		if err := b.run(first, b.o.Slice, t1); err != nil {
			return nil, nil, err
		}
		if err := b.run(second, b.o.Slice, t2); err != nil {
			return nil, nil, err
		}
	}
	return &tb, &tr, nil
}

// warmUp drives every side once for Warmup, uncounted.
func (b *benchRun) warmUp() error {
	b.countErrors = false
	defer func() { b.countErrors = true }()
	sides := []*side{b.proxyClosed, b.roomClosed, b.bareQueued, b.roomQueued, b.proxySerial, b.roomSerial}
	for _, e := range b.externals {
		sides = append(sides, e.closed, e.page)
		if e.authClosed != nil {
			sides = append(sides, e.authClosed)
		}
	}
	for _, s := range sides {
		if err := b.run(s, b.o.Warmup, &tally{}); err != nil {
			return err
		}
	}
	return nil
}

// round runs every comparison once and adds its ratios to the report.
func (b *benchRun) round(round int) error {
	rep := b.rep
	cb, cr, err := b.compare(round, b.proxyClosed, b.roomClosed)
	if err != nil {
		return err
	}
	if cr.queued+cr.rejected > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("round %d: the open room queued %d and rejected %d requests", round+1, cr.queued, cr.rejected))
	}
	rep.AdmittedThroughput.add(cb.perSecond(cb.admitted), cr.perSecond(cr.admitted))
	rep.AdmittedCPU.add(cb.cpuPer(cb.admitted), cr.cpuPer(cr.admitted))
	rep.ClosedP99.addDiff(cb.p99s, cr.p99s)

	rate := float64(int(cb.perSecond(cb.admitted) * b.o.LatencyLoad))
	rep.Rates = append(rep.Rates, rate)
	b.proxyOpen.opt.Rate, b.roomOpen.opt.Rate = rate, rate
	b.proxyOpen.opt.MaxInFlight, b.roomOpen.opt.MaxInFlight = 4*b.o.Concurrency, 4*b.o.Concurrency
	lb, lr, err := b.compare(round, b.proxyOpen, b.roomOpen)
	if err != nil {
		return err
	}
	rep.AdmittedP99.addDiff(lb.p99s, lr.p99s)
	if lb.missed+lr.missed > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("round %d: %d/%d open-loop starts missed (plain proxy/waitroom): the rate was too high for this machine", round+1, lb.missed, lr.missed))
	}

	sb, sr, err := b.compare(round, b.proxySerial, b.roomSerial)
	if err != nil {
		return err
	}
	rep.SerialP50.addDiff(sb.p50s, sr.p50s)
	rep.SerialP99.addDiff(sb.p99s, sr.p99s)

	for _, e := range b.externals {
		if err := b.roundExternal(round, e); err != nil {
			return err
		}
	}

	qb, qr, err := b.compare(round, b.bareQueued, b.roomQueued)
	if err != nil {
		return err
	}
	if qr.admitted > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("round %d: the full room admitted %d requests", round+1, qr.admitted))
	}
	rep.QueuedThroughput.add(qb.perSecond(qb.queued), qr.perSecond(qr.queued))
	rep.QueuedCPU.add(qb.cpuPer(qb.queued), qr.cpuPer(qr.queued))

	if b.o.Progress != nil {
		fmt.Fprintf(b.o.Progress, "round %d/%d: admitted %.0f vs %.0f req/s (× %.3f) | p99 at %.0f req/s %.3f vs %.3f ms (%+.3f) | one visitor p50 %.3f vs %.3f ms (%+.3f) | queued %.0f vs %.0f req/s (× %.3f)\n",
			round+1, b.o.Rounds,
			cb.perSecond(cb.admitted), cr.perSecond(cr.admitted), ratio(cr.perSecond(cr.admitted), cb.perSecond(cb.admitted)),
			rate, median(lb.p99s), median(lr.p99s), pairedDiff(lb.p99s, lr.p99s),
			median(sb.p50s), median(sr.p50s), pairedDiff(sb.p50s, sr.p50s),
			qb.perSecond(qb.queued), qr.perSecond(qr.queued), ratio(qr.perSecond(qr.queued), qb.perSecond(qb.queued)))
	}
	return nil
}

// MeasureMemory measures the live heap (after GC) while visitors new
// visitors, then visitors more, join the full room's queue with one request
// each, after an unmeasured first step of as many.
func MeasureMemory(ctx context.Context, env *Env, visitors, concurrency int) (*Memory, error) {
	m := &Memory{Visitors: visitors, Goal: fmt.Sprintf("< %d KiB", memoryGoal>>10)}
	step := func() (uint64, error) {
		r, err := loadtest.Run(ctx, loadtest.Options{Targets: []string{env.FullURL}, Concurrency: concurrency, RequestsPerVisitor: 1,
			Requests: int64(visitors), Duration: 5 * time.Minute})
		if err != nil {
			return 0, err
		}
		if r.Queued != uint64(visitors) {
			return 0, fmt.Errorf("memory: %d of %d new visitors were queued (%d admitted, %d errors)", r.Queued, visitors, r.Admitted, r.Errors)
		}
		return settledHeap(), nil
	}
	// A first step, not measured, lets the connections, pools and the
	// room's cells for this minute settle.
	if _, err := step(); err != nil {
		return nil, err
	}
	m.QueuedBefore = queuedIn(env, "full")
	m.GoroutinesBefore = runtime.NumGoroutine()
	m.HeapBefore = settledHeap()
	var err error
	if m.HeapAfterFirst, err = step(); err != nil {
		return nil, err
	}
	if m.HeapAfterSecond, err = step(); err != nil {
		return nil, err
	}
	m.GoroutinesAfter = runtime.NumGoroutine()
	m.QueuedAfter = queuedIn(env, "full")
	m.GrowthFirst = int64(m.HeapAfterFirst) - int64(m.HeapBefore)
	m.GrowthSecond = int64(m.HeapAfterSecond) - int64(m.HeapAfterFirst)
	m.OK = max(m.GrowthFirst, m.GrowthSecond) < memoryGoal
	return m, nil
}

// settledHeap is the live heap once the generator's connections are closed
// and two collections have emptied sync.Pools.
func settledHeap() uint64 {
	time.Sleep(200 * time.Millisecond) // servers notice closed connections
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func queuedIn(env *Env, room string) int64 {
	return env.Node.WaitingNow(room)
}

// WriteText prints the report: machine, method, the ratio table and notes.
func (rep *Report) WriteText(w io.Writer) error {
	m := rep.Machine
	fmt.Fprintf(w, "machine: %s, %d CPUs (GOMAXPROCS %d), %s %s/%s\n", m.CPUModel, m.NumCPU, m.GOMAXPROCS, m.GoVersion, m.OS, m.Arch)
	fmt.Fprintf(w, "method:  origin (%d-byte page), bare server (the %d-byte queue page), plain httputil.ReverseProxy and a waitroom node,\n", rep.OriginSize, rep.QueuePageSize)
	fmt.Fprintf(w, "         all on 127.0.0.1 in this process, driven by the same generator; the two sides of a comparison alternate\n")
	fmt.Fprintf(w, "         every %s for %s each per round; %d rounds; the result is the median of the per-round ratios\n         (latencies: of the per-round medians of paired slice differences).\n", rep.Slice, rep.Duration, rep.Rounds)
	fmt.Fprintf(w, "         throughput: closed loop, %d visitors keeping cookies; fixed rate: open loop at %.0f%% of the plain proxy's\n", rep.Concurrency, rep.LatencyLoad*100)
	fmt.Fprintf(w, "         throughput (%s req/s); queued: every request from a new visitor (decision, count, seal, page).\n\n", rates(rep.Rates))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\tbaseline\t\twaitroom\tresult\tgoal\t")
	row := func(c Comparison) {
		verdict := "ok"
		if !c.OK {
			verdict = "MISSED"
		}
		if c.Goal == "" {
			verdict = ""
		}
		res := fmt.Sprintf("× %.3f", c.Value)
		switch {
		case c.Difference:
			res = fmt.Sprintf("%+.3f %s", c.Value, c.Unit)
		case c.Inverse != 0:
			res = fmt.Sprintf("× %.3f (throughput × %.3f)", c.Value, c.Inverse)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s %s\t%s %s\t%s\t%s\t%s\n", c.Name, c.Baseline, num(median(c.Base)), c.Unit, num(median(c.Room)), c.Unit, res, c.Goal, verdict)
	}
	row(rep.AdmittedThroughput)
	row(rep.AdmittedP99)
	row(rep.QueuedThroughput)
	mem := rep.Memory
	verdict := "ok"
	if !mem.OK {
		verdict = "MISSED"
	}
	fmt.Fprintf(tw, "memory per %d waiting\t\t\t%s, then %s\theap growth\t%s\t%s\n", mem.Visitors, bytesStr(mem.GrowthFirst), bytesStr(mem.GrowthSecond), mem.Goal, verdict)
	row(rep.AdmittedCPU)
	row(rep.QueuedCPU)
	row(rep.ClosedP99)
	row(rep.SerialP50)
	row(rep.SerialP99)
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(rep.External) > 0 {
		// The proxies operators run, each one process with one worker on
		// loopback, their CPU counted with this process's.
		fmt.Fprintf(w, "\nagainst the proxies operators run: %s\n", strings.Join(rep.Proxies, ", "))
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "\tbaseline\t\twaitroom\tresult\tgoal\t")
		for _, c := range rep.External {
			row(c)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, sp := range rep.Split {
			rep.writeSplit(w, sp)
		}
	}
	fmt.Fprintf(w, "\nmemory: the full room counted %d waiting before the two steps and %d after; goroutines %d before, %d after\n",
		mem.QueuedBefore, mem.QueuedAfter, mem.GoroutinesBefore, mem.GoroutinesAfter)
	fmt.Fprintf(w, "errors during the rounds: %d\n", rep.Errors)
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	return nil
}

func rates(rs []float64) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%.0f", r)
	}
	return strings.Join(parts, ", ")
}

func num(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3f", v)
}

func bytesStr(b int64) string {
	a := b
	if a < 0 {
		a = -a
	}
	switch {
	case a >= 1<<20:
		return fmt.Sprintf("%+.1f MiB", float64(b)/(1<<20))
	case a >= 1<<10:
		return fmt.Sprintf("%+.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%+d B", b)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
