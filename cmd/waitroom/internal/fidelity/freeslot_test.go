package fidelity

import (
	"maps"
	"testing"
	"time"
)

func TestLongestFreeSlot(t *testing.T) {
	queued := func(visitor string, arrived, q float64) Arrival {
		return Arrival{Visitor: visitor, Arrived: at(arrived), Queued: at(q)}
	}
	cases := []struct {
		name     string
		limits   Limits
		arrivals []Arrival
		hits     []Hit
		want     time.Duration
		wantAt   float64
		// wantHeld are those held while the longest free slot was free,
		// each with its check-ins turned away meanwhile, where given.
		wantHeld map[string]int
	}{
		{
			name:     "a slot free while someone waits counts from when that visitor has waited a refresh interval",
			limits:   Limits{TotalActiveUsers: 2, NewUsersPerMinute: 10, SessionDuration: time.Minute},
			arrivals: []Arrival{queued("w", 1, 1)},
			hits:     join(hits("a", 0), hits("w", 40)),
			want:     16 * time.Second, wantAt: 24,
		},
		{
			name:     "a room at its active limit has no free slot until a session ends",
			limits:   Limits{TotalActiveUsers: 1, NewUsersPerMinute: 10, SessionDuration: time.Minute},
			arrivals: []Arrival{queued("w", 1, 1)},
			hits:     join(hits("a", 0), hits("w", 70)),
			want:     10 * time.Second, wantAt: 60,
		},
		{
			name:     "a minute that used its new users has no free slot until the minute turns",
			limits:   Limits{TotalActiveUsers: 10, NewUsersPerMinute: 1, SessionDuration: time.Minute},
			arrivals: []Arrival{queued("w", 5, 5)},
			hits:     join(hits("a", 0), hits("w", 61)),
			want:     time.Second, wantAt: 60,
		},
		{
			name:     "a visitor let in within a refresh interval of being queued never counts as waiting",
			limits:   Limits{TotalActiveUsers: 2, NewUsersPerMinute: 10, SessionDuration: time.Minute},
			arrivals: []Arrival{queued("w", 1, 1)},
			hits:     join(hits("a", 0), hits("w", 20)),
		},
		{
			name:     "a visitor who gave up stops counting as waiting",
			limits:   Limits{TotalActiveUsers: 2, NewUsersPerMinute: 10, SessionDuration: time.Minute},
			arrivals: []Arrival{{Visitor: "w", Arrived: at(1), Queued: at(1), GaveUp: at(30)}},
			hits:     hits("a", 0),
			want:     6 * time.Second, wantAt: 24,
		},
		{
			name:     "a visitor still waiting at the end counts until the end",
			limits:   Limits{TotalActiveUsers: 2, NewUsersPerMinute: 10, SessionDuration: time.Minute},
			arrivals: []Arrival{queued("w", 1, 1)},
			hits:     hits("a", 0),
			want:     96 * time.Second, wantAt: 24,
		},
		{
			name:     "a visitor queued again while browsing counts from that queueing until let in again",
			limits:   Limits{TotalActiveUsers: 2, NewUsersPerMinute: 10, SessionDuration: time.Minute},
			arrivals: []Arrival{queued("w", 0, 70)},
			hits:     join(hits("w", 0), hits("w", 100)),
			want:     7 * time.Second, wantAt: 93,
		},
		{
			// Never full from 23 s on, but the slot free since 23 s is
			// taken at 65 s; the one that opened at 60 s waits longest.
			name:     "the oldest free slot is taken first, and each slot's wait is its own",
			limits:   Limits{TotalActiveUsers: 3, NewUsersPerMinute: 10, SessionDuration: time.Minute},
			arrivals: []Arrival{queued("w", 0, 0)},
			hits:     join(hits("a", 0), hits("b", 30), hits("c", 65)),
			want:     60 * time.Second, wantAt: 60,
		},
		{
			// w2 was queued later, and waited within the slot's 40 s; w3
			// was let in before the slot opened; each one's check-ins
			// before the slot are not its own.
			name:   "those held while the slot was free are named, the earliest queued first, with their check-ins meanwhile",
			limits: Limits{TotalActiveUsers: 3, NewUsersPerMinute: 10, SessionDuration: time.Minute},
			arrivals: []Arrival{
				{Visitor: "w2", Arrived: at(10), Queued: at(10), TurnedAway: []time.Time{at(15), at(30), at(50)}},
				{Visitor: "w1", Arrived: at(1), Queued: at(1), TurnedAway: []time.Time{at(20), at(26), at(45)}},
				queued("w3", 2, 2),
			},
			hits: join(hits("a", 0), hits("w3", 5), hits("w1", 64), hits("w2", 70)),
			want: 40 * time.Second, wantAt: 24,
			wantHeld: map[string]int{"w1": 2, "w2": 2},
		},
		{
			name:   "nobody queued leaves no slot free for anyone",
			limits: Limits{TotalActiveUsers: 2, NewUsersPerMinute: 10, SessionDuration: time.Minute},
			hits:   hits("a", 0),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			log := Log{End: at(120), Arrivals: tc.arrivals, Hits: tc.hits}
			got := Judge(log, tc.limits)
			if got.LongestFreeSlot != tc.want {
				t.Fatalf("longest free slot %v, want %v", got.LongestFreeSlot, tc.want)
			}
			if tc.want > 0 && !got.LongestFreeSlotAt.Equal(at(tc.wantAt)) {
				t.Fatalf("from %v, want %v", got.LongestFreeSlotAt.Sub(t0), at(tc.wantAt).Sub(t0))
			}
			if tc.wantHeld == nil {
				return
			}
			held := map[string]int{}
			for i, h := range got.HeldThroughFreeSlot {
				held[h.Visitor] = len(h.TurnedAway)
				if i > 0 && h.Queued.Before(got.HeldThroughFreeSlot[i-1].Queued) {
					t.Errorf("%s listed after %s, queued later", got.HeldThroughFreeSlot[i-1].Visitor, h.Visitor)
				}
			}
			if !maps.Equal(held, tc.wantHeld) {
				t.Fatalf("held %v (visitor: check-ins turned away meanwhile), want %v", held, tc.wantHeld)
			}
		})
	}
}
