package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/waitroom/waitroom/cmd/waitroom/internal/bench"
)

func newBench() *cobra.Command {
	var (
		o           bench.Options
		asJSON      bool
		cpuProfile  string
		soak        time.Duration
		soakRate    float64
		withProxies bool
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure waitroom against a plain reverse proxy and a bare server, on loopback",
		Long: `Start, on 127.0.0.1 in this process, a small origin, a bare net/http server
answering the exact bytes of the queue page, a plain httputil.ReverseProxy with
waitroom's origin transport settings, and a waitroom node; drive each with
the same load from the same generator, the two sides of a comparison
alternating every --slice for --duration each per round, and print the
median over --rounds of the per-round ratios:

  admitted throughput        waitroom (room with limits out of reach) / plain proxy   goal ≥ 0.95
  admitted p99 added         at a fixed rate, 25% of the plain proxy's throughput    goal ≤ +0.2 ms
  queued throughput          waitroom (full room, new visitors) / bare server        goal ≥ 0.90
  memory per 10,000 waiting  heap growth of the process after GC                     goal < 1 MiB

Where nginx and HAProxy are installed (Debian packages nginx and haproxy,
or the binaries $WAITROOM_NGINX and $WAITROOM_HAPROXY name), each also runs
as a baseline, one process with one worker on loopback: proxying to the
same origin with upstream keep-alive, and answering the queue page's exact
bytes; nginx also with waitroom's shipped forward-auth configuration in
front of the node. waitroom is compared with each the same way:

  admitted throughput        waitroom / nginx proxy_pass                         goal ≥ 0.8
  CPU per admitted request   waitroom / nginx (its process's CPU counted)        goal ≤ 1.25
  admitted p99 added         at 25% of nginx's throughput                        goal ≤ +0.2 ms
  queued throughput          waitroom / nginx answering the same bytes           goal ≥ 0.8
  forward-auth               nginx asking waitroom / nginx alone                 (reported)

--proxies=false leaves them out.

It also prints each side's process CPU time per request (whose inverse ratio
moves much less with what else runs on the machine than throughput does) and
the latency added with one visitor at a time.

Ratios taken in one run on one machine hold on a noisy shared machine;
absolute figures do not. On a small machine the generator competes with the
servers for CPU: the output says so. Results and method: docs/PERFORMANCE.md.

With --soak, run instead the steady-memory check: constant load on both
rooms for that long, heap and goroutines sampled every 10 s, and a verdict
on growth.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			if cpuProfile != "" {
				stop, err := bench.ProfileCPU(cpuProfile)
				if err != nil {
					return err
				}
				defer stop()
			}
			if soak > 0 {
				rep, err := bench.Soak(cmd.Context(), bench.SoakOptions{Duration: soak, Rate: soakRate, Progress: cmd.ErrOrStderr()})
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(out, rep)
				}
				if err := rep.WriteText(out); err != nil {
					return err
				}
				return rep.Err()
			}
			if !asJSON {
				o.Progress = cmd.ErrOrStderr()
			}
			o.NoProxies = !withProxies
			fmt.Fprintln(cmd.ErrOrStderr(), o.Plan())
			rep, err := bench.Run(cmd.Context(), o)
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
	f.DurationVar(&o.Slice, "slice", 500*time.Millisecond, "how long one side runs before the other takes over, within a round")
	f.IntVar(&o.Rounds, "rounds", 3, "rounds; the table gives the median of the per-round ratios")
	f.Float64Var(&o.LatencyLoad, "latency-load", 0.25, "rate of the p99 comparison, as a fraction of the plain proxy's throughput")
	f.IntVar(&o.Concurrency, "concurrency", 16, "closed-loop visitors")
	f.IntVar(&o.Visitors, "visitors", 10_000, "new waiting visitors per step of the memory measurement")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.BoolVar(&withProxies, "proxies", true, "compare also with nginx and HAProxy where installed")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the whole bench (generator included) to this file")
	f.DurationVar(&soak, "soak", 0, "run the steady-memory check for this long instead (e.g. 5m)")
	f.Float64Var(&soakRate, "soak-rate", 500, "requests per second of each main stream during --soak")
	return cmd
}
