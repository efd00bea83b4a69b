package fidelity

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMissedGoals(t *testing.T) {
	l := Limits{TotalActiveUsers: 40, NewUsersPerMinute: 40}
	// A run that holds the limits and FIFO but queued its first visitor at
	// 30 of 40.
	truth := Truth{Admissions: 40, PeakActive: 40, PeakNewPerMinute: 40, UtilisationAtFirstQueue: 0.75,
		ActiveAtFirstQueue: 30, AdmittedAtFirstQueue: 30, FirstQueued: time.Date(2026, 11, 24, 12, 0, 10, 0, time.UTC)}
	results := []Result{{Scenario: Scenario{Name: "fresh-flood"}, Truth: truth, Goals: Goals(truth, l, 0)}}
	cases := []struct {
		name string
		keys []string
		want int
	}{
		{"without keys every missed goal counts", nil, 1},
		{"a missed goal that is named counts", []string{GoalUtilisation}, 1},
		{"a missed goal that is not named is left out", []string{GoalActive, GoalNewPerMinute, GoalFIFO, Goal5xx}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := MissedGoals(results, c.keys...); len(got) != c.want {
				t.Fatalf("missed %q, want %d", got, c.want)
			}
			err := CheckGoals(results, c.keys...)
			if (err == nil) != (c.want == 0) || err != nil && !strings.HasPrefix(err.Error(), fmt.Sprintf("%d goals missed:\n  ", c.want)) {
				t.Fatalf("CheckGoals: %v; want %d missed", err, c.want)
			}
		})
	}
	t.Run("every goal has a key of GoalKeys", func(t *testing.T) {
		for _, g := range results[0].Goals {
			if !slices.Contains(GoalKeys, g.Key) {
				t.Errorf("%s has key %q", g.Figure, g.Key)
			}
		}
	})
}

func TestAnUnmeasuredRunStillTellsADeadRing(t *testing.T) {
	dead := Health{Nodes: 3, NodesAlive: 0, Exits: []string{"pop-1 at 12:03:31.2: exit status 2"}, Panics: 3,
		PanicLines: []string{"pop-1: panic: runtime error: index out of range [4001] with length 4001"}}
	r := Result{Scenario: Scenario{Name: "random-regional", Nodes: 3}, Error: "the origin saw nobody let in", Health: dead, Goals: []Goal{healthGoal(dead)}}
	t.Run("the missed goals name the dead ring beside the run not measured", func(t *testing.T) {
		got := MissedGoals([]Result{r}, GoalActive, GoalAlive)
		if len(got) != 2 || !strings.Contains(got[1], "every node alive, no panic in the logs 0 of 3 alive") {
			t.Fatalf("missed %q; want the run not measured and the dead ring", got)
		}
		// CI tells a dead ring from a noisy figure by this one line.
		if !strings.Contains(got[1], ", goal all alive, 0 panics") || strings.Contains(got[1], "\n") {
			t.Fatalf("missed %q; want one line that ends with the goal", got[1])
		}
	})
	t.Run("the table shows the nodes of a run not measured", func(t *testing.T) {
		var b strings.Builder
		if err := WriteText(&b, []Result{r}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "nodes: 0 of 3 alive, 3 panics (exited on its own: pop-1 at 12:03:31.2: exit status 2; first pop-1: panic: runtime error") {
			t.Fatalf("table:\n%s", b.String())
		}
	})
}

func TestTheTableShowsTheSwitches(t *testing.T) {
	at := time.Date(2026, 11, 24, 12, 1, 30, 0, time.UTC)
	r := Result{Scenario: Scenario{Name: "method-switch", Nodes: 3}, Health: Health{Nodes: 3, NodesAlive: 3},
		Switched: []Switched{
			{Method: "random", Node: 0, At: at, Applied: at.Add(1200 * time.Millisecond)},
			{Method: "fifo", Node: 1, At: at.Add(90 * time.Second), Error: "PATCH /rooms/fidelity: 422"},
		}}
	r.Goals = append(Goals(r.Truth, r.Scenario.Limits, 0), healthGoal(r.Health))
	var b strings.Builder
	if err := WriteText(&b, []Result{r}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"switched to random through node 1 at 12:01:30, every node applied it 1.2s later",
		"switched to fifo through node 2 at 12:03:00, FAILED: PATCH /rooms/fidelity: 422",
		"every node alive, no panic in the logs",
		"3 of 3 alive, 0 panics",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the table does not say %q:\n%s", want, b.String())
		}
	}
}

func TestAMissedFreeSlotNamesThoseHeldMeanwhile(t *testing.T) {
	l := Limits{TotalActiveUsers: 60, NewUsersPerMinute: 40}
	from := time.Date(2026, 11, 24, 12, 1, 0, 0, time.UTC)
	sec := func(s float64) time.Time { return from.Add(time.Duration(s * float64(time.Second))) }
	truth := Truth{Admissions: 50, PeakActive: 60, PeakNewPerMinute: 40, LongestFreeSlot: 37 * time.Second, LongestFreeSlotAt: from,
		HeldThroughFreeSlot: []HeldWaiter{
			{Visitor: "v61", Node: 2, Queued: sec(-40), TurnedAway: []time.Time{sec(2), sec(8)}, Admitted: sec(37)},
			{Visitor: "v62", Node: 0, Queued: sec(-38), Admitted: sec(12)},
			{Visitor: "v63", Node: 1, Queued: sec(-30), TurnedAway: []time.Time{sec(4)}},
			{Visitor: "v64", Node: 1, Queued: sec(-29), TurnedAway: []time.Time{sec(5)}},
		}}
	r := Result{Scenario: Scenario{Name: "clock-skew", Nodes: 3, Limits: l}, Truth: truth, Goals: Goals(truth, l, 0)}
	t.Run("the missed goal's line names the earliest held, where and when each was turned away", func(t *testing.T) {
		got := MissedGoals([]Result{r}, GoalFreeSlot)
		want := "clock-skew: longest free slot while someone waited 37s (from 12:01:00.0), goal ≤ 23s; held meanwhile, 4 in all: " +
			"v61 (node 3, queued 12:00:20.0, turned away meanwhile at 12:01:02.0, 12:01:08.0, let in 12:01:37.0); " +
			"v62 (node 1, queued 12:00:22.0, no check-in meanwhile, let in 12:01:12.0); " +
			"v63 (node 2, queued 12:00:30.0, turned away meanwhile at 12:01:04.0, never let in)"
		if len(got) != 1 || got[0] != want {
			t.Fatalf("missed\n%q\nwant\n%q", got, want)
		}
	})
	t.Run("the table lists those held under the missed goal", func(t *testing.T) {
		var b strings.Builder
		if err := WriteText(&b, []Result{r}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "held while it was free") || !strings.Contains(b.String(), "v64 (node 2, queued 12:00:31.0") {
			t.Fatalf("table:\n%s", b.String())
		}
	})
	t.Run("a free slot within the goal lists nobody", func(t *testing.T) {
		met := truth
		met.LongestFreeSlot = 20 * time.Second
		var b strings.Builder
		if err := WriteText(&b, []Result{{Scenario: r.Scenario, Truth: met, Goals: Goals(met, l, 0)}}); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), "held while it was free") {
			t.Fatalf("table:\n%s", b.String())
		}
	})
}
