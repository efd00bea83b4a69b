package fidelity

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// t0 is the start of a wall-clock minute.
var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func hits(visitor string, secs ...float64) []Hit {
	var h []Hit
	for _, s := range secs {
		h = append(h, Hit{Visitor: visitor, At: at(s)})
	}
	return h
}

func join(hs ...[]Hit) []Hit {
	var out []Hit
	for _, h := range hs {
		out = append(out, h...)
	}
	return out
}

var oneMinute = Limits{TotalActiveUsers: 10, NewUsersPerMinute: 10, SessionDuration: time.Minute}

// The definitions are tested in package truth; these tests check that the
// crowd's and the origin's logs reach it as they should: hits as requests to
// the origin, queue pages, check-ins and give-ups as the crowd saw them, and
// the figures back as wall-clock times.

func TestJudgeReadsTheCrowdAndTheOrigin(t *testing.T) {
	cases := []struct {
		name string
		log  Log
		l    Limits
		want string
	}{
		{
			name: "sessions are what the origin saw, renewed by each request",
			log:  Log{Hits: join(hits("a", 0, 30, 50), hits("b", 100), hits("a", 171))}, // a lapsed at 110 s
			l:    oneMinute,
			want: "admissions 3, peak active 2 at 10:01:40, peak new 1 in 10:00, first queued none, inversions 0 (0 passed over, 0 newcomers)",
		},
		{
			name: "new users per minute are counted by wall-clock minute",
			log:  Log{Hits: join(hits("a", 1), hits("b", 30), hits("c", 59.9), hits("d", 60.1), hits("e", 90))},
			l:    oneMinute,
			want: "admissions 5, peak active 4 at 10:01:00, peak new 3 in 10:00, first queued none, inversions 0 (0 passed over, 0 newcomers)",
		},
		{
			name: "the first queue page is the first queueing, judged against the sessions live then",
			log: Log{End: at(600), Arrivals: []Arrival{{Visitor: "q", Arrived: at(70), Queued: at(70)}},
				Hits: join(hits("a", 1), hits("b", 2), hits("c", 3))},
			l:    Limits{TotalActiveUsers: 4, NewUsersPerMinute: 4, SessionDuration: 5 * time.Minute},
			want: "admissions 3, peak active 3 at 10:00:03, peak new 3 in 10:00, first queued 10:01:10 (3 active, 0 this minute: 0.75), inversions 0 (0 passed over, 0 newcomers)",
		},
		{
			name: "a queued visitor turned away soon after a later one went in was passed over",
			log: Log{End: at(300),
				Arrivals: []Arrival{{Visitor: "y", Arrived: at(10), Queued: at(10), TurnedAway: []time.Time{at(80)}}, {Visitor: "x", Arrived: at(65), Queued: at(65)}},
				Hits:     join(hits("x", 70), hits("y", 120))},
			l:    oneMinute,
			want: "admissions 2, peak active 2 at 10:02:00, peak new 1 in 10:01, first queued 10:00:10 (0 active, 0 this minute: 0.00), inversions 1 (1 passed over, 0 newcomers)",
		},
		{
			name: "someone who gave up before the admission was not passed over",
			log: Log{End: at(300),
				Arrivals: []Arrival{{Visitor: "y", Arrived: at(10), Queued: at(10), GaveUp: at(69)}, {Visitor: "x", Arrived: at(70)}},
				Hits:     hits("x", 70)},
			l:    oneMinute,
			want: "admissions 1, peak active 1 at 10:01:10, peak new 1 in 10:01, first queued 10:00:10 (0 active, 0 this minute: 0.00), inversions 0 (0 passed over, 0 newcomers)",
		},
		{
			name: "a newcomer let in at its first request past someone still waiting is counted as such",
			log: Log{End: at(300),
				Arrivals: []Arrival{{Visitor: "y", Arrived: at(10), Queued: at(10)}, {Visitor: "x", Arrived: at(70)}},
				Hits:     join(hits("x", 70), hits("y", 90))},
			l:    oneMinute,
			want: "admissions 2, peak active 2 at 10:01:30, peak new 2 in 10:01, first queued 10:00:10 (0 active, 0 this minute: 0.00), inversions 1 (0 passed over, 1 newcomers)",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := Judge(c.log, c.l)
			q := "none"
			if !g.FirstQueued.IsZero() {
				q = fmt.Sprintf("%s (%d active, %d this minute: %.2f)", g.FirstQueued.Format("15:04:05"), g.ActiveAtFirstQueue, g.AdmittedAtFirstQueue, g.UtilisationAtFirstQueue)
			}
			got := fmt.Sprintf("admissions %d, peak active %d at %s, peak new %d in %s, first queued %s, inversions %d (%d passed over, %d newcomers)",
				g.Admissions, g.PeakActive, g.PeakActiveAt.Format("15:04:05"), g.PeakNewPerMinute, g.PeakMinute.Format("15:04"), q, g.Inversions, g.PassedOver, g.Newcomers)
			if got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
			if len(g.InvertedPairs) != g.Inversions {
				t.Errorf("%d inverted pairs listed for %d inversions", len(g.InvertedPairs), g.Inversions)
			}
		})
	}
}

func TestJudgeListsTheInversions(t *testing.T) {
	t.Run("each inversion names the visitor let in and the earliest arrival it went before", func(t *testing.T) {
		log := Log{
			End: at(300),
			Arrivals: []Arrival{
				{Visitor: "w", Node: 0, Arrived: at(5), Queued: at(5), TurnedAway: []time.Time{at(25)}},
				{Visitor: "y", Node: 2, Arrived: at(10), Queued: at(10), TurnedAway: []time.Time{at(30), at(50), at(75)}},
				{Visitor: "x", Node: 1, Arrived: at(65), Queued: at(65)},
			},
			Hits: join(hits("w", 30), hits("x", 70), hits("y", 95)),
		}
		got := Judge(log, oneMinute)
		want := InvertedPair{
			Later:      Passage{Visitor: "x", Node: 1, Arrived: at(65), Queued: true, Admitted: at(70)},
			Earlier:    Passage{Visitor: "y", Node: 2, Arrived: at(10), Queued: true, Admitted: at(95), LastTurnedAway: at(50)},
			PassedOver: true,
		}
		if len(got.InvertedPairs) != 1 || got.InvertedPairs[0] != want {
			t.Fatalf("pairs %+v; want just %+v", got.InvertedPairs, want)
		}
		if s := want.String(); !strings.Contains(s, "x (node 2,") || !strings.Contains(s, "y (node 3,") || !strings.Contains(s, "25s later") {
			t.Errorf("the listing %q does not say who, where and how much later", s)
		}
	})
	t.Run("an admission too close to the end to judge is not counted", func(t *testing.T) {
		log := Log{
			End:      at(71),
			Arrivals: []Arrival{{Visitor: "y", Arrived: at(10), Queued: at(10)}, {Visitor: "x", Arrived: at(65)}},
			Hits:     hits("x", 70),
		}
		if got := Judge(log, oneMinute); got.Inversions != 0 || got.StillWaiting != 1 {
			t.Fatalf("inversions %d, still waiting %d; want 0 and 1", got.Inversions, got.StillWaiting)
		}
	})
}

func TestJudgeWaits(t *testing.T) {
	log := Log{
		End: at(600),
		Arrivals: []Arrival{
			{Visitor: "a", Arrived: at(0)}, // let in at once: no wait to count
			{Visitor: "b", Arrived: at(0), Queued: at(0)},
			{Visitor: "c", Arrived: at(0), Queued: at(0)},
			{Visitor: "d", Arrived: at(0), Queued: at(0)},
			{Visitor: "e", Arrived: at(0), Queued: at(0)}, // never let in
			{Visitor: "f", Arrived: at(0), Queued: at(0), GaveUp: at(100)},
		},
		Hits: join(hits("a", 0), hits("b", 20), hits("c", 40), hits("d", 100), hits("", 5)),
	}
	got := Judge(log, oneMinute)
	if got.Waited != 3 || got.MedianWait != 40*time.Second || got.StillWaiting != 1 || got.Unidentified != 1 {
		t.Fatalf("waited %d, median %v, still waiting %d, unidentified %d; want 3, 40s, 1, 1", got.Waited, got.MedianWait, got.StillWaiting, got.Unidentified)
	}
}
