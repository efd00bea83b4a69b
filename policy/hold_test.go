package policy_test

import (
	"testing"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/policy"
)

func TestAVisitorQueuedOnlyForSlotsKeptBackIsHeld(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 30, 0, time.UTC)
	m := minuteOf(now)
	// Three nodes of a room of 40 have admitted ten each this minute, all
	// of them within the last lag as far as this node's chain knows (it
	// starts here): its share of the ten slots it sees open is used up.
	// Nobody waits.
	flood := world{
		now:      now,
		active:   30,
		arrivals: map[int64]perNode{m: {dublin: 12, london: 12, delhi: 12}},
		admitted: map[int64]perNode{m: {dublin: 10, london: 10, delhi: 10}},
	}
	full := flood
	full.active = 40
	full.admitted = map[int64]perNode{m: {dublin: 14, london: 13, delhi: 13}}
	queued := flood
	queued.queued = map[int64]perNode{m: {london: 1}}
	behind := flood
	behind.waiting = []crdt.BucketCount{{Bucket: m - 1, N: 50}}
	room := policy.Room{TotalActiveUsers: 40, NewUsersPerMinute: 40, Nodes: 3, Lag: time.Second}
	slow := room
	slow.Lag = 5 * time.Second
	const shortLag = 300 * time.Millisecond
	short := room
	short.Lag = shortLag
	queueAll := room
	queueAll.QueueAll = true
	rest := world{now: now}
	cut := room.CutOff(2, rest.snap())
	cutFlood := flood // within the reachable part's limit of 26
	cutFlood.active = 14
	cutFlood.admitted = map[int64]perNode{m: {dublin: 7, london: 7}}
	cutFlood.arrivals = map[int64]perNode{m: {dublin: 8, london: 8}}
	newcomer := policy.Visitor{Bucket: m}
	tests := []struct {
		name  string
		room  policy.Room
		w     world
		since time.Duration // the first hold, before the allocation
		v     policy.Visitor
		want  bool
	}{
		{name: "a new visitor queued while the node sees slots open is held", room: room, w: flood, v: newcomer, want: true},
		{name: "a visitor queued in the current minute whose count has not arrived yet is held too", room: room, w: flood, v: policy.Visitor{Bucket: m, Queued: true}, want: true},
		{name: "a visitor held for less than two lags is held again", room: short, w: flood, since: 2*shortLag - time.Millisecond, v: newcomer, want: true},
		{name: "a visitor held for two lags is queued", room: short, w: flood, since: 2 * shortLag, v: newcomer, want: false},
		{name: "however long the lag, a visitor held for MaxHold is queued", room: slow, w: flood, since: policy.MaxHold, v: newcomer, want: false},
		{name: "with a long lag a visitor held for less than MaxHold is held again", room: slow, w: flood, since: policy.MaxHold - time.Millisecond, v: newcomer, want: true},
		{name: "a visitor is not held when the node sees no slot open", room: room, w: full, v: newcomer, want: false},
		{name: "nobody is held once someone was queued this minute", room: room, w: queued, v: newcomer, want: false},
		{name: "a new visitor behind an older bucket that the slots do not cover is not held", room: room, w: behind, v: newcomer, want: false},
		{name: "nobody is held under queue_all", room: queueAll, w: flood, v: newcomer, want: false},
		{name: "nobody is held while cut off from part of the ring, whose admissions will not come", room: cut, w: cutFlood, v: newcomer, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := policy.Allocate(tt.room, tt.w.snap(), dublin, now, policy.Continuous)
			if out := a.Decide(tt.v, nil); out != policy.Queue {
				t.Fatalf("Decide: %v, want queue (the case needs a queued visitor)", out)
			}
			if got := a.Held(tt.v, now.Add(-tt.since)); got != tt.want {
				t.Errorf("Held: %v, want %v", got, tt.want)
			}
		})
	}
}

// A bucket kept covered only because coverage sticks for the minute is this
// node's promise alone: the other nodes may treat it as the partial bucket
// and turn its visitors away. So its check-in interval starts when the open
// slots cover it again, and at the next minute's turn the newer bucket's
// pool waits for the older one's check-ins.
func TestABucketCoveredOnlyByStickinessHoldsAtTheMinutesTurn(t *testing.T) {
	start := at(t, "2021-05-27T16:00:00Z")
	m := minuteOf(start)
	room := policy.Room{TotalActiveUsers: 100_000, NewUsersPerMinute: 100, Nodes: 1, Lag: time.Second}
	newer := policy.Visitor{Bucket: m - 1, Queued: true}
	waiting := []crdt.BucketCount{{Bucket: m - 2, N: 2}, {Bucket: m - 1, N: 200}}
	// During minute m−1 the older bucket's last two wait; the node sees
	// admitted slots of that minute as given.
	during := func(at time.Duration, admitted uint64) world {
		return world{now: start.Add(-time.Minute + at), waiting: waiting, admitted: map[int64]perNode{m - 1: {nairobi: admitted}}}
	}
	turned := func(after time.Duration) world { return world{now: start.Add(after), waiting: waiting} }
	tests := []struct {
		name   string
		minute []world // the allocations of minute m−1, in order, the last a second before the turn
		after  time.Duration
		want   policy.Outcome
	}{
		{
			name:   "a bucket the open slots covered all minute holds nobody at the turn",
			minute: []world{during(5*time.Second, 90), during(30*time.Second, 95), during(55*time.Second, 95)},
			want:   policy.Admit,
		},
		{
			name:   "a bucket covered only because coverage stuck holds the newer bucket at the turn",
			minute: []world{during(5*time.Second, 90), during(30*time.Second, 100), during(59*time.Second, 100)},
			want:   policy.Queue,
		},
		{
			name:   "a bucket covered only because coverage stuck holds the newer bucket for the short interval and a lag",
			minute: []world{during(5*time.Second, 90), during(30*time.Second, 100), during(59*time.Second, 100)},
			after:  policy.NearCheckIn - time.Second,
			want:   policy.Queue,
		},
		{
			name:   "a bucket covered only because coverage stuck lets the newer bucket in after the short interval and a lag",
			minute: []world{during(5*time.Second, 90), during(30*time.Second, 100), during(59*time.Second, 100)},
			after:  policy.NearCheckIn + room.Lag + time.Second,
			want:   policy.Admit,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := policy.Allocate(room, tt.minute[0].snap(), nairobi, tt.minute[0].now, policy.Continuous)
			for _, w := range tt.minute[1:] {
				a = a.Next(room, w.snap(), w.now)
			}
			a = a.Next(room, turned(0).snap(), turned(0).now)
			if tt.after > 0 {
				a = a.Next(room, turned(tt.after).snap(), turned(tt.after).now)
			}
			if got := a.Decide(newer, nil); got != tt.want {
				t.Errorf("the newer bucket's visitor %v after the turn: %v, want %v", tt.after, got, tt.want)
			}
		})
	}
}
