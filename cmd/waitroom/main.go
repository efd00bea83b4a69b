// Command waitroom runs a waitroom node in front of an origin web site, and
// the tools around it.
//
// Operators' commands come first: serve (run a node), validate (check a
// config file offline), state (what a node knows), rooms (change rooms on a
// running ring, and their priority codes), keygen (cookie and gossip keys),
// healthcheck (for a container's HEALTHCHECK), version. The commands that
// speak to a running node take its admin address as --addr or
// WAITROOM_ADDR, and a token as --token or WAITROOM_ADMIN_TOKEN.
//
// Then the tools to try and measure the product, which are not the node:
// demo (a ring, an origin and a crowd in one process), sim (the simulator),
// fidelity (real serve processes judged from the origin's side), loadtest
// and bench.
//
// The commands only wire flags to the packages that do the work; there is
// no logic of their own here.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/waitroom/waitroom/cmd/waitroom/internal/buildinfo"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRoot().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "waitroom:", err)
		os.Exit(1)
	}
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "waitroom",
		Short:         "A self-hosted, peer-to-peer virtual waiting room",
		Long:          "waitroom sits in front of an origin web site and queues visitors fairly when more arrive than the origin can hold.\nNodes agree on the global counts by gossip; there is no central database.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildinfo.Read(version).Short(),
	}
	// Listed in the order added: serve first, not completion.
	cobra.EnableCommandSorting = false
	root.AddGroup(
		&cobra.Group{ID: groupOperate, Title: "Run and operate a ring:"},
		&cobra.Group{ID: groupMeasure, Title: "Try and measure (tools, not the node):"},
	)
	add := func(group string, cmds ...*cobra.Command) {
		for _, c := range cmds {
			c.GroupID = group
			root.AddCommand(c)
		}
	}
	add(groupOperate, newServe(), newValidate(), newState(), newRooms(), newKeygen(), newHealthcheck(), newVersion())
	add(groupMeasure, newDemo(), newSim(), newFidelity(), newLoadtest(), newBench())
	root.SetHelpCommandGroupID(groupOperate)
	root.SetCompletionCommandGroupID(groupOperate)
	return root
}

// The groups the commands are listed in, operators' first.
const (
	groupOperate = "operate"
	groupMeasure = "measure"
)
