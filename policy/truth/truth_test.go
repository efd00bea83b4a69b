package truth_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/waitroom/waitroom/policy/truth"
)

func s(n float64) time.Duration { return time.Duration(n * float64(time.Second)) }

// The events of the cases: who, when, and when its try began.
func admit(v int, at, arrived time.Duration) truth.Event {
	return truth.Event{Kind: truth.Admit, Visitor: v, At: at, Arrived: arrived}
}
func arrive(v int, at time.Duration) truth.Event {
	return truth.Event{Kind: truth.Arrive, Visitor: v, At: at, Arrived: at}
}
func queue(v int, at, arrived time.Duration) truth.Event {
	return truth.Event{Kind: truth.Queue, Visitor: v, At: at, Arrived: arrived}
}

// origin is a request that reached the origin; arrived is the try's arrival,
// used when no session covers it (the origin sees an admission).
func origin(v int, at, arrived time.Duration) truth.Event {
	return truth.Event{Kind: truth.Origin, Visitor: v, At: at, Arrived: arrived}
}
func revoke(v int, at time.Duration) truth.Event {
	return truth.Event{Kind: truth.Revoke, Visitor: v, At: at}
}
func giveUp(v int, at time.Duration) truth.Event {
	return truth.Event{Kind: truth.GiveUp, Visitor: v, At: at}
}

// hits are a fresh visitor's requests to the origin, as an origin that sees
// no admissions logs them: the first arrives and is let in at once.
func hits(v int, secs ...float64) []truth.Event {
	var out []truth.Event
	for _, x := range secs {
		out = append(out, origin(v, s(x), s(secs[0])))
	}
	return out
}

// admitMany admits n fresh visitors, numbered from first, one a second from
// at.
func admitMany(first, n int, at time.Duration) []truth.Event {
	var out []truth.Event
	for i := range n {
		t := at + s(float64(i))
		out = append(out, admit(first+i, t, t))
	}
	return out
}

func join(parts ...[]truth.Event) []truth.Event {
	var out []truth.Event
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func ptr(f float64) *float64 { return &f }

// want are the figures a case checks; the zero value of each says none.
type want struct {
	admissions, peakActive, peakNew   int
	inversions, passedOver, newcomers int
	// utilisation at the first queueing (nil: nobody queued), and the
	// limit that binds ("" : not checked).
	utilisation *float64
	binds       string
	activeAtQ   int
	// opened: sessions the origin saw begin without an admission logged.
	opened int
}

func (w want) String() string {
	u := "none queued"
	if w.utilisation != nil {
		u = fmt.Sprintf("%.3f with %d active", *w.utilisation, w.activeAtQ)
	}
	return fmt.Sprintf("admissions %d, peak active %d, peak new %d, inversions %d (passed over %d, newcomers %d), first queueing %s, opened at the origin %d",
		w.admissions, w.peakActive, w.peakNew, w.inversions, w.passedOver, w.newcomers, u, w.opened)
}

// oneMinute is a room with one-minute sessions and limits far off.
var oneMinute = truth.Limits{TotalActiveUsers: 100, NewUsersPerMinute: 100, SessionDuration: time.Minute}

// TestTheTruthJudgesWhatTheOriginSaw feeds hand-made logs (a simulator's,
// with the nodes' admissions, and an origin's, with only the requests it
// saw) to the judge and checks every figure against the definitions, by
// the wall clock.
func TestTheTruthJudgesWhatTheOriginSaw(t *testing.T) {
	minute := time.Minute
	noRenewal := oneMinute
	noRenewal.DisableSessionRenewal = true
	fiveMin := oneMinute
	fiveMin.SessionDuration = 5 * minute
	cases := []struct {
		name   string
		limits truth.Limits
		events []truth.Event
		end    time.Duration // 0: ten minutes
		// activeAt: the active count at these instants.
		activeAt map[time.Duration]int
		want     want
	}{
		// Sessions: active from the admission until session_duration after
		// the last request to the origin.
		{
			name:     "a session that renews lasts until session_duration after its last request to the origin",
			limits:   oneMinute,
			events:   []truth.Event{admit(1, 0, 0), origin(1, 0, 0), origin(1, s(40), 0), origin(1, s(80), 0)},
			activeAt: map[time.Duration]int{0: 1, s(79): 1, s(139): 1, s(140): 0},
			want:     want{admissions: 1, peakActive: 1, peakNew: 1},
		},
		{
			name:     "a session renewed by each request the origin saw stays live a session after the last one",
			limits:   oneMinute,
			events:   join(hits(1, 0, 30, 50), hits(2, 100)), // 1 is live until 110 s
			activeAt: map[time.Duration]int{s(109): 2, s(110): 1},
			want:     want{admissions: 2, peakActive: 2, peakNew: 1, opened: 2},
		},
		{
			name:   "a session that lapses ends session_duration after its last request, and a request the origin gets after that begins a new one, a new user",
			limits: oneMinute,
			events: []truth.Event{
				admit(1, 0, 0), origin(1, 0, 0), origin(1, s(30), 0),
				admit(2, s(85), s(85)), origin(2, s(85), s(85)),
				origin(1, s(100), s(100)), // past 30 s + 1 min: a node let it in
			},
			activeAt: map[time.Duration]int{s(89): 2, s(90): 1, s(99): 1, s(100): 2, s(144): 2, s(145): 1, s(159): 1, s(160): 0},
			want:     want{admissions: 3, peakActive: 2, peakNew: 2, opened: 1},
		},
		{
			name:     "a session that lapsed is over, and the origin's next request of that visitor is a new admission",
			limits:   oneMinute,
			events:   join(hits(1, 0), hits(1, 70), hits(2, 65)), // 1 lapsed at 60 s
			activeAt: map[time.Duration]int{s(66): 1, s(70): 2},
			want:     want{admissions: 3, peakActive: 2, peakNew: 2, opened: 3},
		},
		{
			name:     "with disable_session_renewal a session ends session_duration after the admission whatever the requests",
			limits:   noRenewal,
			events:   []truth.Event{admit(1, 0, 0), origin(1, 0, 0), origin(1, s(30), 0), origin(1, s(50), 0)},
			activeAt: map[time.Duration]int{s(59): 1, s(60): 0, s(80): 0},
			want:     want{admissions: 1, peakActive: 1, peakNew: 1},
		},
		{
			name:     "with disable_session_renewal the origin's requests do not keep a session live, and the next visitor's does not overlap it",
			limits:   noRenewal,
			events:   join(hits(1, 0, 30, 50), hits(2, 61)),
			activeAt: map[time.Duration]int{s(59): 1, s(61): 1},
			want:     want{admissions: 2, peakActive: 1, peakNew: 1, opened: 2},
		},
		{
			name:     "a revoked session ends at the revocation",
			limits:   fiveMin,
			events:   []truth.Event{admit(1, 0, 0), admit(2, s(1), s(1)), revoke(1, s(10)), origin(2, s(20), s(1))},
			activeAt: map[time.Duration]int{s(9): 2, s(10): 1, s(319): 1, s(320): 0},
			want:     want{admissions: 2, peakActive: 2, peakNew: 2},
		},
		{
			name:     "a visitor admitted again while its session lasts is active once and two new users",
			limits:   oneMinute,
			events:   []truth.Event{admit(1, 0, 0), admit(1, s(10), s(10))},
			activeAt: map[time.Duration]int{s(5): 1, s(10): 1, s(69): 1, s(70): 0},
			want:     want{admissions: 2, peakActive: 1, peakNew: 2},
		},
		{
			name:   "a session that ends as another starts hands its place over without counting twice",
			limits: oneMinute,
			events: []truth.Event{admit(1, 0, 0), admit(2, s(60), s(60))},
			want:   want{admissions: 2, peakActive: 1, peakNew: 1},
		},
		{
			name:   "a session the origin saw end as another began is not live with it",
			limits: oneMinute,
			events: join(hits(1, 0), hits(2, 60)),
			want:   want{admissions: 2, peakActive: 1, peakNew: 1, opened: 2},
		},

		// New users per wall-clock minute.
		{
			name:   "new users per minute are counted by wall-clock minute",
			limits: oneMinute,
			events: []truth.Event{admit(1, s(58), s(58)), admit(2, s(59), s(59)), admit(3, s(61), s(61))},
			want:   want{admissions: 3, peakActive: 3, peakNew: 2},
		},
		{
			name:   "two admissions a moment apart across a minute's turn fall in two minutes",
			limits: oneMinute,
			events: join(hits(1, 1), hits(2, 30), hits(3, 59.9), hits(4, 60.1), hits(5, 90)),
			want:   want{admissions: 5, peakActive: 4, peakNew: 3, opened: 5},
		},

		// FIFO inversions: 2 arrived in the first minute and waits; 3, of
		// the second minute, is let in at 70 s.
		{
			name:   "an earlier arrival let in one second after a later one is no inversion",
			limits: oneMinute,
			events: []truth.Event{queue(2, s(10), s(10)), queue(3, s(65), s(65)), admit(3, s(70), s(65)), admit(2, s(71), s(10))},
			want:   want{admissions: 2, peakActive: 2, peakNew: 2, utilisation: ptr(0), binds: truth.BindsActive},
		},
		{
			name:   "an earlier arrival let in three seconds after a later one makes that admission an inversion",
			limits: oneMinute,
			events: []truth.Event{queue(2, s(10), s(10)), queue(3, s(65), s(65)), admit(3, s(70), s(65)), admit(2, s(73), s(10))},
			want:   want{admissions: 2, peakActive: 2, peakNew: 2, inversions: 1, utilisation: ptr(0)},
		},
		{
			name:   "an earlier arrival the origin saw three seconds after a later one makes that admission an inversion",
			limits: oneMinute,
			events: []truth.Event{queue(2, s(10), s(10)), queue(3, s(65), s(65)), origin(3, s(70), s(65)), origin(2, s(73), s(10))},
			want:   want{admissions: 2, peakActive: 2, peakNew: 2, inversions: 1, utilisation: ptr(0), opened: 2},
		},
		{
			name:   "an earlier arrival never let in is an inversion",
			limits: oneMinute,
			events: []truth.Event{queue(2, s(10), s(10)), queue(3, s(65), s(65)), admit(3, s(70), s(65))},
			want:   want{admissions: 1, peakActive: 1, peakNew: 1, inversions: 1, utilisation: ptr(0)},
		},
		{
			name:   "an arrival of the same minute let in later is no inversion",
			limits: oneMinute,
			events: []truth.Event{queue(2, s(61), s(61)), admit(3, s(62), s(62)), admit(2, s(90), s(61))},
			want:   want{admissions: 2, peakActive: 2, peakNew: 2, utilisation: ptr(0)},
		},
		{
			name:   "someone who gave up before the admission is no inversion",
			limits: oneMinute,
			events: []truth.Event{queue(2, s(10), s(10)), giveUp(2, s(69)), queue(3, s(65), s(65)), admit(3, s(70), s(65))},
			want:   want{admissions: 1, peakActive: 1, peakNew: 1, utilisation: ptr(0)},
		},
		{
			name:   "someone who gives up within the grace is no inversion",
			limits: oneMinute,
			events: []truth.Event{queue(2, s(10), s(10)), queue(3, s(65), s(65)), admit(3, s(70), s(65)), giveUp(2, s(71))},
			want:   want{admissions: 1, peakActive: 1, peakNew: 1, utilisation: ptr(0)},
		},
		{
			name:   "someone who gives up later still waited",
			limits: oneMinute,
			events: []truth.Event{queue(2, s(10), s(10)), queue(3, s(65), s(65)), admit(3, s(70), s(65)), giveUp(2, s(80))},
			want:   want{admissions: 1, peakActive: 1, peakNew: 1, inversions: 1, utilisation: ptr(0)},
		},
		{
			name:   "someone who gave up before is not passed over, someone still waiting at the end is",
			limits: oneMinute,
			events: []truth.Event{
				queue(1, s(10), s(10)),
				giveUp(1, s(50)),
				admit(2, s(70), s(70)), // 1 had given up: fair
				queue(3, s(80), s(80)),
				admit(4, s(130), s(130)), // 3 (minute 1) waits to the end: an inversion
			},
			end:  s(200),
			want: want{admissions: 2, peakActive: 1, peakNew: 1, inversions: 1, newcomers: 1, utilisation: ptr(0)},
		},
		{
			name:   "an admission too close to the end to judge is not counted",
			limits: oneMinute,
			events: []truth.Event{queue(2, s(10), s(10)), origin(3, s(70), s(65))},
			end:    s(71),
			want:   want{admissions: 1, peakActive: 1, peakNew: 1, newcomers: 0, utilisation: ptr(0), opened: 1},
		},
		{
			name:   "in a log without arrivals a visitor waits from its queue page",
			limits: oneMinute,
			// 2 arrived at 59.5 s and got its queue page at 60.5 s; 3 was let
			// in at 60.2 s.
			events: []truth.Event{admit(3, s(60.2), s(60.1)), queue(2, s(60.5), s(59.5))},
			want:   want{admissions: 1, peakActive: 1, peakNew: 1, utilisation: ptr(0.01), binds: truth.BindsActive, activeAtQ: 1},
		},
		{
			name:   "in a log with arrivals a visitor waits from its first request, answered with the queue page or not yet",
			limits: oneMinute,
			events: []truth.Event{arrive(2, s(59.5)), admit(3, s(60.2), s(60.1)), queue(2, s(60.5), s(59.5)), admit(2, s(63), s(59.5))},
			want:   want{admissions: 2, peakActive: 2, peakNew: 2, inversions: 1, newcomers: 1, utilisation: ptr(0.01), binds: truth.BindsActive, activeAtQ: 1},
		},
		{
			name:   "an inversion whose earlier arrival is turned away 10 s later passed it over",
			limits: oneMinute,
			events: []truth.Event{queue(2, s(10), s(10)), queue(2, s(80), s(10)), origin(3, s(70), s(65)), origin(2, s(120), s(10))},
			want:   want{admissions: 2, peakActive: 2, peakNew: 1, inversions: 1, passedOver: 1, newcomers: 1, utilisation: ptr(0), opened: 2},
		},
		{
			name:   "an inversion whose earlier arrival is turned away 30 s later did not pass it over",
			limits: oneMinute,
			events: []truth.Event{queue(2, s(10), s(10)), queue(2, s(100), s(10)), origin(3, s(70), s(65)), origin(2, s(120), s(10))},
			want:   want{admissions: 2, peakActive: 2, peakNew: 1, inversions: 1, newcomers: 1, utilisation: ptr(0), opened: 2},
		},
		{
			name:   "an inversion whose earlier arrival was turned away only before it did not pass it over",
			limits: oneMinute,
			events: []truth.Event{queue(2, s(10), s(10)), queue(2, s(60), s(10)), origin(3, s(70), s(65)), origin(2, s(120), s(10))},
			want:   want{admissions: 2, peakActive: 2, peakNew: 1, inversions: 1, newcomers: 1, utilisation: ptr(0), opened: 2},
		},
		{
			name:   "an inversion passes over any earlier arrival turned away soon after, not only the earliest",
			limits: oneMinute,
			events: []truth.Event{queue(1, s(5), s(5)), queue(2, s(10), s(10)), queue(2, s(80), s(10)), admit(3, s(70), s(70))},
			want:   want{admissions: 1, peakActive: 1, peakNew: 1, inversions: 1, passedOver: 1, newcomers: 1, utilisation: ptr(0)},
		},
		{
			name:   "a newcomer let in at its first request past an earlier arrival is counted as such",
			limits: oneMinute,
			events: []truth.Event{queue(2, s(10), s(10)), origin(3, s(70), s(70)), origin(2, s(90), s(10))},
			want:   want{admissions: 2, peakActive: 2, peakNew: 2, inversions: 1, newcomers: 1, utilisation: ptr(0), opened: 2},
		},

		// Utilisation at the first queueing.
		{
			name:   "the first queueing is judged against the per-minute limit when it binds",
			limits: truth.Limits{TotalActiveUsers: 100, NewUsersPerMinute: 10, SessionDuration: 5 * minute},
			events: append(admitMany(1, 9, 0), queue(20, s(10), s(10))),
			want:   want{admissions: 9, peakActive: 9, peakNew: 9, utilisation: ptr(0.9), binds: truth.BindsNewPerMinute, activeAtQ: 9},
		},
		{
			name:   "the first queueing is judged against the active limit when it binds, sessions of earlier minutes included",
			limits: truth.Limits{TotalActiveUsers: 10, NewUsersPerMinute: 100, SessionDuration: 5 * minute},
			events: append(admitMany(1, 8, 0), admit(9, s(61), s(61)), queue(20, s(70), s(70))),
			want:   want{admissions: 9, peakActive: 9, peakNew: 8, utilisation: ptr(0.9), binds: truth.BindsActive, activeAtQ: 9},
		},
		{
			name:   "the active limit binds when the sessions the origin saw are live and nobody came this minute",
			limits: truth.Limits{TotalActiveUsers: 4, NewUsersPerMinute: 4, SessionDuration: 5 * minute},
			events: join(hits(1, 1), hits(2, 2), hits(3, 3), []truth.Event{queue(4, s(70), s(70))}),
			want:   want{admissions: 3, peakActive: 3, peakNew: 3, utilisation: ptr(0.75), binds: truth.BindsActive, activeAtQ: 3, opened: 3},
		},
		{
			name:   "the minute limit binds when this minute's admissions fill it",
			limits: truth.Limits{TotalActiveUsers: 100, NewUsersPerMinute: 2, SessionDuration: minute},
			events: join(hits(1, 1), hits(2, 2), []truth.Event{queue(4, s(3), s(3))}),
			want:   want{admissions: 2, peakActive: 2, peakNew: 2, utilisation: ptr(1), binds: truth.BindsNewPerMinute, activeAtQ: 2, opened: 2},
		},
		{
			name:   "a lapsed session no longer counts at the first queueing",
			limits: truth.Limits{TotalActiveUsers: 4, NewUsersPerMinute: 4, SessionDuration: minute},
			events: join(hits(1, 1), hits(2, 62), []truth.Event{queue(4, s(63), s(63))}),
			want:   want{admissions: 2, peakActive: 1, peakNew: 1, utilisation: ptr(0.25), binds: truth.BindsActive, activeAtQ: 1, opened: 2},
		},
		{
			name:   "a room that never queued has no first queueing",
			limits: oneMinute,
			events: hits(1, 1),
			want:   want{admissions: 1, peakActive: 1, peakNew: 1, opened: 1},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			end := c.end
			if end == 0 {
				end = 10 * time.Minute
			}
			h := truth.Replay(c.events, c.limits)
			active := h.Active()
			for at, n := range c.activeAt {
				if got := active.At(at); got != n {
					t.Errorf("active at %v: %d, want %d", at, got, n)
				}
			}
			v := h.Judge(end)
			got := want{admissions: v.Admissions, peakActive: v.PeakActive, peakNew: v.PeakNewPerMinute,
				inversions: len(v.Inversions), passedOver: v.PassedOver, newcomers: v.Newcomers, opened: h.OriginOpened()}
			if v.Queued {
				got.utilisation, got.activeAtQ = ptr(v.Utilisation), v.ActiveAtFirstQueue
			}
			w := c.want
			if w.utilisation != nil && w.binds == "" {
				got.activeAtQ = w.activeAtQ // not checked
			}
			if got.String() != w.String() {
				t.Errorf("got  %v\nwant %v", got, w)
			}
			if w.binds != "" && v.Binds != w.binds {
				t.Errorf("binding limit %q, want %q", v.Binds, w.binds)
			}
			if r := float64(v.PeakActive) / float64(c.limits.TotalActiveUsers); math.Abs(v.PeakActiveRatio-r) > 1e-9 {
				t.Errorf("peak active ratio %v, want %v", v.PeakActiveRatio, r)
			}
			if r := float64(v.PeakNewPerMinute) / float64(c.limits.NewUsersPerMinute); math.Abs(v.PeakNewRatio-r) > 1e-9 {
				t.Errorf("peak new per minute ratio %v, want %v", v.PeakNewRatio, r)
			}
			if v.Admissions > 0 {
				if r := float64(len(v.Inversions)) / float64(v.Admissions); math.Abs(v.InversionShare-r) > 1e-9 {
					t.Errorf("inversion share %v, want %v", v.InversionShare, r)
				}
			}
		})
	}
}

// TestALogInAnyOrderGivesTheSameVerdict shuffles logs merged from a crowd's
// and an origin's records: the judge takes events by time, whatever order
// they came in.
func TestALogInAnyOrderGivesTheSameVerdict(t *testing.T) {
	events := []truth.Event{
		queue(1, s(5), s(5)), queue(2, s(10), s(10)), queue(2, s(30), s(10)), giveUp(1, s(40)),
		origin(3, s(70), s(70)), queue(2, s(80), s(10)), origin(3, s(100), s(70)), origin(2, s(120), s(10)),
		origin(4, s(121), s(121)), revoke(4, s(150)), origin(5, s(200), s(200)),
	}
	lim := truth.Limits{TotalActiveUsers: 3, NewUsersPerMinute: 3, SessionDuration: time.Minute}
	base := fmt.Sprintf("%+v", truth.Replay(events, lim).Judge(10*time.Minute))
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20 {
		shuffled := append([]truth.Event(nil), events...)
		rng.Shuffle(len(shuffled), func(a, b int) { shuffled[a], shuffled[b] = shuffled[b], shuffled[a] })
		t.Run(fmt.Sprintf("shuffle %d judges as the log in time order", i), func(t *testing.T) {
			if got := fmt.Sprintf("%+v", truth.Replay(shuffled, lim).Judge(10*time.Minute)); got != base {
				t.Fatalf("got  %s\nwant %s", got, base)
			}
		})
	}
}

// TestInversionsNameTheEarliestArrivalPassedOver: the earlier wait named is
// the earliest arrival turned away soon after when one was, else the
// earliest arrival still waiting.
func TestInversionsNameTheEarliestArrivalPassedOver(t *testing.T) {
	cases := []struct {
		name        string
		events      []truth.Event
		wantEarlier int
		passedOver  bool
	}{
		{"the earliest arrival still waiting, when nobody was turned away soon after",
			[]truth.Event{queue(1, s(5), s(5)), queue(2, s(10), s(10)), admit(3, s(70), s(70))}, 1, false},
		{"the earliest arrival turned away soon after",
			[]truth.Event{queue(1, s(5), s(5)), queue(2, s(10), s(10)), queue(2, s(80), s(10)), admit(3, s(70), s(70))}, 2, true},
		{"the earliest of those turned away soon after",
			[]truth.Event{queue(1, s(5), s(5)), queue(2, s(10), s(10)), queue(4, s(12), s(12)), queue(4, s(75), s(12)), queue(2, s(80), s(10)), admit(3, s(70), s(70))}, 2, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := truth.Replay(c.events, oneMinute).Judge(10 * time.Minute)
			if len(v.Inversions) != 1 {
				t.Fatalf("%d inversions, want 1", len(v.Inversions))
			}
			in := v.Inversions[0]
			if in.Earlier.Visitor != c.wantEarlier || in.PassedOver != c.passedOver || in.Later.Visitor != 3 {
				t.Fatalf("%d let in before %d (passed over %v); want 3 before %d (%v)", in.Later.Visitor, in.Earlier.Visitor, in.PassedOver, c.wantEarlier, c.passedOver)
			}
		})
	}
}

func TestMinuteOfIsTheWallClockMinuteAlsoBeforeTheStart(t *testing.T) {
	for _, c := range []struct {
		at   time.Duration
		want int64
	}{{0, 0}, {s(59.9), 0}, {s(60), 1}, {-s(0.1), -1}, {-s(60), -1}, {-s(60.1), -2}} {
		t.Run(fmt.Sprintf("%v falls in minute %d", c.at, c.want), func(t *testing.T) {
			if got := truth.MinuteOf(c.at); got != c.want {
				t.Fatalf("minute %d", got)
			}
		})
	}
}
