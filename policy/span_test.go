package policy

import "testing"

func TestSpanMinutesIsTheMinuteWithinAFifthOfTheMostOfTheSpan(t *testing.T) {
	tests := []struct {
		name   string
		lo, hi float64
		want   int
	}{
		{"a wait of no width is its nearest whole minute", 8.2, 8.2, 8},
		{"a wait of no width just past a half rounds up", 8.6, 8.6, 9},
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
