package fidelity

import (
	"strings"
	"testing"
	"time"
)

func TestPriorityHoldersPassTheLineWithoutAnInversion(t *testing.T) {
	log := func(holder bool) Log {
		return Log{End: at(300),
			Arrivals: []Arrival{{Visitor: "y", Arrived: at(10), Queued: at(10), TurnedAway: []time.Time{at(80)}}, {Visitor: "x", Arrived: at(65), Queued: at(65), Priority: holder}},
			Hits:     join(hits("x", 70), hits("y", 120))}
	}
	t.Run("a later visitor without a code let in first is an inversion", func(t *testing.T) {
		if got := Judge(log(false), oneMinute); got.Inversions != 1 || got.Priority != nil {
			t.Fatalf("inversions %d, priority %+v; want 1 and none", got.Inversions, got.Priority)
		}
	})
	t.Run("a later code holder let in first is not, and its wait is reported apart", func(t *testing.T) {
		got := Judge(log(true), oneMinute)
		if got.Inversions != 0 || got.PassedOver != 0 || len(got.InvertedPairs) != 0 {
			t.Fatalf("inversions %d (%d passed over, pairs %v), want none", got.Inversions, got.PassedOver, got.InvertedPairs)
		}
		want := PriorityTruth{Holders: 1, LetIn: 1, Waited: 1, Others: 1, MedianMs: 5000, OthersMedianMs: 110000}
		if got.Priority == nil || *got.Priority != want {
			t.Fatalf("priority %+v, want %+v", got.Priority, want)
		}
	})
}

func TestPriorityMixScenario(t *testing.T) {
	s := OptionalScenarios(true, 3)[0]
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	ps := plans(s, 1)
	holders := 0
	for _, p := range ps {
		if p.holder {
			holders++
		}
	}
	if holders != len(ps)/5 {
		t.Fatalf("%d holders of %d visitors, want one in five", holders, len(ps))
	}
	if cfg := string(roomConfig(s, "http://127.0.0.1:1")); !strings.Contains(cfg, "priority_groups:\n      - name: vip\n        share: 0.3\n") {
		t.Fatalf("room config %q has no vip group", cfg)
	}
	for _, o := range Scenarios(true, 3) {
		if o.Name == s.Name {
			t.Fatal("the optional scenario is among those every run runs")
		}
	}
}
