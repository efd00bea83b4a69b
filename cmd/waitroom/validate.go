package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/waitroom/waitroom/edge/agent"
	"github.com/waitroom/waitroom/edge/config"
)

func newValidate() *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "validate -c FILE",
		Short: "Check a config file offline, as serve would at start, without starting a node",
		Long: `Check a config file the way 'waitroom serve' checks it at start, without
binding a port, joining a ring or writing a file: every field and its range
(a bad one is named with the range it must lie in), the rooms' routes,
bypass rules, pages and their templates, the key files, the gossip security,
the admin token, the TLS certificate files, forward-auth and webhooks.
Exit status 0 when the node would start with it, 1 with the reasons when it
would not. -c - reads the file from standard input.

  waitroom validate -c waitroom.yaml && systemctl reload waitroom`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if path == "" {
				return fmt.Errorf("validate: -c FILE is required (- for standard input)")
			}
			name := path
			var cfg *config.Config
			var err error
			if path == "-" {
				name = "standard input"
				var data []byte
				if data, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), config.MaxConfigSize+1)); err == nil {
					cfg, err = config.Parse(data)
				}
				if err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
			} else if cfg, err = config.Load(path); err != nil {
				return err // names the file
			}
			if err := agent.Check(cfg); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			names := make([]string, len(cfg.Rooms))
			for i, r := range cfg.Rooms {
				names[i] = r.Name
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: valid; node %q, %d room(s): %s\n", name, cfg.Node, len(names), strings.Join(names, ", "))
			return nil
		},
	}
	cmd.Flags().StringVarP(&path, "config", "c", "", "the YAML config file to check (- for standard input)")
	return cmd
}
