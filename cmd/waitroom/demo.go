package main

import (
	"github.com/spf13/cobra"

	"github.com/waitroom/waitroom/cmd/waitroom/internal/demo"
)

func newDemo() *cobra.Command {
	var o demo.Options
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Watch queueing happen: three nodes, an origin and a crowd, in one process",
		Long: `Start, in this process, a 3-node ring on loopback, a small demo origin, a room
with low limits and a synthetic crowd of visitors that keep their cookies and
follow the queue page's refresh. Every second the live merged state is
printed; open the URL shown to join the queue yourself. Ctrl-C stops it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return demo.Run(cmd.Context(), o, cmd.OutOrStdout(), newLogger(o.LogLevel, "console"))
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Listen, "listen", "127.0.0.1:8080", "address of the first node's public listener (open it in a browser)")
	f.IntVar(&o.Nodes, "nodes", 3, "nodes in the ring")
	f.IntVar(&o.TotalActiveUsers, "total-active-users", 30, "room limit: users on the origin at once")
	f.IntVar(&o.NewUsersPerMinute, "new-users-per-minute", 20, "room limit: new users per minute")
	f.IntVar(&o.Visitors, "visitors", 120, "synthetic visitors in the crowd")
	f.DurationVar(&o.Duration, "duration", 0, "stop after this long (0: run until Ctrl-C)")
	f.StringVar(&o.QueueingMethod, "queueing-method", "fifo", "fifo or random")
	f.StringVar(&o.LogLevel, "log-level", "warn", "log level of the nodes")
	return cmd
}
