package fidelity

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestValidateSwitches(t *testing.T) {
	base := func(sw ...Switch) Scenario {
		s := mustScenario(t, "sessions-1min")
		s.Switches = sw
		return s
	}
	cases := []struct {
		name    string
		s       Scenario
		wantErr string // "" for a valid scenario
	}{
		{"a scenario without switches is valid", base(), ""},
		{"switches in order within the run are valid", base(Switch{At: time.Minute, Method: "random"}, Switch{At: 2 * time.Minute, Method: "fifo"}), ""},
		{"a switch at the start is refused", base(Switch{At: 0, Method: "random"}), "switch 1 at 0s"},
		{"a switch at the run's end is refused", base(Switch{At: 10 * time.Minute, Method: "random"}), "before the run's end"},
		{"switches out of order are refused", base(Switch{At: 2 * time.Minute, Method: "random"}, Switch{At: time.Minute, Method: "fifo"}), "switch 2 at 1m0s: must come after 2m0s"},
		{"a switch to a method the fidelity run cannot judge is refused", base(Switch{At: time.Minute, Method: "passthrough"}), `switch 1 to "passthrough": must be fifo or random`},
		{"a switch to an upper-case method is refused", base(Switch{At: time.Minute, Method: "FIFO"}), `switch 1 to "FIFO"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.s.Validate()
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("error %v; want one saying %q", err, c.wantErr)
			}
		})
	}
}

func TestTheShortRunCoversRandomQueueing(t *testing.T) {
	short := Scenarios(true, 3)
	find := func(t *testing.T, name string) Scenario {
		t.Helper()
		s, err := Select(short, []string{name})
		if err != nil {
			t.Fatalf("the short run has no %s: %v", name, err)
		}
		return s[0]
	}
	t.Run("every short scenario is valid and ends within five minutes", func(t *testing.T) {
		for _, s := range short {
			if err := s.Validate(); err != nil {
				t.Error(err)
			}
			if s.Length > 5*time.Minute {
				t.Errorf("%s runs %v", s.Name, s.Length)
			}
		}
	})
	t.Run("every full scenario is valid", func(t *testing.T) {
		for _, s := range Scenarios(false, 3) {
			if err := s.Validate(); err != nil {
				t.Error(err)
			}
		}
	})
	t.Run("random-regional is the crowd that took a ring down", func(t *testing.T) {
		s := find(t, "random-regional")
		if s.QueueingMethod != "random" || !strings.Contains(string(roomConfig(s, "http://127.0.0.1:1")), "queueing_method: random\n") {
			t.Fatalf("queueing method %q; want random", s.QueueingMethod)
		}
		if s.Limits != (Limits{TotalActiveUsers: 30, NewUsersPerMinute: 30, SessionDuration: time.Minute}) {
			t.Fatalf("limits %+v; want 30/30 with 1-minute sessions", s.Limits)
		}
		if len(s.Weights) != 3 || s.Weights[0] != 4*s.Weights[1] || s.Weights[1] != s.Weights[2] {
			t.Fatalf("weights %v; want 4:1:1", s.Weights)
		}
		if s.Length < 4*time.Minute || s.Length > 5*time.Minute {
			t.Fatalf("length %v; want 4–5 minutes, for the queue to drain", s.Length)
		}
		ps := plans(s, 1)
		if len(ps) != 90 {
			t.Fatalf("%d visitors; want 90", len(ps))
		}
		for _, p := range ps {
			if p.arrive >= 2*time.Minute {
				t.Fatalf("%s arrives at %v, after the first two minutes", p.id, p.arrive)
			}
		}
	})
	t.Run("method-switch goes FIFO, random, FIFO at a third and two thirds of the run", func(t *testing.T) {
		s := find(t, "method-switch")
		if s.QueueingMethod != "" && s.QueueingMethod != "fifo" {
			t.Fatalf("starts as %q; want fifo", s.QueueingMethod)
		}
		want := []Switch{{At: s.Length / 3, Method: "random"}, {At: s.Length * 2 / 3, Method: "fifo"}}
		if len(s.Switches) != 2 || s.Switches[0] != want[0] || s.Switches[1] != want[1] {
			t.Fatalf("switches %+v; want %+v", s.Switches, want)
		}
		if w := s.Waves[0]; w.Start > s.Switches[0].At || w.Start+w.For < s.Switches[1].At {
			t.Fatalf("the crowd arrives %v–%v, not across both switches", w.Start, w.Start+w.For)
		}
	})
	// A run out of FIFO order that left a slot free for 30 s while someone
	// waited, over its limits once.
	unfifo := Truth{Admissions: 10, Inversions: 5, LongestFreeSlot: 30 * time.Second, PeakActive: 100}
	for _, c := range []struct {
		name string
		s    Scenario
		met  bool
	}{
		{"random-regional's order and free slot miss no goal", find(t, "random-regional"), true},
		{"method-switch's order and free slot miss no goal, the room having queued at random a while", find(t, "method-switch"), true},
		{"regional-4-1-1's order and free slot still miss their goals", find(t, "regional-4-1-1"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, g := range queueingGoals(c.s, Goals(unfifo, c.s.Limits, 0)) {
				switch {
				case (g.Key == GoalFIFO || g.Key == GoalFreeSlot) && g.Met != c.met:
					t.Fatalf("%s goal %+v; want met %v", g.Key, g, c.met)
				case g.Key == GoalActive && g.Met:
					t.Fatalf("the active goal is met at %s: a random queue's limits are held as any room's", g.Shown)
				}
			}
		})
	}
}

// fakeAdmin is the room API of a ring's nodes, as far as a switch uses it:
// a PATCH of one node reaches the others after lag.
type fakeAdmin struct {
	mu      sync.Mutex
	method  string // the method patched last; before it, prev
	prev    string
	patched []string // "node: body" of each PATCH
	refuse  bool
	lag     time.Duration
	since   time.Time
}

// current is the method every node has: the one patched last once lag has
// passed. Callers hold f.mu.
func (f *fakeAdmin) current() string {
	switch {
	case f.method != "" && time.Since(f.since) >= f.lag:
		return f.method
	case f.prev != "":
		return f.prev
	}
	return "fifo"
}

func (f *fakeAdmin) node(t *testing.T, name string) *node {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/rooms/"+roomName {
			http.NotFound(w, r)
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		switch r.Method {
		case http.MethodPatch:
			b, _ := io.ReadAll(r.Body)
			f.patched = append(f.patched, name+": "+r.Header.Get("Content-Type")+" "+string(b))
			if f.refuse {
				http.Error(w, `{"error":"queueing_method: must be fifo, random, passthrough or reject"}`, http.StatusUnprocessableEntity)
				return
			}
			var body struct {
				Method string `json:"queueing_method"`
			}
			_ = json.Unmarshal(b, &body)
			f.prev, f.method, f.since = f.current(), body.Method, time.Now()
			_, _ = io.WriteString(w, `{}`)
		case http.MethodGet:
			_ = json.NewEncoder(w).Encode(map[string]string{"name": roomName, "queueing_method": f.current()})
		}
	}))
	t.Cleanup(srv.Close)
	n := &node{name: name, admin: strings.TrimPrefix(srv.URL, "http://")}
	// Seen as running: the switch asks only running nodes.
	n.exited = make(chan struct{})
	return n
}

func TestSwitches(t *testing.T) {
	ring := func(t *testing.T, f *fakeAdmin) *cluster {
		return &cluster{nodes: []*node{f.node(t, "pop-1"), f.node(t, "pop-2"), f.node(t, "pop-3")}, client: &http.Client{Timeout: 2 * time.Second}}
	}
	s := Scenario{Name: "switch", Length: time.Minute, Switches: []Switch{{At: 50 * time.Millisecond, Method: "random"}, {At: 100 * time.Millisecond, Method: "fifo"}}}
	quiet := func(string, ...any) {}

	t.Run("each switch is a merge patch of queueing_method to the next node, seen applied on every node", func(t *testing.T) {
		f := &fakeAdmin{lag: 300 * time.Millisecond}
		done := ring(t, f).runSwitches(context.Background(), s, time.Now(), quiet)
		if len(done) != 2 {
			t.Fatalf("%d switches made; want 2", len(done))
		}
		want := []string{`pop-1: application/json {"queueing_method":"random"}`, `pop-2: application/json {"queueing_method":"fifo"}`}
		if strings.Join(f.patched, "\n") != strings.Join(want, "\n") {
			t.Fatalf("patched\n%s\nwant\n%s", strings.Join(f.patched, "\n"), strings.Join(want, "\n"))
		}
		for i, d := range done {
			if d.Error != "" || d.Applied.IsZero() || d.Node != i || d.Method != s.Switches[i].Method {
				t.Fatalf("switch %d: %+v", i+1, d)
			}
			if lag := d.Applied.Sub(d.At); lag < f.lag {
				t.Fatalf("switch %d applied after %v, before every node had it (%v)", i+1, lag, f.lag)
			}
		}
		if m := switchesMissed(done, len(s.Switches)); m != "" {
			t.Fatalf("missed: %s", m)
		}
	})
	t.Run("a switch the admin API refuses is missed, and says why", func(t *testing.T) {
		f := &fakeAdmin{refuse: true}
		done := ring(t, f).runSwitches(context.Background(), s, time.Now(), quiet)
		m := switchesMissed(done, len(s.Switches))
		if !strings.Contains(m, "to random: PATCH /rooms/fidelity: 422") {
			t.Fatalf("missed %q; want the refusal", m)
		}
	})
	t.Run("switches the run ended before are missed", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		done := ring(t, &fakeAdmin{}).runSwitches(ctx, s, time.Now(), quiet)
		if m := switchesMissed(done, len(s.Switches)); !strings.Contains(m, "0 of 2 switches made") {
			t.Fatalf("missed %q; want none made", m)
		}
	})
}

func TestCheckGoalKeys(t *testing.T) {
	cases := []struct {
		name    string
		keys    []string
		wantErr bool
	}{
		{"no keys check every goal", nil, false},
		{"the alive goal can be named", []string{GoalAlive}, false},
		{"every goal's key can be named together", GoalKeys, false},
		{"a name that is no goal's is refused", []string{"active", "panics"}, true},
		{"a key is matched exactly", []string{"Alive"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := CheckGoalKeys(c.keys)
			if (err != nil) != c.wantErr {
				t.Fatalf("error %v; want one: %v", err, c.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), strings.Join(GoalKeys, ", ")) {
				t.Fatalf("error %q does not list the goals", err)
			}
		})
	}
	t.Run("the goals CI checks are all known, the alive goal among them", func(t *testing.T) {
		b, err := os.ReadFile("../../../../.ci/run")
		if err != nil {
			t.Skip("no .ci/run beside the package")
		}
		m := regexp.MustCompile(`(?m)^fidelity_goals=(\S+)$`).FindSubmatch(b)
		if m == nil {
			t.Fatal("no fidelity_goals= line in .ci/run")
		}
		keys := strings.Split(string(m[1]), ",")
		if err := CheckGoalKeys(keys); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(","+string(m[1])+",", ","+GoalAlive+",") {
			t.Fatalf("CI checks %s, not %s", m[1], GoalAlive)
		}
	})
}
