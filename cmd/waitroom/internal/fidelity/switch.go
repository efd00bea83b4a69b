package fidelity

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/waitroom/waitroom/edge/crowd"
)

// A run whose operator changes the room's queueing method while visitors
// wait: each switch is a JSON merge patch of queueing_method on one node's
// admin API (PATCH /rooms/fidelity, what `curl` or the console would send),
// which the ring gossips to every node. The switches go to the nodes in
// turn, the first to the first node, so that a change made at any PoP is
// seen to reach the others. The room's limits must hold across each
// switch; FIFO's own goals, the order and the longest free slot, are not
// judged in a run that queued at random for a while (see queueingGoals).

// Switch changes the room's queueing method At into the run.
type Switch struct {
	At     time.Duration `json:"at_ns"`
	Method string        `json:"method"`
}

// Switched is a switch as it was made: when, through which node, and when
// every node of the ring applied it (zero: not seen on every node by the
// end of the run).
type Switched struct {
	Method  string    `json:"method"`
	Node    int       `json:"node"`
	At      time.Time `json:"at"`
	Applied time.Time `json:"applied,omitzero"`
	// Error says why the switch could not be made.
	Error string `json:"error,omitempty"`
}

// switchApplyTimeout bounds how long a switch may take to reach every node:
// the admin API says within about two seconds.
const switchApplyTimeout = 15 * time.Second

// queueingMethods lists the methods a scenario may start with or switch to.
var queueingMethods = []string{"fifo", "random"}

// validateSwitches checks that the switches come in order within the run
// and each names a method a room can take.
func (s Scenario) validateSwitches() error {
	var last time.Duration
	for i, sw := range s.Switches {
		switch {
		case sw.At <= last || sw.At >= s.Length:
			return fmt.Errorf("scenario %s: switch %d at %v: must come after %v and before the run's end at %v", s.Name, i+1, sw.At, last, s.Length)
		case !slices.Contains(queueingMethods, sw.Method):
			return fmt.Errorf("scenario %s: switch %d to %q: must be %s", s.Name, i+1, sw.Method, strings.Join(queueingMethods, " or "))
		}
		last = sw.At
	}
	return nil
}

// queuesAtRandom reports whether the room queues at random for any part of
// the run: then FIFO order is no goal.
func (s Scenario) queuesAtRandom() bool {
	if s.QueueingMethod == "random" {
		return true
	}
	for _, sw := range s.Switches {
		if sw.Method == "random" {
			return true
		}
	}
	return false
}

// runSwitches makes the scenario's switches, each at its time from start,
// until ctx ends, and returns them as they were made.
func (c *cluster) runSwitches(ctx context.Context, s Scenario, start time.Time, say func(string, ...any)) []Switched {
	var out []Switched
	for i, sw := range s.Switches {
		if !crowd.Sleep(ctx, time.Until(start.Add(sw.At))) {
			break
		}
		n := i % len(c.nodes)
		done := Switched{Method: sw.Method, Node: n, At: time.Now()}
		if err := c.patchMethod(ctx, c.nodes[n], sw.Method); err != nil {
			done.Error = err.Error()
			say("switching to %s through %s failed: %v", sw.Method, c.nodes[n].name, err)
			out = append(out, done)
			continue
		}
		if err := c.waitMethod(ctx, sw.Method); err != nil {
			done.Error = err.Error()
			say("switched to %s through %s, but: %v", sw.Method, c.nodes[n].name, err)
		} else {
			done.Applied = time.Now()
			say("switched to %s through %s; every node applied it after %v", sw.Method, c.nodes[n].name, done.Applied.Sub(done.At).Round(100*time.Millisecond))
		}
		out = append(out, done)
	}
	return out
}

// patchMethod sets the room's queueing method through n's admin API.
func (c *cluster) patchMethod(ctx context.Context, n *node, method string) error {
	body, _ := json.Marshal(map[string]string{"queueing_method": method})
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, "http://"+n.admin+"/rooms/"+roomName, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return fmt.Errorf("PATCH /rooms/%s: %s %s", roomName, resp.Status, bytes.TrimSpace(raw))
	}
	return nil
}

// waitMethod polls every live node's room until each has the method, or
// switchApplyTimeout passes.
func (c *cluster) waitMethod(ctx context.Context, method string) error {
	ctx, cancel := context.WithTimeout(ctx, switchApplyTimeout)
	defer cancel()
	for {
		var behind []string
		for _, n := range c.nodes {
			if n.hasExited() {
				continue // the node's health says so
			}
			if got, err := c.roomMethod(ctx, n); err != nil || got != method {
				behind = append(behind, fmt.Sprintf("%s (%s)", n.name, orErr(got, err)))
			}
		}
		if len(behind) == 0 {
			return nil
		}
		if !crowd.Sleep(ctx, 200*time.Millisecond) {
			return fmt.Errorf("not applied within %v on %s", switchApplyTimeout, strings.Join(behind, ", "))
		}
	}
}

func orErr(s string, err error) string {
	if err != nil {
		return err.Error()
	}
	return s
}

// roomMethod reads the room's queueing method from n's admin API.
func (c *cluster) roomMethod(ctx context.Context, n *node) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.admin+"/rooms/"+roomName, nil)
	if err != nil {
		return "", err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /rooms/%s: %s", roomName, resp.Status)
	}
	var doc struct {
		Method string `json:"queueing_method"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return "", err
	}
	return doc.Method, nil
}

// switchesMissed says which switches were not made or not seen on every
// node ("" when all were).
func switchesMissed(done []Switched, want int) string {
	var out []string
	for _, d := range done {
		if d.Error != "" {
			out = append(out, fmt.Sprintf("to %s: %s", d.Method, d.Error))
		}
	}
	if len(done) < want {
		out = append(out, fmt.Sprintf("%d of %d switches made before the run ended", len(done), want))
	}
	return strings.Join(out, "; ")
}
