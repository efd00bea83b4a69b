package main

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/waitroom/waitroom/edge/api"
)

func newRoomsCodes(c *api.Client) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "codes",
		Short: "Mint, revoke and check a room's priority codes",
		Long: `Priority codes let their holders into a room ahead of the line, within their
priority group's share of the room's slots. Codes are self-validating: any node
checks one without a list, and its uses are counted across the whole ring.`,
	}
	cmd.AddCommand(newCodesMint(c), newCodesRevoke(c), newCodesStatus(c))
	return cmd
}

func newCodesMint(c *api.Client) *cobra.Command {
	var group string
	var count, uses int
	var expires time.Duration
	mint := &cobra.Command{
		Use:   "mint ROOM",
		Short: "Mint priority codes and write them as CSV (code, id, group, uses, expires, link)",
		Example: `  waitroom rooms codes mint tickets --group vip --count 500 --uses 1 --expires 48h > codes.csv
  waitroom rooms codes mint tickets --group partner --count 1 --uses 200 --expires 720h`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := c.MintCodes(cmd.Context(), args[0], group, count, uses, expires)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	mint.Flags().StringVar(&group, "group", "", "the room's priority group the codes admit to")
	mint.Flags().IntVar(&count, "count", 1, "how many codes to mint (1 to 100000)")
	mint.Flags().IntVar(&uses, "uses", 1, "how many visitors each code admits (1 to 10000)")
	mint.Flags().DurationVar(&expires, "expires", 48*time.Hour, "how long the codes stay valid")
	_ = mint.MarkFlagRequired("group")
	return mint
}

// readCodes returns the codes given as arguments, or read from file: a CSV
// as mint writes it (the code column), or one code per line.
func readCodes(args []string, file string) ([]string, error) {
	codes := append([]string(nil), args...)
	if file == "" {
		return codes, nil
	}
	var rd io.Reader = os.Stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		rd = f
	}
	sc := bufio.NewScanner(rd)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "code,") {
			continue
		}
		rec, err := csv.NewReader(strings.NewReader(line)).Read()
		if err != nil || len(rec) == 0 {
			return nil, fmt.Errorf("%s: line %q: not a code or a CSV row", file, line)
		}
		codes = append(codes, rec[0])
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(codes) == 0 {
		return nil, fmt.Errorf("no codes given")
	}
	return codes, nil
}

func printCodeStatus(w io.Writer, sts []api.CodeStatus) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tGROUP\tUSED\tUSES\tEXPIRES\tREVOKED\tERROR")
	for _, s := range sts {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%v\t%s\n", s.ID, s.Group, s.Used, s.Uses, s.Expires, s.Revoked, s.Error)
	}
	_ = tw.Flush()
}

func newCodesRevoke(c *api.Client) *cobra.Command {
	var file string
	revoke := &cobra.Command{
		Use:   "revoke ROOM [CODE...]",
		Short: "Revoke priority codes on every node (visitors already let in keep their sessions)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			codes, err := readCodes(args[1:], file)
			if err != nil {
				return err
			}
			sts, err := c.RevokeCodes(cmd.Context(), args[0], codes)
			if err != nil {
				return err
			}
			printCodeStatus(cmd.OutOrStdout(), sts)
			return nil
		},
	}
	revoke.Flags().StringVarP(&file, "file", "f", "", "file of codes: mint's CSV or one per line (- for standard input)")
	return revoke
}

func newCodesStatus(c *api.Client) *cobra.Command {
	var file string
	status := &cobra.Command{
		Use:   "status ROOM [CODE...]",
		Short: "Show how often priority codes were used and whether they are revoked",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			codes, err := readCodes(args[1:], file)
			if err != nil {
				return err
			}
			sts, err := c.CodesStatus(cmd.Context(), args[0], codes)
			if err != nil {
				return err
			}
			printCodeStatus(cmd.OutOrStdout(), sts)
			return nil
		},
	}
	status.Flags().StringVarP(&file, "file", "f", "", "file of codes: mint's CSV or one per line (- for standard input)")
	return status
}
