package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"time"

	"github.com/spf13/cobra"

	"github.com/waitroom/waitroom/edge/loadtest"
)

func newBench() *cobra.Command {
	var (
		o          loadtest.BenchOptions
		asJSON     bool
		cpuProfile string
		soak       time.Duration
		soakRate   float64
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure waitroom against a plain reverse proxy and a bare server, on loopback",
		Long: `Start, on 127.0.0.1 in this process, a small origin, a bare net/http server
answering the exact bytes of the queue page, a plain httputil.ReverseProxy with
waitroom's origin transport settings, and a waitroom node; drive each in turn
with the same load from the same generator, alternating sides over several
rounds, and print the median ratios:

  admitted throughput        waitroom (room with limits out of reach) / plain proxy   goal ≥ 0.95
  admitted p99 added         at a fixed rate, half the plain proxy's throughput      goal ≤ +0.2 ms
  queued throughput          waitroom (full room, new visitors) / bare server        goal ≥ 0.90
  memory per 10,000 waiting  heap growth of the process after GC                     goal < 1 MiB

Ratios taken in one run on one machine hold on a noisy shared machine;
absolute figures do not. On a small machine the generator competes with the
servers for CPU: the output says so.

With --soak, run instead the steady-memory check: constant load on both
rooms for that long, heap and goroutines sampled every 10 s, and a verdict
on growth.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			if soak > 0 {
				rep, err := loadtest.Soak(cmd.Context(), loadtest.SoakOptions{Duration: soak, Rate: soakRate, Progress: cmd.ErrOrStderr()})
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(out, rep)
				}
				if err := rep.WriteText(out); err != nil {
					return err
				}
				if !rep.OK {
					return fmt.Errorf("steady memory: %s", rep.Verdict)
				}
				return nil
			}
			if !asJSON {
				o.Progress = cmd.ErrOrStderr()
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "waitroom bench: %d rounds of 3 comparisons, %s per side, then the memory step (about %s)\n",
				max(o.Rounds, 1), o.Duration, (time.Duration(max(o.Rounds, 1))*6*o.Duration + 4*time.Second + 20*time.Second).Round(time.Second))
			rep, err := loadtest.RunBench(cmd.Context(), o)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(out, rep)
			}
			return rep.WriteText(out)
		},
	}
	f := cmd.Flags()
	f.DurationVar(&o.Duration, "duration", 5*time.Second, "length of each side's run in a round")
	f.IntVar(&o.Rounds, "rounds", 3, "rounds (each side runs once per round per comparison)")
	f.IntVar(&o.Concurrency, "concurrency", 16, "closed-loop visitors")
	f.IntVar(&o.Visitors, "visitors", 10_000, "new waiting visitors per step of the memory measurement")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the whole bench (generator included) to this file")
	f.DurationVar(&soak, "soak", 0, "run the steady-memory check for this long instead (e.g. 5m)")
	f.Float64Var(&soakRate, "soak-rate", 1000, "requests per second to each room during --soak")
	return cmd
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
