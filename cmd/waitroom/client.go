package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/waitroom/waitroom/edge/adminclient"
)

// clientFlags gives a command that speaks to a running node the flags every
// such command shares, bound to c: --addr (WAITROOM_ADDR), --token
// (WAITROOM_ADMIN_TOKEN) and --timeout. --admin, the old name of --addr
// (which on serve names the admin listener instead), is still taken.
func clientFlags(cmd *cobra.Command, c *adminclient.Client, timeout time.Duration, persistent bool) {
	f := cmd.Flags()
	if persistent {
		f = cmd.PersistentFlags()
	}
	f.StringVar(&c.URL, "addr", "", "admin address of the node to ask, as a URL or host:port (default $"+adminclient.AddrEnv+", else "+adminclient.DefaultAddr+")")
	f.StringVar(&c.URL, "admin", "", "")
	_ = f.MarkDeprecated("admin", "use --addr (or "+adminclient.AddrEnv+")")
	f.StringVar(&c.Token, "token", "", "bearer token for a node whose admin endpoint needs one (default $"+adminclient.TokenEnv+")")
	f.DurationVar(&c.Timeout, "timeout", timeout, "how long to wait for the node")
}
