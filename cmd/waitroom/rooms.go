package main

import (
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/waitroom/waitroom/edge/adminclient"
)

func newRooms() *cobra.Command {
	c := &adminclient.Client{}
	cmd := &cobra.Command{
		Use:   "rooms",
		Short: "List, change, stop and resume rooms on a running cluster",
		Long: `Manage rooms through any node's admin endpoint. A change is stored as
replicated state and reaches every node of the cluster within about two
seconds; no restart is needed.`,
	}
	cmd.PersistentFlags().StringVar(&c.URL, "admin", "http://127.0.0.1:9090", "admin endpoint of any node")
	cmd.PersistentFlags().StringVar(&c.Token, "token", "", "bearer token (or WAITROOM_ADMIN_TOKEN)")
	cmd.PersistentFlags().DurationVar(&c.Timeout, "timeout", 10*time.Second, "how long to wait for the node")

	printJSON := func(cmd *cobra.Command, v any) error { return writeJSON(cmd.OutOrStdout(), v) }
	list := &cobra.Command{
		Use: "list", Short: "List the rooms", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rooms, err := c.Rooms(cmd.Context())
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tROUTE\tTOTAL ACTIVE\tNEW/MIN\tMETHOD\tSTATE\tEVENTS")
			for _, r := range rooms {
				host := r.Host
				if host == "" {
					host = "*"
				}
				state := "on"
				switch {
				case r.Stopped:
					state = "stopped"
				case r.Suspended:
					state = "suspended"
				case r.QueueAll:
					state = "queue_all"
				}
				fmt.Fprintf(tw, "%s\t%s%s\t%d\t%d\t%s\t%s\t%d\n", r.Name, host, r.Path, r.TotalActiveUsers, r.NewUsersPerMinute, r.QueueingMethod, state, len(r.Events))
			}
			return tw.Flush()
		},
	}
	get := &cobra.Command{
		Use: "get NAME", Short: "Print a room's settings as JSON", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := c.Room(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printJSON(cmd, r)
		},
	}
	var file string
	apply := &cobra.Command{
		Use: "apply -f FILE", Short: "Create or replace rooms from a YAML or JSON file", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			data, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			rooms, err := adminclient.ParseRooms(data)
			if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			for _, r := range rooms {
				if _, err := c.Apply(cmd.Context(), r); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "room %s applied\n", r.Name)
			}
			return nil
		},
	}
	apply.Flags().StringVarP(&file, "file", "f", "", "file with one room, a list of rooms, or a config with rooms")
	_ = apply.MarkFlagRequired("file")
	del := &cobra.Command{
		Use: "delete NAME", Short: "Delete a room", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := c.Delete(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "room %s deleted\n", args[0])
			return nil
		},
	}
	var page string
	stop := &cobra.Command{
		Use:   "stop NAME",
		Short: "Emergency stop: queue everyone, admitted visitors included",
		Long: `Queue every visitor of the room, including those already admitted, behind the
built-in paused page or the page given with --page, until 'waitroom rooms resume'.
Visitors keep their place and their sessions.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			html := ""
			if page != "" {
				b, err := os.ReadFile(page)
				if err != nil {
					return err
				}
				html = string(b)
			}
			if _, err := c.Stop(cmd.Context(), args[0], html); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "room %s stopped on every node\n", args[0])
			return nil
		},
	}
	stop.Flags().StringVar(&page, "page", "", "HTML (Mustache) file to show while stopped")
	resume := &cobra.Command{
		Use: "resume NAME", Short: "End an emergency stop", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := c.Resume(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "room %s resumed\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(list, get, apply, del, stop, resume)
	return cmd
}
