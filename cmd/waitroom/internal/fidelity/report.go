package fidelity

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// The goals every scenario is held to.
const (
	// MaxActiveRatio bounds peak active over total_active_users.
	MaxActiveRatio = 1.02
	// MaxNewPerMinuteRatio bounds peak admissions in a wall-clock minute
	// over new_users_per_minute.
	MaxNewPerMinuteRatio = 1.02
	// MinUtilisationAtFirstQueue is how full the room must be when it
	// queues its first visitor.
	MinUtilisationAtFirstQueue = 0.95
	// MaxInversionShare bounds FIFO inversions as a share of admissions.
	MaxInversionShare = 0.01
)

// The goals' keys, as --check-only names them.
const (
	GoalActive       = "active"
	GoalNewPerMinute = "new-per-minute"
	GoalUtilisation  = "utilisation"
	GoalFIFO         = "fifo"
	Goal5xx          = "5xx"
	GoalFreeSlot     = "free-slot"
	// GoalAlive: every node alive at the end, none exited on its own, no
	// panic in the logs (see health.go).
	GoalAlive = "alive"
)

// GoalKeys lists every goal's key, in the order of the table.
var GoalKeys = []string{GoalActive, GoalNewPerMinute, GoalUtilisation, GoalFIFO, GoalFreeSlot, Goal5xx, GoalAlive}

// CheckGoalKeys checks the goals named to --check-only: each must be one
// of GoalKeys.
func CheckGoalKeys(keys []string) error {
	for _, k := range keys {
		if !slices.Contains(GoalKeys, k) {
			return fmt.Errorf("--check-only %q: must be among %s", k, strings.Join(GoalKeys, ", "))
		}
	}
	return nil
}

// Goal is one figure held to its goal.
type Goal struct {
	// Key names the goal for --check-only: one of GoalKeys.
	Key    string  `json:"key"`
	Figure string  `json:"figure"`
	Value  float64 `json:"value"`
	// Shown is the value as the table prints it, with what it was made of.
	Shown string `json:"shown"`
	Goal  string `json:"goal"`
	Met   bool   `json:"met"`
}

// Goals holds a run's truth to the goals.
func Goals(t Truth, l Limits, status5xx int) []Goal {
	active := t.ActiveRatio(l)
	perMin := t.NewPerMinuteRatio(l)
	inv := t.InversionShare()
	util := Goal{Key: GoalUtilisation, Figure: "utilisation at first queueing", Goal: fmt.Sprintf("≥ %.2f", MinUtilisationAtFirstQueue), Met: true, Shown: "never queued"}
	if !t.FirstQueued.IsZero() {
		util.Value = t.UtilisationAtFirstQueue
		util.Met = t.UtilisationAtFirstQueue >= MinUtilisationAtFirstQueue
		util.Shown = fmt.Sprintf("%.3f (%d of %d active, %d of %d this minute)", t.UtilisationAtFirstQueue,
			t.ActiveAtFirstQueue, l.TotalActiveUsers, t.AdmittedAtFirstQueue, l.NewUsersPerMinute)
	}
	return []Goal{
		{Key: GoalActive, Figure: "peak active / total_active_users", Value: active, Goal: fmt.Sprintf("≤ %.2f", MaxActiveRatio), Met: active <= MaxActiveRatio,
			Shown: fmt.Sprintf("%.3f (%d of %d)", active, t.PeakActive, l.TotalActiveUsers)},
		{Key: GoalNewPerMinute, Figure: "peak new users per minute / new_users_per_minute", Value: perMin, Goal: fmt.Sprintf("≤ %.2f", MaxNewPerMinuteRatio), Met: perMin <= MaxNewPerMinuteRatio,
			Shown: fmt.Sprintf("%.3f (%d of %d)", perMin, t.PeakNewPerMinute, l.NewUsersPerMinute)},
		util,
		{Key: GoalFIFO, Figure: "FIFO inversions", Value: inv, Goal: fmt.Sprintf("≤ %g%%", MaxInversionShare*100), Met: inv <= MaxInversionShare,
			Shown: fmt.Sprintf("%.2f%% (%d of %d admissions: %d newcomers let in at once, %d passed over)", inv*100, t.Inversions, t.Admissions, t.Newcomers, t.PassedOver)},
		{Key: GoalFreeSlot, Figure: "longest free slot while someone waited", Value: t.LongestFreeSlot.Seconds(), Goal: fmt.Sprintf("≤ %v", RefreshWindow),
			Met: t.LongestFreeSlot <= RefreshWindow, Shown: freeSlotShown(t)},
		{Key: Goal5xx, Figure: "5xx from waitroom", Value: float64(status5xx), Goal: "0", Met: status5xx == 0, Shown: fmt.Sprint(status5xx)},
	}
}

// freeSlotShown is the longest free slot as the table prints it: how long,
// and from when.
func freeSlotShown(t Truth) string {
	if t.LongestFreeSlot == 0 {
		return "none"
	}
	return fmt.Sprintf("%v (from %s)", t.LongestFreeSlot.Round(100*time.Millisecond), clock(t.LongestFreeSlotAt))
}

// WriteText prints a table per result: each figure, its value, its goal and
// whether it was met, then what else the run saw.
func WriteText(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i, r := range results {
		s := r.Scenario
		if i > 0 {
			fmt.Fprintln(tw)
		}
		fmt.Fprintf(tw, "%s: %s\n", s.Name, s.Description)
		fmt.Fprintf(tw, "  %d nodes, total_active_users %d, new_users_per_minute %d, session_duration %v, %v\n",
			s.Nodes, s.Limits.TotalActiveUsers, s.Limits.NewUsersPerMinute, minutes(s.Limits.SessionDuration), s.Length)
		if r.Error != "" {
			fmt.Fprintf(tw, "  NOT MEASURED: %s\n", r.Error)
			if r.Health.Nodes > 0 {
				fmt.Fprintf(tw, "  nodes: %s\n", r.Health)
			}
			continue
		}
		fmt.Fprintln(tw, "  figure\tvalue\tgoal\t")
		for _, g := range r.Goals {
			met := "met"
			if !g.Met {
				met = "MISSED"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", g.Figure, g.Shown, g.Goal, met)
		}
		t := r.Truth
		wait := "nobody waited"
		if t.Waited > 0 {
			wait = fmt.Sprintf("%v (%d queued, then let in)", t.MedianWait.Round(time.Second), t.Waited)
		}
		fmt.Fprintf(tw, "  median wait\t%s\t\t\n", wait)
		for _, l := range t.Shown.lines() {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", l[0], l[1], l[2], l[3])
		}
		if p := t.Priority; p != nil {
			fmt.Fprintf(tw, "  code holders\t%d of %d let in, %d after a wait (median %v; others' %v); FIFO judged over the others\t\t\n",
				p.LetIn, p.Holders, p.Waited, time.Duration(p.MedianMs)*time.Millisecond, time.Duration(p.OthersMedianMs)*time.Millisecond)
		}
		if freeSlotMissed(r.Goals) {
			listRows(tw, "held while it was free", t.HeldThroughFreeSlot, maxHeldShown)
		}
		listRows(tw, "inverted pairs", t.InvertedPairs, maxPairsShown)
		fmt.Fprintf(tw, "  visitors\t%d arrived, %d admissions, %d still waiting at the end\t\t\n", r.Visitors, t.Admissions, t.StillWaiting)
		var notes []string
		if r.ConnectionErrors > 0 {
			notes = append(notes, fmt.Sprintf("%d requests unanswered (node down)", r.ConnectionErrors))
		}
		if r.Requeued > 0 {
			notes = append(notes, fmt.Sprintf("%d visitors queued again while browsing", r.Requeued))
		}
		if t.Unidentified > 0 {
			notes = append(notes, fmt.Sprintf("%d origin requests without a visitor", t.Unidentified))
		}
		for _, sw := range r.Switched {
			how := fmt.Sprintf("every node applied it %v later", sw.Applied.Sub(sw.At).Round(100*time.Millisecond))
			switch {
			case sw.Error != "":
				how = "FAILED: " + sw.Error
			case sw.Applied.IsZero():
				how = "not seen on every node by the end"
			}
			notes = append(notes, fmt.Sprintf("switched to %s through node %d at %s, %s", sw.Method, sw.Node+1, sw.At.UTC().Format("15:04:05"), how))
		}
		if r.Killed != nil {
			back := "not back by the end"
			if r.Back != nil {
				back = fmt.Sprintf("back in the ring %v later", r.Back.Sub(*r.Killed).Round(100*time.Millisecond))
			}
			notes = append(notes, fmt.Sprintf("node %d killed at %s, %s", s.Restart.Node+1, r.Killed.UTC().Format("15:04:05"), back))
		}
		if len(notes) > 0 {
			fmt.Fprintf(tw, "  also\t%s\t\t\n", strings.Join(notes, "; "))
		}
		if r.Logs != "" {
			fmt.Fprintf(tw, "  node logs\t%s\t\t\n", r.Logs)
		}
	}
	return tw.Flush()
}

// listRows prints items as rows of the table, the first labelled label, at
// most most of them and a count of the rest.
func listRows[T fmt.Stringer](tw io.Writer, label string, items []T, most int) {
	for i, x := range items {
		if i == most {
			fmt.Fprintf(tw, "  \t… %d more (all in --json)\t\t\n", len(items)-i)
			return
		}
		if i > 0 {
			label = ""
		}
		fmt.Fprintf(tw, "  %s\t%s\t\t\n", label, x)
	}
}

// maxPairsShown is how many inverted pairs the table lists.
const maxPairsShown = 12

// maxHeldShown is how many of those held through a free slot the table
// lists, and maxHeldNamed how many a missed goal's line names: the
// earliest queued, whom the slot was for.
const (
	maxHeldShown = 6
	maxHeldNamed = 3
)

// freeSlotMissed reports whether goals has the free-slot goal, missed.
func freeSlotMissed(goals []Goal) bool {
	return slices.ContainsFunc(goals, func(g Goal) bool { return g.Key == GoalFreeSlot && !g.Met })
}

// String says who was held back while a slot was free, in one line: its
// node, when it was queued, its check-ins turned away meanwhile and when
// it was let in.
func (h HeldWaiter) String() string {
	s := fmt.Sprintf("%s (node %d, queued %s", h.Visitor, h.Node+1, clock(h.Queued))
	if n := len(h.TurnedAway); n > 0 {
		times := make([]string, 0, min(n, maxTimesShown))
		for _, ta := range h.TurnedAway[:min(n, maxTimesShown)] {
			times = append(times, clock(ta))
		}
		if n > maxTimesShown {
			times = append(times, fmt.Sprintf("… %d in all", n))
		}
		s += ", turned away meanwhile at " + strings.Join(times, ", ")
	} else {
		s += ", no check-in meanwhile"
	}
	if h.Admitted.IsZero() {
		return s + ", never let in)"
	}
	return s + ", let in " + clock(h.Admitted) + ")"
}

// maxTimesShown is how many check-ins a held visitor's line lists.
const maxTimesShown = 8

// String says who went before whom, where and when, in one line: the later
// arrival's node and admission, then the earlier one's arrival, last
// check-in turned away and admission.
func (p InvertedPair) String() string {
	l, e := p.Later, p.Earlier
	how := "queued"
	if !l.Queued {
		how = "at once"
	}
	s := fmt.Sprintf("%s (node %d, arrived %s) let in %s %s before %s (node %d, arrived %s",
		l.Visitor, l.Node+1, clock(l.Arrived), how, clock(l.Admitted), e.Visitor, e.Node+1, clock(e.Arrived))
	if !e.LastTurnedAway.IsZero() {
		s += ", turned away " + clock(e.LastTurnedAway)
	}
	if e.Admitted.IsZero() {
		s += ", never let in"
	} else {
		s += fmt.Sprintf(", let in %s, %v later", clock(e.Admitted), e.Admitted.Sub(l.Admitted).Round(100*time.Millisecond))
	}
	if p.PassedOver {
		s += ", passed over"
	}
	return s + ")"
}

func clock(t time.Time) string { return t.UTC().Format("15:04:05.0") }

func minutes(d time.Duration) string {
	n := int(d / time.Minute)
	if n == 1 {
		return "1 min"
	}
	return fmt.Sprintf("%d min", n)
}

// CheckGoals holds a run to its goals: it fails with every goal missed (and
// every scenario not measured), of the goals keys names or of all when
// none, and is nil when none was.
func CheckGoals(results []Result, keys ...string) error {
	if missed := MissedGoals(results, keys...); len(missed) > 0 {
		return fmt.Errorf("%d goals missed:\n  %s", len(missed), strings.Join(missed, "\n  "))
	}
	return nil
}

// MissedGoals lists every goal missed (and every scenario not measured),
// one line each: scenario, figure, value and goal. With keys given, only
// the goals they name count.
func MissedGoals(results []Result, keys ...string) []string {
	var out []string
	for _, r := range results {
		goals := r.Goals
		if r.Error != "" {
			out = append(out, fmt.Sprintf("%s: not measured: %s", r.Scenario.Name, r.Error))
			// A ring that died is why a run is not measured more often
			// than not: that is said too.
			goals = nil
			for _, g := range r.Goals {
				if g.Key == GoalAlive {
					goals = append(goals, g)
				}
			}
		}
		for _, g := range goals {
			if !g.Met && (len(keys) == 0 || slices.Contains(keys, g.Key)) {
				line := fmt.Sprintf("%s: %s %s, goal %s", r.Scenario.Name, g.Figure, g.Shown, g.Goal)
				if held := r.Truth.HeldThroughFreeSlot; g.Key == GoalFreeSlot && len(held) > 0 {
					named := make([]string, 0, maxHeldNamed)
					for _, h := range held[:min(len(held), maxHeldNamed)] {
						named = append(named, h.String())
					}
					line += fmt.Sprintf("; held meanwhile, %d in all: %s", len(held), strings.Join(named, "; "))
				}
				out = append(out, line)
			}
		}
	}
	return out
}
