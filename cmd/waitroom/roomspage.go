package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/waitroom/waitroom/edge/api"
)

func newRoomsMessage(c *api.Client) *cobra.Command {
	var clear bool
	cmd := &cobra.Command{
		Use:   `message NAME "TEXT" | message NAME --clear`,
		Short: "Show a message to everyone waiting in a room, or clear it",
		Long: `Set the short message the room's page shows to everyone waiting (the
built-in page, {{message}} in a custom page, "message" in the JSON answer).
It reaches every node like any room change. --clear removes it.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			text := ""
			switch {
			case clear && len(args) == 2:
				return errors.New("give either a message or --clear, not both")
			case !clear && len(args) == 1:
				return errors.New(`give the message ("TEXT") or --clear`)
			case !clear:
				text = args[1]
				if text == "" {
					return errors.New("the message is empty; use --clear to remove it")
				}
			}
			if _, err := c.SetMessage(cmd.Context(), args[0], text); err != nil {
				return err
			}
			if clear {
				fmt.Fprintf(cmd.OutOrStdout(), "room %s: message cleared\n", args[0])
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "room %s: message set on every node\n", args[0])
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&clear, "clear", false, "remove the room's message")
	return cmd
}

func newRoomsClose(c *api.Client) *cobra.Command {
	return &cobra.Command{
		Use:   "close NAME",
		Short: "Close a room (sold out): nobody new gets in, the queue is kept",
		Long: `Close the room: everyone waiting and every newcomer gets the closed page;
visitors already admitted finish their sessions (stop the room as well to
hold them too). 'waitroom rooms open' reopens it with the queue in order.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := c.Close(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "room %s closed on every node\n", args[0])
			return nil
		},
	}
}

func newRoomsOpen(c *api.Client) *cobra.Command {
	return &cobra.Command{
		Use:   "open NAME",
		Short: "Reopen a closed room, also one closed by an event's end",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := c.Open(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "room %s open\n", args[0])
			return nil
		},
	}
}
