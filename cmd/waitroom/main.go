// Command waitroom runs a waitroom node in front of an origin web site, and
// the tools around it: the built-in demo, the state viewer, key generation.
//
// The commands only wire flags to the packages that do the work (edge,
// gossip, cookie); there is no logic of their own here.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
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
		Version:       version,
	}
	root.AddCommand(newServe(), newState(), newRooms(), newDemo(), newKeygen(), newHealthcheck(), newLoadtest(), newBench(), newSim(), newFidelity())
	return root
}
