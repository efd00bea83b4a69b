package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/waitroom/waitroom/policy/sim"
	"github.com/waitroom/waitroom/policy/sim/plot"
)

// simFlags are the sim command's flags.
type simFlags struct {
	scenarios                         []string
	out, strategy                     string
	asJSON, noPlots, markdown, readme bool
}

func newSim() *cobra.Command {
	var o simFlags
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Simulate an event: N nodes, gossip, visitors; measure how well the room holds its limits",
		Long: `Run a scenario (a YAML file, see testdata/scenarios) in virtual time: every
node keeps its own crdt replica and policy allocation, gossip is delayed,
jittered and lossy as the scenario says, and visitors arrive, queue, check in
and browse. The same seed gives the same result.

Every figure is judged as the origin sees it, by the simulated wall clock,
whatever the nodes' minute buckets say: a visitor is active from its
admission until session_duration after its last request to the origin; new
users per minute are the admissions within a wall-clock minute; a FIFO
inversion is an admission while someone who arrived in an earlier minute
still waits and is let in more than 2 s later; the utilisation at the first
queueing is the room's (active or this minute's admissions, whichever limit
binds) when the first visitor is queued.

Prints a table comparing the strategies (ours: the continuous split;
reference: the reference's per-minute split) and checks the goals (peak
active and peak new users per minute ≤ 1.02 × the limits, utilisation at the
first queueing ≥ 0.95, FIFO inversions ≤ 1%, and any others the scenario
lists); every goal a run misses says MISS. Writes PNG plots into --out:
active users against the limit, queue length, admissions per minute, and
wait against arrival minute as a heatmap.

--markdown prints the comparison and goal tables of docs/sim/RESULTS.md;
--readme the README's short table.`,
		Example: "  waitroom sim --scenario testdata/scenarios/step-10x.yaml\n  waitroom sim --scenario testdata/scenarios/reference-fifo.yaml --strategy ours --json\n  waitroom sim --markdown --no-plots --scenario \"$(ls testdata/scenarios/*.yaml | paste -sd, -)\"",
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return o.run(cmd.OutOrStdout()) },
	}
	o.register(cmd)
	return cmd
}

// register declares the flags on cmd.
func (o *simFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringSliceVar(&o.scenarios, "scenario", nil, "scenario file (YAML), e.g. testdata/scenarios/step-10x.yaml; repeat or separate with commas for several")
	f.StringVar(&o.out, "out", "sim-out", "directory for the PNG plots")
	f.StringVar(&o.strategy, "strategy", "both", "ours, reference or both")
	f.BoolVar(&o.asJSON, "json", false, "print the full results as JSON instead of the table (no plots); one document per scenario")
	f.BoolVar(&o.noPlots, "no-plots", false, "print the table only")
	f.BoolVar(&o.markdown, "markdown", false, "print the Markdown comparison and goal tables for all the scenarios, misses marked (plots still written)")
	f.BoolVar(&o.readme, "readme", false, "print the README's short Markdown table for all the scenarios, ours / reference in each cell (plots still written)")
	cmd.MarkFlagsMutuallyExclusive("json", "markdown", "readme")
	_ = cmd.MarkFlagRequired("scenario")
}

// strategies is the list RunScenario takes: empty for both.
func (o *simFlags) strategies() ([]string, error) {
	switch o.strategy {
	case "both", "":
		return nil, nil
	case sim.StrategyOurs, sim.StrategyReference:
		return []string{o.strategy}, nil
	}
	return nil, fmt.Errorf("--strategy %q: must be ours, reference or both", o.strategy)
}

// run simulates every scenario, prints each as asked, then the summary tables.
func (o *simFlags) run(w io.Writer) error {
	strategies, err := o.strategies()
	if err != nil {
		return err
	}
	var reports []*sim.Report
	for _, path := range o.scenarios {
		sc, err := sim.Load(path)
		if err != nil {
			return err
		}
		rep, err := sim.RunScenario(sc, strategies...)
		if err != nil {
			return err
		}
		reports = append(reports, rep)
		if err := o.print(w, rep); err != nil {
			return err
		}
	}
	switch {
	case o.markdown:
		return sim.WriteMarkdown(w, reports)
	case o.readme:
		return sim.WriteReadme(w, reports)
	}
	return nil
}

// print writes one scenario's report: its JSON alone, or its table (unless a
// summary table was asked for) and its plots.
func (o *simFlags) print(w io.Writer, rep *sim.Report) error {
	switch {
	case o.asJSON:
		b, err := rep.JSON()
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	case !o.markdown && !o.readme:
		if err := rep.WriteTable(w); err != nil {
			return err
		}
	}
	if o.noPlots {
		return nil
	}
	files, err := plot.Write(rep, o.out)
	if err != nil {
		return err
	}
	if !o.markdown && !o.readme {
		fmt.Fprintf(w, "plots: %d PNG files in %s\n\n", len(files), o.out)
	}
	return nil
}
