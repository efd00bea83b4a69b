package fidelity

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/waitroom/waitroom/edge/crowd"
	"github.com/waitroom/waitroom/policy/truth"
)

// What the queue page tells a waiting visitor is judged too: its estimate
// against the wait it then had, its place in line against the number of
// earlier arrivals still waiting, and a random queue's percentiles against
// who got in within them, by package truth as the simulator judges them.
// Browsers cannot be asked what they read, so one visitor in two is an app
// that asks for the queue answer's JSON form (the room allows it) and notes
// every one it gets, its first page included; the others load the page and
// follow its cookie check, as people do. Every page is judged, and the
// first pages and the first ten in line apart: a visitor reads its first
// page most closely, and the front of the line is where a place of one too
// many shows. The figures are reported beside the goals, not held to them.

// isApp reports whether visitor k (0-based, in arrival order of its wave)
// is an app that reads the JSON form.
func isApp(k int) bool { return k%2 == 1 }

// Shown is what a queue answer told a visitor, and when the visitor got it.
// First: it answered the visitor's first request (before its cookie came
// back).
type Shown struct {
	At    time.Time `json:"at"`
	First bool      `json:"first,omitempty"`
	crowd.Wait
}

// The goals the figures are compared with in the table (reported, not held).
const (
	// EstimateWithin20Goal is the share of FIFO estimates, on every page,
	// that should be within ±20 % of the wait that followed.
	EstimateWithin20Goal = 0.9
	// PositionWithin10Goal is the share of places in line, on every page,
	// that should be within ±10 % of the true number ahead (exact below
	// ten ahead), and FirstPositionWithin10Goal the same of first pages.
	// A visitor with nobody ahead is told 0, always.
	PositionWithin10Goal      = 0.95
	FirstPositionWithin10Goal = 0.9
	// RandomShareTolerance is how far (in share) a random queue's
	// shares admitted within the 25th, 50th and 75th percentile estimates
	// should be from 25, 50 and 75 %.
	RandomShareTolerance = 0.05
)

// ShownTruth is how true what the apps were told came out (see
// truth.ShownVerdict for the definitions); a figure is nil when nothing was
// judged for it.
type ShownTruth struct {
	// Samples counts the apps that read a queue answer.
	Samples int `json:"samples"`
	truth.Figures
}

// shown judges what the crowd's apps were told against the history; a
// priority code holder is left out (it is meant to pass the line, and its
// page says so).
func (j *judging) shown(hist *truth.History, end time.Duration) *ShownTruth {
	var shown []truth.Shown
	samples := 0
	for _, a := range j.log.Arrivals {
		if len(a.Pages) == 0 || a.Priority {
			continue
		}
		samples++
		for _, p := range a.Pages {
			w := p.Percentiles()
			s := truth.Shown{
				At: j.since(p.At), Visitor: j.id(a.Visitor), Arrived: j.since(a.Arrived), First: p.First,
				WaitKnown: p.WaitTimeKnown, Wait25: w[0], Wait: w[1], Wait75: w[2], Random: p.IsRandomQueue,
				PositionKnown: p.PositionKnown, Position: p.Position,
			}
			// A random queue's page speaks of the lottery until the
			// operator switches the method.
			if i := slices.IndexFunc(j.log.Switches, p.At.Before); i >= 0 && p.IsRandomQueue {
				s.Until = j.since(j.log.Switches[i])
			}
			shown = append(shown, s)
		}
	}
	if samples == 0 {
		return nil
	}
	return &ShownTruth{Samples: samples, Figures: truth.JudgeShown(hist, shown, end).Figures()}
}

// lines are the figures as the table prints them: figure, value, goal and
// whether it was met ("" where there is no goal or nothing to judge).
func (t *ShownTruth) lines() [][4]string {
	if t == nil {
		return [][4]string{{"what the apps were told", "no app was queued", "", ""}}
	}
	pct := func(p *float64, n int, none string) string {
		if p == nil {
			return none
		}
		return fmt.Sprintf("%.1f%% of %d", *p*100, n)
	}
	atLeast := func(p *float64, goal float64) [2]string {
		g := fmt.Sprintf("≥ %.0f%% (reported)", goal*100)
		switch {
		case p == nil:
			return [2]string{g, ""}
		case *p >= goal:
			return [2]string{g, "met"}
		}
		return [2]string{g, "MISSED"}
	}
	row := func(figure, value string, goal [2]string) [4]string {
		return [4]string{figure, value, goal[0], goal[1]}
	}
	out := [][4]string{
		row("estimates within ±20% of the wait, every page", pct(t.EstimateWithin20, t.EstimateSamples, fmt.Sprintf("none judged (no FIFO estimate with %v or more left)", truth.MinJudgedWait)),
			atLeast(t.EstimateWithin20, EstimateWithin20Goal)),
		row("  on first pages", pct(t.FirstEstimateWithin20, t.FirstEstimateSamples, "none judged"), [2]string{}),
		row("places in line within ±10%, every page", pct(t.PositionWithin10, t.PositionSamples, "none shown"), atLeast(t.PositionWithin10, PositionWithin10Goal)),
		row("  on first pages", pct(t.FirstPositionWithin10, t.FirstPositionSamples, "none shown"), atLeast(t.FirstPositionWithin10, FirstPositionWithin10Goal)),
		row("  the first ten in line, exact", pct(t.FrontPositionExact, t.FrontPositionSamples, "none shown"), [2]string{}),
		row("  nobody ahead, told 0", pct(t.HeadsToldZero, t.Heads, "none shown"), atLeast(t.HeadsToldZero, 1)),
	}
	if t.PositionErrorP90 != nil {
		out = append(out, row("place in line, 90th percentile error", fmt.Sprintf("%.1f%%", *t.PositionErrorP90*100), [2]string{}))
	}
	if t.RandomSamples > 0 {
		by := [3]float64{*t.RandomBy25, *t.RandomBy50, *t.RandomBy75}
		met := "met"
		for i, want := range [3]float64{0.25, 0.5, 0.75} {
			if math.Abs(by[i]-want) > RandomShareTolerance+1e-9 {
				met = "MISSED"
			}
		}
		out = append(out, row("random queue let in by p25/p50/p75",
			fmt.Sprintf("%.1f%% / %.1f%% / %.1f%% (95%% margin ±%.1f / %.1f / %.1f points) of %d / %d / %d", by[0]*100, by[1]*100, by[2]*100,
				t.RandomMargin[0]*100, t.RandomMargin[1]*100, t.RandomMargin[2]*100, t.RandomSamplesBy[0], t.RandomSamplesBy[1], t.RandomSamplesBy[2]),
			[2]string{fmt.Sprintf("25/50/75%% ± %.0f points (reported)", RandomShareTolerance*100), met}))
	}
	return out
}
