package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/waitroom/waitroom/edge/adminclient"
)

func newHealthcheck() *cobra.Command {
	var (
		admin   string
		ready   bool
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "healthcheck",
		Short: "Exit 0 if a node is alive (or, with --ready, ready for visitors), 1 if not",
		Long: `Ask a node's admin endpoint for /healthz (or /readyz with --ready) and
exit 0 when it answers 200, 1 otherwise. The container image has no shell
or curl, so its HEALTHCHECK runs this.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c := &adminclient.Client{URL: admin, Timeout: timeout}
			return c.Probe(cmd.Context(), ready)
		},
	}
	cmd.Flags().StringVar(&admin, "admin", "http://127.0.0.1:9090", "admin endpoint of the node to ask")
	cmd.Flags().BoolVar(&ready, "ready", false, "ask /readyz (ready for visitors) instead of /healthz (alive)")
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Second, "how long to wait for the node")
	return cmd
}
