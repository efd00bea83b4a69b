package fidelity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/waitroom/waitroom/edge/crowd"
)

// Options configure a fidelity run.
type Options struct {
	// Binary is the waitroom executable the nodes run (and whose keygen
	// makes the key files).
	Binary    string
	Scenarios []Scenario
	// Parallel is how many scenarios run at once (0: all of them). Each
	// has its own ring, origin and crowd; side by side they share the CPU.
	Parallel int
	// Seed draws the crowds; the same seed gives the same arrivals.
	Seed uint64
	// Dir keeps each scenario's key files, config and node logs in a
	// subfolder; empty: a temporary folder, removed afterwards.
	Dir string
	// Progress, when set, gets one line per step of each scenario.
	Progress io.Writer
}

// Result is one scenario's outcome.
type Result struct {
	Scenario Scenario `json:"scenario"`
	// Visitors counts the crowd's visitors who arrived within the run.
	Visitors int   `json:"visitors"`
	Truth    Truth `json:"truth"`
	// Status5xx counts the 5xx answers the crowd got: the origin never
	// answers one, so each is the room's.
	Status5xx int `json:"status_5xx"`
	// ConnectionErrors counts requests that got no answer (a node down).
	ConnectionErrors int `json:"connection_errors"`
	// Requeued counts visitors let in who got a queue page again while
	// browsing: a session lost.
	Requeued int `json:"requeued"`
	// Killed and Back are when a restarted node was killed and seen back in
	// the ring.
	Killed *time.Time `json:"killed,omitempty"`
	Back   *time.Time `json:"back,omitempty"`
	// Switched are the switches of the queueing method as they were made.
	Switched []Switched `json:"switched,omitempty"`
	// Health is whether every node lived through the run without a panic;
	// it is judged even when the rest could not be measured.
	Health Health `json:"health"`
	Goals  []Goal `json:"goals"`
	// Error says why the scenario could not be measured; its goals are then
	// missed.
	Error string `json:"error,omitempty"`
	// Logs is the folder with the nodes' logs, when kept.
	Logs string `json:"logs,omitempty"`
}

// Missed reports whether any goal of the result was missed, or it could not
// be measured.
func (r Result) Missed() bool {
	if r.Error != "" {
		return true
	}
	for _, g := range r.Goals {
		if !g.Met {
			return true
		}
	}
	return false
}

// Run runs the scenarios and returns their results, in the scenarios'
// order. A scenario that cannot be run has its Error set; Run itself fails
// only on bad options or when ctx ends.
func Run(ctx context.Context, o Options) ([]Result, error) {
	if o.Binary == "" {
		return nil, errors.New("fidelity: no waitroom binary to run")
	}
	if _, err := os.Stat(o.Binary); err != nil {
		return nil, fmt.Errorf("fidelity: the waitroom binary: %w", err)
	}
	if len(o.Scenarios) == 0 {
		return nil, errors.New("fidelity: no scenario")
	}
	for _, s := range o.Scenarios {
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("fidelity: %w", err)
		}
	}
	if o.Parallel <= 0 {
		o.Parallel = len(o.Scenarios)
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	base := o.Dir
	if base == "" {
		d, err := os.MkdirTemp("", "waitroom-fidelity-")
		if err != nil {
			return nil, fmt.Errorf("fidelity: %w", err)
		}
		defer os.RemoveAll(d)
		base = d
	}
	var (
		wg      sync.WaitGroup
		sem     = make(chan struct{}, o.Parallel)
		results = make([]Result, len(o.Scenarios))
		pmu     sync.Mutex
	)
	say := func(s Scenario, format string, args ...any) {
		pmu.Lock()
		defer pmu.Unlock()
		fmt.Fprintf(o.Progress, "%s %s: %s\n", time.Now().UTC().Format("15:04:05"), s.Name, fmt.Sprintf(format, args...))
	}
	for i, s := range o.Scenarios {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				results[i] = Result{Scenario: s, Error: ctx.Err().Error()}
				return
			}
			defer func() { <-sem }()
			dir := filepath.Join(base, s.Name)
			r, err := runScenario(ctx, o, s, dir, func(f string, a ...any) { say(s, f, a...) })
			if err != nil {
				r.Error = err.Error()
				say(s, "not measured: %v", err)
			}
			if o.Dir != "" {
				r.Logs = dir
			}
			results[i] = r
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return results, err
	}
	return results, nil
}

// startAttempts is how often a ring is tried before the scenario is given
// up: a port found free can be taken by something else before a node binds
// it.
const startAttempts = 3

func runScenario(ctx context.Context, o Options, s Scenario, dir string, say func(string, ...any)) (r Result, err error) {
	r = Result{Scenario: s}
	org, err := startOrigin()
	if err != nil {
		return r, err
	}
	defer org.Close()
	var c *cluster
	for attempt := 1; c == nil; attempt++ {
		adir := dir
		if attempt > 1 {
			adir = fmt.Sprintf("%s-try%d", dir, attempt)
		}
		if err := os.MkdirAll(adir, 0o700); err != nil {
			return r, fmt.Errorf("fidelity: %w", err)
		}
		c, err = startCluster(ctx, o.Binary, adir, s, org.URL)
		if err != nil {
			if attempt >= startAttempts || ctx.Err() != nil {
				return r, err
			}
			say("the ring did not start (%v); trying again on other ports", err)
		}
	}
	// The ring's health is judged however the run ends, once: which nodes
	// still run and what they counted, then the stop, so that every log is
	// whole when it is read.
	judged := false
	judgeHealth := func() {
		if judged {
			return
		}
		judged = true
		h := Health{Nodes: len(c.nodes)}
		var counted map[string]int
		h.NodesAlive, h.Exits, counted = c.liveness(context.WithoutCancel(ctx))
		c.stop()
		c.panicsLogged(&h, counted)
		r.Health = h
	}
	defer func() {
		r.Goals = append(r.Goals, healthGoal(r.Health))
		if !r.Health.Healthy() {
			say("the ring did not live through the run: %s", r.Health)
		}
	}()
	defer judgeHealth()
	for _, n := range c.nodes {
		n.hearDeaths(func(death string) { say("exited on its own: %s", death) })
	}
	ps := plans(s, o.Seed)
	if err := c.giveCodes(ctx, ps); err != nil {
		return r, err
	}
	say("%d nodes up (first at %s), origin %s; %d visitors over %v", len(c.nodes), c.url(0), org.URL, len(ps), s.Length)

	crowdCtx, cancel := context.WithTimeout(ctx, s.Length)
	defer cancel()
	var restarts sync.WaitGroup
	if rs := s.Restart; rs != nil {
		restarts.Add(1)
		go func() {
			defer restarts.Done()
			if !crowd.Sleep(crowdCtx, rs.At) {
				return
			}
			n := c.nodes[rs.Node]
			n.kill()
			killed := time.Now()
			r.Killed = &killed
			say("%s killed (SIGKILL)", n.name)
			if !crowd.Sleep(crowdCtx, rs.Down) {
				return
			}
			if err := n.start(o.Binary); err != nil {
				say("%s did not start again: %v", n.name, err)
				return
			}
			if err := c.waitReady(crowdCtx, []*node{n}); err != nil {
				say("%s is not back in the ring: %v", n.name, err)
				return
			}
			back := time.Now()
			r.Back = &back
			say("%s back in the ring after %v", n.name, back.Sub(killed).Round(100*time.Millisecond))
		}()
	}
	start := time.Now()
	if len(s.Switches) > 0 {
		restarts.Add(1)
		go func() {
			defer restarts.Done()
			r.Switched = c.runSwitches(crowdCtx, s, start, say)
		}()
	}
	cl := runCrowd(crowdCtx, ps, start, c.url)
	restarts.Wait()
	end := start.Add(s.Length)
	if ctx.Err() != nil {
		return r, ctx.Err()
	}
	judgeHealth()
	r.Visitors = len(cl.arrivals)
	r.Status5xx, r.ConnectionErrors, r.Requeued = cl.status5xx, cl.connErrors, cl.requeued
	log := Log{End: end, Arrivals: cl.arrivals, Hits: hitsOf(org)}
	for _, sw := range r.Switched {
		if sw.Error == "" {
			log.Switches = append(log.Switches, sw.At)
		}
	}
	r.Truth = Judge(log, s.Limits)
	// The per-visitor log the truth was judged from, beside the node logs
	// (kept with --keep): what it takes to see where a figure came from.
	if b, err := json.Marshal(log); err == nil {
		if err := os.WriteFile(filepath.Join(dir, "visitors.json"), b, 0o600); err != nil {
			say("could not keep the visitors' log: %v", err)
		}
	}
	r.Goals = queueingGoals(s, Goals(r.Truth, s.Limits, r.Status5xx))
	if r.Truth.Admissions == 0 {
		return r, fmt.Errorf("the origin saw nobody let in: the ring did not work (logs: %s)", dir)
	}
	if missed := switchesMissed(r.Switched, len(s.Switches)); missed != "" {
		return r, fmt.Errorf("the queueing method was not switched as the scenario says: %s", missed)
	}
	say("done: %d admissions, peak active %d of %d", r.Truth.Admissions, r.Truth.PeakActive, s.Limits.TotalActiveUsers)
	return r, nil
}
