package fidelity

import (
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

func TestJudgeSessions(t *testing.T) {
	cases := []struct {
		name           string
		limits         Limits
		hits           []Hit
		wantAdmissions int
		wantPeak       int
	}{
		{
			name:           "a session renewed by each request stays live a session after the last one",
			limits:         oneMinute,
			hits:           join(hits("a", 0, 30, 50), hits("b", 100)), // a is live until 110 s
			wantAdmissions: 2, wantPeak: 2,
		},
		{
			name:           "a session that lapsed is over, and the next request is a new admission",
			limits:         oneMinute,
			hits:           join(hits("a", 0, 70), hits("b", 65)), // a lapsed at 60 s
			wantAdmissions: 3, wantPeak: 2,
		},
		{
			name:           "a session that ends as another begins is not live with it",
			limits:         oneMinute,
			hits:           join(hits("a", 0), hits("b", 60)),
			wantAdmissions: 2, wantPeak: 1,
		},
		{
			name:           "without renewal a session ends a session after its admission",
			limits:         Limits{TotalActiveUsers: 10, NewUsersPerMinute: 10, SessionDuration: time.Minute, DisableSessionRenewal: true},
			hits:           join(hits("a", 0, 30, 50), hits("b", 61)),
			wantAdmissions: 2, wantPeak: 1, // a ends at 60 s whatever its requests at 30 and 50 s; b begins at 61 s
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Judge(Log{Hits: c.hits}, c.limits)
			if got.Admissions != c.wantAdmissions || got.PeakActive != c.wantPeak {
				t.Fatalf("admissions %d, peak active %d; want %d, %d", got.Admissions, got.PeakActive, c.wantAdmissions, c.wantPeak)
			}
		})
	}
}

func TestJudgeNewUsersPerMinuteCountsWallClockMinutes(t *testing.T) {
	// Three admissions in the first minute, then two in the second, the
	// last two within a second of each other across the boundary.
	log := Log{Hits: join(hits("a", 1), hits("b", 30), hits("c", 59.9), hits("d", 60.1), hits("e", 90))}
	got := Judge(log, oneMinute)
	if got.PeakNewPerMinute != 3 || !got.PeakMinute.Equal(t0) {
		t.Fatalf("peak %d in the minute of %v; want 3 in %v", got.PeakNewPerMinute, got.PeakMinute, t0)
	}
	if r := got.NewPerMinuteRatio(oneMinute); r != 0.3 {
		t.Fatalf("ratio %v; want 0.3", r)
	}
}

func TestJudgeFIFOInversions(t *testing.T) {
	// y arrives in the first minute and waits; x arrives in the second and
	// is let in at 70 s. Whether that inverts depends on when y follows.
	cases := []struct {
		name string
		y    Arrival
		yIn  []float64 // y's origin requests
		want int
	}{
		{"an earlier arrival let in 1 s later is no inversion", Arrival{Visitor: "y", Arrived: at(10), Queued: at(10)}, []float64{71}, 0},
		{"an earlier arrival let in 3 s later is an inversion", Arrival{Visitor: "y", Arrived: at(10), Queued: at(10)}, []float64{73}, 1},
		{"an earlier arrival never let in is an inversion", Arrival{Visitor: "y", Arrived: at(10), Queued: at(10)}, nil, 1},
		{"an arrival in the same minute is no inversion", Arrival{Visitor: "y", Arrived: at(61), Queued: at(61)}, []float64{100}, 0},
		{"someone who gave up before is no inversion", Arrival{Visitor: "y", Arrived: at(10), Queued: at(10), GaveUp: at(69)}, nil, 0},
		{"someone who gives up within the grace is no inversion", Arrival{Visitor: "y", Arrived: at(10), Queued: at(10), GaveUp: at(71)}, nil, 0},
		{"someone who gives up later still waited", Arrival{Visitor: "y", Arrived: at(10), Queued: at(10), GaveUp: at(80)}, nil, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log := Log{
				End:      at(300),
				Arrivals: []Arrival{c.y, {Visitor: "x", Arrived: at(65), Queued: at(65)}},
				Hits:     join(hits("x", 70), hits("y", c.yIn...)),
			}
			got := Judge(log, oneMinute)
			if got.Inversions != c.want || got.Newcomers != 0 {
				t.Fatalf("inversions %d (%d newcomers); want %d (none: x was queued)", got.Inversions, got.Newcomers, c.want)
			}
		})
	}
	t.Run("an inversion whose earlier arrival is turned away soon after passed it over", func(t *testing.T) {
		for _, c := range []struct {
			name       string
			turnedAway float64
			want       int
		}{{"turned away 10 s later", 80, 1}, {"turned away 30 s later", 100, 0}, {"turned away before", 60, 0}} {
			t.Run(c.name, func(t *testing.T) {
				log := Log{
					End:      at(300),
					Arrivals: []Arrival{{Visitor: "y", Arrived: at(10), Queued: at(10), TurnedAway: []time.Time{at(c.turnedAway)}}, {Visitor: "x", Arrived: at(65)}},
					Hits:     join(hits("x", 70), hits("y", 120)),
				}
				if got := Judge(log, oneMinute); got.Inversions != 1 || got.PassedOver != c.want {
					t.Fatalf("inversions %d, passed over %d; want 1 and %d", got.Inversions, got.PassedOver, c.want)
				}
			})
		}
	})
	t.Run("a newcomer let in at its first request past an earlier arrival is counted as such", func(t *testing.T) {
		log := Log{
			End:      at(300),
			Arrivals: []Arrival{{Visitor: "y", Arrived: at(10), Queued: at(10)}, {Visitor: "x", Arrived: at(70)}},
			Hits:     join(hits("x", 70), hits("y", 90)),
		}
		if got := Judge(log, oneMinute); got.Inversions != 1 || got.Newcomers != 1 {
			t.Fatalf("inversions %d, newcomers %d; want 1 and 1", got.Inversions, got.Newcomers)
		}
	})
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

func TestJudgeUtilisationAtFirstQueueing(t *testing.T) {
	cases := []struct {
		name       string
		limits     Limits
		hits       []Hit
		queuedAt   float64
		want       float64
		wantActive int
	}{
		{
			name:   "the active limit binds: live sessions over total_active_users",
			limits: Limits{TotalActiveUsers: 4, NewUsersPerMinute: 4, SessionDuration: 5 * time.Minute},
			// Three let in in the first minute, still live at 70 s; none this minute.
			hits:     join(hits("a", 1), hits("b", 2), hits("c", 3)),
			queuedAt: 70, want: 0.75, wantActive: 3,
		},
		{
			name:     "the minute limit binds: admissions this minute over new_users_per_minute",
			limits:   Limits{TotalActiveUsers: 100, NewUsersPerMinute: 2, SessionDuration: time.Minute},
			hits:     join(hits("a", 1), hits("b", 2)),
			queuedAt: 3, want: 1, wantActive: 2,
		},
		{
			name:     "a lapsed session no longer counts",
			limits:   Limits{TotalActiveUsers: 4, NewUsersPerMinute: 4, SessionDuration: time.Minute},
			hits:     join(hits("a", 1), hits("b", 62)),
			queuedAt: 63, want: 0.25, wantActive: 1,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log := Log{
				End:      at(600),
				Arrivals: []Arrival{{Visitor: "q", Arrived: at(c.queuedAt), Queued: at(c.queuedAt)}},
				Hits:     c.hits,
			}
			got := Judge(log, c.limits)
			if got.UtilisationAtFirstQueue != c.want || got.ActiveAtFirstQueue != c.wantActive || !got.FirstQueued.Equal(at(c.queuedAt)) {
				t.Fatalf("utilisation %v with %d live at %v; want %v with %d at %v", got.UtilisationAtFirstQueue, got.ActiveAtFirstQueue, got.FirstQueued, c.want, c.wantActive, at(c.queuedAt))
			}
		})
	}
	t.Run("a room that never queued has no first queueing", func(t *testing.T) {
		got := Judge(Log{Hits: hits("a", 1)}, oneMinute)
		if !got.FirstQueued.IsZero() || got.UtilisationAtFirstQueue != 0 {
			t.Fatalf("first queued %v, utilisation %v; want none", got.FirstQueued, got.UtilisationAtFirstQueue)
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
