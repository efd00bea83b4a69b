package sim_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/policy/sim"
	"github.com/waitroom/waitroom/policy/truth"
)

// TestEveryMissedGoalIsMarked builds runs whose figures miss one goal each
// and checks that the text table, the Markdown and the README table all say
// so, on that figure and nowhere else; a goal that does not apply says n/a,
// never ok.
func TestEveryMissedGoalIsMarked(t *testing.T) {
	good := func() sim.Figures {
		return sim.Figures{PeakActive: 1.0, PeakNewPerMinute: 1.0, FirstQueueUtilisation: ptr(0.99), FirstQueueBinds: truth.BindsActive}
	}
	cases := []struct {
		name    string
		method  string
		figures func(f *sim.Figures)
		// missed is the goal the run misses ("" for none); row is the
		// text table's row that must say MISS.
		missed, row string
		na          string // a goal that must be n/a
	}{
		{name: "a run within every goal says MISS nowhere", figures: func(*sim.Figures) {}},
		{name: "peak active above 1.02 of the limit is marked", figures: func(f *sim.Figures) { f.PeakActive = 1.03 },
			missed: sim.GoalPeakActive, row: "peak active / total_active_users"},
		{name: "peak new users per minute above 1.02 of the limit is marked", figures: func(f *sim.Figures) { f.PeakNewPerMinute = 1.1 },
			missed: sim.GoalPeakNew, row: "peak new per minute / new_users_per_minute"},
		{name: "a first queueing below 0.95 utilisation is marked", figures: func(f *sim.Figures) { f.FirstQueueUtilisation = ptr(0.6) },
			missed: sim.GoalFirstQueue, row: "utilisation at first queueing"},
		{name: "FIFO inversions above 1% are marked", figures: func(f *sim.Figures) { f.FIFOInversions, f.Inversions = 0.02, 7 },
			missed: sim.GoalFIFOInversions, row: "FIFO inversions"},
		{name: "a run that queued nobody has no utilisation at first queueing to judge", figures: func(f *sim.Figures) { f.FirstQueueUtilisation = nil },
			na: sim.GoalFirstQueue},
		{name: "random queueing has no FIFO order to judge", method: "random", figures: func(f *sim.Figures) { f.FIFOInversions = 0.5 },
			na: sim.GoalFIFOInversions},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sc := load(t, "sessions-1min")
			if c.method != "" {
				sc.Room.QueueingMethod = c.method
			}
			res := &sim.Result{Scenario: sc.Name, Strategy: sim.StrategyOurs, Figures: good()}
			c.figures(&res.Figures)
			rep := &sim.Report{Scenario: sc, Runs: []*sim.Result{res}, Goals: sim.CheckGoals(sc, res)}

			for _, g := range sim.TruthGoals {
				var check *sim.Check
				for i := range rep.Goals {
					if rep.Goals[i].Goal == g {
						check = &rep.Goals[i]
					}
				}
				switch {
				case check == nil:
					t.Errorf("goal %s was not checked", g)
				case g == c.missed && !check.Missed():
					t.Errorf("goal %s: %+v, want missed", g, *check)
				case g != c.missed && check.Missed():
					t.Errorf("goal %s: %+v, want met", g, *check)
				case g == c.na && !check.NotApplicable:
					t.Errorf("goal %s: %+v, want n/a", g, *check)
				}
			}

			var text bytes.Buffer
			if err := rep.WriteTable(&text); err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(text.String(), "\n") {
				marked := strings.Contains(line, "MISS")
				figureRow := c.row != "" && strings.HasPrefix(line, c.row)
				goalLine := strings.HasPrefix(strings.TrimSpace(line), "MISS ")
				if marked && !figureRow && !goalLine {
					t.Errorf("text: MISS on a line of a goal the run meets: %q", line)
				}
				if figureRow && !marked {
					t.Errorf("text: the missed figure is not marked: %q", line)
				}
				if c.na != "" && strings.Contains(line, "n/a ") && strings.Contains(line, " ok ") {
					t.Errorf("text: n/a shown as ok: %q", line)
				}
			}
			if want := c.missed != ""; strings.Contains(text.String(), "  MISS ") != want {
				t.Errorf("text: goal lines say MISS: %v, want %v\n%s", !want, want, text.String())
			}

			var md bytes.Buffer
			if err := sim.WriteMarkdown(&md, []*sim.Report{rep}); err != nil {
				t.Fatal(err)
			}
			if want := c.missed != ""; strings.Contains(md.String(), " MISS**") != want || strings.Contains(md.String(), "| **MISS** |") != want {
				t.Errorf("markdown: marked %v, want %v\n%s", !want, want, md.String())
			}
			if c.na != "" && !strings.Contains(md.String(), "| n/a |") {
				t.Errorf("markdown: the goal that does not apply is not n/a\n%s", md.String())
			}

			var readme bytes.Buffer
			if err := sim.WriteReadme(&readme, []*sim.Report{rep}); err != nil {
				t.Fatal(err)
			}
			if want := c.missed != ""; strings.Contains(readme.String(), " MISS**") != want {
				t.Errorf("readme: marked %v, want %v\n%s", !want, want, readme.String())
			}
		})
	}
}

func ptr(f float64) *float64 { return &f }
