//go:build unix

package agent_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/waitroom/waitroom/edge/agent"
	"github.com/waitroom/waitroom/edge/edgetest"
	"github.com/waitroom/waitroom/gossip/testkit"
)

// TestSIGHUPReopensTheAccessLog does what logrotate does: it moves the
// access log away and sends the node SIGHUP; the node's next lines go to a
// new file at the same path, and none is lost.
func TestSIGHUPReopensTheAccessLog(t *testing.T) {
	o := edgetest.NewOrigin(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	cfg := edgetest.NodeConfig("node-a", edgetest.KeyFile(t, dir), o.URL, edgetest.Room("shop", 100, 100))
	cfg.AccessLog = path
	srv := edgetest.ServeNode(t, cfg, nil)
	get := func(p string) {
		t.Helper()
		resp, err := http.Get("http://" + srv.PublicAddr() + p)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	lineIn := func(file, p string) func() bool {
		return func() bool {
			b, _ := os.ReadFile(file)
			return strings.Contains(string(b), `"path":"`+p+`"`)
		}
	}
	get("/before")
	testkit.Eventually(t, testkit.Wait{What: "the first line written", Timeout: 5 * time.Second}, lineIn(path, "/before"))
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	t.Run("the node opens a new file at the path on SIGHUP", func(t *testing.T) {
		testkit.Eventually(t, testkit.Wait{What: "a new access log at " + path, Timeout: 5 * time.Second}, func() bool {
			_, err := os.Stat(path)
			return err == nil
		})
	})
	get("/after")
	t.Run("the lines after it go to the new file, the earlier ones stay in the moved one", func(t *testing.T) {
		testkit.Eventually(t, testkit.Wait{What: "the line after SIGHUP in the new file", Timeout: 5 * time.Second}, lineIn(path, "/after"))
		if lineIn(path+".1", "/after")() || !lineIn(path+".1", "/before")() {
			t.Error("the moved file should hold the line before SIGHUP and only it")
		}
	})
}

func TestAnAccessLogThatCannotBeOpenedStopsTheStart(t *testing.T) {
	o := edgetest.NewOrigin(t)
	dir := t.TempDir()
	cfg := edgetest.NodeConfig("node-a", edgetest.KeyFile(t, dir), o.URL, edgetest.Room("shop", 100, 100))
	cfg.AccessLog = filepath.Join(dir, "no such directory", "access.log")
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	t.Run("a node whose access log cannot be opened does not start, and says why", func(t *testing.T) {
		srv, err := agent.New(cfg, agent.Options{Log: zerolog.Nop(), GossipKeys: edgetest.GossipKeys})
		if err == nil {
			_ = srv.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "access_log") {
			t.Errorf("agent.New = %v, want an error naming access_log", err)
		}
	})
}
