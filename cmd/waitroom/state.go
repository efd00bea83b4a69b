package main

import (
	"encoding/json"
	"time"

	"github.com/spf13/cobra"

	"github.com/waitroom/waitroom/edge/adminclient"
)

func newState() *cobra.Command {
	var (
		admin   string
		asJSON  bool
		token   string
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "state",
		Short: "Show a node's merged picture of the cluster and its rooms",
		Long: `Read a node's admin endpoint and print what it knows: the members of the
ring and, per room, active users against the limit, who waits in which
arrival bucket, admissions this minute and each node's traffic share.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			doc, raw, err := adminclient.FetchState(cmd.Context(), admin, token, timeout)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				var v any
				if err := json.Unmarshal(raw, &v); err != nil {
					return err
				}
				return writeJSON(out, v)
			}
			return adminclient.WriteStateTable(out, doc)
		},
	}
	cmd.Flags().StringVar(&admin, "admin", "http://127.0.0.1:9090", "admin endpoint of the node to ask")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the raw JSON")
	cmd.Flags().StringVar(&token, "token", "", "bearer token for a non-loopback admin endpoint (or WAITROOM_ADMIN_TOKEN)")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "how long to wait for the node")
	return cmd
}
