package policy

import (
	"testing"

	"github.com/waitroom/waitroom/crdt"
)

func TestSpanMinutesIsTheMinuteWithinAFifthOfTheMostOfTheSpan(t *testing.T) {
	tests := []struct {
		name   string
		lo, hi float64
		want   int
	}{
		{"a wait of no width is told the minute nearest a tenth beyond it", 8.2, 8.2, 9},
		{"a wait of 4.4 minutes is told 5, which a wait of 5.3 is still within a fifth of", 4.4, 4.4, 5},
		{"a wait of 10 minutes is told 11", 10, 10, 11},
		{"a short wait is at least one minute", 0.1, 0.1, 1},
		{"a span from 6 to 9 minutes is told 7, which covers 5.8 to 8.75", 6, 9, 7},
		{"a span from 10 to 15 minutes is told 12, which covers 10 to 15", 10, 15, 12},
		{"a span too wide for any minute to cover is told the one covering most of it", 4, 20, 16},
		{"a vanishing admission rate is capped at a week", 1e12, 1e12, maxWaitMinutes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := spanMinutes(tt.lo, tt.hi); got != tt.want {
				t.Errorf("spanMinutes(%g, %g) = %d, want %d", tt.lo, tt.hi, got, tt.want)
			}
		})
	}
}

func TestLotteryWaitIsTheMinuteWhoseShareAdmittedIsNearest(t *testing.T) {
	tests := []struct {
		name                   string
		waiting, rate, joining float64
		p                      float64
		want                   int
	}{
		{"a steady queue has a constant chance: half of 100 in within 6.93 minutes at 10 a minute", 100, 10, 10, 0.5, 7},
		{"a draining queue lets a quarter of 100 in within 2.5 minutes at 10 a minute", 100, 10, 0, 0.25, 2},
		{"a draining queue lets three quarters in within 7.5 minutes", 100, 10, 0, 0.75, 7},
		{"a growing queue takes longer than a steady one: 10 minutes for half", 100, 10, 20, 0.5, 10},
		{"a wait is at least one minute", 10, 100, 0, 0.25, 1},
		{"without admissions the wait is capped at a week", 100, 0, 0, 0.5, maxWaitMinutes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := lotteryWait(tt.waiting, tt.rate, tt.joining, tt.p); got != tt.want {
				t.Errorf("lotteryWait(%g, %g, %g, %g) = %d, want %d", tt.waiting, tt.rate, tt.joining, tt.p, got, tt.want)
			}
		})
	}
}

func TestJoiningRateAveragesTheMinutesSinceTheQueueBegan(t *testing.T) {
	queued := func(counts ...uint64) *crdt.RoomSnapshot {
		s := &crdt.RoomSnapshot{Minute: 100}
		for i, c := range counts {
			s.Queued = append(s.Queued, crdt.MinuteCounts{Minute: 97 + int64(i), Total: c})
		}
		return s
	}
	tests := []struct {
		name string
		snap *crdt.RoomSnapshot
		want float64
	}{
		{"a queue a minute old grows at that minute's pace, not a third of it", queued(0, 0, 60), 60},
		{"a queue two minutes old averages its two", queued(0, 30, 60), 45},
		{"an older one averages the last three full minutes", queued(30, 60, 90), 60},
		{"a minute without joins after the first counts as none", queued(60, 0, 0), 20},
		{"nobody queued: nobody joins", queued(0, 0, 0), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := joiningRate(tt.snap); got != tt.want {
				t.Errorf("joiningRate = %g, want %g", got, tt.want)
			}
		})
	}
}
