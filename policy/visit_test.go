package policy_test

import (
	"testing"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/policy"
)

func TestNewCountingDatesTheFirstRequest(t *testing.T) {
	base := time.Unix(1_767_225_600, 0) // a minute boundary
	tests := []struct {
		name string
		at   time.Time
		want uint16
	}{
		{"a request on the minute arrives at 0", base, 0},
		{"a request 42.75 s in arrives at tenth 427", base.Add(42750 * time.Millisecond), 427},
		{"a request in the minute's last tenth arrives at 599", base.Add(59999 * time.Millisecond), 599},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := policy.NewCounting(tt.at)
			if c.Arrived != tt.want || c.Bucket != base.Unix()/60 {
				t.Errorf("NewCounting = %+v, want bucket %d and arrival %d", c, base.Unix()/60, tt.want)
			}
			if c.Counted != 0 || c.Admitted() || c.LastCheckIn != 0 {
				t.Errorf("a new visitor is counted somewhere: %+v", c)
			}
		})
	}
}

func TestTurnOf(t *testing.T) {
	const now = 1000
	admitted := policy.Counting{AcceptedAt: 900, LastCheckIn: 990, Counted: 1200}
	waiting := policy.Counting{Bucket: 15, LastCheckIn: 990, RefreshInterval: 20, Counted: 16}
	tests := []struct {
		name            string
		c               policy.Counting
		fresh, infinite bool
		want            policy.Turn
	}{
		{"a new visitor is decided on", policy.Counting{}, true, false, policy.TurnDecide},
		{"a new visitor is decided on whatever its stale counting says", admitted, true, false, policy.TurnDecide},
		{"an admitted visitor goes to the origin", admitted, false, false, policy.TurnSession},
		{"a waiting visitor back before its refresh interval is early", waiting, false, false, policy.TurnEarly},
		{"a waiting visitor back on time is decided on", policy.Counting{Bucket: 15, LastCheckIn: 980, RefreshInterval: 20, Counted: 16}, false, false, policy.TurnDecide},
		{"a visitor in the infinite queue never goes to the origin", admitted, false, true, policy.TurnDecide},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := policy.TurnOf(tt.c, tt.fresh, tt.infinite, now); got != tt.want {
				t.Errorf("TurnOf = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestARequestIsDecidedWithinItsGroupsCap(t *testing.T) {
	now := at(t, "2026-11-21T12:00:30Z")
	m := minuteOf(now)
	room := policy.Room{TotalActiveUsers: 100, NewUsersPerMinute: 10, Nodes: 1}
	vip := policy.Group{Name: "vip", Index: 0, NewUsersPerMinute: 3}
	// Someone waits in an older bucket, so that a visitor of this minute is
	// queued in the line.
	snap := world{now: now, waiting: []crdt.BucketCount{{Bucket: m - 1, N: 50}}}.snap()
	tests := []struct {
		name        string
		group       policy.Group
		admitted    uint64
		want        policy.Outcome
		wantAhead   bool
		wantInGroup bool // the admission is counted in the group's
	}{
		{"a holder under its group's cap goes in ahead of the line", vip, 2, policy.Admit, true, true},
		{"a holder whose group reached its cap this minute waits in the line", vip, 3, policy.Queue, false, false},
		{"a holder of a group without a cap of its own goes in ahead", policy.Group{Name: "press", Index: 1}, 1000, policy.Admit, true, true},
		{"a visitor of no group waits in the line", policy.Group{}, 0, policy.Queue, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := settled(room, snap, nairobi, now, policy.Continuous)
			q := policy.Request{Fresh: true, Before: policy.NewCounting(now), At: now, Group: tt.group, GroupAdmitted: tt.admitted}
			d := q.Decide(a)
			if d.Outcome != tt.want || d.Ahead != tt.wantAhead {
				t.Fatalf("decided %v (ahead %v), want %v (ahead %v)", d.Outcome, d.Ahead, tt.want, tt.wantAhead)
			}
			incs, _ := d.Count(nil, a, room, "shop", func() float64 { return 0.5 })
			inGroup := false
			for _, in := range incs {
				if in.Key == policy.GroupAdmittedKey("shop", tt.group.Name, m) {
					inGroup = true
				}
			}
			if inGroup != tt.wantInGroup {
				t.Errorf("counted in the group's admissions: %v, want %v (%v)", inGroup, tt.wantInGroup, incs)
			}
		})
	}
}

func TestADecisionDrawsARefreshOnlyForAPageThatRefreshes(t *testing.T) {
	now := at(t, "2026-11-21T12:00:30Z")
	m := minuteOf(now)
	tests := []struct {
		name      string
		room      policy.Room
		want      policy.Outcome
		wantDraws int
	}{
		{"an admission draws nothing", policy.Room{TotalActiveUsers: 100, NewUsersPerMinute: 10, Nodes: 1}, policy.Admit, 0},
		{"a queued visitor draws its page's jitter", policy.Room{TotalActiveUsers: 100, NewUsersPerMinute: 10, Nodes: 1, QueueAll: true}, policy.Queue, 1},
		{"a visitor turned away draws it too, for the page that tries again", policy.Room{TotalActiveUsers: 100, NewUsersPerMinute: 10, Nodes: 1, QueueingMethod: policy.MethodReject}, policy.Reject, 1},
		{"a suspended room's pass-through draws nothing", policy.Room{TotalActiveUsers: 100, NewUsersPerMinute: 10, Nodes: 1, Suspended: true}, policy.Bypass, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := settled(tt.room, world{now: now}.snap(), nairobi, now, policy.Continuous)
			before := policy.Counting{Bucket: m - 1, LastCheckIn: now.Unix() - 30, RefreshInterval: 20, Counted: m - 1}
			d := policy.Request{Before: before, At: now}.Decide(a)
			if d.Outcome != tt.want || d.Hold {
				t.Fatalf("decided %v (hold %v), want %v", d.Outcome, d.Hold, tt.want)
			}
			draws := 0
			_, after := d.Count(nil, a, tt.room, "shop", func() float64 { draws++; return 0.5 })
			if draws != tt.wantDraws {
				t.Errorf("drew %d times, want %d", draws, tt.wantDraws)
			}
			if tt.wantDraws > 0 && after.RefreshInterval != a.RefreshInterval(m-1, 0.5) {
				t.Errorf("the token's refresh is %d, want the allocation's %d", after.RefreshInterval, a.RefreshInterval(m-1, 0.5))
			}
		})
	}
}
