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
