package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/waitroom/waitroom/cmd/waitroom/internal/loadtest"
)

func newLoadtest() *cobra.Command {
	var (
		o       loadtest.Options
		headers []string
		asJSON  bool
	)
	cmd := &cobra.Command{
		Use:   "loadtest URL [URL...]",
		Short: "Load-test your own waiting room: virtual visitors that keep cookies and follow the refresh",
		Long: `Drive a waiting room (or any site you operate) with virtual visitors. Each
visitor keeps its own cookies, so the room's token goes back on every request,
and a queued visitor waits as long as the Refresh header says before checking
in again at the address it names, as the queue page does in a browser
(--honor-refresh=false hammers instead). Connections are kept alive and reused.

Closed loop (the default): --concurrency visitors, each sending its next
request when the previous one is answered. Open loop (--rate): requests start
at a fixed rate whatever the answers, at most --max-in-flight outstanding.
The run stops by itself after --duration or --requests.

It reports throughput, latency percentiles (all, admitted, queued), how many
requests and visitors were admitted, queued or rejected, the wait to
admission, and the errors by kind (http_5xx, timeout, refused, reset, ...).

This sends real load: point it only at sites you operate.

  waitroom loadtest --concurrency 200 --duration 1m https://shop.example.com/
  waitroom loadtest --rate 500 --duration 2m --json http://127.0.0.1:8080/`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Targets = args
			var err error
			if o.Header, err = loadtest.ParseHeaders(headers); err != nil {
				return err
			}
			fmt.Fprintln(cmd.ErrOrStderr(), o.Warning())
			r, err := loadtest.Run(cmd.Context(), o)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, r)
			}
			return r.WriteText(out)
		},
	}
	f := cmd.Flags()
	f.IntVarP(&o.Concurrency, "concurrency", "c", 50, "closed loop: virtual visitors")
	f.Float64Var(&o.Rate, "rate", 0, "open loop: requests started per second (0: closed loop)")
	f.IntVar(&o.MaxInFlight, "max-in-flight", 1000, "open loop: most requests outstanding; starts beyond are counted as missed")
	f.DurationVarP(&o.Duration, "duration", "d", 30*time.Second, "stop after this long")
	f.Int64VarP(&o.Requests, "requests", "n", 0, "stop after this many requests (0: no limit)")
	f.BoolVar(&o.HonorRefresh, "honor-refresh", true, "a queued visitor waits the Refresh interval before checking in again")
	f.IntVar(&o.RequestsPerVisitor, "requests-per-visitor", 0, "a visitor forgets its cookies after this many requests (1: every request is a new visitor; 0: never)")
	f.DurationVar(&o.Timeout, "timeout", 10*time.Second, "timeout of one request")
	f.StringVarP(&o.Method, "method", "X", "GET", "HTTP method")
	f.StringArrayVarP(&headers, "header", "H", nil, "request header \"Name: value\" (repeatable)")
	f.StringVar(&o.Host, "host", "", "Host header, when not the URL's (a room routed by host)")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}
