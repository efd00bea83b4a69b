package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/waitroom/waitroom/cmd/waitroom/internal/fidelity"
)

func newFidelity() *cobra.Command {
	var (
		short, asJSON, check bool
		names, checkOnly     []string
		nodes                int
		o                    fidelity.Options
	)
	cmd := &cobra.Command{
		Use:   "fidelity",
		Short: "Measure how faithfully a ring of real nodes holds the limits, as the origin sees it",
		Long: `Start a ring of 'waitroom serve' processes on loopback (this binary), in front
of an origin this command runs and instruments, drive a crowd of
cookie-keeping visitors that follow the queue page's Refresh, browse the
origin for a while and leave, and judge each scenario by what the origin saw,
by wall-clock time:

  peak active / total_active_users    a visitor is active from its first
                                       origin request until session_duration
                                       after its last one           goal ≤ 1.02
  peak new users per minute / limit   admissions in a wall-clock minute
                                                                    goal ≤ 1.02
  utilisation at first queueing       the binding limit's use when the first
                                       visitor was queued           goal ≥ 0.95
  FIFO inversions                     admissions while someone from an earlier
                                       minute still waited and got in more
                                       than 2 s later               goal ≤ 1%
                                       (of those, "newcomers": the later visitor
                                       was let in at its first request, never
                                       queued; "passed over": the earlier one
                                       was turned away at a check-in within
                                       24 s)
  longest free slot while someone     a slot free (both limits unused) while
  waited                               someone queued more than a refresh
                                       interval ago still waited    goal ≤ 23 s
                                       (missed, it names those held
                                       meanwhile: node, check-ins turned
                                       away, admission)
  5xx from waitroom                                                 goal 0
  every node alive, no panic          no serve process exited on its own
                                       (node-restart's kill aside), no panic
                                       in a node's log, recovered or not,
                                       waitroom_panics_total 0 at the end
                                                  goal all alive, 0 panics

One visitor in two is an app that asks for the queue answer's JSON form and
notes what every one said, its first page included; beside the goals,
reported but not held to them, judged on every page: the FIFO estimates
within ±20 % of the wait that followed (with 5 minutes or more left; goal
≥ 90 %), the places in line within ±10 % of the visitors who arrived earlier
and still waited (exact below ten; goal ≥ 95 %, and ≥ 90 % on first pages;
nobody ahead: told 0, always), and for a random queue the shares let in
within the 25th/50th/75th percentile estimates (goal 25/50/75 % ± 5).

Scenarios: sessions-1min, sessions-5min, regional-4-1-1, fresh-flood,
steady-95, node-restart, clock-skew, random-regional, method-switch (all by
default; clock-skew starts the second node 30 s ahead and the third 30 s
behind with serve's hidden, test-only --test-clock-offset; random-regional is
a random queue's crowd arriving 4:1:1 over two minutes, until it has drained;
method-switch switches the room FIFO → random → FIFO through a node's admin
API mid-run, and holds the limits across the switches; where a room queues
at random, FIFO inversions and the longest free slot are shown but not held
to their goals); the full run adds datacenters-3x3: nine nodes in three data
centers whose gossip between data centers is delayed 50–150 ms one way and
loses 1% of its packets (serve's hidden, test-only --test-wan-delay,
--test-wan-jitter and --test-wan-loss), half the crowd at one data center's
nodes, a third and a sixth at the others'. The optional priority-mix,
random-queue and long-queue (waits long enough to judge the estimates, each
run until its queue has drained) run only when named, and so does datacenters-3x3 with --short. --short runs each
in three to five minutes (what CI runs); the full lengths take 5 to 15
minutes each. By default every scenario chosen runs side by side.

  waitroom fidelity --short
  waitroom fidelity --scenario fresh-flood,steady-95 --json
  waitroom fidelity --scenario datacenters-3x3     # 9 processes, 10 minutes
  waitroom fidelity --short --check     # exit status 1 when a goal is missed`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := fidelity.CheckGoalKeys(checkOnly); err != nil {
				return err
			}
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("finding this binary to run as the nodes: %w", err)
			}
			o.Binary = exe
			if o.Scenarios, err = fidelity.Choose(short, nodes, names); err != nil {
				return err
			}
			o.Progress = cmd.ErrOrStderr()
			results, err := fidelity.Run(cmd.Context(), o)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				err = writeJSON(out, results)
			} else {
				err = fidelity.WriteText(out, results)
			}
			if err != nil {
				return err
			}
			if check || len(checkOnly) > 0 {
				return fidelity.CheckGoals(results, checkOnly...)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&short, "short", false, "run the short versions (three to five minutes each)")
	f.StringSliceVar(&names, "scenario", nil, "scenarios to run, comma-separated (default: all)")
	f.IntVar(&nodes, "nodes", 3, "waitroom serve processes per scenario (datacenters-3x3 has nine whatever this says)")
	f.IntVar(&o.Parallel, "parallel", 0, "scenarios run side by side, each with its own ring, origin and crowd (0: all of them)")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the crowds' arrivals")
	f.StringVar(&o.Dir, "keep", "", "keep each scenario's keys, config and node logs under this folder")
	f.BoolVar(&asJSON, "json", false, "print the results as JSON")
	f.BoolVar(&check, "check", false, "exit with status 1 when any goal is missed")
	f.StringSliceVar(&checkOnly, "check-only", nil, "exit with status 1 when one of these goals is missed: "+strings.Join(fidelity.GoalKeys, ", "))
	return cmd
}
