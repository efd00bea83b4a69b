package fidelity

import (
	"fmt"
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
// its first one; the others load the page and follow its cookie check, as
// people do. The figures are reported beside the goals, not held to them.

// isApp reports whether visitor k (0-based, in arrival order of its wave)
// is an app that reads the JSON form.
func isApp(k int) bool { return k%2 == 1 }

// Shown is what a queue answer told a visitor, and when the visitor got it.
type Shown struct {
	At time.Time `json:"at"`
	crowd.Wait
}

// The goals the figures are compared with in the table (reported, not held).
const (
	// EstimateWithin20Goal is the share of FIFO estimates that should be
	// within ±20 % of the wait that followed.
	EstimateWithin20Goal = 0.9
	// PositionWithin10Goal is the share of places in line that should be
	// within ±10 % of the true number ahead.
	PositionWithin10Goal = 0.9
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
	// Estimates counts the FIFO estimates judged (visitors let in later,
	// at least truth.MinJudgedWait after they were told);
	// EstimateWithin20 the share within ±20 % of that wait.
	Estimates        int      `json:"estimate_samples"`
	EstimateWithin20 *float64 `json:"estimate_within_20pct,omitempty"`
	// Random counts a random queue's estimates judged, and RandomBy25,
	// RandomBy50, RandomBy75 the shares let in within each percentile, of
	// the RandomN visitors (25th, 50th, 75th) whose percentile ran out
	// before the run ended.
	Random     int      `json:"random_samples"`
	RandomN    [3]int   `json:"random_samples_by_percentile"`
	RandomBy25 *float64 `json:"random_admitted_by_p25,omitempty"`
	RandomBy50 *float64 `json:"random_admitted_by_p50,omitempty"`
	RandomBy75 *float64 `json:"random_admitted_by_p75,omitempty"`
	// Positions counts the places in line judged, PositionWithin10 the
	// share within ±10 % of the true number ahead, PositionErrorP90 the
	// 90th percentile of the relative error.
	Positions        int      `json:"position_samples"`
	PositionWithin10 *float64 `json:"position_within_10pct,omitempty"`
	PositionErrorP90 *float64 `json:"position_error_p90,omitempty"`
}

// shown judges what the crowd's apps were told against the history; a
// priority code holder is left out (it is meant to pass the line, and its
// page says so).
func (j *judging) shown(hist *truth.History, end time.Duration) *ShownTruth {
	var shown []truth.Shown
	samples := 0
	for _, a := range j.log.Arrivals {
		if a.Shown == nil || a.Priority {
			continue
		}
		samples++
		s := a.Shown
		shown = append(shown, truth.Shown{
			At: j.since(s.At), Visitor: j.id(a.Visitor), Arrived: j.since(a.Arrived),
			WaitKnown: s.WaitTimeKnown, Wait: s.WaitTime, Wait25: s.WaitTime25, Wait75: s.WaitTime75, Random: s.IsRandomQueue,
		})
		if p := a.Placed; p != nil {
			shown = append(shown, truth.Shown{
				At: j.since(p.At), Visitor: j.id(a.Visitor), Arrived: j.since(a.Arrived),
				PositionKnown: true, Position: p.Position,
			})
		}
	}
	if samples == 0 {
		return nil
	}
	v := truth.JudgeShown(hist, shown, end)
	t := &ShownTruth{Samples: samples, Estimates: v.Estimates, Random: v.Random, Positions: v.Positions,
		RandomN: [3]int{v.Random25, v.Random50, v.Random75}}
	if v.Estimates > 0 {
		t.EstimateWithin20 = &v.EstimateWithin20
	}
	if v.Random > 0 {
		t.RandomBy25, t.RandomBy50, t.RandomBy75 = &v.RandomBy25, &v.RandomBy50, &v.RandomBy75
	}
	if v.Positions > 0 {
		t.PositionWithin10, t.PositionErrorP90 = &v.PositionWithin10, &v.PositionError90
	}
	return t
}

// lines are the figures as the table prints them: figure, value, goal.
func (t *ShownTruth) lines() [][3]string {
	if t == nil {
		return [][3]string{{"what the apps were told", "no app was queued", ""}}
	}
	pct := func(p *float64, n int, none string) string {
		if p == nil {
			return none
		}
		return fmt.Sprintf("%.1f%% of %d", *p*100, n)
	}
	out := [][3]string{
		{"estimates within ±20% of the wait", pct(t.EstimateWithin20, t.Estimates, fmt.Sprintf("none judged (no FIFO estimate with %v or more left)", truth.MinJudgedWait)),
			fmt.Sprintf("≥ %.0f%% (reported)", EstimateWithin20Goal*100)},
		{"places in line within ±10%", pct(t.PositionWithin10, t.Positions, "none shown"), fmt.Sprintf("≥ %.0f%% (reported)", PositionWithin10Goal*100)},
	}
	if t.PositionErrorP90 != nil {
		out = append(out, [3]string{"place in line, 90th percentile error", fmt.Sprintf("%.1f%%", *t.PositionErrorP90*100), ""})
	}
	if t.Random > 0 {
		out = append(out, [3]string{"random queue let in by p25/p50/p75",
			fmt.Sprintf("%.1f%% / %.1f%% / %.1f%% of %d / %d / %d", *t.RandomBy25*100, *t.RandomBy50*100, *t.RandomBy75*100, t.RandomN[0], t.RandomN[1], t.RandomN[2]),
			fmt.Sprintf("25/50/75%% ± %.0f points (reported)", RandomShareTolerance*100)})
	}
	return out
}
