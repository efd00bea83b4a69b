package sim

import (
	"testing"
	"time"

	"github.com/waitroom/waitroom/crdt"
	"github.com/waitroom/waitroom/policy"
)

// TestNodesAssumeTheMeasuredLag steps small runs and checks the lag every
// node's allocation assumes: policy.AssumedLag of the ring delay
// measured by crdt's rule from what the node heard (counts and idle beats),
// or the configured bound until every live peer gave enough samples.
func TestNodesAssumeTheMeasuredLag(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name    string
		gossip  string
		arrival string
		events  string
		at      time.Duration
		// want is the lag per node (-1: down); between lo and hi when
		// the delay depends on the batching.
		want   []time.Duration
		beats  bool // whether any node beat
		atMost bool // want is an upper bound, and at least AssumedLag of the gossip delay
	}{
		{
			name:    "an idle ring measures its delay from beats and every node assumes twice it plus the allocation's follow-up",
			gossip:  "{delay: 200ms}",
			arrival: "{curve: uniform, visitors: 1, start: 1m50s, end: 2m}",
			at:      30 * time.Second,
			want:    []time.Duration{450 * ms, 450 * ms, 450 * ms},
			beats:   true,
		},
		{
			name:    "before every peer gave eight samples each node keeps the configured bound",
			gossip:  "{delay: 200ms}",
			arrival: "{curve: uniform, visitors: 1, start: 1m50s, end: 2m}",
			at:      5 * time.Second,
			want:    []time.Duration{policy.DefaultLag, policy.DefaultLag, policy.DefaultLag},
			beats:   true,
		},
		{
			name:    "gossip slower than the configured bound leaves the bound",
			gossip:  "{delay: 3s}",
			arrival: "{curve: uniform, visitors: 1, start: 1m50s, end: 2m}",
			at:      50 * time.Second,
			want:    []time.Duration{policy.DefaultLag, policy.DefaultLag, policy.DefaultLag},
			beats:   true,
		},
		{
			name:    "with lag_measured false every node keeps the configured bound and nobody beats",
			gossip:  "{delay: 200ms, lag_measured: false}",
			arrival: "{curve: uniform, visitors: 1, start: 1m50s, end: 2m}",
			at:      30 * time.Second,
			want:    []time.Duration{policy.DefaultLag, policy.DefaultLag, policy.DefaultLag},
		},
		{
			name:    "under load the counts give the samples, stamped with their oldest change, and nobody beats",
			gossip:  "{delay: 200ms}",
			arrival: "{curve: uniform, rate: 3000, start: 0s, end: 1m, process: even}",
			at:      30 * time.Second,
			// 200 ms plus up to the 50 ms batch, and the stamp's millisecond.
			want:   []time.Duration{554 * ms, 554 * ms, 554 * ms},
			atMost: true,
		},
		{
			name:    "a restarted node has measured nothing, and its peers forgot it when it failed: all keep the bound",
			gossip:  "{delay: 200ms}",
			arrival: "{curve: uniform, visitors: 1, start: 1m50s, end: 2m}",
			events:  "[{at: 40s, crash: 2}, {at: 50s, restart: 2}]",
			at:      52 * time.Second,
			want:    []time.Duration{policy.DefaultLag, policy.DefaultLag, policy.DefaultLag},
			beats:   true,
		},
		{
			name:    "once the restarted node gave eight samples to each and heard eight from each, the ring is measured again",
			gossip:  "{delay: 200ms}",
			arrival: "{curve: uniform, visitors: 1, start: 1m50s, end: 2m}",
			events:  "[{at: 40s, crash: 2}, {at: 50s, restart: 2}]",
			at:      70 * time.Second,
			want:    []time.Duration{450 * ms, 450 * ms, 450 * ms},
			beats:   true,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			events := c.events
			if events == "" {
				events = "[]"
			}
			sc, err := Parse([]byte(`name: lag
seed: 3
duration: 2m
nodes: {count: 3, failure_detection: 5s}
gossip: ` + c.gossip + `
room: {total_active_users: 100000, new_users_per_minute: 100000}
visitors:
  arrival: ` + c.arrival + `
events: ` + events + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			r, err := newRun(sc, StrategyOurs, nil)
			if err != nil {
				t.Fatal(err)
			}
			r.end = c.at
			r.loop()
			for i, n := range r.nodes {
				got := time.Duration(-1)
				if n.up {
					n.lagSet = false // read afresh, not the reused figure
					got = r.lagFor(n)
				}
				switch {
				case c.atMost && (got > c.want[i] || got < policy.AssumedLag(200*ms, policy.DefaultLag)):
					t.Errorf("node %d assumes %v; want between %v and %v", i, got, policy.AssumedLag(200*ms, policy.DefaultLag), c.want[i])
				case !c.atMost && got != c.want[i]:
					t.Errorf("node %d assumes %v; want %v", i, got, c.want[i])
				}
			}
			if (r.counts.Beats > 0) != c.beats {
				t.Errorf("%d beats sent; want some: %v", r.counts.Beats, c.beats)
			}
		})
	}
}

// TestBeatsFollowTheGossipRule: an idle node beats once per
// crdt.BeatInterval to each live peer, as the gossip node does.
func TestBeatsFollowTheGossipRule(t *testing.T) {
	sc, err := Parse([]byte(`name: beats
seed: 1
duration: 1m
nodes: {count: 4}
gossip: {delay: 100ms}
room: {total_active_users: 100, new_users_per_minute: 100}
visitors:
  arrival: {curve: uniform, visitors: 1, start: 1m50s, end: 2m}
`))
	if err != nil {
		t.Fatal(err)
	}
	r, err := newRun(sc, StrategyOurs, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.end = 10*crdt.BeatInterval - time.Millisecond
	r.loop()
	// The first check a quarter interval in beats at once, then every
	// interval: 0.5 s, 2.5 s, ... 18.5 s is ten beats to each of three peers
	// from each of four nodes.
	want := 10 * 3 * 4
	if r.counts.Beats != want {
		t.Fatalf("%d beats, want %d", r.counts.Beats, want)
	}
	for _, n := range r.nodes {
		for j := range r.nodes {
			if j == n.id {
				continue
			}
			p := n.delays[j].At(n.local(r.now))
			if p.Samples != 10 || p.Delay != 100*time.Millisecond {
				t.Errorf("node %d of peer %d: %+v, want 10 samples of 100ms", n.id, j, p)
			}
		}
	}
}
