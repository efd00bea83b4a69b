package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/waitroom/waitroom/cmd/waitroom/internal/buildinfo"
)

func newVersion() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, the commit it was built from, and the Go toolchain",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(cmd.OutOrStdout(), buildinfo.Read(version).String())
			return err
		},
	}
}
