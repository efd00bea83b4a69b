package policy

import (
	"fmt"
	"math"
	"time"

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
		want                   PageWait
	}{
		{"a steady queue has a constant chance: half of 100 in within 6.93 minutes at 10 a minute", 100, 10, 10, 0.5, PageWait{7, 420}},
		{"a draining queue lets a quarter of 100 in within 2.5 minutes at 10 a minute", 100, 10, 0, 0.25, PageWait{2, 120}},
		{"a draining queue lets three quarters in within 7.5 minutes", 100, 10, 0, 0.75, PageWait{7, 420}},
		{"a growing queue takes longer than a steady one: 10 minutes for half", 100, 10, 20, 0.5, PageWait{10, 600}},
		{"a queue that empties before the first check-in is told when that check-in has surely come, and one minute in minutes", 10, 100, 0, 0.25, PageWait{1, checkInBy}},
		{"a quarter of a steady 20 at 40 a minute are in by the first check-in (49 % are)", 20, 40, 40, 0.25, PageWait{1, checkInBy}},
		{"and three quarters by the second (74 %), not by the minute (86 %)", 20, 40, 40, 0.75, PageWait{1, 2 * checkInBy}},
		{"a percentile of a minute or more (1.44) is told in whole minutes", 100, 20, 20, 0.25, PageWait{1, 60}},
		{"without admissions the wait is capped at a week", 100, 0, 0, 0.5, PageWait{maxWaitMinutes, maxWaitMinutes * 60}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := lotteryWait(tt.waiting, tt.rate, tt.joining, tt.p); got != tt.want {
				t.Errorf("lotteryWait(%g, %g, %g, %g) = %+v, want %+v", tt.waiting, tt.rate, tt.joining, tt.p, got, tt.want)
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

func TestACrowdIsTakenToJoinForAsLongAsItHasJoined(t *testing.T) {
	queued := func(counts ...uint64) *crdt.RoomSnapshot {
		s := &crdt.RoomSnapshot{Minute: 100}
		for i, c := range counts { // the last is the current minute
			s.Queued = append(s.Queued, crdt.MinuteCounts{Minute: 101 - int64(len(counts)-i), Total: c})
		}
		return s
	}
	tests := []struct {
		name string
		snap *crdt.RoomSnapshot
		frac float64
		want float64
	}{
		{"a crowd that began this minute joins for a minute at least", queued(0, 0, 12), 0.4, 1},
		{"one that has joined for two full minutes and half this one, two and a half more", queued(0, 30, 45, 20), 0.5, 2.5},
		{"a minute without joins ends the crowd before it", queued(45, 0, 45, 20), 0.5, 1.5},
		{"a crowd longer than the minutes the ring keeps is taken for as long as those", queued(9, 9, 9, 9, 9, 9, 9, 9, 9), 0.5, HistoryMinutes + 0.5},
		{"nobody queued: at least a minute, for whoever comes", queued(0, 0, 0), 0.2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := joiningFor(tt.snap, tt.frac); got != tt.want {
				t.Errorf("joiningFor = %g, want %g", got, tt.want)
			}
		})
	}
}

func TestACrowdGoesOnAsAPageWouldSeeIt(t *testing.T) {
	// At a page of a crowd that has joined for a minutes, it goes on
	// beyond x·a more with chance 1/(1+x)².
	tests := []struct {
		name  string
		x     float64
		share float64
	}{
		{"a quarter of the horizons go on for as long again", 1, 0.25},
		{"half of them for 0.41 as long again (√2 − 1)", math.Sqrt2 - 1, 0.5},
		{"three quarters for 0.15 as long again (2/√3 − 1)", 2/math.Sqrt(3) - 1, 0.75},
		{"every one of them goes on a little", 0, 1},
		{"none for ever: the longest is three times as long", 3, 0},
	}
	for _, a := range []float64{1, 2.5, HistoryMinutes + 0.5} {
		h := crowdHorizons(a)
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s, after %g minutes", tt.name, a), func(t *testing.T) {
				n := 0
				for _, r := range h {
					if r > tt.x*a*(1+1e-9) {
						n++
					}
				}
				if got := float64(n) / float64(len(h)); got != tt.share {
					t.Errorf("%g of the horizons %v go beyond %g, want %g", got, h, tt.x*a, tt.share)
				}
			})
		}
	}
}

func TestARandomQueueWhoseCrowdOutrunsTheRoomIsNotToldAnHourForAFewMinutes(t *testing.T) {
	// The crowd began a minute and a half ago and joins at 45 a minute;
	// the room lets in 20 a minute (a full room whose sessions end
	// steadily). Taken to join for an hour, the number competing grew
	// all that hour, and the 75th percentile read 23 minutes.
	room, snap, now := fullRoom(t)
	room.QueueingMethod = Random
	snap.Queued = nil
	for m := snap.Minute - HistoryMinutes + 1; m <= snap.Minute; m++ {
		var n uint64
		if m >= snap.Minute-1 {
			n = 45
		}
		snap.Queued = append(snap.Queued, crdt.MinuteCounts{Minute: m, Total: n})
	}
	snap.Waiting, snap.TotalWaiting = []crdt.BucketCount{{Bucket: snap.Minute - 1, N: 60}}, 60
	snap.Expiring = nil
	for s := int64(0); s < 600; s += 3 {
		snap.Expiring = append(snap.Expiring, crdt.SlotCount{Second: now.Unix() + s, N: 1})
	}
	e := Allocate(room, snap, crdt.NewReplicaID("dublin", 1), now.Add(30*time.Second), Continuous).Estimate(snap.Minute)
	if !e.WaitTimeKnown || e.WaitTime75 > 15 {
		t.Errorf("percentiles %d / %d / %d minutes, want the 75th within a quarter of an hour", e.WaitTime25, e.WaitTime50, e.WaitTime75)
	}
}

func TestAThinnedCrowdJoinsAtTheCurrentMinutesPace(t *testing.T) {
	tests := []struct {
		name          string
		rate, n, frac float64
		want          float64
	}{
		{"a crowd that stopped: nobody in the first 18 s of a minute at 45 a minute (a chance of 1 in a million)", 45, 0, 0.3, 0},
		{"nobody in the first 6 s at 45 a minute is not yet unlikely enough (1 in 90)", 45, 0, 0.1, 45},
		{"a steady crowd a little behind its rate keeps it: 12 in 18 s at 60 a minute", 60, 12, 0.3, 60},
		{"a crowd at a third of its rate is taken at its pace: 10 in half a minute at 60 a minute", 60, 10, 0.5, 20},
		{"a crowd ahead of its rate keeps the full minutes' rate", 60, 40, 0.5, 60},
		{"at a minute's turn the full minutes' rate stands", 60, 0, 0, 60},
		{"without a rate there is nothing to thin", 0, 0, 0.5, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := thinnedJoining(tt.rate, tt.n, tt.frac); got != tt.want {
				t.Errorf("thinnedJoining(%g, %g, %g) = %g, want %g", tt.rate, tt.n, tt.frac, got, tt.want)
			}
		})
	}
}
