package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/cookie"
)

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	key, err := cookie.GenerateKeyFile(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cookie.key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const room = "rooms:\n  - name: shop\n    total_active_users: 100\n    new_users_per_minute: 50\n"
	cases := []struct {
		name  string
		args  func() []string
		stdin string
		want  string // in the output when valid, in the error otherwise
		valid bool
	}{
		{
			name: "a file the node would start with is valid",
			args: func() []string {
				return []string{"-c", write("ok.yaml", "node: pop-1\norigin: http://127.0.0.1:3000\ncookie_key_file: cookie.key\n"+room)}
			},
			want:  `valid; node "pop-1", 1 room(s): shop`,
			valid: true,
		},
		{
			name: "a field out of its range is named with the range",
			args: func() []string {
				return []string{"-c", write("range.yaml", "origin: http://127.0.0.1:3000\nrooms:\n  - name: shop\n    total_active_users: 10\n    new_users_per_minute: 20\n")}
			},
			want: `rooms[0] ("shop").new_users_per_minute: 20 must be ≤ total_active_users (10)`,
		},
		{
			name: "a key file that is not there fails as it would at start",
			args: func() []string {
				return []string{"-c", write("nokey.yaml", "origin: http://127.0.0.1:3000\ncookie_key_file: missing.key\n"+room)}
			},
			want: "missing.key",
		},
		{
			name: "a cluster without a gossip key fails as it would at start",
			args: func() []string {
				return []string{"-c", write("nogossipkey.yaml", "origin: http://127.0.0.1:3000\ncookie_key_file: cookie.key\nseeds: [127.0.0.1:7946]\n"+room)}
			},
			want: "gossip",
		},
		{
			name:  "a file read from standard input is checked the same way",
			args:  func() []string { return []string{"-c", "-"} },
			stdin: "rooms:\n  - name: a\n    total_active_users: 5\n    new_users_per_minute: 5\n    custom_page_html: \"{{#x}\"\n",
			want:  "custom_page_html",
		},
		{
			name: "without -c it says what it needs",
			args: func() []string { return nil },
			want: "-c FILE is required",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := newRoot()
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetIn(strings.NewReader(c.stdin))
			root.SetArgs(append([]string{"validate"}, c.args()...))
			err := root.ExecuteContext(context.Background())
			if c.valid {
				if err != nil || !strings.Contains(out.String(), c.want) {
					t.Fatalf("error %v, output %q; want valid with %q", err, out.String(), c.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v; want one that contains %q", err, c.want)
			}
		})
	}
	t.Run("a check writes nothing: no cookie key is kept for a node alone", func(t *testing.T) {
		home := t.TempDir()
		t.Setenv("HOME", home)
		t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
		root := newRoot()
		root.SetOut(&bytes.Buffer{})
		root.SetArgs([]string{"validate", "-c", write("alone.yaml", "origin: http://127.0.0.1:3000\n"+room)})
		if err := root.ExecuteContext(context.Background()); err != nil {
			t.Fatal(err)
		}
		if entries, _ := os.ReadDir(home); len(entries) != 0 {
			t.Errorf("validate wrote into the home directory: %v", entries)
		}
	})
}

func TestTheOperatorsCommandsComeFirst(t *testing.T) {
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"--help"})
	if err := root.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	help := out.String()
	order := []string{"Run and operate a ring:", "  serve ", "  validate ", "  state ", "  rooms ", "  keygen ", "  healthcheck ", "  version ", "Try and measure", "  demo ", "  bench "}
	at := 0
	for _, s := range order {
		i := strings.Index(help[at:], s)
		if i < 0 {
			t.Fatalf("%q is not listed after %q in:\n%s", s, help[:at], help)
		}
		at += i + len(s)
	}
}
