package sim

import (
	"encoding/json"
	"fmt"
	"github.com/waitroom/waitroom/policy/truth"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/waitroom/waitroom/policy"
)

// Report is a scenario and the runs of it, one per strategy.
type Report struct {
	Scenario *Scenario `json:"scenario"`
	Runs     []*Result `json:"runs"`
	Goals    []Check   `json:"goals"`
}

// RunScenario runs the scenario once per strategy, in the order given
// (the scenario's own list when strategies is empty), and checks the goals
// for our policy.
func RunScenario(sc *Scenario, strategies ...string) (*Report, error) {
	if len(strategies) == 0 {
		strategies = sc.Strategies
	}
	rep := &Report{Scenario: sc}
	for _, s := range strategies {
		res, err := Run(sc, s)
		if err != nil {
			return nil, err
		}
		rep.Runs = append(rep.Runs, res)
		if s == StrategyOurs {
			rep.Goals = CheckGoals(sc, res)
		}
	}
	return rep, nil
}

// JSON is the report as indented JSON; the same scenario and seed give the
// same bytes.
func (r *Report) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Check is one goal checked against one run.
type Check struct {
	Goal   string  `json:"goal"`
	Want   string  `json:"want"`
	Got    string  `json:"got"`
	Value  float64 `json:"value"`
	Limit  float64 `json:"limit"`
	Passed bool    `json:"passed"`
	// NotApplicable: the run has nothing the goal measures (nobody queued,
	// a queue that existed before the run, no long waits for the estimate,
	// random queueing for FIFO order); it counts as passed, and is shown as
	// n/a, never as ok.
	NotApplicable bool `json:"not_applicable,omitempty"`
}

// Missed reports whether the run misses the goal.
func (c Check) Missed() bool { return !c.Passed && !c.NotApplicable }

// The goal thresholds.
const (
	MaxPeakActive = 1.02
	MaxPeakNew    = 1.02
	// MinFirstQueueUtil is the least utilisation at the first queueing: a
	// room fills to its limits before it queues anyone.
	MinFirstQueueUtil = 0.95
	// MinQueueUtil is no_early_queueing's bar: nobody queued below it.
	MinQueueUtil      = 0.97
	MaxFIFOInversions = 0.01
	MaxRandomCorr     = 0.1
	MinEstimateWithin = 0.9 // share of visitors whose FIFO estimate is within ±20%
	// MinEstimateSamples is the fewest scored estimates for the estimate
	// goal to apply.
	MinEstimateSamples = 20
)

// TruthGoals are checked on every run, whatever the scenario lists: the
// truth's four figures (package policy/truth).
var TruthGoals = []string{GoalPeakActive, GoalPeakNew, GoalFirstQueue, GoalFIFOInversions}

// goalsOf is every goal checked on the scenario: the truth's, then the
// others it lists.
func goalsOf(sc *Scenario) []string {
	gs := slices.Clone(TruthGoals)
	for _, g := range sc.Goals {
		if !slices.Contains(gs, g) {
			gs = append(gs, g)
		}
	}
	return gs
}

// CheckGoals checks a run against the truth's goals and the others the
// scenario lists.
func CheckGoals(sc *Scenario, res *Result) []Check {
	f := res.Figures
	var out []Check
	for _, g := range goalsOf(sc) {
		var c Check
		switch g {
		case GoalPeakActive:
			c = Check{Goal: g, Want: "peak active ≤ 1.02 × total_active_users", Value: f.PeakActive, Limit: MaxPeakActive, Passed: f.PeakActive <= MaxPeakActive}
			c.Got = fmt.Sprintf("%.3f", f.PeakActive)
		case GoalPeakNew:
			c = Check{Goal: g, Want: "peak new users per minute ≤ 1.02 × new_users_per_minute", Value: f.PeakNewPerMinute, Limit: MaxPeakNew, Passed: f.PeakNewPerMinute <= MaxPeakNew}
			c.Got = fmt.Sprintf("%.3f", f.PeakNewPerMinute)
		case GoalFirstQueue:
			c = Check{Goal: g, Want: "utilisation at first queueing ≥ 0.95", Limit: MinFirstQueueUtil}
			switch {
			case f.FirstQueueUtilisation == nil:
				c.NotApplicable, c.Passed, c.Got = true, true, "n/a: nobody was queued"
			case sc.Visitors.Arrival.SpoofBuckets:
				c.Value = *f.FirstQueueUtilisation
				c.NotApplicable, c.Passed = true, true
				c.Got = fmt.Sprintf("n/a: the queue exists from t = 0 (%.3f)", c.Value)
			default:
				c.Value = *f.FirstQueueUtilisation
				c.Passed = c.Value >= MinFirstQueueUtil
				c.Got = fmt.Sprintf("%.3f (%s)", c.Value, f.FirstQueueBinds)
			}
		case GoalNoEarlyQueue:
			u := 1.0
			if f.FirstQueueUtilisation != nil {
				u = *f.FirstQueueUtilisation
			}
			c = Check{Goal: g, Want: "nobody queued below 0.97 × limit", Value: u, Limit: MinQueueUtil,
				Passed: u >= MinQueueUtil && f.QueuedEarly == 0}
			c.Got = fmt.Sprintf("first queued at %s, %d queued below 0.97", fmtOpt(f.FirstQueueUtilisation, "none queued"), f.QueuedEarly)
		case GoalFIFOInversions:
			c = Check{Goal: g, Want: "FIFO inversions ≤ 1% of admissions", Value: f.FIFOInversions, Limit: MaxFIFOInversions, Passed: f.FIFOInversions <= MaxFIFOInversions}
			c.Got = fmt.Sprintf("%.2f%% (%d)", 100*f.FIFOInversions, f.Inversions)
			if m := sc.Room.QueueingMethod; m != string(policy.FIFO) {
				c.NotApplicable, c.Passed = true, true
				c.Got = fmt.Sprintf("n/a: %s queueing (%.2f%%)", m, 100*f.FIFOInversions)
			}
		case GoalRandomCorrelation:
			c = Check{Goal: g, Want: "|corr(arrival minute, wait)| ≤ 0.1", Value: f.WaitCorrelation, Limit: MaxRandomCorr, Passed: abs(f.WaitCorrelation) <= MaxRandomCorr}
			c.Got = fmt.Sprintf("%.3f", f.WaitCorrelation)
		case GoalEstimate:
			w := 0.0
			if f.EstimateWithin20 != nil {
				w = *f.EstimateWithin20
			}
			c = Check{Goal: g, Want: "FIFO estimate within ±20% on 90% of pages", Value: w, Limit: MinEstimateWithin,
				Passed: f.EstimateWithin20 != nil && w >= MinEstimateWithin}
			c.Got = fmt.Sprintf("%.1f%% within ±20%% (p90 error %s, n=%d)", 100*w, fmtOpt(f.EstimateErrorP90, "-"), f.EstimateSamples)
			if f.EstimateSamples < MinEstimateSamples {
				c.NotApplicable, c.Passed = true, true
				c.Got = fmt.Sprintf("n/a: %d pages shown with ≥ 5 min left to wait", f.EstimateSamples)
			}
		}
		out = append(out, c)
	}
	return out
}

// checkOf returns the check of goal g in checks.
func checkOf(checks []Check, g string) (Check, bool) {
	for _, c := range checks {
		if c.Goal == g {
			return c, true
		}
	}
	return Check{}, false
}

// flag marks a figure whose goal the run misses, so that no table passes a
// miss over in silence.
func flag(value string, checks []Check, g string) string {
	if c, ok := checkOf(checks, g); ok && c.Missed() {
		return value + " MISS"
	}
	return value
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

func fmtOpt(p *float64, none string) string {
	if p == nil {
		return none
	}
	return fmt.Sprintf("%.3f", *p)
}

// Row is one figure of the summary table: its name and one value per run.
type Row struct {
	Name   string
	Values []string
}

// Rows returns the summary table, one column per run: the truth's figures
// (a figure whose goal the run misses says MISS), then the other figures,
// the waits and counts.
func (r *Report) Rows() []Row {
	checks := make([][]Check, len(r.Runs))
	for i, res := range r.Runs {
		checks[i] = CheckGoals(r.Scenario, res)
	}
	get := func(name string, fn func(*Result) string) Row {
		row := Row{Name: name}
		for _, res := range r.Runs {
			row.Values = append(row.Values, fn(res))
		}
		return row
	}
	goal := func(name, g string, fn func(*Result) string) Row {
		row := Row{Name: name}
		for i, res := range r.Runs {
			row.Values = append(row.Values, flag(fn(res), checks[i], g))
		}
		return row
	}
	pct := func(f float64) string { return fmt.Sprintf("%.2f%%", 100*f) }
	optPct := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return pct(*p)
	}
	return []Row{
		goal("peak active / total_active_users", GoalPeakActive, func(x *Result) string { return fmt.Sprintf("%.3f", x.Figures.PeakActive) }),
		goal("peak new per minute / new_users_per_minute", GoalPeakNew, func(x *Result) string { return fmt.Sprintf("%.3f", x.Figures.PeakNewPerMinute) }),
		goal("utilisation at first queueing", GoalFirstQueue, fmtFirstQueue),
		goal("FIFO inversions (admissions)", GoalFIFOInversions, func(x *Result) string {
			return fmt.Sprintf("%s (%d)", pct(x.Figures.FIFOInversions), x.Figures.Inversions)
		}),
		get("  of which passed over / newcomers", func(x *Result) string {
			return fmt.Sprintf("%d / %d", x.Figures.InversionsPassedOver, x.Figures.InversionsNewcomers)
		}),
		get("errors (5xx)", func(*Result) string { return noErrors }),
		get("time above active limit", func(x *Result) string { return pct(x.Figures.TimeAboveLimit) }),
		get("new visitors queued below 0.97", func(x *Result) string { return fmt.Sprint(x.Figures.QueuedEarly) }),
		get("utilisation while queueing", func(x *Result) string { return fmtOpt(x.Figures.UtilisationWhileQueueing, "-") }),
		get("origin requests outside a session", func(x *Result) string { return fmt.Sprint(x.Figures.OutsideSession) }),
		get("corr(arrival minute, wait)", func(x *Result) string { return fmt.Sprintf("%.3f", x.Figures.WaitCorrelation) }),
		get("wait slope (s per arrival minute)", func(x *Result) string { return fmt.Sprintf("%.1f", x.Figures.WaitSlope) }),
		get("estimate error p50", func(x *Result) string { return optPct(x.Figures.EstimateErrorP50) }),
		get("estimate error p90", func(x *Result) string { return optPct(x.Figures.EstimateErrorP90) }),
		get("estimates within ±20% (every page)", func(x *Result) string {
			return optPct(x.Figures.EstimateWithin20) + fmt.Sprintf(" (n=%d)", x.Figures.EstimateSamples)
		}),
		get("  on first pages", func(x *Result) string {
			return optPct(x.Figures.FirstEstimateWithin20) + fmt.Sprintf(" (n=%d)", x.Figures.FirstEstimateSamples)
		}),
		get("estimate bias p50 (+: too long)", func(x *Result) string {
			if x.Figures.EstimateBias == nil {
				return "-"
			}
			return fmt.Sprintf("%+.1f%%", 100**x.Figures.EstimateBias)
		}),
		get("random admitted by p25 / p50 / p75", func(x *Result) string {
			n, e := x.Figures.RandomSamplesBy, x.Figures.RandomMargin
			return fmt.Sprintf("%s / %s / %s (±%.1f/%.1f/%.1f points, n=%d/%d/%d)", optPct(x.Figures.RandomBy25), optPct(x.Figures.RandomBy50), optPct(x.Figures.RandomBy75),
				100*e[0], 100*e[1], 100*e[2], n[0], n[1], n[2])
		}),
		get("places within ±10% (every page)", func(x *Result) string {
			return optPct(x.Figures.PositionWithin10) + fmt.Sprintf(" (p90 error %s, n=%d)", optPct(x.Figures.PositionErrorP90), x.Figures.PositionSamples)
		}),
		get("  on first pages", func(x *Result) string {
			return optPct(x.Figures.FirstPositionWithin10) + fmt.Sprintf(" (n=%d)", x.Figures.FirstPositionSamples)
		}),
		get("  first ten in line, exact", func(x *Result) string {
			return optPct(x.Figures.FrontPositionExact) + fmt.Sprintf(" (n=%d)", x.Figures.FrontPositionSamples)
		}),
		get("  first in line, told 0", func(x *Result) string {
			return optPct(x.Figures.HeadsToldZero) + fmt.Sprintf(" (n=%d)", x.Figures.Heads)
		}),
		get("wait p50 / p90 / max", func(x *Result) string {
			return fmt.Sprintf("%s / %s / %s", fmtSecs(x.Figures.WaitP50), fmtSecs(x.Figures.WaitP90), fmtSecs(x.Figures.WaitMax))
		}),
		get("visitors / admissions", func(x *Result) string { return fmt.Sprintf("%d / %d", x.Counts.Visitors, x.Counts.Admissions) }),
		get("queued / never admitted / abandoned", func(x *Result) string {
			return fmt.Sprintf("%d / %d / %d", x.Counts.Queued, x.Counts.NeverAdmitted, x.Counts.Abandoned)
		}),
	}
}

// noErrors fills the errors column: a simulator answers no HTTP, so it
// has no 5xx to count (the real-process run does).
const noErrors = "n/a (simulated)"

// fmtFirstQueue is the utilisation at the first queueing and the limit
// that bound it.
func fmtFirstQueue(x *Result) string {
	f := x.Figures
	if f.FirstQueueUtilisation == nil {
		return "none queued"
	}
	b := "active"
	if f.FirstQueueBinds == truth.BindsNewPerMinute {
		b = "per minute"
	}
	return fmt.Sprintf("%.3f (%s)", *f.FirstQueueUtilisation, b)
}

func fmtSecs(s float64) string {
	if s < 60 {
		return fmt.Sprintf("%.0fs", s)
	}
	return fmt.Sprintf("%.1fm", s/60)
}

// WriteTable prints the summary table, one column per strategy, then the
// goal checks for our policy.
func (r *Report) WriteTable(w io.Writer) error {
	sc := r.Scenario
	fmt.Fprintf(w, "scenario %s (seed %d): %d nodes, gossip %v ± %v, loss %.0f%%, room %d active / %d per minute, session %d min, %s\n",
		sc.Name, sc.Seed, sc.Nodes.Count, sc.Gossip.Delay.D(), sc.Gossip.Jitter.D(), 100*sc.Gossip.Loss,
		sc.Room.TotalActiveUsers, sc.Room.NewUsersPerMinute, int(sc.session().Minutes()), sc.Room.QueueingMethod)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"figure"}
	for _, res := range r.Runs {
		head = append(head, res.Strategy)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, row := range r.Rows() {
		fmt.Fprintln(tw, row.Name+"\t"+strings.Join(row.Values, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for i := range r.partitions() {
		pt := sc.partition(i)
		fmt.Fprintf(w, "partition %d: %v to %v, sides %s\n", i+1, pt.at, pt.at+pt.For.D(), sidesString(pt.Groups))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  "+strings.Join(head, "\t"))
		for _, row := range r.PartitionRows(i) {
			fmt.Fprintln(tw, "  "+row.Name+"\t"+strings.Join(row.Values, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(r.Goals) > 0 {
		fmt.Fprintln(w, "goals (ours):")
		missed := 0
		for _, c := range r.Goals {
			mark := "ok  "
			switch {
			case c.NotApplicable:
				mark = "n/a "
			case c.Missed():
				mark = "MISS"
				missed++
			}
			fmt.Fprintf(w, "  %s %-48s %s\n", mark, c.Want, c.Got)
		}
		fmt.Fprintf(w, "goals missed: %d of %d\n", missed, len(r.Goals))
	}
	return nil
}

// partitions is how many partitions the runs report.
func (r *Report) partitions() int {
	if len(r.Runs) == 0 {
		return 0
	}
	return len(r.Runs[0].Partitions)
}

type partitionAt struct {
	at time.Duration
	*Partition
}

// partition returns the scenario's i-th partition and when it starts.
func (sc *Scenario) partition(i int) partitionAt {
	for _, e := range sc.Events {
		if e.Partition == nil {
			continue
		}
		if i == 0 {
			return partitionAt{e.At.D(), e.Partition}
		}
		i--
	}
	return partitionAt{}
}

func sidesString(groups [][]int) string {
	var parts []string
	for _, g := range groups {
		parts = append(parts, fmt.Sprint(g))
	}
	return strings.Join(parts, " | ")
}

// PartitionRows returns the figures of the i-th partition, one column per
// run: the room's peaks during the cut and after the heal, the inversions,
// then each side's.
func (r *Report) PartitionRows(i int) []Row {
	get := func(name string, fn func(*PartitionStat) string) Row {
		row := Row{Name: name}
		for _, res := range r.Runs {
			row.Values = append(row.Values, fn(&res.Partitions[i]))
		}
		return row
	}
	rows := []Row{
		get("room, during the cut: peak new per minute / peak active (over limits)", func(p *PartitionStat) string {
			return fmt.Sprintf("%.3f / %.3f", p.PeakNewPerMinute, p.PeakActive)
		}),
		get("room, 5 min after the heal: peak new per minute / peak active", func(p *PartitionStat) string {
			return fmt.Sprintf("%.3f / %.3f", p.AfterHealPeakNewPerMinute, p.AfterHealPeakActive)
		}),
		get("FIFO inversions during the cut (across sides)", func(p *PartitionStat) string {
			return fmt.Sprintf("%.2f%% (%.2f%%)", 100*p.FIFOInversions, 100*p.AcrossInversions)
		}),
	}
	if len(r.Runs) == 0 {
		return rows
	}
	for g, s := range r.Runs[0].Partitions[i].Sides {
		name := fmt.Sprintf("side %v (part %d/min, %d active)", s.Nodes, s.PartNew, s.PartActive)
		side := func(p *PartitionStat) *SideStat { return &p.Sides[g] }
		rows = append(rows,
			get(name+": admitted per minute", func(p *PartitionStat) string { return intsString(side(p).AdmittedPerMinute) }),
			get(name+": arrived / admitted", func(p *PartitionStat) string {
				return fmt.Sprintf("%d / %d", side(p).Arrivals, side(p).Admitted)
			}),
			get(name+": peak active", func(p *PartitionStat) string { return fmt.Sprint(side(p).PeakActive) }),
			get(name+": waiting at the heal", func(p *PartitionStat) string { return fmt.Sprint(side(p).WaitingAtHeal) }),
			get(name+": wait p50 / p90 (arrived in the cut)", func(p *PartitionStat) string {
				return fmt.Sprintf("%s / %s", fmtSecs(side(p).WaitP50), fmtSecs(side(p).WaitP90))
			}),
		)
	}
	return rows
}

func intsString(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, " ")
}

// definitions opens the Markdown: what every figure means, as the truth and
// the recorder measure it.
const definitions = `Every figure is judged as the origin sees it, by the simulated wall clock, whatever the
nodes' minute buckets say (` + "`policy/truth`" + `, which ` + "`waitroom fidelity`" + ` shares).

| figure | definition | goal |
| --- | --- | --- |
| peak active / total_active_users | most visitors active at once: from the admission until ` + "`session_duration`" + ` after the last request the origin saw (a request a node lets through after that opens a new session) | ≤ 1.02 |
| peak new/min / new_users_per_minute | most admissions within one wall-clock minute | ≤ 1.02 |
| util. at first queueing | when the first visitor is queued: active / total_active_users or this minute's admissions / new_users_per_minute, whichever is larger (the binding limit in brackets) | ≥ 0.95 |
| FIFO inversions | share of admissions made while someone who arrived in an earlier wall-clock minute was waiting and was let in more than 2 s later, or not at all (count in brackets) | ≤ 1% |
| of which passed over / newcomers | inversions after which an earlier arrival still waiting was turned away at a check-in within 24 s (its place was taken) / whose visitor was let in at its first request, never queued | |
| errors (5xx) | the simulator answers no HTTP; the real-process run counts them | 0 |
| time above limit | share of the run with more visitors active than total_active_users | |
| queued < 0.97 | new visitors queued while the utilisation was below 0.97 and nobody else waited | |
| util. while queueing | mean utilisation (active, or admissions of the last 60 s) while anyone waited | |
| corr(arrival min, wait) | Pearson's r over admitted visitors | ≤ 0.1 for random |
| estimate error | the estimate shown on every queue page, a visitor's first included, against the wait that then remained, for remaining waits ≥ 5 min | within ±20% on 90% of pages |

A figure whose goal the run misses is bold and says MISS (for both strategies); the goals
table below checks ours.

`

// mdCell escapes the pipes of a Markdown table cell.
func mdCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// mdFlag marks a Markdown cell whose goal the run misses.
func mdFlag(value string, checks []Check, g string) string {
	if c, ok := checkOf(checks, g); ok && c.Missed() {
		return "**" + value + " MISS**"
	}
	return value
}

// writeShownMarkdown prints what the queue pages said, as the truth judged
// it page by page: a row per scenario and strategy whose pages showed an
// estimate or a place in line.
func writeShownMarkdown(w io.Writer, reports []*Report) {
	fmt.Fprintln(w, "What the queue pages said, judged on every page (`policy/truth`):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| scenario | strategy | estimates within ±20% | on first pages | places within ±10% | on first pages | first ten in line, exact | first in line, told 0 | random: let in by p25 / p50 / p75 |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	share := func(p *float64, n int) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprintf("%.1f%% (n=%d)", 100**p, n)
	}
	for _, rep := range reports {
		for _, res := range rep.Runs {
			f := res.Figures
			if f.EstimateSamples+f.FirstEstimateSamples+f.PositionSamples+f.RandomSamples == 0 {
				continue
			}
			random := "-"
			if f.RandomSamples > 0 {
				n := f.RandomSamplesBy
				random = fmt.Sprintf("%.1f / %.1f / %.1f%% (n=%d / %d / %d)", 100**f.RandomBy25, 100**f.RandomBy50, 100**f.RandomBy75, n[0], n[1], n[2])
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", rep.Scenario.Name, res.Strategy,
				share(f.EstimateWithin20, f.EstimateSamples), share(f.FirstEstimateWithin20, f.FirstEstimateSamples),
				share(f.PositionWithin10, f.PositionSamples), share(f.FirstPositionWithin10, f.FirstPositionSamples),
				share(f.FrontPositionExact, f.FrontPositionSamples), share(f.HeadsToldZero, f.Heads), random)
		}
	}
}

// WriteMarkdown prints one comparison table for several reports: a row per
// scenario and strategy, the truth's figures first (a figure whose goal the
// run misses is bold and says MISS, for every strategy), then the goal
// checks of our policy, the misses listed once more, and the partitions.
func WriteMarkdown(w io.Writer, reports []*Report) error {
	fmt.Fprint(w, definitions)
	fmt.Fprintln(w, "| scenario | strategy | peak active / total_active_users | peak new/min / new_users_per_minute | util. at first queueing | FIFO inversions | errors (5xx) | time above limit | queued < 0.97 | util. while queueing | corr(arrival min, wait) | estimate error p50 / p90 | estimates within ±20% | wait p50 / p90 |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, rep := range reports {
		for _, res := range rep.Runs {
			f := res.Figures
			checks := CheckGoals(rep.Scenario, res)
			est := "-"
			if f.EstimateErrorP50 != nil {
				est = fmt.Sprintf("%.0f%% / %.0f%%", 100**f.EstimateErrorP50, 100**f.EstimateErrorP90)
			}
			within := "-"
			if f.EstimateWithin20 != nil {
				within = fmt.Sprintf("%.0f%% (n=%d)", 100**f.EstimateWithin20, f.EstimateSamples)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %.2f%% | %d | %s | %.3f | %s | %s | %s / %s |\n",
				rep.Scenario.Name, res.Strategy,
				mdFlag(fmt.Sprintf("%.3f", f.PeakActive), checks, GoalPeakActive),
				mdFlag(fmt.Sprintf("%.3f", f.PeakNewPerMinute), checks, GoalPeakNew),
				mdFlag(fmtFirstQueue(res), checks, GoalFirstQueue),
				mdFlag(fmt.Sprintf("%.2f%% (%d)", 100*f.FIFOInversions, f.Inversions), checks, GoalFIFOInversions),
				noErrors, 100*f.TimeAboveLimit, f.QueuedEarly, fmtOpt(f.UtilisationWhileQueueing, "-"),
				f.WaitCorrelation, est, within, fmtSecs(f.WaitP50), fmtSecs(f.WaitP90))
		}
	}
	fmt.Fprintln(w)
	writeShownMarkdown(w, reports)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| scenario | goal (ours) | result | |")
	fmt.Fprintln(w, "| --- | --- | --- | --- |")
	var missed []string
	for _, rep := range reports {
		for _, c := range rep.Goals {
			mark := "ok"
			switch {
			case c.NotApplicable:
				mark = "n/a"
			case c.Missed():
				mark = "**MISS**"
				missed = append(missed, fmt.Sprintf("%s: %s (got %s)", rep.Scenario.Name, mdCell(c.Want), mdCell(c.Got)))
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", rep.Scenario.Name, mdCell(c.Want), mdCell(c.Got), mark)
		}
	}
	fmt.Fprintln(w)
	if len(missed) == 0 {
		fmt.Fprintln(w, "Every goal holds in every scenario (ours).")
	} else {
		fmt.Fprintf(w, "**Missed goals (ours): %d.**\n\n", len(missed))
		for _, m := range missed {
			fmt.Fprintf(w, "- **MISS** %s\n", m)
		}
	}
	return writePartitionsMarkdown(w, reports)
}

// WriteReadme prints the README's short table: a row per scenario, ours /
// the reference's figure in each cell, a miss bold and marked.
func WriteReadme(w io.Writer, reports []*Report) error {
	if len(reports) > 0 {
		var names []string
		for _, res := range reports[0].Runs {
			names = append(names, res.Strategy)
		}
		fmt.Fprintf(w, "Each cell: %s; goals ≤ 1.02, ≤ 1.02, ≥ 0.95, ≤ 1%%; a miss is bold and says MISS.\n\n", strings.Join(names, " / "))
	}
	fmt.Fprintln(w, "| scenario | peak active / limit | peak new per min / limit | utilisation at first queueing | FIFO inversions | errors | median wait |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- |")
	for _, rep := range reports {
		cells := make([][]string, 5)
		for _, res := range rep.Runs {
			f := res.Figures
			checks := CheckGoals(rep.Scenario, res)
			cells[0] = append(cells[0], mdFlag(fmt.Sprintf("%.3f", f.PeakActive), checks, GoalPeakActive))
			cells[1] = append(cells[1], mdFlag(fmt.Sprintf("%.3f", f.PeakNewPerMinute), checks, GoalPeakNew))
			cells[2] = append(cells[2], mdFlag(fmtOpt(f.FirstQueueUtilisation, "none queued"), checks, GoalFirstQueue))
			cells[3] = append(cells[3], mdFlag(fmt.Sprintf("%.2f%%", 100*f.FIFOInversions), checks, GoalFIFOInversions))
			cells[4] = append(cells[4], fmtSecs(f.WaitP50))
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | n/a | %s |\n", rep.Scenario.label(),
			strings.Join(cells[0], " / "), strings.Join(cells[1], " / "), strings.Join(cells[2], " / "),
			strings.Join(cells[3], " / "), strings.Join(cells[4], " / "))
	}
	return nil
}

// writePartitionsMarkdown prints, when any run had a partition, a row per
// side of each cut: the room's figures while cut and after the heal, and the
// side's.
func writePartitionsMarkdown(w io.Writer, reports []*Report) error {
	cut := false
	for _, rep := range reports {
		cut = cut || rep.partitions() > 0
	}
	if !cut {
		return nil
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| scenario | strategy | cut | room: peak new/min, peak active (cut) | after heal | FIFO inversions (across) | side | part: new/min, active | admitted per minute | arrived / admitted | peak active | waiting at heal | wait p50 / p90 |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, rep := range reports {
		for _, res := range rep.Runs {
			for i, p := range res.Partitions {
				pt := rep.Scenario.partition(i)
				for _, s := range p.Sides {
					fmt.Fprintf(w, "| %s | %s | %v–%v | %.3f, %.3f | %.3f, %.3f | %.2f%% (%.2f%%) | %v | %d, %d | %s | %d / %d | %d | %d | %s / %s |\n",
						res.Scenario, res.Strategy, pt.at, pt.at+pt.For.D(), p.PeakNewPerMinute, p.PeakActive,
						p.AfterHealPeakNewPerMinute, p.AfterHealPeakActive, 100*p.FIFOInversions, 100*p.AcrossInversions,
						s.Nodes, s.PartNew, s.PartActive, intsString(s.AdmittedPerMinute), s.Arrivals, s.Admitted,
						s.PeakActive, s.WaitingAtHeal, fmtSecs(s.WaitP50), fmtSecs(s.WaitP90))
				}
			}
		}
	}
	return nil
}
