package fidelity

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/waitroom/waitroom/policy/truth"
)

// A run with priority codes: the room has one priority group, vip, and
// every Every-th visitor of the crowd carries a single-use code for it,
// minted through the first node's admin endpoint as an operator would, in
// the link of its first request. The room's limits are judged over
// everyone, holders included; FIFO order is judged over the others only,
// since holders are meant to pass the line.

// PriorityMix is a run's priority group and how many of the crowd hold a
// code.
type PriorityMix struct {
	Share float64 `json:"share"` // the group's share of the slots ahead of the line
	Every int     `json:"every"` // every Every-th visitor holds a code
}

// PriorityTruth are the holders' figures of a run.
type PriorityTruth struct {
	Holders  int `json:"holders"`   // visitors who held a code
	LetIn    int `json:"let_in"`    // of them, let in
	Waited   int `json:"waited"`    // of them, queued first
	Others   int `json:"others"`    // the other visitors let in
	MedianMs int `json:"median_ms"` // holders' median wait (ms) among those who waited
	// OthersMedianMs is the other visitors' median wait (ms), for
	// comparison.
	OthersMedianMs int `json:"others_median_ms"`
}

// OptionalScenarios are scenarios run only when named (not by a run of
// them all, which CI's time budget could not hold).
func OptionalScenarios(short bool, nodes int) []Scenario {
	if nodes <= 0 {
		nodes = 3
	}
	length := 10 * time.Minute
	if short {
		length = 3 * time.Minute
	}
	w := make([]float64, nodes)
	for i := range w {
		w[i] = 1
	}
	s := Scenario{
		Name:        "priority-mix",
		Description: "1-minute sessions, arrivals at 1.5× new_users_per_minute at random, one visitor in five holding a single-use code of a group with a 30% share",
		Nodes:       nodes,
		Limits:      Limits{TotalActiveUsers: 60, NewUsersPerMinute: 40, SessionDuration: time.Minute},
		Length:      length,
		Weights:     w,
		Priority:    &PriorityMix{Share: 0.3, Every: 5},
	}
	s.Waves = []Wave{{For: s.Length * 3 / 4, PerMinute: 60}}
	s.BrowseMin, s.BrowseMax, s.PageEveryMin, s.PageEveryMax = 20*time.Second, 90*time.Second, 3*time.Second, 8*time.Second
	long := 15 * time.Minute
	if short {
		long = 7 * time.Minute
	}
	out := []Scenario{s, randomQueue(long, w), longQueue(long, w)}
	if short {
		out = append(out, datacenters(true))
	}
	return out
}

// holds reports whether visitor k (0-based, in arrival order of its wave)
// holds a code.
func (s Scenario) holds(k int) bool {
	return s.Priority != nil && s.Priority.Every > 0 && k%s.Priority.Every == s.Priority.Every-1
}

// writePriorityGroup adds the scenario's priority group to the room config.
func writePriorityGroup(b *bytes.Buffer, s Scenario) {
	if s.Priority == nil {
		return
	}
	fmt.Fprintf(b, "    priority_groups:\n      - name: vip\n        share: %g\n", s.Priority.Share)
}

// withCode is target with code in the code parameter ("" leaves it).
func withCode(target, code string) string {
	if code == "" {
		return target
	}
	return target + "?__waitroom_code=" + url.QueryEscape(code)
}

// giveCodes mints a single-use code for every holder of ps through the
// first node's admin endpoint.
func (c *cluster) giveCodes(ctx context.Context, ps []plan) error {
	n := 0
	for _, p := range ps {
		if p.holder {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	body, _ := json.Marshal(map[string]any{"group": "vip", "count": n, "uses": 1, "expires": "2h"})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+c.nodes[0].admin+"/rooms/"+roomName+"/codes", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return fmt.Errorf("minting codes: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Errorf("minting codes: %s %s (%v)", resp.Status, raw, err)
	}
	rows, err := csv.NewReader(bytes.NewReader(raw)).ReadAll()
	if err != nil || len(rows) != n+1 {
		return fmt.Errorf("minting codes: %d rows for %d codes (%v)", len(rows)-1, n, err)
	}
	k := 1
	for i := range ps {
		if ps[i].holder {
			ps[i].code = rows[k][0]
			k++
		}
	}
	return nil
}

// withoutHolders drops the inversions in which a code holder went first,
// and counts the rest's passed-over and newcomer cases again.
func (j *judging) withoutHolders(ins []truth.Inversion) (out []truth.Inversion, passedOver, newcomers int) {
	for _, in := range ins {
		if a := j.arrs[in.Later.Visitor]; a != nil && a.Priority {
			continue
		}
		out = append(out, in)
		if in.PassedOver {
			passedOver++
		}
		if !in.Later.Queued {
			newcomers++
		}
	}
	return out, passedOver, newcomers
}

// priority is the holders' figures, nil in a run without holders.
func (j *judging) priority(hist *truth.History) *PriorityTruth {
	p := &PriorityTruth{}
	for _, a := range j.arrs {
		if a != nil && a.Priority {
			p.Holders++
		}
	}
	if p.Holders == 0 {
		return nil
	}
	seen := make([]bool, len(j.names))
	var mine, others []time.Duration
	for _, a := range hist.Admissions() {
		if seen[a.Visitor] {
			continue
		}
		seen[a.Visitor] = true
		holder := j.arrs[a.Visitor] != nil && j.arrs[a.Visitor].Priority
		if holder {
			p.LetIn++
		} else {
			p.Others++
		}
		if !a.Queued {
			continue
		}
		if holder {
			p.Waited++
			mine = append(mine, a.At-a.Arrived)
		} else {
			others = append(others, a.At-a.Arrived)
		}
	}
	slices.Sort(mine)
	slices.Sort(others)
	if len(mine) > 0 {
		p.MedianMs = int(median(mine) / time.Millisecond)
	}
	if len(others) > 0 {
		p.OthersMedianMs = int(median(others) / time.Millisecond)
	}
	return p
}
