package fidelity

import (
	"slices"
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
