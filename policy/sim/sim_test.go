package sim_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/policy"
	"github.com/waitroom/waitroom/policy/sim"
)

const scenarios = "../../testdata/scenarios"

func load(t *testing.T, name string) *sim.Scenario {
	t.Helper()
	sc, err := sim.Load(filepath.Join(scenarios, name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func dur(d time.Duration) sim.Duration { return sim.Duration(d) }

// short is a pinned short version of one scenario file: the same room,
// nodes and gossip, with fewer minutes of traffic, so that the suite runs
// in well under a minute with -race.
type short struct {
	name   string
	shrink func(sc *sim.Scenario)
	// limits overrides a goal's threshold where our policy misses the goal
	// today, judged by the truth (package policy/truth). The override is a ratchet
	// just past today's value (above it for a ceiling, below it for the
	// utilisation at the first queueing), so a change that makes fidelity
	// worse still fails; tighten it when the policy improves.
	// The estimate's is the least share of pages within ±20 %.
	limits map[string]float64
}

// The misses the truth shows today, in short:
//   - FIFO inversions, fewer since a covered bucket's hold runs from when
//     it last became covered as it stands: a few percent still at steady
//     load near the limits and across a node restart, more where the
//     order cannot hold (a node's own flood before the others hear of it,
//     a cut ring).
//   - Utilisation at the first queueing after a step or a flood: each node
//     queues on its share of the minute before the others' traffic has
//     reached it.
//   - Peak active with one-minute sessions and floods: the room counts a
//     session to the end of its minute bucket, not to its real expiry.
var shorts = []short{
	// step-10x's estimates: 65.7 % within ±20 % since a new visitor held
	// for an allocation keeps its first request's arrival (67.3 % when it
	// was dated by its wake, which tied a flood's held visitors); 64.4 %
	// since proofs are timed from their first answers, not from a held
	// visitor's arrival. Here every node holds alike when the step comes,
	// and placing the others' visitors as if none had held costs this
	// short version 1.3 points; the whole scenario reads 90.7 to 91.0 %
	// over seeds 1 to 4 either way. On real processes, where the flood
	// reaches one node first and only it holds, the fresh flood's places
	// went from 87.4 and 90.6 % to 92.9 and 93.4 % side by side.
	{name: "step-10x", shrink: func(sc *sim.Scenario) {
		sc.Visitors.Arrival.End = dur(2 * time.Minute)
		sc.Duration = dur(8 * time.Minute)
	}, limits: map[string]float64{sim.GoalFirstQueue: 0.55, sim.GoalEstimate: 0.64}},
	{name: "steady-uniform", shrink: func(sc *sim.Scenario) {
		sc.Visitors.Arrival.End = dur(7 * time.Minute)
		sc.Duration = dur(8 * time.Minute)
	}},
	// Since a queued visitor's arrival counts at its proof, two seconds
	// after its first request, the shares follow the shift two seconds
	// later: 1.08 % → 1.39 % at the scenario's seed (3), but 1.30 % →
	// 1.09 % at seed 1 and 1.61 % → 1.53 % at seed 2, so no worse beyond
	// the seeds' own spread; the ratchet sits just above seed 3's value.
	// With the shares' rounding offset turning every second of the ring's
	// time rather than every lag, the draws differ: 1.39 % → 1.41 %.
	{name: "region-shift", shrink: func(sc *sim.Scenario) {
		sc.Events[0].At = dur(3 * time.Minute)
		sc.Visitors.Arrival.End = dur(7 * time.Minute)
		sc.Duration = dur(8 * time.Minute)
	}, limits: map[string]float64{sim.GoalFIFOInversions: 0.015}},
	{name: "single-node-flood", shrink: func(sc *sim.Scenario) {
		a := &sc.Visitors.Arrival
		a.SpikeAt, a.SpikeVisitors, a.End = dur(2*time.Minute), 1500, dur(7*time.Minute)
		sc.Duration = dur(9 * time.Minute)
	}, limits: map[string]float64{sim.GoalFirstQueue: 0.82, sim.GoalFIFOInversions: 0.15}},
	// The survivors of a crash expect the crashed node for ten minutes and
	// read only their own columns meanwhile. Its queued visitors move to
	// them; SnapshotOf sums waiting cells each at least zero, so the moves
	// do not make them vanish, but the survivors cannot see how many still
	// wait in the crashed node's cells, so later arrivals go first (0.99% of
	// the admissions in the short run: within the goal, just).
	{name: "node-crash", shrink: func(sc *sim.Scenario) {
		sc.Events[0].At = dur(3 * time.Minute)
		sc.Visitors.Arrival.End = dur(6 * time.Minute)
		sc.Duration = dur(8 * time.Minute)
	}},
	// A 2-vs-3 partition from minute 2 to minute 7 under 1.2 × the
	// new-user limit, then the heal: the room keeps to its limits while cut
	// (each side to its part) and while the sides merge. The uneven split
	// queues the busy small side while the large one admits later arrivals
	// at once: FIFO order cannot hold across a cut.
	{name: "partition-2v3", shrink: shortPartition, limits: map[string]float64{sim.GoalFIFOInversions: 0.08}},
	{name: "partition-2v3-uneven", shrink: shortPartition, limits: map[string]float64{sim.GoalFIFOInversions: 0.2}},
	{name: "gossip-delay-0.2s", shrink: shortStep, limits: map[string]float64{sim.GoalFirstQueue: 0.32}},
	{name: "gossip-delay-1s", shrink: shortStep, limits: map[string]float64{sim.GoalFirstQueue: 0.59}},
	// Gossip slower than the policy's assumed lag (a node now sets
	// Room.Lag from its gossip settings; the scenario keeps the default).
	// Holding the visitors a node would queue only for the slots it keeps
	// back for the others' unheard admissions (policy.Allocation.Held):
	// 1.494 → 1.512. The front of the line checking in every 4–6 s
	// (policy.Allocation.RefreshInterval) brings the check-ins that take a
	// minute's slots within the first seconds of it, inside the gossip
	// delay that this lag does not cover, so more nodes take the same
	// slots unheard: 1.516 → 1.874 (a lag that covers the delay, the next
	// row, keeps the limit); nodes that assume the lag they measure, as a
	// node does, 1.884 (the measured delay is capped at the 2 s lag bound).
	{name: "gossip-delay-5s", shrink: shortStep, limits: map[string]float64{sim.GoalPeakNew: 1.89, sim.GoalEstimate: 0}},
	{name: "gossip-delay-5s-lag10s", shrink: shortStep, limits: map[string]float64{sim.GoalFirstQueue: 0.7, sim.GoalEstimate: 0}},
	// Clocks ±30 s apart: the nodes date their counts by the ring's time
	// (crdt.RingNow), so the short run gives what it gives with every clock
	// right (skew_range: 0s): 1.002 × the new-user limit and 1.63 % (39)
	// inversions, from the short run's 1 s gossip at the minute's turn, not
	// from the clocks (the full run: 0.74 % either way). Holding requests
	// for the next allocation moved it to 1.71 % (41). With each node on
	// its own clock (nodes.clock: own) the ratchet stood at 1.2 × and 38 %.
	{name: "clock-skew", shrink: func(sc *sim.Scenario) {
		sc.Visitors.Arrival.End = dur(4 * time.Minute)
		sc.Duration = dur(6 * time.Minute)
	}, limits: map[string]float64{sim.GoalFIFOInversions: 0.018}},
	// An on-sale opening at a cold cluster (the soak bench's shape). The
	// cold start itself stays within the limits (38 of 50 admitted in the
	// first second, none of the flood beyond the per-minute limit); the
	// active overshoot comes a minute later, from the expiring minute
	// counted as spread evenly while its sessions all began at t = 0 (see
	// "Overshoot bound" in policy/doc.go). Ratchet just above today's value.
	{name: "cold-start-flood", shrink: shortColdStart, limits: map[string]float64{sim.GoalPeakActive: 1.09, sim.GoalFirstQueue: 0.62}},
	{name: "cold-start-flood-10", shrink: shortColdStart, limits: map[string]float64{sim.GoalPeakActive: 1.09, sim.GoalFirstQueue: 0.68}},
	{name: "sessions-1min", shrink: func(sc *sim.Scenario) {
		sc.Visitors.Arrival.End = dur(5 * time.Minute)
		sc.Duration = dur(8 * time.Minute)
	}, limits: map[string]float64{sim.GoalPeakActive: 1.08}},
	{name: "sessions-5min", shrink: func(sc *sim.Scenario) {
		sc.Visitors.Arrival.End = dur(5 * time.Minute)
		sc.Duration = dur(10 * time.Minute)
	}},
	{name: "regional-flood-4-1-1", shrink: func(sc *sim.Scenario) {
		sc.Visitors.Arrival.End = dur(4 * time.Minute)
		sc.Duration = dur(8 * time.Minute)
	}, limits: map[string]float64{sim.GoalPeakActive: 1.09}},
	// Holding the visitors a node would queue only for the slots it keeps
	// back (policy.Allocation.Held) took the first queueing from 0.45 to
	// 0.775 here; a hold lasts at most policy.MaxHold. The nodes now
	// assume the lag a node would, measured from their deliveries and
	// idle beats, but the ring starts with the flood: the first queueing
	// (3.8 s in) comes before every peer gave the eight samples the rule
	// asks for (7 to 10 each), so the nodes still assume the configured
	// 2 s, as a freshly started ring does. The beats' draws change
	// the run's random stream: 0.775 → 0.675 at the scenario's seed (24),
	// 0.575 → 0.575, 0.575 → 0.575, 0.700 → 0.625, 0.550 → 0.550 and
	// 0.650 → 0.725 at seeds 1–5, so within the seeds' spread. With the
	// flood 30 s into a running ring (a warm one), the measured lag takes
	// it to 0.925–0.975 at seeds 24 and 1–3 (0.600–0.800 with the
	// configured lag).
	{name: "fresh-flood-all-nodes", shrink: func(sc *sim.Scenario) {
		sc.Duration = dur(4 * time.Minute)
	}, limits: map[string]float64{sim.GoalPeakActive: 1.13, sim.GoalFirstQueue: 0.67}},
	// 50,000 cookieless first requests at one node within four seconds:
	// they take no waiting place, so the queue never fills and the real
	// visitors' order holds.
	{name: "cookieless-flood", shrink: shortCookieless},
	{name: "steady-95", shrink: func(sc *sim.Scenario) {
		sc.Visitors.Arrival.End = dur(8 * time.Minute)
		sc.Duration = dur(9 * time.Minute)
	}, limits: map[string]float64{sim.GoalFIFOInversions: 0.025}},
	{name: "node-restart", shrink: func(sc *sim.Scenario) {
		sc.Events[0].At, sc.Events[1].At = dur(2*time.Minute), dur(3*time.Minute)
		sc.Visitors.Arrival.End = dur(6 * time.Minute)
		sc.Duration = dur(8 * time.Minute)
	}, limits: map[string]float64{sim.GoalFirstQueue: 0.93, sim.GoalFIFOInversions: 0.026}},
	// Rings of data centers, at ten data centers of three nodes each (a
	// short run of thirty or three hundred would take minutes): the same
	// LAN and WAN, the same uneven split between data centers, and the
	// data centers' carriers' rounds of each file. Thirty meets the goals
	// since a member gets a relayed batch from each of its data center's
	// carriers (1.016 × the new-user limit, first queueing at 0.994; with
	// one copy, 1.116 ×: a batch lost on the relay came again only by
	// push-pull). Three hundred overshoots at the step: a node assumes the
	// lag it measures within its data center, but another data center's
	// admissions reach it a WAN delay (50–150 ms) plus up to one carrier
	// round (1 s at three hundred) later. Assuming the measured delay
	// between data centers for their share held it to 1.080 × but queued
	// the full run of thirty at 0.41 of the limit, so it is not done. A
	// ratchet just above today's value.
	{name: "datacenters-30", shrink: shortDatacenters},
	{name: "datacenters-300", shrink: shortDatacenters, limits: map[string]float64{sim.GoalPeakNew: 1.24}},
	{name: "reference-fifo", shrink: shortReference, limits: map[string]float64{sim.GoalFIFOInversions: 0.5, sim.GoalEstimate: 0.89}},
	{name: "reference-random", shrink: shortReference},
}

// underRace are the short scenarios whose goals are checked under the race
// detector too: cheap ones that still cover a cold start, floods at one and
// at every node, steady load near the limits, a restart and one-minute
// sessions. The simulator runs on one goroutine, so the race detector finds
// nothing in it and only slows it (about five times): every other goal
// check runs without it (CI's .ci/run runs `go test ./policy/sim` for them).
// TestSameSeedSameBytes still takes a crash, a partition, skew and loss
// through the simulator under -race.
var underRace = map[string]bool{
	"cold-start-flood": true, "fresh-flood-all-nodes": true, "steady-95": true,
	"regional-flood-4-1-1": true, "sessions-1min": true, "node-restart": true,
}

// skipUnderRace skips a long simulation under the race detector (see
// underRace).
func skipUnderRace(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("a long simulation: checked without -race (go test ./policy/sim)")
	}
}

func shortOf(name string) short {
	for _, s := range shorts {
		if s.name == name {
			return s
		}
	}
	panic(name)
}

// shortStep: ten times the limit for 30 seconds, then the queue drains.
func shortStep(sc *sim.Scenario) {
	sc.Visitors.Arrival.End = sc.Visitors.Arrival.At + dur(30*time.Second)
	sc.Duration = dur(7 * time.Minute)
}

// shortDatacenters: the first ten data centers of the ring, and a minute
// of the step to ten times the limit.
func shortDatacenters(sc *sim.Scenario) {
	const dcs = 10
	sc.Nodes.Count = sc.Nodes.Count / sc.Nodes.Datacenters * dcs
	sc.Nodes.Datacenters = dcs
	sc.Visitors.DatacenterWeights = sc.Visitors.DatacenterWeights[:dcs]
	sc.Visitors.Arrival.End = dur(2 * time.Minute)
	sc.Duration = dur(6 * time.Minute)
}

// shortPartition: the cut from minute 2 to minute 7 (long enough for the
// traffic the sides last heard of each other to age out of the shares), the
// heal, and two minutes of merging.
func shortPartition(sc *sim.Scenario) {
	sc.Events[0].At = dur(2 * time.Minute)
	sc.Events[0].Partition.For = dur(5 * time.Minute)
	sc.Visitors.Arrival.End = dur(9 * time.Minute)
	sc.Duration = dur(9 * time.Minute)
}

// shortColdStart: the flood and the three minutes in which its sessions
// and the queue turn over.
func shortColdStart(sc *sim.Scenario) {
	sc.Duration = dur(4 * time.Minute)
}

// shortReference: the experiment of Cloudflare's "Waiting Room: Random Queueing and Custom Web/Mobile Apps" at a tenth of the minutes: 1,500
// visitors whose arrival minutes span ten minutes, against a room that takes
// 250 a minute, so the queue drains in about six minutes.
func shortReference(sc *sim.Scenario) {
	sc.Room.TotalActiveUsers, sc.Room.NewUsersPerMinute = 500, 250
	sc.Visitors.Arrival.Visitors = 1500
	sc.Visitors.Arrival.End = dur(10 * time.Minute)
	sc.Duration = dur(8 * time.Minute)
}

// TestGoalsOnShortScenarios runs our policy on the short version of every
// scenario file (the reference experiment's in TestReferenceExperiment) and asserts the goals (or, where the policy
// misses one today, the ratchet in shorts).
func TestGoalsOnShortScenarios(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range shorts {
		seen[s.name] = true
		if strings.HasPrefix(s.name, "reference-") {
			continue // TestReferenceExperiment runs these
		}
		t.Run(s.name, func(t *testing.T) {
			if !underRace[s.name] {
				skipUnderRace(t)
			}
			t.Parallel()
			sc := load(t, s.name)
			s.shrink(sc)
			res, err := sim.Run(sc, sim.StrategyOurs)
			if err != nil {
				t.Fatal(err)
			}
			s.assertGoals(t, sc, res)
		})
	}
	// Every scenario file has its short version here.
	files, err := filepath.Glob(filepath.Join(scenarios, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if name := strings.TrimSuffix(filepath.Base(f), ".yaml"); !seen[name] {
			t.Errorf("scenario %s has no short version in this test", name)
		}
	}
	for name := range underRace {
		if !seen[name] {
			t.Errorf("underRace names %s, which has no short version", name)
		}
	}
}

// TestFIFOOrderWhileTheActiveLimitBinds runs a longer step than the short
// versions: two minutes at ten times the new-user limit, twelve in all, so
// that the active limit binds and frees slots within each minute. The
// limits hold, and so does FIFO order, by the truth: a covered bucket's
// hold runs from when it last became covered as it stands, so the next
// bucket waits for the check-ins of the visitors it turned away while it
// was not covered (timed from its first coverage, 8.7% of the admissions
// were inversions; now none, held to the goal).
func TestFIFOOrderWhileTheActiveLimitBinds(t *testing.T) {
	skipUnderRace(t)
	t.Parallel()
	const ratchet = sim.MaxFIFOInversions
	sc := load(t, "step-10x")
	sc.Visitors.Arrival.End = sc.Visitors.Arrival.At + dur(2*time.Minute)
	sc.Duration = dur(12 * time.Minute)
	res, err := sim.Run(sc, sim.StrategyOurs)
	if err != nil {
		t.Fatal(err)
	}
	f := res.Figures
	t.Logf("inversions %.2f%% (%d of them), peak active %.3f, peak new %.3f", 100*f.FIFOInversions, f.Inversions, f.PeakActive, f.PeakNewPerMinute)
	if f.FIFOInversions > ratchet || f.PeakActive > sim.MaxPeakActive || f.PeakNewPerMinute > sim.MaxPeakNew {
		t.Errorf("inversions %.2f%%, peak active %.3f, peak new %.3f; want ≤ %.0f%% (ratchet; the goal is 1%%), %.2f, %.2f",
			100*f.FIFOInversions, f.PeakActive, f.PeakNewPerMinute, 100*ratchet, sim.MaxPeakActive, sim.MaxPeakNew)
	}
}

// TestACutRingReadAsAWholeOvershoots runs the short partitions with a
// node's cut handling and with the handling switched off (the whole
// snapshot read, stale columns and all, as nodes did before): the
// simulator must show both what the handling fixes and what it costs.
func TestACutRingReadAsAWholeOvershoots(t *testing.T) {
	skipUnderRace(t)
	cases := []struct {
		name, scenario, handling string
		// The room's peak admissions in a minute of the cut, over the
		// limit: at most maxNew, at least minNew.
		minNew, maxNew float64
		// The cut's admissions, over what the limit allows in its minutes:
		// from minUsed to maxUsed (0: no bound).
		minUsed, maxUsed float64
	}{
		{name: "with even traffic the sides read in parts keep to the limit and use all of it",
			scenario: "partition-2v3", handling: sim.CutParts, maxNew: sim.MaxPeakNew, minUsed: 0.98},
		{name: "with even traffic the sides read as a whole admit far past the limit once the other's traffic ages out",
			scenario: "partition-2v3", handling: sim.CutWhole, minNew: 1.3, maxNew: 2.1},
		{name: "with most traffic on the small side the large side cannot lend it its unused part",
			scenario: "partition-2v3-uneven", handling: sim.CutParts, maxNew: sim.MaxPeakNew, maxUsed: 0.9},
		{name: "with most traffic on the small side the sides read as a whole overshoot too",
			scenario: "partition-2v3-uneven", handling: sim.CutWhole, minNew: 1.3, maxNew: 2.1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			sc := load(t, c.scenario)
			shortPartition(sc)
			sc.Nodes.CutHandling = c.handling
			res, err := sim.Run(sc, sim.StrategyOurs)
			if err != nil {
				t.Fatal(err)
			}
			p := res.Partitions[0]
			admitted := 0
			for _, s := range p.Sides {
				for _, n := range s.AdmittedPerMinute {
					admitted += n
				}
			}
			used := float64(admitted) / (float64(len(p.Sides[0].AdmittedPerMinute)) * float64(sc.Room.NewUsersPerMinute))
			t.Logf("room peak new %.3f while cut, %.0f%% of the cut's slots used, inversions across %.2f%%", p.PeakNewPerMinute, 100*used, 100*p.AcrossInversions)
			if p.PeakNewPerMinute < c.minNew || p.PeakNewPerMinute > c.maxNew {
				t.Errorf("peak new per minute while cut %.3f, want %.2f to %.2f", p.PeakNewPerMinute, c.minNew, c.maxNew)
			}
			if used < c.minUsed {
				t.Errorf("the cut used %.0f%% of the room's per-minute slots, want ≥ %.0f%%", 100*used, 100*c.minUsed)
			}
			if c.maxUsed > 0 && used > c.maxUsed {
				t.Errorf("the cut used %.0f%% of the room's per-minute slots, want ≤ %.0f%%: the busy side borrowed the quiet side's part", 100*used, 100*c.maxUsed)
			}
		})
	}
}

// assertGoals checks the goals of the scenario against our policy's run.
func (s short) assertGoals(t *testing.T, sc *sim.Scenario, res *sim.Result) {
	t.Helper()
	f := res.Figures
	t.Logf("peak active %.3f, peak new %.3f, first queue at %v, queued early %d, inversions %.2f%%, corr %.3f, estimates within 20%% %v (n=%d)",
		f.PeakActive, f.PeakNewPerMinute, deref(f.FirstQueueUtilisation), f.QueuedEarly, 100*f.FIFOInversions,
		f.WaitCorrelation, deref(f.EstimateWithin20), f.EstimateSamples)
	assertCut(t, sc, res)
	for _, c := range sim.CheckGoals(sc, res) {
		limit, ratchet := s.limits[c.Goal]
		switch {
		case !ratchet && !c.Passed:
			t.Errorf("goal %s missed: %s (want %s)", c.Goal, c.Got, c.Want)
		case ratchet && c.Goal == sim.GoalEstimate:
			if f.EstimateWithin20 != nil && *f.EstimateWithin20 < limit {
				t.Errorf("estimate: %s, ratchet %.2f", c.Got, limit)
			}
		case ratchet && (c.Goal == sim.GoalNoEarlyQueue || c.Goal == sim.GoalFirstQueue):
			if c.Value < limit {
				t.Errorf("first queue at utilisation %.3f, ratchet %.2f (goal %.2f)", c.Value, limit, sim.MinQueueUtil)
			}
		case ratchet && c.Value > limit:
			t.Errorf("goal %s: %s, worse than the ratchet %.3f (goal %.3f)", c.Goal, c.Got, limit, c.Limit)
		case ratchet && c.Passed:
			t.Logf("goal %s met in the short version (%s); the full scenario misses it (docs/sim/RESULTS.md)", c.Goal, c.Got)
		}
	}
}

// lagSlack is the policy's overshoot bound in new users a minute: the
// visitors a lag's worth of the limit (L / 60 s of it) may add.
func lagSlack(sc *sim.Scenario) float64 {
	lag := sc.Room.Lag.D()
	if lag <= 0 {
		lag = policy.DefaultLag
	}
	return float64(sc.Room.NewUsersPerMinute) * lag.Seconds() / 60
}

// assertCut checks every partition of a run: while the ring is cut the
// room keeps to the goals' limits, each side to its part of the per-minute
// limit (plus the lag's slack: for the first seconds of the cut, before
// failure detection, the sides still read each other's stale columns as
// live), and the room stays within the limits while the sides merge.
func assertCut(t *testing.T, sc *sim.Scenario, res *sim.Result) {
	t.Helper()
	for i, p := range res.Partitions {
		t.Logf("cut %d: room peak new %.3f, peak active %.3f; after the heal %.3f, %.3f; inversions %.2f%% (across %.2f%%)",
			i+1, p.PeakNewPerMinute, p.PeakActive, p.AfterHealPeakNewPerMinute, p.AfterHealPeakActive, 100*p.FIFOInversions, 100*p.AcrossInversions)
		if p.PeakNewPerMinute > sim.MaxPeakNew || p.PeakActive > sim.MaxPeakActive {
			t.Errorf("cut %d: the room admitted %.3f × the per-minute limit and held %.3f × the active one while cut; want ≤ %.2f, %.2f",
				i+1, p.PeakNewPerMinute, p.PeakActive, sim.MaxPeakNew, sim.MaxPeakActive)
		}
		if p.AfterHealPeakNewPerMinute > sim.MaxPeakNew || p.AfterHealPeakActive > sim.MaxPeakActive {
			t.Errorf("cut %d: after the heal the room admitted %.3f × the per-minute limit and held %.3f × the active one; want ≤ %.2f, %.2f",
				i+1, p.AfterHealPeakNewPerMinute, p.AfterHealPeakActive, sim.MaxPeakNew, sim.MaxPeakActive)
		}
		for _, side := range p.Sides {
			t.Logf("  side %v (part %d a minute): admitted %v, waiting at the heal %d", side.Nodes, side.PartNew, side.AdmittedPerMinute, side.WaitingAtHeal)
			for m, n := range side.AdmittedPerMinute {
				if float64(n) > float64(side.PartNew)+lagSlack(sc) {
					t.Errorf("cut %d: side %v admitted %d in its minute %d, past its part %d (+ %.0f)", i+1, side.Nodes, n, m, side.PartNew, lagSlack(sc))
				}
			}
		}
	}
}

func deref(p *float64) any {
	if p == nil {
		return "none"
	}
	return *p
}

// TestReferenceExperiment reproduces the findings of Cloudflare's "Waiting Room: Random Queueing and Custom Web/Mobile Apps" on the short
// experiment, for both strategies: under FIFO the wait grows with the
// arrival minute, nearly linearly; under random queueing it does not depend
// on it.
func TestReferenceExperiment(t *testing.T) {
	skipUnderRace(t)
	// runReference runs the shortened experiment and holds ours to its goals.
	runReference := func(t *testing.T, name, strategy string) *sim.Result {
		sc := load(t, name)
		shortReference(sc)
		res, err := sim.Run(sc, strategy)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("corr %.3f, slope %.1f s per minute", res.Figures.WaitCorrelation, res.Figures.WaitSlope)
		if strategy == sim.StrategyOurs {
			shortOf(name).assertGoals(t, sc, res)
		}
		return res
	}
	for _, strategy := range []string{sim.StrategyOurs, sim.StrategyReference} {
		t.Run("fifo/"+strategy, func(t *testing.T) {
			t.Parallel()
			res := runReference(t, "reference-fifo", strategy)
			f := res.Figures
			// Ours keeps the buckets in order (r ≈ 0.98 here, 0.999 on the
			// full experiment); the reference's per-minute split refuses
			// partial-bucket visitors at nodes whose share ran out while
			// others still take newer ones, which blurs the line (≈ 0.7
			// here, 0.9 on the full experiment).
			minCorr := 0.9
			if strategy == sim.StrategyReference {
				minCorr = 0.6
			}
			if f.WaitSlope <= 0 || f.WaitCorrelation < minCorr {
				t.Errorf("FIFO: corr(arrival minute, wait) %.3f, slope %.1f s/min; want a strong positive trend", f.WaitCorrelation, f.WaitSlope)
			}
			if res.Counts.Admissions != 1500 {
				t.Errorf("admitted %d of 1,500", res.Counts.Admissions)
			}
		})
		t.Run("random/"+strategy, func(t *testing.T) {
			t.Parallel()
			res := runReference(t, "reference-random", strategy)
			f := res.Figures
			if abs(f.WaitCorrelation) > sim.MaxRandomCorr {
				t.Errorf("random: corr(arrival minute, wait) %.3f, want |r| ≤ %.1f", f.WaitCorrelation, sim.MaxRandomCorr)
			}
			if strategy != sim.StrategyOurs {
				return
			}
			// The page's 25th, 50th and 75th percentiles: about that share
			// of the visitors shown them get in within them.
			t.Logf("admitted by p25 / p50 / p75: %s / %s / %s of %d", pct(f.RandomBy25), pct(f.RandomBy50), pct(f.RandomBy75), f.RandomSamples)
			for _, c := range []struct {
				p   float64
				got *float64
			}{{0.25, f.RandomBy25}, {0.50, f.RandomBy50}, {0.75, f.RandomBy75}} {
				if c.got == nil || abs(*c.got-c.p) > 0.05 {
					t.Errorf("random: %s admitted by their %.0fth percentile, want %.0f%% ± 5", pct(c.got), 100*c.p, 100*c.p)
				}
			}
		})
	}
}

func pct(p *float64) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprintf("%.1f%%", 100**p)
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

// TestSameSeedSameBytes: a run is a pure function of its scenario, loss,
// abandonment, refresh spamming, skew, a crash, a restart and a partition
// included.
func TestSameSeedSameBytes(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(scenarios, "node-crash.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte("  request_interval:"), []byte("  abandonment: {probability: 0.3}\n  refresh: {spam_share: 0.2}\n  request_interval:"), 1)
	scenario := func(seed uint64) *sim.Scenario {
		sc, err := sim.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		sc.Seed = seed
		sc.Events[0].At = dur(90 * time.Second)
		sc.Events = append(sc.Events, sim.Event{At: dur(2 * time.Minute), Partition: &sim.Partition{
			For: dur(time.Minute), Groups: [][]int{{0, 1, 2, 3}, {4, 5, 6, 7, 8, 9}}}})
		restarted := 3
		sc.Events = append(sc.Events, sim.Event{At: dur(150 * time.Second), Restart: &restarted})
		sc.Visitors.Arrival.End = dur(3 * time.Minute)
		sc.Duration = dur(4 * time.Minute)
		sc.Gossip.Loss = 0.05
		sc.Nodes.SkewRange = dur(2 * time.Second)
		if raceEnabled {
			// A quarter of the crowd and of the limits keeps every event
			// (crash, partition, restart, loss, skew) and the queue, at a
			// quarter of the race detector's cost; go test ./policy/sim
			// runs it whole.
			sc.Visitors.Arrival.Rate /= 4
			sc.Room.NewUsersPerMinute /= 4
			sc.Room.TotalActiveUsers /= 4
		}
		return sc
	}
	run := func(sc *sim.Scenario) []byte {
		rep, err := sim.RunScenario(sc)
		if err != nil {
			t.Fatal(err)
		}
		out, err := rep.JSON()
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	first, second := run(scenario(5)), run(scenario(5))
	t.Logf("%d bytes of JSON", len(first))
	if !bytes.Equal(first, second) {
		t.Fatal("two runs of the same scenario and seed gave different JSON")
	}
	if bytes.Equal(first, run(scenario(6))) {
		t.Error("another seed gave the same JSON")
	}
	var rep struct {
		Runs []struct{ Counts sim.Counts }
	}
	if err := json.Unmarshal(first, &rep); err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Runs {
		c := r.Counts
		if c.Abandoned == 0 || c.MessagesLost == 0 || c.MessagesCut == 0 || c.Rerouted == 0 || c.EarlyCheckIns == 0 {
			t.Errorf("the model did not exercise everything: %+v", c)
		}
	}
}

// TestScenarioFilesAreValid loads every shipped scenario.
func TestScenarioFilesAreValid(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(scenarios, "*.yaml"))
	if err != nil || len(files) < 12 {
		t.Fatalf("scenario files: %v, %v", files, err)
	}
	for _, f := range files {
		sc, err := sim.Load(f)
		if err != nil {
			t.Error(err)
			continue
		}
		if want := strings.TrimSuffix(filepath.Base(f), ".yaml"); sc.Name != want {
			t.Errorf("%s: name %q, want the file's name", f, sc.Name)
		}
	}
}

// TestInvalidScenariosNameTheField: every refusal says which field is wrong.
func TestInvalidScenariosNameTheField(t *testing.T) {
	base := `name: x
seed: 1
duration: 10m
nodes: {count: 3}
gossip: {delay: 1s}
room: {total_active_users: 100, new_users_per_minute: 50}
visitors:
  arrival: {curve: uniform, visitors: 10, start: 0s, end: 1m}
`
	if _, err := sim.Parse([]byte(base)); err != nil {
		t.Fatalf("base scenario: %v", err)
	}
	cases := []struct{ old, new, field string }{
		{"duration: 10m", "duration: 0s", "duration"},
		{"count: 3", "count: 0", "nodes.count"},
		{"new_users_per_minute: 50", "new_users_per_minute: 500", "room.new_users_per_minute"},
		{"total_active_users: 100,", "total_active_users: 100, queueing_method: lottery,", "room.queueing_method"},
		{"total_active_users: 100,", "total_active_users: 100, session_duration: 31,", "room.session_duration"},
		{"delay: 1s", "delay: 1s, loss: 1.5", "gossip.loss"},
		{"curve: uniform", "curve: zigzag", "visitors.arrival.curve"},
		{"visitors: 10,", "visitors: 10, rate: 5,", "visitors.arrival.visitors"},
		{"end: 1m", "end: 0s", "visitors.arrival.end"},
		{"seed: 1", "seed: 1\nstrategies: [ours, magic]", "strategies[1]"},
		{"seed: 1", "seed: 1\nevents: [{at: 1m, crash: 7}]", "events[0].crash"},
		{"seed: 1", "seed: 1\nevents: [{at: 1m, shift: {weights: [1, 2]}}]", "events[0].shift.weights"},
		{"total_active_users: 100,", "total_active_users: 100, priority_groups: [{name: vip, share: 2}],", "room.priority_groups[0].share"},
		{"total_active_users: 100,", "total_active_users: 100, priority_groups: [{name: vip}, {name: vip}],", "room.priority_groups[1].name"},
		{"arrival: {curve: uniform, visitors: 10, start: 0s, end: 1m}", "arrival: {curve: phases, phases: [{start: 0s, end: 1m, visitors: 10, group: vip}]}", "visitors.arrival.phases[0].group"},
		{"seed: 1", "seed: 1\nevents: [{at: 1m}]", "events[0]"},
		{"seed: 1", "seed: 1\nevents: [{at: 1m, crash: 1, leave: 2}]", "events[0]"},
		{"seed: 1", "seed: 1\nevents: [{at: 1m, leave: 3}]", "events[0].leave"},
		{"seed: 1", "seed: 1\nevents: [{at: 1m, restart: 1}]", "events[0].restart"},
		{"seed: 1", "seed: 1\nevents: [{at: 2m, restart: 1}, {at: 1m, crash: 1}, {at: 1m30s, restart: 1}]", "events[0].restart"},
		{"seed: 1", "seed: 1\nevents: [{at: 1m, restart: 5}]", "events[0].restart"},
		{"seed: 1", "seed: 1\nevents: [{at: 1m, partition: {groups: [[0], [1, 2]]}}]", "events[0].partition.for"},
		{"seed: 1", "seed: 1\nevents: [{at: 1m, partition: {for: 1m, groups: [[0, 1, 2]]}}]", "events[0].partition.groups"},
		{"seed: 1", "seed: 1\nevents: [{at: 1m, partition: {for: 1m, groups: [[0], [1, 5], [2]]}}]", "events[0].partition.groups[1]"},
		{"seed: 1", "seed: 1\nevents: [{at: 1m, partition: {for: 1m, groups: [[0, 1], [1, 2]]}}]", "events[0].partition.groups[1]"},
		{"seed: 1", "seed: 1\nevents: [{at: 1m, partition: {for: 1m, groups: [[0], []]}}]", "events[0].partition.groups[1]"},
		{"seed: 1", "seed: 1\nevents: [{at: 1m, partition: {for: 1m, groups: [[0], [1]]}}]", "events[0].partition.groups"},
		{"seed: 1", "seed: 1\nevents: [{at: 1m, partition: {for: 2m, groups: [[0], [1, 2]]}}, {at: 2m, partition: {for: 1m, groups: [[1], [0, 2]]}}]", "events[1].partition"},
		{"seed: 1", "seed: 1\nevents: [{at: 1m, partition: {for: 1m, groups: [[0], [1, 2]], colour: red}}]", "colour"},
		{"count: 3", "count: 3, cut_handling: ignore", "nodes.cut_handling"},
		{"seed: 1", "seed: 1\ngoals: [fast]", "goals[0]"},
		{"count: 3", "count: 3, skew: [1s]", "nodes.skew"},
		{"count: 3", "count: 3, clock: sundial", "nodes.clock"},
		{"visitors:\n", "visitors:\n  time_on_origin: {dist: gamma}\n", "visitors.time_on_origin.dist"},
		{"visitors:\n", "visitors:\n  abandonment: {probability: 2}\n", "visitors.abandonment.probability"},
		{"count: 3", "count: 3, datacenters: 2", "nodes.datacenters"},
		{"count: 3", "count: 3, datacenters: -1", "nodes.datacenters"},
		{"delay: 1s", "delay: 1s, wan: {delay: 100ms}", "gossip.wan"},
		{"count: 3}\ngossip: {delay: 1s}", "count: 3, datacenters: 3}\ngossip: {delay: 1s, wan: {loss: 1}}", "gossip.wan.loss"},
		{"count: 3}\ngossip: {delay: 1s}", "count: 3, datacenters: 3}\ngossip: {delay: 1s, wan: {round: -1s}}", "gossip.wan"},
		{"visitors:\n", "visitors:\n  datacenter_weights: [1, 2, 3]\n", "visitors.datacenter_weights"},
		{"count: 3}", "count: 3, datacenters: 3}\nevents: [{at: 1m, crash: 1}]", "events[0]"},
		{"count: 3}", "count: 3, datacenters: 3}\nevents: [{at: 1m, partition: {for: 1m, groups: [[0], [1, 2]]}}]", "events[0]"},
		{"seed: 1", "seed: 1\ncolour: blue", "colour"},
		{"duration: 10m", "duration: soon", "soon"},
	}
	for _, c := range cases {
		y := strings.Replace(base, c.old, c.new, 1)
		if y == base {
			t.Fatalf("case %s: %q not in the base", c.field, c.old)
		}
		_, err := sim.Parse([]byte(y))
		if err == nil {
			t.Errorf("%s: accepted %q", c.field, c.new)
			continue
		}
		if !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: error does not name the field: %v", c.field, err)
		}
	}
}

// TestTheTableNamesEveryFigure prints the table of a small run.
func TestTheTableNamesEveryFigure(t *testing.T) {
	t.Parallel()
	sc := load(t, "reference-random")
	shortReference(sc)
	sc.Visitors.Arrival.Visitors = 300
	sc.Duration = dur(3 * time.Minute)
	rep, err := sim.RunScenario(sc, sim.StrategyOurs)
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"peak active / total_active_users", "utilisation at first queueing", "FIFO inversions", "errors (5xx)", "corr(arrival minute, wait)", "estimate error p90", "goals (ours"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
}

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

// shortCookieless: six minutes of real traffic, and a flood of 10,000
// (three times max_queue) rather than 50,000, so that the run stays cheap
// under the race detector.
func shortCookieless(sc *sim.Scenario) {
	sc.Visitors.Arrival.Phases[0].End = dur(6 * time.Minute)
	sc.Visitors.Arrival.Phases[1].Visitors = 10_000
	sc.Duration = dur(9 * time.Minute)
}

// TestACookielessFloodFillsNoQueue: the cookieless flood's first requests
// (10,000 in the short run) leave without a waiting place, so the room's
// max_queue (3,000)
// never turns a real visitor away. Counting a queued new visitor at once,
// as the rule did before the proof, turned most of them away.
func TestACookielessFloodFillsNoQueue(t *testing.T) {
	skipUnderRace(t)
	t.Parallel()
	sc := load(t, "cookieless-flood")
	shortCookieless(sc)
	res, err := sim.Run(sc, sim.StrategyOurs)
	if err != nil {
		t.Fatal(err)
	}
	c := res.Counts
	t.Logf("%d cookieless visitors gone, %d real visitors turned away, %d admissions", c.Cookieless, c.Rejected, c.Admissions)
	if c.Cookieless < 9_000 {
		t.Errorf("only %d of the flood's 10,000 were queued and gone", c.Cookieless)
	}
	if c.Rejected != 0 {
		t.Errorf("%d real visitors were told the line is full", c.Rejected)
	}
}
