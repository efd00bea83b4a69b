package fidelity

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Scenario is one fidelity run: a ring, a room, and a crowd.
type Scenario struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Nodes is the number of `waitroom serve` processes.
	Nodes  int    `json:"nodes"`
	Limits Limits `json:"limits"`
	// Length is how long the crowd runs; the figures are judged up to its
	// end.
	Length time.Duration `json:"length_ns"`
	// Weights split the arrivals between the nodes (one per node; nil:
	// evenly).
	Weights []float64 `json:"weights,omitempty"`
	// Waves are the arrivals of new visitors.
	Waves []Wave `json:"waves"`
	// BrowseMin and BrowseMax bound how long a visitor stays once let in
	// (drawn evenly between them), requesting a page every
	// PageEveryMin..PageEveryMax; then it leaves.
	BrowseMin    time.Duration `json:"browse_min_ns"`
	BrowseMax    time.Duration `json:"browse_max_ns"`
	PageEveryMin time.Duration `json:"page_every_min_ns"`
	PageEveryMax time.Duration `json:"page_every_max_ns"`
	// Restart, when set, kills one node with SIGKILL mid-run and starts it
	// again.
	Restart *Restart `json:"restart,omitempty"`
	// ClockOffsets, when set (one per node), start each node on a clock
	// that far off the machine's (serve's hidden, test-only
	// --test-clock-offset), as PoPs whose clocks are wrong.
	ClockOffsets []time.Duration `json:"clock_offsets_ns,omitempty"`
	// QueueingMethod is the room's queueing_method: "" or "fifo", or
	// "random" (see random.go).
	QueueingMethod string `json:"queueing_method,omitempty"`
	// Priority, when set, gives the room a priority group and some of the
	// crowd single-use codes for it (see priority.go).
	Priority *PriorityMix `json:"priority,omitempty"`
	// Switches change the room's queueing method mid-run through the admin
	// API, as an operator would (see switch.go).
	Switches []Switch `json:"switches,omitempty"`
	// Datacenters, when set (one per node), names each node's data center
	// (serve's --datacenter): the nodes of one share its pool, and two of
	// them carry its figures to the other data centers' over the pool
	// between data centers (see datacenters.go).
	Datacenters []string `json:"datacenters,omitempty"`
	// WAN, when set, is what every node's pool between data centers goes
	// through, as if the data centers were far apart.
	WAN *WANLink `json:"wan,omitempty"`
}

// Wave is a stream of new visitors over all the nodes together.
type Wave struct {
	Start     time.Duration `json:"start_ns"` // from the crowd's start
	For       time.Duration `json:"for_ns"`
	PerMinute float64       `json:"per_minute"`
	// Even spaces the arrivals evenly; otherwise they come at random (a
	// Poisson stream).
	Even bool `json:"even,omitempty"`
}

// Restart kills node Node (0 is the first, the others' seed) At into the
// run and starts it again Down later, under the same name and addresses.
type Restart struct {
	Node int           `json:"node"`
	At   time.Duration `json:"at_ns"`
	Down time.Duration `json:"down_ns"`
}

// Scenarios are the named scenarios at their full length, or their short
// one (for CI: most within about three minutes, none over five), with nodes
// processes each (0: 3).
func Scenarios(short bool, nodes int) []Scenario {
	if nodes <= 0 {
		nodes = 3
	}
	length := func(full, shortLen time.Duration) time.Duration {
		if short {
			return shortLen
		}
		return full
	}
	even := func(n int) []float64 {
		w := make([]float64, n)
		for i := range w {
			w[i] = 1
		}
		return w
	}
	regional := even(nodes)
	regional[0] = 4
	browse := func(s *Scenario, min, max, everyMin, everyMax time.Duration) {
		s.BrowseMin, s.BrowseMax, s.PageEveryMin, s.PageEveryMax = min, max, everyMin, everyMax
	}
	var out []Scenario

	s := Scenario{
		Name:        "sessions-1min",
		Description: "1-minute sessions, arrivals at 1.5× new_users_per_minute at random, visitors browse 20–90 s",
		Nodes:       nodes,
		Limits:      Limits{TotalActiveUsers: 60, NewUsersPerMinute: 40, SessionDuration: time.Minute},
		Length:      length(10*time.Minute, 3*time.Minute),
		Weights:     even(nodes),
	}
	s.Waves = []Wave{{For: s.Length * 3 / 4, PerMinute: 60}}
	browse(&s, 20*time.Second, 90*time.Second, 3*time.Second, 8*time.Second)
	out = append(out, s)

	s = Scenario{
		Name:        "sessions-5min",
		Description: "5-minute sessions, arrivals at 1.5× new_users_per_minute at random, visitors browse 30–120 s",
		Nodes:       nodes,
		Limits:      Limits{TotalActiveUsers: 40, NewUsersPerMinute: 20, SessionDuration: 5 * time.Minute},
		Length:      length(15*time.Minute, 3*time.Minute),
		Weights:     even(nodes),
	}
	s.Waves = []Wave{{For: s.Length * 3 / 4, PerMinute: 30}}
	browse(&s, 30*time.Second, 120*time.Second, 3*time.Second, 8*time.Second)
	out = append(out, s)

	s = Scenario{
		Name:        "regional-4-1-1",
		Description: "1-minute sessions, arrivals at 2× new_users_per_minute, the first node getting 4× the traffic of each other",
		Nodes:       nodes,
		Limits:      Limits{TotalActiveUsers: 60, NewUsersPerMinute: 40, SessionDuration: time.Minute},
		Length:      length(10*time.Minute, 3*time.Minute),
		Weights:     regional,
	}
	s.Waves = []Wave{{For: s.Length * 3 / 4, PerMinute: 80}}
	browse(&s, 20*time.Second, 90*time.Second, 3*time.Second, 8*time.Second)
	out = append(out, s)

	s = Scenario{
		Name:        "fresh-flood",
		Description: fmt.Sprintf("a fresh room (limits 40/40, 1-minute sessions) flooded by 120 new visitors in 10 s, %d at each node", 120/nodes),
		Nodes:       nodes,
		Limits:      Limits{TotalActiveUsers: 40, NewUsersPerMinute: 40, SessionDuration: time.Minute},
		Length:      length(5*time.Minute, 150*time.Second),
		Weights:     even(nodes),
		Waves:       []Wave{{Start: 5 * time.Second, For: 10 * time.Second, PerMinute: 120 * 6, Even: true}},
	}
	browse(&s, 20*time.Second, 60*time.Second, 3*time.Second, 8*time.Second)
	out = append(out, s)

	s = Scenario{
		Name:        "steady-95",
		Description: "steady load at 95% of both limits: 28.5 new visitors a minute, evenly, each on the origin for 60 s (live 2 min with its 1-minute session)",
		Nodes:       nodes,
		Limits:      Limits{TotalActiveUsers: 60, NewUsersPerMinute: 30, SessionDuration: time.Minute},
		Length:      length(10*time.Minute, 3*time.Minute),
		Weights:     even(nodes),
	}
	s.Waves = []Wave{{For: s.Length, PerMinute: 28.5, Even: true}}
	browse(&s, 60*time.Second, 60*time.Second, 5*time.Second, 5*time.Second)
	out = append(out, s)

	s = Scenario{
		Name:        "node-restart",
		Description: "1-minute sessions, arrivals at 1.5× new_users_per_minute; the last node killed with SIGKILL at 40% of the run and started again",
		Nodes:       nodes,
		Limits:      Limits{TotalActiveUsers: 60, NewUsersPerMinute: 40, SessionDuration: time.Minute},
		Length:      length(10*time.Minute, 3*time.Minute),
		Weights:     even(nodes),
	}
	s.Waves = []Wave{{For: s.Length * 3 / 4, PerMinute: 60}}
	s.Restart = &Restart{Node: nodes - 1, At: s.Length * 2 / 5, Down: length(15*time.Second, 10*time.Second)}
	if nodes == 1 {
		s.Description = "1-minute sessions, arrivals at 1.5× new_users_per_minute; the only node killed with SIGKILL at 40% of the run and started again"
	}
	browse(&s, 20*time.Second, 90*time.Second, 3*time.Second, 8*time.Second)
	out = append(out, s)

	s = Scenario{
		Name:         "clock-skew",
		Description:  "1-minute sessions, arrivals at 1.5× new_users_per_minute at random; the second node's clock 30 s ahead and the third's 30 s behind",
		Nodes:        nodes,
		Limits:       Limits{TotalActiveUsers: 60, NewUsersPerMinute: 40, SessionDuration: time.Minute},
		Length:       length(10*time.Minute, 3*time.Minute),
		Weights:      even(nodes),
		ClockOffsets: skewed(nodes),
	}
	s.Waves = []Wave{{For: s.Length * 3 / 4, PerMinute: 60}}
	browse(&s, 20*time.Second, 90*time.Second, 3*time.Second, 8*time.Second)
	out = append(out, s)

	// The crowd of a random queue that once took a whole ring down: every
	// node panicked in the same second in the random queue's forecast, with
	// 20–30 visitors waiting about three and a half minutes in. It runs
	// until the queue has drained, at its full length too: the crowd is
	// that one, whatever the length.
	s = Scenario{
		Name:           "random-regional",
		Description:    "a random queue (limits 30/30, 1-minute sessions): 90 visitors evenly over two minutes, the first node getting 4× the traffic of each other, visitors browse 20–60 s, until the queue has drained",
		Nodes:          nodes,
		Limits:         Limits{TotalActiveUsers: 30, NewUsersPerMinute: 30, SessionDuration: time.Minute},
		Length:         5 * time.Minute,
		Weights:        regional,
		QueueingMethod: "random",
		Waves:          []Wave{{For: 2 * time.Minute, PerMinute: 45, Even: true}},
	}
	browse(&s, 20*time.Second, 60*time.Second, 3*time.Second, 8*time.Second)
	out = append(out, s)

	s = Scenario{
		Name:        "method-switch",
		Description: "the operator switches the queueing method FIFO → random → FIFO through the admin API at a third and two thirds of the run, with a queue standing: 1-minute sessions, arrivals at 1.5× new_users_per_minute at random, visitors browse 20–60 s",
		Nodes:       nodes,
		Limits:      Limits{TotalActiveUsers: 40, NewUsersPerMinute: 20, SessionDuration: time.Minute},
		Length:      length(9*time.Minute, 270*time.Second),
		Weights:     even(nodes),
	}
	s.Waves = []Wave{{For: s.Length * 3 / 4, PerMinute: 30}}
	s.Switches = []Switch{{At: s.Length / 3, Method: "random"}, {At: s.Length * 2 / 3, Method: "fifo"}}
	browse(&s, 20*time.Second, 60*time.Second, 3*time.Second, 8*time.Second)
	out = append(out, s)
	if !short {
		// Nine processes for ten minutes: in the full run only, not in
		// CI's short one (a short variant runs when named).
		out = append(out, datacenters(false))
	}
	return out
}

// skewed are the clock offsets of the clock-skew scenario: the first node
// (the others' seed) right, then 30 s ahead and 30 s behind in turn.
func skewed(nodes int) []time.Duration {
	out := make([]time.Duration, nodes)
	for i := 1; i < nodes; i++ {
		if i%2 == 1 {
			out[i] = 30 * time.Second
		} else {
			out[i] = -30 * time.Second
		}
	}
	return out
}

// Choose is the scenarios a run is asked for by name, in their short or
// full length, with nodes nodes each: every default scenario when names is
// empty; an optional one only when named.
func Choose(short bool, nodes int, names []string) ([]Scenario, error) {
	pool := Scenarios(short, nodes)
	if len(names) > 0 {
		pool = append(pool, OptionalScenarios(short, nodes)...)
	}
	return Select(pool, names)
}

// Select picks scenarios by name from all; an empty list picks them all.
func Select(all []Scenario, names []string) ([]Scenario, error) {
	if len(names) == 0 {
		return all, nil
	}
	var out []Scenario
	for _, n := range names {
		found := false
		for _, s := range all {
			if s.Name == strings.TrimSpace(n) {
				out = append(out, s)
				found = true
			}
		}
		if !found {
			var known []string
			for _, s := range all {
				known = append(known, s.Name)
			}
			return nil, fmt.Errorf("scenario %q: not one of %s", n, strings.Join(known, ", "))
		}
	}
	return out, nil
}

// Validate checks a scenario before anything starts.
func (s Scenario) Validate() error {
	switch {
	case s.Nodes < 1:
		return fmt.Errorf("scenario %s: nodes %d must be at least 1", s.Name, s.Nodes)
	case s.Weights != nil && len(s.Weights) != s.Nodes:
		return fmt.Errorf("scenario %s: %d weights for %d nodes", s.Name, len(s.Weights), s.Nodes)
	case s.Limits.TotalActiveUsers < 1 || s.Limits.NewUsersPerMinute < 1 || s.Limits.NewUsersPerMinute > s.Limits.TotalActiveUsers:
		return fmt.Errorf("scenario %s: limits %d/%d: need 1 ≤ new_users_per_minute ≤ total_active_users", s.Name, s.Limits.TotalActiveUsers, s.Limits.NewUsersPerMinute)
	case s.Limits.SessionDuration < time.Minute || s.Limits.SessionDuration%time.Minute != 0:
		return fmt.Errorf("scenario %s: session duration %v must be whole minutes", s.Name, s.Limits.SessionDuration)
	case s.Length <= 0:
		return fmt.Errorf("scenario %s: length %v must be positive", s.Name, s.Length)
	case s.BrowseMax < s.BrowseMin || s.PageEveryMin <= 0 || s.PageEveryMax < s.PageEveryMin:
		return fmt.Errorf("scenario %s: browsing %v–%v every %v–%v is not a range", s.Name, s.BrowseMin, s.BrowseMax, s.PageEveryMin, s.PageEveryMax)
	case s.QueueingMethod != "" && s.QueueingMethod != "fifo" && s.QueueingMethod != "random":
		return fmt.Errorf("scenario %s: queueing method %q: must be fifo or random", s.Name, s.QueueingMethod)
	case s.ClockOffsets != nil && len(s.ClockOffsets) != s.Nodes:
		return fmt.Errorf("scenario %s: %d clock offsets for %d nodes", s.Name, len(s.ClockOffsets), s.Nodes)
	case s.Restart != nil && (s.Restart.Node < 0 || s.Restart.Node >= s.Nodes):
		return fmt.Errorf("scenario %s: restart node %d: must be 0–%d", s.Name, s.Restart.Node, s.Nodes-1)
	case s.Datacenters != nil && len(s.Datacenters) != s.Nodes:
		return fmt.Errorf("scenario %s: %d data centers named for %d nodes", s.Name, len(s.Datacenters), s.Nodes)
	case s.Datacenters != nil && slices.Contains(s.Datacenters, ""):
		return fmt.Errorf("scenario %s: a node's data center is empty: name one for each node, or none", s.Name)
	case s.WAN != nil && s.Datacenters == nil:
		return fmt.Errorf("scenario %s: a WAN link without data centers: name each node's data center", s.Name)
	case s.WAN != nil && (s.WAN.Delay < 0 || s.WAN.Jitter < 0 || s.WAN.Loss < 0 || s.WAN.Loss >= 1):
		return fmt.Errorf("scenario %s: WAN delay %v, jitter %v, loss %v: need delay, jitter ≥ 0 and 0 ≤ loss < 1", s.Name, s.WAN.Delay, s.WAN.Jitter, s.WAN.Loss)
	}
	return s.validateSwitches()
}
