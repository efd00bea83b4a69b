package sim_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/waitroom/waitroom/policy/sim"
)

// step is one thing that happened to a visitor, fed to the truth in order.
type step struct {
	kind    string // admit, queue, origin, revoke, giveup
	visitor int
	at      time.Duration
	arrived time.Duration // admit and queue: when this try began
	node    int
}

func s(n int) time.Duration { return time.Duration(n) * time.Second }

func admit(v int, at, arrived time.Duration) step {
	return step{kind: "admit", visitor: v, at: at, arrived: arrived}
}
func queue(v int, at, arrived time.Duration) step {
	return step{kind: "queue", visitor: v, at: at, arrived: arrived}
}
func origin(v int, at time.Duration) step { return step{kind: "origin", visitor: v, at: at} }
func revoke(v int, at time.Duration) step { return step{kind: "revoke", visitor: v, at: at} }
func giveUp(v int, at time.Duration) step { return step{kind: "giveup", visitor: v, at: at} }

// admitMany admits n fresh visitors, numbered from first, one a second from
// at.
func admitMany(first, n int, at time.Duration) []step {
	var out []step
	for i := range n {
		t := at + s(i)
		out = append(out, admit(first+i, t, t))
	}
	return out
}

func feed(tr *sim.Truth, steps []step) {
	for _, x := range steps {
		switch x.kind {
		case "admit":
			tr.Admit(x.visitor, x.at, x.arrived, x.node)
		case "queue":
			tr.Queue(x.visitor, x.at, x.arrived, x.node)
		case "origin":
			tr.Origin(x.visitor, x.at)
		case "revoke":
			tr.Revoke(x.visitor, x.at)
		case "giveup":
			tr.GiveUp(x.visitor, x.at)
		default:
			panic(x.kind)
		}
	}
}

// TestTheTruthJudgesWhatTheOriginSaw feeds hand-made sequences of
// admissions, refusals and origin requests to the judge and checks every
// figure against the definitions, by the wall clock.
func TestTheTruthJudgesWhatTheOriginSaw(t *testing.T) {
	minute := time.Minute
	cases := []struct {
		name      string
		session   time.Duration
		noRenewal bool
		limits    sim.Limits // default 100 active / 100 a minute
		steps     []step
		end       time.Duration // default 10 minutes
		// activeAt: the active count at these instants.
		activeAt map[time.Duration]int
		want     sim.Verdict // the fields compared: see below
		queueAt  *float64    // the utilisation at the first queueing, nil: nobody queued
		outside  int
	}{
		{
			name:    "a session that renews lasts until session_duration after its last request to the origin",
			session: minute,
			steps:   []step{admit(1, 0, 0), origin(1, s(40)), origin(1, s(80))},
			activeAt: map[time.Duration]int{
				0: 1, s(79): 1, s(139): 1, s(140): 0,
			},
			want: sim.Verdict{PeakActive: 1, PeakNewPerMinute: 1, Admissions: 1},
		},
		{
			name:    "a session that lapses ends session_duration after its last request, and a request the origin gets after that opens a new one",
			session: minute,
			steps: []step{
				admit(1, 0, 0), origin(1, s(30)),
				admit(2, s(85), s(85)),
				origin(1, s(100)), // past 30 s + 1 min: a node let it in
			},
			activeAt: map[time.Duration]int{
				s(89): 2, s(90): 1, s(99): 1, s(100): 2, s(144): 2, s(145): 1, s(159): 1, s(160): 0,
			},
			want:    sim.Verdict{PeakActive: 2, PeakNewPerMinute: 1, Admissions: 2},
			outside: 1,
		},
		{
			name:      "with disable_session_renewal a session ends session_duration after the admission whatever the requests",
			session:   minute,
			noRenewal: true,
			steps:     []step{admit(1, 0, 0), origin(1, s(30)), origin(1, s(50))},
			activeAt:  map[time.Duration]int{s(59): 1, s(60): 0, s(80): 0},
			want:      sim.Verdict{PeakActive: 1, PeakNewPerMinute: 1, Admissions: 1},
		},
		{
			name:     "a revoked session ends at the revocation",
			session:  5 * minute,
			steps:    []step{admit(1, 0, 0), admit(2, s(1), s(1)), revoke(1, s(10)), origin(2, s(20))},
			activeAt: map[time.Duration]int{s(9): 2, s(10): 1, s(319): 1, s(320): 0},
			want:     sim.Verdict{PeakActive: 2, PeakNewPerMinute: 2, Admissions: 2},
		},
		{
			name:     "a visitor admitted again while its session lasts is active once and two new users",
			session:  minute,
			steps:    []step{admit(1, 0, 0), admit(1, s(10), s(10))},
			activeAt: map[time.Duration]int{s(5): 1, s(10): 1, s(69): 1, s(70): 0},
			want:     sim.Verdict{PeakActive: 1, PeakNewPerMinute: 2, Admissions: 2},
		},
		{
			name:    "a session that ends as another starts hands its place over without counting twice",
			session: minute,
			steps:   []step{admit(1, 0, 0), admit(2, s(60), s(60))},
			want:    sim.Verdict{PeakActive: 1, PeakNewPerMinute: 1, Admissions: 2},
		},
		{
			name:    "new users per minute are counted by wall-clock minute",
			session: minute,
			steps:   []step{admit(1, s(58), s(58)), admit(2, s(59), s(59)), admit(3, s(61), s(61))},
			want:    sim.Verdict{PeakActive: 3, PeakNewPerMinute: 2, Admissions: 3},
		},
		{
			name:    "an earlier arrival let in one second after a later one is no inversion",
			session: minute,
			steps: []step{
				queue(1, s(30), s(30)),
				admit(2, s(61), s(61)),
				admit(1, s(62), s(30)),
			},
			want:    sim.Verdict{PeakActive: 2, PeakNewPerMinute: 2, Admissions: 2},
			queueAt: ptr(0),
		},
		{
			name:    "an earlier arrival let in three seconds after a later one makes that admission an inversion",
			session: minute,
			steps: []step{
				queue(1, s(30), s(30)),
				admit(2, s(61), s(61)),
				admit(1, s(64), s(30)),
			},
			want:    sim.Verdict{PeakActive: 2, PeakNewPerMinute: 2, Admissions: 2, Inversions: 1, InversionShare: 0.5},
			queueAt: ptr(0),
		},
		{
			name:    "an arrival of the same minute let in later is no inversion",
			session: minute,
			steps: []step{
				queue(1, s(61), s(61)),
				admit(2, s(62), s(62)),
				admit(1, s(90), s(61)),
			},
			want:    sim.Verdict{PeakActive: 2, PeakNewPerMinute: 2, Admissions: 2},
			queueAt: ptr(0),
		},
		{
			name:    "someone who gave up before the admission is not passed over, someone still waiting at the end is",
			session: minute,
			steps: []step{
				queue(1, s(10), s(10)),
				giveUp(1, s(50)),
				admit(2, s(70), s(70)), // 1 had given up: fair
				queue(3, s(80), s(80)),
				admit(4, s(130), s(130)), // 3 (minute 1) waits to the end: an inversion
			},
			end:     s(200),
			want:    sim.Verdict{PeakActive: 1, PeakNewPerMinute: 1, Admissions: 2, Inversions: 1, InversionShare: 0.5},
			queueAt: ptr(0),
		},
		{
			name:    "the first queueing is judged against the per-minute limit when it binds",
			session: 5 * minute,
			limits:  sim.Limits{TotalActiveUsers: 100, NewUsersPerMinute: 10},
			steps:   append(admitMany(1, 9, 0), queue(20, s(10), s(10))),
			want:    sim.Verdict{PeakActive: 9, PeakNewPerMinute: 9, Admissions: 9, Binds: sim.BindsNewPerMinute},
			queueAt: ptr(0.9),
		},
		{
			name:    "the first queueing is judged against the active limit when it binds, sessions of earlier minutes included",
			session: 5 * minute,
			limits:  sim.Limits{TotalActiveUsers: 10, NewUsersPerMinute: 100},
			steps:   append(admitMany(1, 8, 0), admit(9, s(61), s(61)), queue(20, s(70), s(70))),
			want:    sim.Verdict{PeakActive: 9, PeakNewPerMinute: 8, Admissions: 9, Binds: sim.BindsActive},
			queueAt: ptr(0.9),
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lim := c.limits
			if lim.TotalActiveUsers == 0 {
				lim = sim.Limits{TotalActiveUsers: 100, NewUsersPerMinute: 100}
			}
			end := c.end
			if end == 0 {
				end = 10 * minute
			}
			tr := sim.NewTruth(c.session, !c.noRenewal)
			feed(tr, c.steps)
			active := tr.ActiveCurve()
			for at, want := range c.activeAt {
				if got := active.At(at); got != want {
					t.Errorf("active at %v: %d, want %d", at, got, want)
				}
			}
			v := tr.Judge(end, lim)
			got := fmt.Sprintf("peak active %d, peak new %d, admissions %d, inversions %d (%.3f)",
				v.PeakActive, v.PeakNewPerMinute, v.Admissions, v.Inversions, v.InversionShare)
			want := fmt.Sprintf("peak active %d, peak new %d, admissions %d, inversions %d (%.3f)",
				c.want.PeakActive, c.want.PeakNewPerMinute, c.want.Admissions, c.want.Inversions, c.want.InversionShare)
			if got != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
			if r := float64(v.PeakActive) / float64(lim.TotalActiveUsers); math.Abs(v.PeakActiveRatio-r) > 1e-9 {
				t.Errorf("peak active ratio %v, want %v", v.PeakActiveRatio, r)
			}
			switch {
			case c.queueAt == nil && v.FirstQueueUtilisation != nil:
				t.Errorf("utilisation at first queueing %v, want none (nobody queued)", *v.FirstQueueUtilisation)
			case c.queueAt != nil && v.FirstQueueUtilisation == nil:
				t.Errorf("no utilisation at first queueing, want %v", *c.queueAt)
			case c.queueAt != nil && math.Abs(*v.FirstQueueUtilisation-*c.queueAt) > 1e-9:
				t.Errorf("utilisation at first queueing %v, want %v", *v.FirstQueueUtilisation, *c.queueAt)
			}
			if c.want.Binds != "" && v.Binds != c.want.Binds {
				t.Errorf("binding limit %q, want %q", v.Binds, c.want.Binds)
			}
			if got := tr.OutsideSession(); got != c.outside {
				t.Errorf("origin requests outside a session: %d, want %d", got, c.outside)
			}
		})
	}
}

func ptr(f float64) *float64 { return &f }

// TestAClusterWhoseClocksAgreeLetsNobodyInOutsideASession runs a short
// scenario with one-minute sessions: with every node on the same clock, a
// token expires exactly when the truth's session does, so no request
// reaches the origin outside a session, and every admission is counted once
// in the minutes.
func TestAClusterWhoseClocksAgreeLetsNobodyInOutsideASession(t *testing.T) {
	t.Parallel()
	sc := load(t, "sessions-1min")
	shortOf("sessions-1min").shrink(sc)
	res, err := sim.Run(sc, sim.StrategyOurs)
	if err != nil {
		t.Fatal(err)
	}
	if n := res.Figures.OutsideSession; n != 0 {
		t.Errorf("%d origin requests outside a session, want 0", n)
	}
	sum := 0
	for _, m := range res.Minutes {
		sum += m.Admitted
	}
	if sum != res.Counts.Admissions || sum == 0 {
		t.Errorf("the minutes hold %d admissions, the run counted %d", sum, res.Counts.Admissions)
	}
}
