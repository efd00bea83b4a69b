package main

import (
	"encoding/json"
	"time"

	"github.com/spf13/cobra"

	"github.com/waitroom/waitroom/cmd/waitroom/internal/statetable"
	"github.com/waitroom/waitroom/edge/api"
)

func newState() *cobra.Command {
	c := &api.Client{}
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "state",
		Short: "Show a node's merged picture of the cluster and its rooms",
		Long: `Read a node's admin endpoint and print what it knows: the members of the
ring and, per room, active users against the limit, who waits in which
arrival bucket, admissions this minute and each node's traffic share.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			doc, raw, err := c.State(cmd.Context())
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
			return statetable.Write(out, doc)
		},
	}
	clientFlags(cmd, c, 5*time.Second, false)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the raw JSON")
	return cmd
}
