package truth_test

import (
	"math"
	"testing"
	"time"

	"github.com/waitroom/waitroom/policy/truth"
)

func TestJudgeShown(t *testing.T) {
	s, m := time.Second, time.Minute
	// Four visitors queued at 0 s, arriving 1 s apart; admitted at 6, 7,
	// 8 and 9 minutes; the fourth gives up instead.
	var evs []truth.Event
	for i := range 4 {
		arrived := time.Duration(i) * s
		evs = append(evs, truth.Event{At: arrived, Kind: truth.Queue, Visitor: i, Arrived: arrived, Node: 0})
		end := truth.Event{At: time.Duration(6+i) * time.Minute, Kind: truth.Admit, Visitor: i, Arrived: arrived}
		if i == 3 {
			end.Kind = truth.GiveUp
		}
		evs = append(evs, end)
	}
	h := truth.Replay(evs, truth.Limits{TotalActiveUsers: 10, NewUsersPerMinute: 10, SessionDuration: time.Minute})
	tests := []struct {
		name  string
		shown []truth.Shown
		end   time.Duration
		want  truth.ShownVerdict
	}{
		{
			name: "a FIFO estimate within a fifth of the remaining wait counts, one beyond does not",
			shown: []truth.Shown{
				{At: 10 * s, Visitor: 0, Arrived: 0, WaitKnown: true, Wait: 6 * m, Wait25: 6 * m, Wait75: 6 * m},
				{At: 10 * s, Visitor: 1, Arrived: s, WaitKnown: true, Wait: 10 * m, Wait25: 10 * m, Wait75: 10 * m},
			},
			// Errors: 10 s long of 350 s left, 190 s long of 410 s.
			want: truth.ShownVerdict{Estimates: 2, EstimateWithin20: 0.5,
				EstimateErrorP50: 10.0 / 350, EstimateErrorP90: 190.0 / 410, EstimateBias: 10.0 / 350},
		},
		{
			name: "a first page's estimate counts among every page's and apart",
			shown: []truth.Shown{
				{At: 0, Visitor: 0, Arrived: 0, First: true, WaitKnown: true, Wait: 6 * m, Wait25: 6 * m, Wait75: 6 * m},
				{At: 10 * s, Visitor: 0, Arrived: 0, WaitKnown: true, Wait: 9 * m, Wait25: 9 * m, Wait75: 9 * m},
			},
			want: truth.ShownVerdict{Estimates: 2, EstimateWithin20: 0.5, FirstEstimates: 1, FirstEstimateWithin20: 1,
				EstimateErrorP50: 0, EstimateErrorP90: 190.0 / 350, EstimateBias: 0},
		},
		{
			name: "the true place in line is those who arrived earlier and still wait",
			shown: []truth.Shown{
				{At: 10 * s, Visitor: 2, Arrived: 2 * s, PositionKnown: true, Position: 2},
				{At: 6*time.Minute + 30*s, Visitor: 2, Arrived: 2 * s, PositionKnown: true, Position: 1},
				{At: 10 * s, Visitor: 3, Arrived: 3 * s, PositionKnown: true, Position: 1},
			},
			want: truth.ShownVerdict{Positions: 3, PositionWithin10: 2.0 / 3, PositionError90: 2.0 / 3,
				FrontPositions: 3, FrontPositionExact: 2.0 / 3},
		},
		{
			name: "first pages, the first ten in line and the head of the line are judged apart",
			shown: []truth.Shown{
				{At: 10 * s, Visitor: 0, Arrived: 0, First: true, PositionKnown: true, Position: 0},
				{At: 10 * s, Visitor: 1, Arrived: s, First: true, PositionKnown: true, Position: 2},
				{At: 6*time.Minute + 30*s, Visitor: 1, Arrived: s, PositionKnown: true, Position: 1},
				{At: 10 * s, Visitor: 2, Arrived: 2 * s, PositionKnown: true, Position: 2},
			},
			want: truth.ShownVerdict{Positions: 4, PositionWithin10: 0.5, PositionError90: 1,
				FirstPositions: 2, FirstPositionWithin10: 0.5, FrontPositions: 4, FrontPositionExact: 0.5,
				Heads: 2, HeadsToldZero: 0.5},
		},
		{
			name: "a random queue's range counts who got in within each percentile",
			shown: []truth.Shown{
				{At: 0, Visitor: 0, Arrived: 0, WaitKnown: true, Wait25: 5 * m, Wait: 7 * m, Wait75: 9 * m, Random: true},
				{At: 0, Visitor: 3, Arrived: 3 * s, WaitKnown: true, Wait25: 5 * m, Wait: 7 * m, Wait75: 9 * m, Random: true},
			},
			end:  truth.Never,
			want: truth.ShownVerdict{Random: 1, Random25: 1, Random50: 1, Random75: 1, RandomBy25: 0, RandomBy50: 1, RandomBy75: 1},
		},
		{
			name: "a random queue's percentiles of one minute alike are percentiles, not a FIFO estimate",
			shown: []truth.Shown{
				{At: 5*time.Minute + 30*s, Visitor: 0, Arrived: 0, WaitKnown: true, Wait25: 1 * m, Wait: 1 * m, Wait75: 1 * m, Random: true},
			},
			end:  truth.Never,
			want: truth.ShownVerdict{Random: 1, Random25: 1, Random50: 1, Random75: 1, RandomBy25: 1, RandomBy50: 1, RandomBy75: 1},
		},
		{
			name: "a random queue's percentiles under a minute are judged in the seconds the page says",
			shown: []truth.Shown{
				{At: 5*time.Minute + 30*s, Visitor: 0, Arrived: 0, WaitKnown: true, Wait25: 20 * s, Wait: 40 * s, Wait75: 1 * m, Random: true},
			},
			end:  truth.Never,
			want: truth.ShownVerdict{Random: 1, Random25: 1, Random50: 1, Random75: 1, RandomBy25: 0, RandomBy50: 1, RandomBy75: 1},
		},
		{
			name: "a percentile that runs out after the log ends is not judged, whoever got in",
			shown: []truth.Shown{
				// Visitor 1 (in at 7 min) is judged by its 25th (6 min,
				// missed) alone; visitor 2 (in at 8 min) by none.
				{At: 5 * s, Visitor: 1, Arrived: s, WaitKnown: true, Wait25: 6 * m, Wait: 8 * m, Wait75: 9 * m, Random: true},
				{At: 5 * s, Visitor: 2, Arrived: 2 * s, WaitKnown: true, Wait25: 8 * m, Wait: 9 * m, Wait75: 10 * m, Random: true},
			},
			end:  7*time.Minute + 30*s,
			want: truth.ShownVerdict{Random: 1, Random25: 1, RandomBy25: 0},
		},
		{
			name: "a percentile that runs out after the room stopped queueing at random is not judged",
			shown: []truth.Shown{
				// The room went back to FIFO at 7.5 min: visitor 1 (in at
				// 7 min) is judged by its 25th (6 min, missed) alone;
				// visitor 2 (in at 8 min) by none, in a log that goes on.
				{At: 5 * s, Visitor: 1, Arrived: s, WaitKnown: true, Wait25: 6 * m, Wait: 8 * m, Wait75: 9 * m, Random: true, Until: 7*time.Minute + 30*s},
				{At: 5 * s, Visitor: 2, Arrived: 2 * s, WaitKnown: true, Wait25: 8 * m, Wait: 9 * m, Wait75: 10 * m, Random: true, Until: 7*time.Minute + 30*s},
			},
			end:  truth.Never,
			want: truth.ShownVerdict{Random: 1, Random25: 1, RandomBy25: 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			end := tt.end
			if end == 0 {
				end = truth.Never
			}
			if got := truth.JudgeShown(h, tt.shown, end); got != tt.want {
				t.Errorf("truth.JudgeShown = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestARandomQueuesShareComesWithTheMarginOfItsVisitors(t *testing.T) {
	s, m := time.Second, time.Minute
	// Four visitors queued 1 s apart from 0 s; in at 1, 2, 3 and 4 minutes.
	var evs []truth.Event
	for i := range 4 {
		arrived := time.Duration(i) * s
		evs = append(evs, truth.Event{At: arrived, Kind: truth.Queue, Visitor: i, Arrived: arrived},
			truth.Event{At: time.Duration(1+i) * m, Kind: truth.Admit, Visitor: i, Arrived: arrived})
	}
	h := truth.Replay(evs, truth.Limits{TotalActiveUsers: 10, NewUsersPerMinute: 10, SessionDuration: time.Minute})
	page := func(at time.Duration, visitor int, wait time.Duration) truth.Shown {
		return truth.Shown{At: at, Visitor: visitor, Arrived: time.Duration(visitor) * s, WaitKnown: true,
			Wait25: wait, Wait: wait, Wait75: wait, Random: true}
	}
	tests := []struct {
		name          string
		shown         []truth.Shown
		share, margin float64
	}{
		{
			name:   "half of four visitors in by their percentile is 50 % ± 56 points",
			shown:  []truth.Shown{page(5*s, 0, 150*s), page(5*s, 1, 150*s), page(5*s, 2, 150*s), page(5*s, 3, 150*s)},
			share:  0.5,
			margin: 1.96 * math.Sqrt(4.0/3*(4*0.25)) / 4,
		},
		{
			name:   "three of four visitors in is 75 % ± 49 points",
			shown:  []truth.Shown{page(5*s, 0, 210*s), page(5*s, 1, 210*s), page(5*s, 2, 210*s), page(5*s, 3, 210*s)},
			share:  0.75,
			margin: 1.96 / 4,
		},
		{
			name:   "three pages of one visitor in and one of another late is 75 % too, but ± 74 points: one visitor's pages are one draw",
			shown:  []truth.Shown{page(5*s, 0, 150*s), page(15*s, 0, 150*s), page(25*s, 0, 150*s), page(5*s, 3, 150*s)},
			share:  0.75,
			margin: 1.96 * 1.5 / 4,
		},
		{
			name:  "one visitor's pages alone have no margin to give",
			shown: []truth.Shown{page(5*s, 0, 150*s), page(15*s, 0, 150*s)},
			share: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := truth.JudgeShown(h, tt.shown, truth.Never)
			for j, by := range [3]float64{got.RandomBy25, got.RandomBy50, got.RandomBy75} {
				if math.Abs(by-tt.share) > 1e-9 || math.Abs(got.RandomMargin[j]-tt.margin) > 1e-9 {
					t.Errorf("percentile %d: share %.4f ± %.4f, want %.4f ± %.4f", j, by, got.RandomMargin[j], tt.share, tt.margin)
				}
			}
		})
	}
}

func TestFiguresLeaveOutWhatWasNotJudged(t *testing.T) {
	tests := []struct {
		name    string
		verdict truth.ShownVerdict
		check   func(f truth.Figures) bool
	}{
		{
			name:    "a share of nothing judged is left out, not reported as 0",
			verdict: truth.ShownVerdict{Positions: 3, PositionWithin10: 1},
			check: func(f truth.Figures) bool {
				return f.EstimateWithin20 == nil && f.RandomBy25 == nil && f.HeadsToldZero == nil &&
					f.PositionSamples == 3 && f.PositionWithin10 != nil && *f.PositionWithin10 == 1
			},
		},
		{
			name:    "a share of 0 judged over some pages is reported as 0",
			verdict: truth.ShownVerdict{Heads: 2, HeadsToldZero: 0},
			check:   func(f truth.Figures) bool { return f.Heads == 2 && f.HeadsToldZero != nil && *f.HeadsToldZero == 0 },
		},
		{
			name:    "a random queue's samples by percentile are carried over",
			verdict: truth.ShownVerdict{Random: 4, Random25: 4, Random50: 3, Random75: 1, RandomBy50: 0.5},
			check: func(f truth.Figures) bool {
				return f.RandomSamples == 4 && f.RandomSamplesBy == [3]int{4, 3, 1} && *f.RandomBy50 == 0.5
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if f := tt.verdict.Figures(); !tt.check(f) {
				t.Errorf("%+v.Figures() = %+v", tt.verdict, f)
			}
		})
	}
}
