package agent_test

import (
	"bytes"
	"encoding/base64"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/waitroom/waitroom/edge/agent"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/edgetest"
	"github.com/waitroom/waitroom/gossip/testkit"
)

func TestANodeNeedsAGossipKey(t *testing.T) {
	t.Setenv(agent.GossipKeyEnv, "")
	tests := []struct {
		name   string
		edit   func(*config.Config)
		starts bool
	}{
		{"a node with seeds and no key refuses to start", func(c *config.Config) { c.Seeds = []string{"127.0.0.1:1"} }, false},
		// Refused before anything binds.
		{"a node alone on a public gossip address and no key refuses to start", func(c *config.Config) { c.Gossip = "192.0.2.1:7946" }, false},
		{"a node with seeds and insecure gossip starts", func(c *config.Config) { c.Seeds = []string{"127.0.0.1:1"}; c.InsecureGossip = true }, true},
		{"a node with a key file starts", func(c *config.Config) { c.Seeds = []string{"127.0.0.1:1"}; c.GossipKeyFile = writeGossipKey(t) }, true},
		{"a node alone without a key starts", func(c *config.Config) {}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := edgetest.NodeConfig("lone", edgetest.KeyFile(t, t.TempDir()), "http://127.0.0.1:1", edgetest.Room("shop", 10, 10))
			tt.edit(cfg)
			cfg.ApplyDefaults()
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			srv, err := agent.New(cfg, agent.Options{Log: zerolog.Nop()})
			if srv != nil {
				defer srv.Close()
			}
			switch {
			case tt.starts && err != nil:
				t.Fatalf("refused: %v", err)
			case !tt.starts && err == nil:
				t.Fatal("started without a gossip key")
			case !tt.starts:
				for _, want := range []string{"--gossip-key-file", "--insecure-gossip", "waitroom keygen --gossip"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not name %s", err, want)
					}
				}
			}
		})
	}

	t.Run("a node alone without a key gossips on loopback only", func(t *testing.T) {
		cfg := edgetest.NodeConfig("lone", edgetest.KeyFile(t, t.TempDir()), "http://127.0.0.1:1", edgetest.Room("shop", 10, 10))
		cfg.Gossip = "0.0.0.0:0"
		cfg.ApplyDefaults()
		srv, err := agent.New(cfg, agent.Options{Log: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		host, _, err := net.SplitHostPort(srv.Node().Addr())
		if err != nil || !net.ParseIP(host).IsLoopback() {
			t.Fatalf("gossip on %s, want loopback", srv.Node().Addr())
		}
	})

	t.Run("a node with insecure gossip warns, naming its address", func(t *testing.T) {
		var buf testkit.Buffer
		cfg := edgetest.NodeConfig("open", edgetest.KeyFile(t, t.TempDir()), "http://127.0.0.1:1", edgetest.Room("shop", 10, 10))
		cfg.InsecureGossip = true
		cfg.ApplyDefaults()
		srv, err := agent.New(cfg, agent.Options{Log: zerolog.New(&buf)})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		testkit.Eventually(t, testkit.Wait{What: "the warning", Timeout: 5 * time.Second}, func() bool {
			return strings.Contains(buf.String(), "gossip is unauthenticated: anyone who reaches 127.0.0.1:")
		})
	})
}

// writeGossipKey writes a gossip key file as 'waitroom keygen --gossip' does.
func writeGossipKey(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gossip.key")
	if err := os.WriteFile(path, []byte(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
