package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/waitroom/waitroom/edge/api"
)

// clientFlags gives a command that speaks to a running node the flags every
// such command shares, bound to c: --addr (WAITROOM_ADDR), --token
// (WAITROOM_ADMIN_TOKEN) and --timeout. --admin, the old name of --addr
// (which on serve names the admin listener instead), is still taken.
func clientFlags(cmd *cobra.Command, c *api.Client, timeout time.Duration, persistent bool) {
	f := cmd.Flags()
	if persistent {
		f = cmd.PersistentFlags()
	}
	f.StringVar(&c.URL, "addr", "", "admin address of the node to ask, as a URL or host:port (default $"+api.AddrEnv+", else "+api.DefaultAddr+")")
	f.StringVar(&c.URL, "admin", "", "")
	_ = f.MarkDeprecated("admin", "use --addr (or "+api.AddrEnv+")")
	f.StringVar(&c.Token, "token", "", "bearer token for a node whose admin endpoint needs one (default $"+api.TokenEnv+")")
	f.DurationVar(&c.Timeout, "timeout", timeout, "how long to wait for the node")
}
