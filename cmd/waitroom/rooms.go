package main

import (
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/waitroom/waitroom/edge/api"
	"github.com/waitroom/waitroom/edge/config"
)

func newRooms() *cobra.Command {
	c := &api.Client{}
	cmd := &cobra.Command{
		Use:   "rooms",
		Short: "List, change, stop and resume rooms on a running cluster",
		Long: `Manage rooms through any node's admin endpoint. A change is stored as
replicated state and reaches every node of the cluster within about two
seconds; no restart is needed.`,
	}
	clientFlags(cmd, c, 10*time.Second, true)
	cmd.AddCommand(newRoomsList(c), newRoomsGet(c), newRoomsApply(c), newRoomsDelete(c), newRoomsStop(c), newRoomsResume(c),
		newRoomsMessage(c), newRoomsClose(c), newRoomsOpen(c), newRoomsCodes(c))
	return cmd
}

func newRoomsList(c *api.Client) *cobra.Command {
	return &cobra.Command{
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
				fmt.Fprintf(tw, "%s\t%s%s\t%d\t%d\t%s\t%s\t%d\n", r.Name, host, r.Path, r.TotalActiveUsers, r.NewUsersPerMinute, r.QueueingMethod, roomState(r), len(r.Events))
			}
			return tw.Flush()
		},
	}
}

// roomState is the list's STATE column: the strongest of stopped, suspended
// and queue_all, or on.
func roomState(r config.Room) string {
	switch {
	case r.Stopped:
		return "stopped"
	case r.Closed:
		return "closed"
	case r.Suspended:
		return "suspended"
	case r.QueueAll:
		return "queue_all"
	}
	return "on"
}

func newRoomsGet(c *api.Client) *cobra.Command {
	return &cobra.Command{
		Use: "get NAME", Short: "Print a room's settings as JSON", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := c.Room(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return writeJSON(cmd.OutOrStdout(), r)
		},
	}
}

func newRoomsApply(c *api.Client) *cobra.Command {
	var file string
	apply := &cobra.Command{
		Use: "apply -f FILE", Short: "Create or replace rooms from a YAML or JSON file", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			data, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			rooms, err := api.ParseRooms(data)
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
	return apply
}

func newRoomsDelete(c *api.Client) *cobra.Command {
	return &cobra.Command{
		Use: "delete NAME", Short: "Delete a room", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := c.Delete(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "room %s deleted\n", args[0])
			return nil
		},
	}
}

func newRoomsStop(c *api.Client) *cobra.Command {
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
	return stop
}

func newRoomsResume(c *api.Client) *cobra.Command {
	return &cobra.Command{
		Use: "resume NAME", Short: "End an emergency stop", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := c.Resume(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "room %s resumed\n", args[0])
			return nil
		},
	}
}
