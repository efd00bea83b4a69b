package policy

import (
	"math"
	"testing"
	"time"

	"github.com/waitroom/waitroom/crdt"
)

func TestMeanBrowseIsHowFarBackTheAdmissionsAddUpToThoseStillBrowsing(t *testing.T) {
	const now = 6000 + 30 // half a minute into minute 100
	// admitted lists the admissions of minutes 96..100 (the last is the
	// current one, half over).
	admitted := func(n ...uint64) []uint64 { return n }
	tests := []struct {
		name     string
		admitted []uint64
		live     float64
		want     float64
		ok       bool
	}{
		{"a steady 100 a minute with 250 browsing is a browse of 2.5 minutes", admitted(100, 100, 100, 100, 50), 250, 2.5, true},
		{"the current minute's admissions count as far as it has gone", admitted(100, 100, 100, 100, 50), 50, 0.5, true},
		{"a wave a few minutes back holds those still browsing", admitted(0, 200, 0, 0, 0), 100, 3, true},
		{"more browsing than the window admitted reads twice the oldest admission's age", admitted(0, 0, 100, 100, 50), 260, 5, true},
		{"nobody browsing reads nothing", admitted(100, 100, 100, 100, 50), 0, 0, false},
		{"nobody admitted reads nothing", admitted(0, 0, 0, 0, 0), 10, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := meanBrowse(tt.admitted, now, tt.live)
			if ok != tt.ok || math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("meanBrowse = %g, %v; want %g, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestBrowsingTellsTheVisitorsWhoLeftFromThoseStillBrowsing(t *testing.T) {
	const now = 6000
	room := Room{TotalActiveUsers: 500, NewUsersPerMinute: 100, SessionDuration: 5}
	// The live band of a 5-minute session is its last minute: cells after
	// now + 4 minutes.
	tests := []struct {
		name      string
		room      Room
		expiring  []crdt.SlotCount
		live, pae float64
	}{
		{
			"100 who left over four minutes leave 25 a minute; of 300 in the last minute, 25 left in it too",
			room,
			[]crdt.SlotCount{{Second: now + 60, N: 50}, {Second: now + 200, N: 50}, {Second: now + 280, N: 300}},
			275, 25,
		},
		{
			"without renewals every cell is final",
			Room{TotalActiveUsers: 500, NewUsersPerMinute: 100, SessionDuration: 5, DisableSessionRenewal: true},
			[]crdt.SlotCount{{Second: now + 280, N: 300}},
			0, 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			live, pace, _ := browsing(tt.room, now, tt.expiring)
			if math.Abs(live-tt.live) > 1e-9 || math.Abs(pace-tt.pae) > 1e-9 {
				t.Errorf("browsing = %g live, %g a minute; want %g, %g", live, pace, tt.live, tt.pae)
			}
		})
	}
}

// fullRoom is a room of 500 active and 100 new a minute with 5-minute
// sessions, full at minute 100: it let in 100 a minute in minutes 95..99,
// 200 of those visitors have left (their sessions end 3 and 3.5 minutes
// from now), 300 still browse, and 300 wait in bucket 99.
func fullRoom(t *testing.T) (Room, *crdt.RoomSnapshot, time.Time) {
	t.Helper()
	const minute = 100
	now := time.Unix(minute*60, 0)
	room := Room{TotalActiveUsers: 500, NewUsersPerMinute: 100, SessionDuration: 5, Nodes: 1}
	snap := &crdt.RoomSnapshot{
		Room: "shop", Now: now.Unix(), Minute: minute, Active: 500,
		Waiting:      []crdt.BucketCount{{Bucket: minute - 1, N: 300}},
		TotalWaiting: 300,
		Expiring: []crdt.SlotCount{
			{Second: now.Unix() + 180, N: 100}, {Second: now.Unix() + 210, N: 100},
			{Second: now.Unix() + 290, N: 300},
		},
		AdmittedTotals: make([]uint64, AdmissionMinutes),
	}
	for m := int64(minute - HistoryMinutes + 1); m <= minute; m++ {
		var n uint64
		if m < minute {
			n = 100
		}
		snap.Admitted = append(snap.Admitted, crdt.MinuteCounts{Minute: m, Total: n})
		snap.Arrivals = append(snap.Arrivals, crdt.MinuteCounts{Minute: m, Total: 150})
		snap.Queued = append(snap.Queued, crdt.MinuteCounts{Minute: m, Total: 50})
	}
	for i := range 5 {
		snap.AdmittedTotals[AdmissionMinutes-2-i] = 100
	}
	return room, snap, now
}

func TestAFullRoomForecastsTheWaitFromWhenSessionsEnd(t *testing.T) {
	room, snap, now := fullRoom(t)
	a := Allocate(room, snap, crdt.NewReplicaID("dublin", 1), now, Continuous)
	tests := []struct {
		name   string
		k      float64
		lo, hi float64 // minutes
	}{
		// At the rate of the last minutes (100 a minute) the first would
		// go in now and the 300th in 3 minutes.
		{"the first in line goes in when the first sessions end", 1, 3, 3},
		{"the 200th when the sessions of all who left have ended", 200, 3.5, 3.5},
		// Of the 300 in the session's last minute, 50 left in it (the 200
		// who left over four minutes leave 50 a minute): their sessions
		// end with their cell. The 250 still browsing are those admitted
		// in the last 2.5 minutes; they leave over the next 2.5 as they
		// came in, and their slots free a session later, from 5 to 7.5
		// minutes from now.
		{"the 250th when the last who left ends its session", 250, 290.0 / 60, 290.0 / 60},
		{"the 300th when a fifth of those still browsing have ended theirs", 300, 5.5, 5.5},
		{"the 500th when the last of them has", 500, 7.5, 7.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := a.admissionAt(tt.k); got < tt.lo-1e-6 || got > tt.hi+1e-6 {
				t.Errorf("admission %g at %.2f minutes, want %g–%g", tt.k, got, tt.lo, tt.hi)
			}
		})
	}
	// At the last minutes' rate the last visitor waiting would be told
	// 3 minutes; it waits for its slot to free at 5.5.
	if e := a.EstimateAt(snap.Minute-1, 599); e.WaitTime != 6 {
		t.Errorf("the last visitor waiting is told %d minutes, want 6", e.WaitTime)
	}
}

func TestTheBudgetsPaceLeavesOutTheMinutesTheActiveLimitWasFull(t *testing.T) {
	room := Room{TotalActiveUsers: 500, NewUsersPerMinute: 100, SessionDuration: 5}
	snap := &crdt.RoomSnapshot{Minute: 100}
	for m := int64(95); m <= 100; m++ {
		n := uint64(90)
		if m >= 98 {
			n = 10 // sessions ended slowly
		}
		snap.Admitted = append(snap.Admitted, crdt.MinuteCounts{Minute: m, Total: n})
	}
	var b forecastBook
	tests := []struct {
		name string
		full []int64
		want float64
	}{
		{"without a full minute it is the average of the last five", nil, (90*3 + 10*2) / 5.0},
		{"the minutes seen full are left out", []int64{98, 99}, 90},
		{"with every minute full it is the limit", []int64{95, 96, 97, 98, 99}, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b = forecastBook{}
			for _, m := range tt.full {
				b = b.update(room, m*60+10, 500, nil, nil)
			}
			if got := b.pace(snap, 100); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("pace = %g, want %g", got, tt.want)
			}
		})
	}
}

func TestARandomQueueInAFullRoomWaitsForSessionsToEnd(t *testing.T) {
	room, snap, now := fullRoom(t)
	room.QueueingMethod = Random
	a := Allocate(room, snap, crdt.NewReplicaID("dublin", 1), now, Continuous)
	e := a.Estimate(snap.Minute)
	steady := lotteryWait(300, a.waitRate(), a.joining, 0.25)
	if e.WaitTime25 <= steady.Minutes {
		t.Errorf("the 25th percentile is %d minutes, want more than the %d of a steady rate: nobody goes in for 3 minutes", e.WaitTime25, steady.Minutes)
	}
	if !(e.WaitTime25 <= e.WaitTime50 && e.WaitTime50 <= e.WaitTime75) {
		t.Errorf("percentiles %d/%d/%d out of order", e.WaitTime25, e.WaitTime50, e.WaitTime75)
	}
}

func TestEverySlotFreesAgainASessionsLifeAfterItIsTaken(t *testing.T) {
	tests := []struct {
		name      string
		first     []releaseGroup
		life      float64
		perMinute float64
		k, want   float64
	}{
		{"100 free slots let the first 100 in at once", []releaseGroup{{n: 100}}, 2, 0, 100, 0},
		{"the 150th takes a slot freed a life later", []releaseGroup{{n: 100}}, 2, 0, 150, 2},
		{"the 250th one two lives later", []releaseGroup{{n: 100}}, 2, 0, 250, 4},
		{"the per-minute budget paces them", []releaseGroup{{n: 100}}, 2, 50, 100, 2},
		{"and the slots free again a life after the budget let them be taken", []releaseGroup{{n: 100}}, 2, 50, 200, 4},
		{"slots freeing over a span are taken over it", []releaseGroup{{n: 10, t0: 1, t1: 2}}, 5, 0, 10, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f forecast
			f.build(tt.first, tt.life, tt.perMinute, 300)
			got, ok := f.admissionAt(tt.k)
			if !ok || math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("admission %g at %g (%v), want %g", tt.k, got, ok, tt.want)
			}
		})
	}
}

func TestARandomQueueThatDrainsWithinAMinuteTellsItsPercentilesInCheckIns(t *testing.T) {
	// 80 wait, 200 slots are free and the minute's 100 admissions are
	// all still to come, while a crowd of 50 a minute has joined for five
	// minutes: most of those waiting go in at their first check-in, three
	// quarters by their second.
	room, snap, now := fullRoom(t)
	room.QueueingMethod = Random
	snap.Active, snap.Expiring = 300, nil
	snap.Waiting, snap.TotalWaiting = []crdt.BucketCount{{Bucket: snap.Minute - 1, N: 80}}, 80
	e := Allocate(room, snap, crdt.NewReplicaID("dublin", 1), now, Continuous).Estimate(snap.Minute)
	got := [...]any{e.WaitTime25, e.WaitTime50, e.WaitTime75, e.WaitSeconds25, e.WaitSeconds50, e.WaitSeconds75, e.WaitTimeFormatted}
	// The first check-in has surely come by 25 s (checkInBy), the second
	// by 50; the reference's minute fields say one minute, at least.
	want := [...]any{1, 1, 1, 25, 25, 50, "25 seconds to 50 seconds"}
	if got != want {
		t.Errorf("percentiles %v, want %v", got, want)
	}
}
