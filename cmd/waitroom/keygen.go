package main

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/waitroom/waitroom/cookie"
)

func newKeygen() *cobra.Command {
	var gossipKey bool
	var id int
	cmd := &cobra.Command{
		Use:   "keygen",
		Short: "Print a new cookie key file (or, with --gossip, a gossip encryption key)",
		Long: `Print a new key to standard output.

Cookie keys seal visitors' tokens. Every node of a cluster needs the same file,
and it must survive restarts: a new key puts every visitor at the back of the
queue. To rotate, put a new key first in the file (it seals) and keep the old
one after it (it still opens) until the old tokens have expired.

  waitroom keygen > cookie.key
  waitroom keygen --id 2     # a key to add in front when rotating

Gossip keys (32 bytes, base64) encrypt memberlist traffic; one per line in
the file given by --gossip-key-file, the first one encrypting.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			if gossipKey {
				k := make([]byte, 32)
				_, _ = rand.Read(k)
				_, err := fmt.Fprintln(out, base64.StdEncoding.EncodeToString(k))
				return err
			}
			if id < 0 || id > 255 {
				return fmt.Errorf("--id %d: must be 0–255", id)
			}
			k, err := cookie.GenerateKey(rand.Reader, uint8(id))
			if err != nil {
				return err
			}
			_, err = out.Write(cookie.FormatKeyFile(k))
			return err
		},
	}
	cmd.Flags().BoolVar(&gossipKey, "gossip", false, "print a gossip encryption key instead of a cookie key file")
	cmd.Flags().IntVar(&id, "id", 1, "key id of the cookie key (0–255)")
	return cmd
}
