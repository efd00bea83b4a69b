package policy_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/policy"
)

// countNow is a unix second 10 s into a minute.
const countNow = 28_000_000*60 + 10

func key(k crdt.Kind, bucket, minute int64) crdt.Key {
	return crdt.Key{Room: "shop", Kind: k, Bucket: bucket, Minute: minute}
}

func sessionKey(k crdt.Kind, cell int64) crdt.Key { return key(k, cell, cell/60) }

func TestCount(t *testing.T) {
	m := int64(countNow / 60)
	five := policy.Room{SessionDuration: 5}
	cell := func(expires int64) int64 { return policy.SessionCell(expires, policy.SessionSlice(5)) }
	admitted := policy.Counting{Bucket: m - 3, AcceptedAt: countNow - 100, LastCheckIn: countNow - 40, Counted: cell(countNow - 40 + 300), ExpiresAt: countNow - 40 + 300}
	waiting := policy.Counting{Bucket: m - 2, LastCheckIn: countNow - 25, RefreshInterval: 20, Counted: m - 1, ExpiresAt: countNow - 25 + 300}
	_, proving := policy.Count(nil, five, "shop", policy.Counting{}, policy.Event{Step: policy.StepDecided, Fresh: true, Outcome: policy.Queue, Refresh: 20, At: countNow})
	_, provingLate := policy.Count(nil, five, "shop", policy.Counting{}, policy.Event{Step: policy.StepDecided, Fresh: true, Outcome: policy.Queue, Refresh: 20, At: m*60 + 59})
	tests := []struct {
		name   string
		room   policy.Room
		before policy.Counting
		ev     policy.Event
		now    int64
		want   []crdt.Key
		check  func(t *testing.T, c policy.Counting)
	}{
		{
			name: "a first request that is admitted counts an arrival, the admission and a session in the slice of its expiry",
			room: five, ev: policy.Event{Step: policy.StepDecided, Fresh: true, Outcome: policy.Admit}, now: countNow,
			want: []crdt.Key{key(crdt.Arrivals, 0, m), key(crdt.Admitted, 0, m), sessionKey(crdt.SessionPlus, cell(countNow+300)), key(crdt.VisitorsAdmitted, 0, m), key(crdt.TimeOnOrigin, 0, m)},
			check: func(t *testing.T, c policy.Counting) {
				if c.Counted != cell(countNow+300) || c.ExpiresAt != countNow+300 || c.AcceptedAt != countNow || c.Bucket != m {
					t.Errorf("state %+v", c)
				}
			},
		},
		{
			name: "a first request that is queued counts neither an arrival nor a waiting place, and comes back for its proof soon",
			room: five, ev: policy.Event{Step: policy.StepDecided, Fresh: true, Outcome: policy.Queue, Refresh: 19}, now: countNow,
			want: []crdt.Key{key(crdt.VisitorsQueued, 0, m)},
			check: func(t *testing.T, c policy.Counting) {
				if c.Counted != 0 || c.Waiting() || !c.Proving() || c.Bucket != m || c.LastCheckIn != countNow ||
					c.RefreshInterval != policy.ProofRefresh || c.ExpiresAt != countNow+policy.QueuedTokenLife {
					t.Errorf("state %+v", c)
				}
				if policy.EarlyCheckIn(c, countNow+policy.ProofRefresh) {
					t.Errorf("the proof, %d s later, is an early check-in", policy.ProofRefresh)
				}
			},
		},
		{
			name: "a first request that is queued with the challenge counts the challenge and still no arrival or waiting place",
			room: five, ev: policy.Event{Step: policy.StepDecided, Fresh: true, Outcome: policy.Queue, Refresh: 19, Challenged: true}, now: countNow,
			want: []crdt.Key{key(crdt.VisitorsQueued, 0, m), key(crdt.ChallengesIssued, 0, m)},
		},
		{
			name: "the proof in the same minute counts the visitor's arrival, a place in the first request's bucket and the slot of the minute it came in",
			room: five, before: proving, ev: policy.Event{Step: policy.StepDecided, Outcome: policy.Queue, Refresh: 21}, now: countNow + 1,
			want: []crdt.Key{key(crdt.Arrivals, 0, m), key(crdt.QueuedAt, m*60, m), key(crdt.WaitingPlus, m, m)},
			check: func(t *testing.T, c policy.Counting) {
				if c.Counted != m || c.Bucket != m || !c.Waiting() || c.Proving() || c.RefreshInterval != 21 || c.LastCheckIn != countNow+1 {
					t.Errorf("state %+v", c)
				}
			},
		},
		{
			name: "the proof after a minute boundary counts a place in its first minute's bucket and an arrival in the new minute",
			room: five, before: provingLate, ev: policy.Event{Step: policy.StepDecided, Outcome: policy.Queue, Refresh: 21}, now: (m+1)*60 + 1,
			want: []crdt.Key{key(crdt.Arrivals, 0, m+1), key(crdt.QueuedAt, m*60+40, m), key(crdt.WaitingPlus, m, m+1)},
			check: func(t *testing.T, c policy.Counting) {
				if c.Counted != m+1 || c.Bucket != m {
					t.Errorf("state %+v", c)
				}
			},
		},
		{
			name: "a proof long after the first request, in a later minute, joins the current minute's bucket",
			room: five, before: proving, ev: policy.Event{Step: policy.StepDecided, Outcome: policy.Queue, Refresh: 21}, now: (m+1)*60 + 30,
			want: []crdt.Key{key(crdt.Arrivals, 0, m+1), key(crdt.QueuedAt, (m+1)*60+20, m+1), key(crdt.WaitingPlus, m+1, m+1)},
			check: func(t *testing.T, c policy.Counting) {
				if c.Counted != m+1 || c.Bucket != m+1 || c.Arrived != 300 {
					t.Errorf("state %+v", c)
				}
			},
		},
		{
			name: "the proof admitted counts the arrival, the admission and its session, and leaves no waiting cell",
			room: five, before: proving, ev: policy.Event{Step: policy.StepDecided, Outcome: policy.Admit}, now: countNow + 1,
			want: []crdt.Key{key(crdt.Arrivals, 0, m), key(crdt.Admitted, 0, m), sessionKey(crdt.SessionPlus, cell(countNow+301)), key(crdt.VisitorsAdmitted, 0, m), key(crdt.TimeOnOrigin, 0, m),
				key(crdt.TimeInQueue, crdt.HistogramBin(float64(countNow+1-(m*60+30))), m)},
		},
		{
			name: "the proof turned away by a full queue counts only its arrival and stays counted nowhere",
			room: five, before: proving, ev: policy.Event{Step: policy.StepDecided, Outcome: policy.Reject, Refresh: 20}, now: countNow + 1,
			want: []crdt.Key{key(crdt.Arrivals, 0, m)},
			check: func(t *testing.T, c policy.Counting) {
				if c.Counted != 0 || c.Proving() {
					t.Errorf("state %+v", c)
				}
			},
		},
		{
			name: "a check-in in a new minute moves the waiting count to this minute and counts an arrival",
			room: five, before: waiting, ev: policy.Event{Step: policy.StepDecided, Outcome: policy.Queue, Refresh: 20}, now: countNow,
			want: []crdt.Key{key(crdt.Arrivals, 0, m), key(crdt.WaitingMinus, m-2, m-1), key(crdt.WaitingPlus, m-2, m)},
		},
		{
			name: "a second check-in in the same minute counts nothing",
			room: five, before: policy.Counting{Bucket: m - 2, LastCheckIn: countNow - 1, Counted: m}, ev: policy.Event{Step: policy.StepDecided, Outcome: policy.Queue}, now: countNow + 30,
		},
		{
			name: "a waiting visitor admitted leaves its waiting cell and its slot's line, and its time in queue is counted",
			room: five, before: waiting, ev: policy.Event{Step: policy.StepDecided, Outcome: policy.Admit}, now: countNow,
			want: []crdt.Key{key(crdt.Arrivals, 0, m), key(crdt.Admitted, 0, m), sessionKey(crdt.SessionPlus, cell(countNow+300)), key(crdt.VisitorsAdmitted, 0, m), key(crdt.TimeOnOrigin, 0, m),
				key(crdt.TimeInQueue, crdt.HistogramBin(float64(countNow-((m-2)*60+30))), m), key(crdt.WaitingMinus, m-2, m-1), key(crdt.LeftAt, (m-2)*60, m-2)},
		},
		{
			name: "a waiting visitor rejected leaves its waiting cell and its slot's line",
			room: five, before: waiting, ev: policy.Event{Step: policy.StepDecided, Outcome: policy.Reject}, now: countNow,
			want: []crdt.Key{key(crdt.Arrivals, 0, m), key(crdt.WaitingMinus, m-2, m-1), key(crdt.LeftAt, (m-2)*60, m-2)},
			check: func(t *testing.T, c policy.Counting) {
				if c.Counted != 0 {
					t.Errorf("still counted in %d", c.Counted)
				}
			},
		},
		{
			name: "a shuffle moves the waiting count to the new bucket and leaves the old slot's line",
			room: five, before: policy.Counting{Bucket: m - 2, LastCheckIn: countNow - 5, Counted: m}, ev: policy.Event{Step: policy.StepDecided, Outcome: policy.Queue, Shuffled: m - 7}, now: countNow,
			want: []crdt.Key{key(crdt.QueuedAt, (m-7)*60+40, m-7), key(crdt.WaitingMinus, m-2, m), key(crdt.LeftAt, (m-2)*60, m-2), key(crdt.WaitingPlus, m-7, m)},
		},
		{
			name: "a visitor counted nowhere joins the current minute's bucket when counted again later",
			room: five, before: policy.Counting{Bucket: m - 2, LastCheckIn: countNow - 25}, ev: policy.Event{Step: policy.StepDecided, Outcome: policy.Queue}, now: countNow,
			want: []crdt.Key{key(crdt.Arrivals, 0, m), key(crdt.QueuedAt, m*60, m), key(crdt.WaitingPlus, m, m)},
		},
		{
			name: "a session's request in a later slice moves its count to the slice of its renewed expiry",
			room: five, before: admitted, ev: policy.Event{Step: policy.StepSession}, now: countNow,
			want: []crdt.Key{key(crdt.Arrivals, 0, m), key(crdt.TimeOnOriginMinus, crdt.HistogramBin(60), (countNow-100)/60), key(crdt.TimeOnOrigin, crdt.HistogramBin(100), (countNow-100)/60),
				sessionKey(crdt.SessionMinus, admitted.Counted), sessionKey(crdt.SessionPlus, cell(countNow+300))},
		},
		{
			name: "a session's request within the same slice moves nothing",
			room: five, before: policy.Counting{AcceptedAt: countNow - 1000, LastCheckIn: countNow, Counted: cell(countNow + 300), ExpiresAt: countNow + 300}, ev: policy.Event{Step: policy.StepSession}, now: countNow + 1,
		},
		{
			name: "with disable_session_renewal a session is never moved and its expiry stays",
			room: policy.Room{SessionDuration: 5, DisableSessionRenewal: true}, before: admitted, ev: policy.Event{Step: policy.StepSession}, now: countNow,
			want: []crdt.Key{key(crdt.Arrivals, 0, m), key(crdt.TimeOnOriginMinus, crdt.HistogramBin(60), (countNow-100)/60), key(crdt.TimeOnOrigin, crdt.HistogramBin(100), (countNow-100)/60)},
			check: func(t *testing.T, c policy.Counting) {
				if c.ExpiresAt != admitted.ExpiresAt || c.Counted != admitted.Counted {
					t.Errorf("state %+v", c)
				}
			},
		},
		{
			name: "a revocation takes the session off the cell it is counted in and tells every node",
			room: five, before: admitted, ev: policy.Event{Step: policy.StepRevoke, ID: 42}, now: countNow,
			want: []crdt.Key{sessionKey(crdt.SessionMinus, admitted.Counted), key(crdt.SessionsRevoked, 0, m), key(crdt.Revocations, 42, m)},
		},
		{
			name: "a second revocation of the same state finds nothing counted",
			room: five, before: policy.Counting{AcceptedAt: 1, Counted: 0}, ev: policy.Event{Step: policy.StepRevoke, ID: 42}, now: countNow,
		},
		{
			name: "a visitor held for the challenge leaves the waiting count and its slot's line, and the challenge is counted",
			room: five, before: waiting, ev: policy.Event{Step: policy.StepHold}, now: countNow,
			want: []crdt.Key{key(crdt.WaitingMinus, m-2, m-1), key(crdt.LeftAt, (m-2)*60, m-2), key(crdt.ChallengesIssued, 0, m)},
		},
		{
			name: "a check-in in the infinite queue counts a refresh and nothing else",
			room: five, before: policy.Counting{Bucket: m - 2, LastCheckIn: countNow - 25}, ev: policy.Event{Step: policy.StepHold, Infinite: true}, now: countNow,
			want: []crdt.Key{key(crdt.InfiniteQueueRefreshes, 0, m)},
		},
		{
			name: "a suspended room's pass-through counts nothing",
			room: five, ev: policy.Event{Step: policy.StepDecided, Fresh: true, Outcome: policy.Bypass}, now: countNow,
		},
		{
			name: "a solved challenge is counted before what the decision counts",
			room: five, before: waiting, ev: policy.Event{Step: policy.StepDecided, Outcome: policy.Queue, Refresh: 20, Verdict: policy.VerdictSolved}, now: countNow,
			want: []crdt.Key{key(crdt.ChallengesSolved, 0, m), key(crdt.Arrivals, 0, m), key(crdt.WaitingMinus, m-2, m-1), key(crdt.WaitingPlus, m-2, m)},
		},
		{
			name: "a failed challenge is counted with the hold in the infinite queue",
			room: five, before: policy.Counting{Bucket: m - 2, LastCheckIn: countNow - 25}, ev: policy.Event{Step: policy.StepHold, Infinite: true, Verdict: policy.VerdictFailed}, now: countNow,
			want: []crdt.Key{key(crdt.ChallengesFailed, 0, m), key(crdt.InfiniteQueueRefreshes, 0, m)},
		},
		{
			name: "a check-in without a solution while the room queues counts as unsolved",
			room: five, before: waiting, ev: policy.Event{Step: policy.StepHold, Verdict: policy.VerdictUnsolved}, now: countNow,
			want: []crdt.Key{key(crdt.ChallengesUnsolved, 0, m), key(crdt.WaitingMinus, m-2, m-1), key(crdt.LeftAt, (m-2)*60, m-2), key(crdt.ChallengesIssued, 0, m)},
		},
		{
			name: "a priority holder's admission counts in its group's admissions too",
			room: five, before: waiting, ev: policy.Event{Step: policy.StepDecided, Outcome: policy.Admit, Group: "vip"}, now: countNow,
			want: []crdt.Key{
				policy.GroupAdmittedKey("shop", "vip", m), key(crdt.Arrivals, 0, m), key(crdt.Admitted, 0, m), sessionKey(crdt.SessionPlus, cell(countNow+300)),
				key(crdt.VisitorsAdmitted, 0, m), key(crdt.TimeOnOrigin, 0, m), key(crdt.TimeInQueue, crdt.HistogramBin(float64(countNow-((m-2)*60+30))), m), key(crdt.WaitingMinus, m-2, m-1), key(crdt.LeftAt, (m-2)*60, m-2),
			},
		},
		{
			name: "a priority holder queued counts nothing for its group",
			room: five, before: waiting, ev: policy.Event{Step: policy.StepDecided, Outcome: policy.Queue, Refresh: 20, Group: "vip"}, now: countNow,
			want: []crdt.Key{key(crdt.Arrivals, 0, m), key(crdt.WaitingMinus, m-2, m-1), key(crdt.WaitingPlus, m-2, m)},
		},
		{
			name: "a priority code's use counts in its group's uses and leaves the visitor as it was",
			room: five, before: waiting, ev: policy.Event{Step: policy.StepCodeUse, Group: "vip"}, now: countNow,
			want: []crdt.Key{key(crdt.PriorityCodeUses, crdt.GroupBucket("vip"), m)},
			check: func(t *testing.T, c policy.Counting) {
				if c != waiting {
					t.Errorf("state %+v, want %+v", c, waiting)
				}
			},
		},
		{
			name: "a seeded visitor counts an arrival, its place in its bucket's order and a waiting place this minute",
			room: five, before: policy.Counting{Bucket: m - 3, Arrived: 123}, ev: policy.Event{Step: policy.StepSeed}, now: countNow,
			want: []crdt.Key{key(crdt.Arrivals, 0, m), key(crdt.QueuedAt, crdt.ArrivalSlot(m-3, 123), m-3), key(crdt.WaitingPlus, m-3, m)},
			check: func(t *testing.T, c policy.Counting) {
				if !c.Waiting() || c.Counted != m || c.Bucket != m-3 || c.Arrived != 123 || c.ExpiresAt != countNow+policy.QueuedTokenLife {
					t.Errorf("state %+v", c)
				}
				if policy.EarlyCheckIn(c, countNow) {
					t.Error("a seeded visitor's first check-in is early")
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := tt.ev
			ev.At = tt.now
			incs, after := policy.Count(nil, tt.room, "shop", tt.before, ev)
			var got []crdt.Key
			for _, in := range incs {
				if in.N != 1 {
					t.Errorf("%+v adds %d", in.Key, in.N)
				}
				got = append(got, in.Key)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("increments\n got %v\nwant %v", got, tt.want)
			}
			if tt.check != nil {
				tt.check(t, after)
			}
		})
	}
}

func TestSessionSlice(t *testing.T) {
	tests := []struct {
		minutes int
		want    int64
	}{{1, 1}, {2, 1}, {3, 2}, {5, 3}, {10, 5}, {20, 10}, {30, 15}}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("sessions of %d minutes are cut into %d-second slices", tt.minutes, tt.want), func(t *testing.T) {
			if got := policy.SessionSlice(tt.minutes); got != tt.want || int64(tt.minutes)*60/got > 120 {
				t.Errorf("SessionSlice(%d) = %d, want %d", tt.minutes, got, tt.want)
			}
		})
	}
}

func TestEarlyCheckIn(t *testing.T) {
	c := policy.Counting{LastCheckIn: 1000, RefreshInterval: 20}
	tests := []struct {
		name string
		now  int64
		want bool
		next int64 // seconds the visitor is told to wait (NextCheckIn)
	}{
		{"a check-in 5 s after the last is early, and told to come back in 15 s", 1005, true, 15},
		{"a check-in a second before the interval is over is early, and told one second", 1019, true, 1},
		{"a check-in when the interval is over counts", 1020, false, 1},
		{"a later one counts", 1100, false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := policy.EarlyCheckIn(c, tt.now); got != tt.want {
				t.Errorf("EarlyCheckIn at %d = %v", tt.now, got)
			}
			if got := policy.NextCheckIn(c, tt.now); got != tt.next {
				t.Errorf("NextCheckIn at %d = %d, want %d", tt.now, got, tt.next)
			}
		})
	}
}

// TestASessionIsActiveUntilItsExpiryRoundedUpToTheSlice: admitted at t, a
// session with renewal off is active in the snapshot at every second up to
// its expiry rounded up to the slice, and not after.
func TestASessionIsActiveUntilItsExpiryRoundedUpToTheSlice(t *testing.T) {
	for _, minutes := range []int{1, 5, 30} {
		room := policy.Room{SessionDuration: minutes, DisableSessionRenewal: true}
		for _, at := range []int64{countNow, countNow + 1, countNow + 4, countNow + 7} {
			t.Run(fmt.Sprintf("a %d-minute session admitted at second %d", minutes, at%60), func(t *testing.T) {
				s := crdt.New()
				incs, c := policy.Count(nil, room, "shop", policy.Counting{}, policy.Event{Step: policy.StepDecided, Fresh: true, Outcome: policy.Admit, At: at})
				for _, in := range incs {
					s.Add(in.Key, 1, in.N)
				}
				end := policy.SessionCell(c.ExpiresAt, policy.SessionSlice(minutes))
				if end <= c.ExpiresAt || end > c.ExpiresAt+policy.SessionSlice(minutes) {
					t.Fatalf("counted until %d for an expiry at %d", end, c.ExpiresAt)
				}
				for _, now := range []int64{at, c.ExpiresAt - 1, c.ExpiresAt, end - 1} {
					if a := s.Snapshot("shop", now, room.Windows()).Active; a != 1 {
						t.Errorf("at %+d s: active %d, want 1", now-at, a)
					}
				}
				if a := s.Snapshot("shop", end, room.Windows()).Active; a != 0 {
					t.Errorf("at the slice end %+d s: active %d, want 0", end-at, a)
				}
			})
		}
	}
}

// TestCountedTotalsEqualTheLiveVisitors: for any sequence of requests of
// any number of tokens at one node, each step applied to the newest state of
// its token (what the edge's table hands the rule), the summed session and
// waiting counts equal the number of distinct live tokens in each state (a
// new visitor on its way to its proof counts in neither), and a token never
// held counts no two arrivals in one minute (its proof included: a queued
// first request counts no arrival, the proof counts it; a held visitor's
// arrival is counted when it is decided on, after the hold).
func TestCountedTotalsEqualTheLiveVisitors(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		room := policy.Room{SessionDuration: rapid.SampledFrom([]int{1, 5, 30}).Draw(t, "session"), DisableSessionRenewal: rapid.Bool().Draw(t, "no renewal")}
		s := crdt.New()
		now := int64(countNow)
		type tok struct {
			c       policy.Counting
			fresh   bool
			gone    bool
			held    bool
			arrived map[int64]bool // the minutes it counted an arrival in
		}
		toks := make([]tok, rapid.IntRange(1, 6).Draw(t, "tokens"))
		for i := range toks {
			toks[i].fresh = true
		}
		for range rapid.IntRange(1, 60).Draw(t, "requests") {
			now += rapid.Int64Range(0, 40).Draw(t, "seconds later")
			i := rapid.IntRange(0, len(toks)-1).Draw(t, "token")
			v := &toks[i]
			if v.gone || (!v.fresh && now > v.c.ExpiresAt) {
				continue // an expired cookie: a new visitor, another token
			}
			var ev policy.Event
			switch {
			case !v.fresh && v.c.Admitted():
				ev.Step = policy.StepSession
				if rapid.IntRange(0, 9).Draw(t, "revoke") == 0 {
					ev = policy.Event{Step: policy.StepRevoke, ID: uint64(i + 1)}
					v.gone = true
				}
			case !v.fresh && policy.EarlyCheckIn(v.c, now):
				continue
			case rapid.IntRange(0, 9).Draw(t, "hold") == 0:
				ev = policy.Event{Step: policy.StepHold, Fresh: v.fresh, Refresh: 20}
			default:
				ev = policy.Event{Step: policy.StepDecided, Fresh: v.fresh, Refresh: 20,
					Outcome: rapid.SampledFrom([]policy.Outcome{policy.Admit, policy.Queue, policy.Queue, policy.Reject}).Draw(t, "outcome")}
			}
			ev.At = now
			incs, after := policy.Count(nil, room, "shop", v.c, ev)
			for _, in := range incs {
				s.Add(in.Key, 1, in.N)
				if in.Key.Kind == crdt.Arrivals {
					if v.arrived[in.Key.Minute] && !v.held {
						t.Fatalf("token %d counted a second arrival in minute %d", i, in.Key.Minute-countNow/60)
					}
					if v.arrived == nil {
						v.arrived = map[int64]bool{}
					}
					v.arrived[in.Key.Minute] = true
				}
			}
			v.c, v.fresh = after, false
			v.held = v.held || ev.Step == policy.StepHold
			if ev.Outcome == policy.Reject && ev.Step == policy.StepDecided {
				v.gone = true
			}

			var wantActive, wantWaiting int64
			for _, o := range toks {
				switch {
				case o.fresh || o.gone && !o.c.Admitted():
				case o.c.Admitted() && o.c.Counted > now && !o.gone:
					wantActive++
				case !o.c.Admitted() && o.c.Counted != 0 && o.c.Counted > now/60-crdt.DefaultWaitingWindow:
					wantWaiting++
				}
			}
			snap := s.Snapshot("shop", now, room.Windows())
			if snap.Active != wantActive || snap.TotalWaiting != wantWaiting {
				t.Fatalf("at %d: active %d waiting %d, want %d and %d", now-countNow, snap.Active, snap.TotalWaiting, wantActive, wantWaiting)
			}
		}
	})
}

func TestCountArrivalOrder(t *testing.T) {
	m := int64(countNow / 60)
	five := policy.Room{SessionDuration: 5}
	fresh := policy.Event{Step: policy.StepDecided, Fresh: true, Outcome: policy.Queue, Refresh: 20, At: countNow}
	tests := []struct {
		name   string
		before policy.Counting
		want   uint16
	}{
		{"a first request without the caller's tenths arrives at its whole second", policy.Counting{}, 100},
		{"a first request keeps the caller's tenths of the same second", policy.Counting{Bucket: m, Arrived: 107}, 107},
		{"a later second's tenths are not taken", policy.Counting{Bucket: m, Arrived: 420}, 100},
		{"a first request held for an allocation keeps its arrival of the second before", policy.Counting{Bucket: m, Arrived: 93}, 93},
		{"and of two seconds before, a hold that crossed a second's turn", policy.Counting{Bucket: m, Arrived: 81}, 81},
		{"an arrival three seconds before is no hold's: the request's second", policy.Counting{Bucket: m, Arrived: 75}, 100},
		{"an arrival of the minute before is not taken", policy.Counting{Bucket: m - 1, Arrived: 599}, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, c := policy.Count(nil, five, "shop", tt.before, fresh)
			if c.Arrived != tt.want || c.Bucket != m {
				t.Errorf("bucket %d, arrived %d; want %d and %d", c.Bucket-m, c.Arrived, 0, tt.want)
			}
		})
	}
}

func TestAHeldNewVisitorKeepsItsFirstRequestsArrival(t *testing.T) {
	start := time.Unix(countNow-countNow%60, 0) // a minute's turn
	tests := []struct {
		name      string
		first     time.Duration // into the minute
		held      time.Duration
		wantFirst bool
	}{
		{"held within a second, it arrived at its first request", 10*time.Second + 200*time.Millisecond, 500 * time.Millisecond, true},
		{"held across a second's turn, it arrived at its first request", 10*time.Second + 800*time.Millisecond, 700 * time.Millisecond, true},
		{"held across the minute's turn, it arrived in the new minute", 59*time.Second + 700*time.Millisecond, 600 * time.Millisecond, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first, now := start.Add(tt.first), start.Add(tt.first+tt.held)
			want := policy.NewCounting(now)
			if tt.wantFirst {
				want = policy.NewCounting(first)
			}
			if got := policy.HeldArrival(first, now); got != want {
				t.Errorf("%+v, want %+v", got, want)
			}
		})
	}
}
