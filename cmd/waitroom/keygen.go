package main

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/waitroom/waitroom/cookie"
	"github.com/waitroom/waitroom/edge/agent"
)

func newKeygen() *cobra.Command {
	var gossipKey bool
	var id int
	var outPath string
	cmd := &cobra.Command{
		Use:   "keygen",
		Short: "Make a new cookie key file (or, with --gossip, a gossip encryption key)",
		Long: `Make a new key and write it to the file given with -o (readable by its
owner only, mode 0600; an existing file is never replaced) or to standard
output.

Cookie keys seal visitors' tokens. Every node of a cluster needs the same file,
and it must survive restarts: a new key puts every visitor at the back of the
queue. To rotate, put a new key first in the file (it seals) and keep the old
one after it (it still opens) until the old tokens have expired.

  waitroom keygen -o cookie.key
  waitroom keygen --id 2     # a key to add in front when rotating

Gossip keys (32 bytes, base64) encrypt and authenticate memberlist traffic;
one per line in the file given by --gossip-key-file, the first one encrypting.

  waitroom keygen --gossip -o gossip.key

Whoever reads a key file can mint admitted visitors (cookie key) or rewrite
the cluster's counts and rooms (gossip key): keep them private. When standard
output is redirected to a file, that file is made private too.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var data []byte
			if gossipKey {
				k := make([]byte, 32)
				_, _ = rand.Read(k)
				data = []byte(base64.StdEncoding.EncodeToString(k) + "\n")
			} else {
				if id < 0 || id > 255 {
					return fmt.Errorf("--id %d: must be 0–255", id)
				}
				k, err := cookie.GenerateKey(rand.Reader, uint8(id))
				if err != nil {
					return err
				}
				data = cookie.FormatKeyFile(k)
			}
			if outPath != "" {
				return agent.WriteKeyFile(outPath, data)
			}
			out := cmd.OutOrStdout()
			if _, err := out.Write(data); err != nil {
				return err
			}
			if f, ok := out.(*os.File); ok {
				protected, err := agent.ProtectKeyOutput(f)
				if err != nil {
					return err
				}
				if protected {
					fmt.Fprintln(cmd.ErrOrStderr(), "waitroom keygen: made the output file readable by its owner only (mode 0600)")
					return nil
				}
			}
			fmt.Fprintln(cmd.ErrOrStderr(), "waitroom keygen: keep this key private; 'waitroom keygen -o FILE' writes it to a file only you can read")
			return nil
		},
	}
	cmd.Flags().BoolVar(&gossipKey, "gossip", false, "make a gossip encryption key instead of a cookie key file")
	cmd.Flags().IntVar(&id, "id", 1, "key id of the cookie key (0–255)")
	cmd.Flags().StringVarP(&outPath, "out", "o", "", "write the key to this new file, readable by its owner only (mode 0600)")
	return cmd
}
