package fidelity

import (
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
		})
	}
}
