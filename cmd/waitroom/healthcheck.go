package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/waitroom/waitroom/edge/api"
)

func newHealthcheck() *cobra.Command {
	c := &api.Client{}
	var ready bool
	cmd := &cobra.Command{
		Use:   "healthcheck",
		Short: "Exit 0 if a node is alive (or, with --ready, ready for visitors), 1 if not",
		Long: `Ask a node's admin endpoint for /healthz (or /readyz with --ready) and
exit 0 when it answers 200, 1 otherwise. The container image has no shell
or curl, so its HEALTHCHECK runs this.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.Probe(cmd.Context(), ready)
		},
	}
	clientFlags(cmd, c, 2*time.Second, false)
	cmd.Flags().BoolVar(&ready, "ready", false, "ask /readyz (ready for visitors) instead of /healthz (alive)")
	return cmd
}
