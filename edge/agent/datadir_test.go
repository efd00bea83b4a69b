package agent_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/edge"
	"github.com/waitroom/waitroom/edge/config"
	"github.com/waitroom/waitroom/edge/datadir"
	"github.com/waitroom/waitroom/edge/edgetest"
	"github.com/waitroom/waitroom/gossip/testkit"
)

// withDataDir keeps the fixture's node's data directory in dir, with the
// cookie key file key when it is not "".
func withDataDir(dir, key string) func(*config.Config) {
	return func(c *config.Config) {
		c.DataDir = dir
		if key != "" {
			c.CookieKeyFile = key
		}
	}
}

// setAside lists the files of dir set aside for reason.
func setAside(t *testing.T, dir, reason string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*."+reason+".*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestABadDataFileNeverStopsNorFoolsANode(t *testing.T) {
	for _, tc := range []struct {
		name, reason string
		write        func(t *testing.T, dir string)
	}{
		{"a file that is not the node's", datadir.BadNotOurs, func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "state"), []byte("rooms: []\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"a file sealed with another cookie key", datadir.BadWrongKey, func(t *testing.T, dir string) {
			d, err := datadir.Open(dir, [][]byte{bytes.Repeat([]byte{9}, 32)})
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Write("state", []byte("anything")); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name+" is set aside, and the node starts from its config", func(t *testing.T) {
			dir := t.TempDir()
			tc.write(t, dir)
			f := edgetest.NewFixtureWith(t, withDataDir(dir, ""), edgetest.Room("shop", 10, 10))
			if f.Server.Room("shop") == nil {
				t.Fatal("the config's room is not in force")
			}
			if got := setAside(t, dir, tc.reason); len(got) != 1 {
				t.Fatalf("set aside as %s: %v", tc.reason, got)
			}
			if got := edgetest.Metric(t, f.Admin, `waitroom_data_dir_set_aside_total{reason="`+tc.reason+`"}`); got != 1 {
				t.Fatalf("set-aside metric %v, want 1", got)
			}
		})
	}
}

func TestAPlacesFileThatCannotBeTrustedIsSetAside(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, datadir.PlacesFile), []byte("not the node's"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := edgetest.NewFixtureWith(t, withDataDir(dir, ""), edgetest.Room("shop", 10, 10))
	t.Run("the node starts, with its config's room", func(t *testing.T) {
		if f.Server.Room("shop") == nil {
			t.Fatal("the config's room is not in force")
		}
	})
	t.Run("the file is set aside and counted", func(t *testing.T) {
		if got := setAside(t, dir, datadir.BadNotOurs); len(got) != 1 || !strings.HasPrefix(filepath.Base(got[0]), datadir.PlacesFile+".") {
			t.Fatalf("set aside as %s: %v", datadir.BadNotOurs, got)
		}
		if got := edgetest.Metric(t, f.Admin, `waitroom_data_dir_set_aside_total{reason="`+datadir.BadNotOurs+`"}`); got != 1 {
			t.Fatalf("set-aside metric %v, want 1", got)
		}
	})
}

func TestADataDirectoryThatCannotBeWrittenIsCountedNotFatal(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f := edgetest.NewFixtureWith(t, withDataDir(filepath.Join(file, "data"), ""), edgetest.Room("shop", 10, 10))
	if f.Server.Room("shop") == nil {
		t.Fatal("the config's room is not in force")
	}
	testkit.Eventually(t, testkit.Wait{What: "a failed save counted", Timeout: 10 * time.Second}, func() bool {
		return edgetest.Metric(t, f.Admin, `waitroom_data_dir_writes_total{result="error"}`) >= 1
	})
}

func TestAStopSavesAndTheNextStartTakesBack(t *testing.T) {
	dir := t.TempDir()
	first := edgetest.NewFixtureWith(t, withDataDir(dir, ""), edgetest.Room("shop", 10, 10))
	key := first.Server.Config().CookieKeyFile
	sale := edgetest.Room("sale", 5, 5)
	sale.Path, sale.CookieSuffix = "/sale", "sale"
	if err := first.Server.CheckRoom(&sale); err != nil {
		t.Fatal(err)
	}
	if err := first.Server.StoreRoom(&sale); err != nil {
		t.Fatal(err)
	}
	t.Run("before the stop, the room says it came through the API", func(t *testing.T) {
		if got := first.Server.RoomSource("sale"); got != edge.SourceAPI {
			t.Fatalf("source %q, want %q", got, edge.SourceAPI)
		}
	})
	if err := first.Server.Close(); err != nil {
		t.Fatal(err)
	}
	// The same node again: the same key file, and the same config file
	// (its origin included).
	origin := first.Server.Config().Origin
	second := edgetest.NewFixtureWith(t, func(c *config.Config) {
		withDataDir(dir, key)(c)
		c.Origin = origin
	}, edgetest.Room("shop", 10, 10))
	t.Run("the room added at run time is back, restored", func(t *testing.T) {
		if second.Server.Room("sale") == nil {
			t.Fatal("room sale is gone")
		}
		if got := second.Server.RoomSource("sale"); got != edge.SourceRestored {
			t.Fatalf("source %q, want %q", got, edge.SourceRestored)
		}
	})
	t.Run("the config's room says it is the file's", func(t *testing.T) {
		if got := second.Server.RoomSource("shop"); got != edge.SourceFile {
			t.Fatalf("source %q, want %q", got, edge.SourceFile)
		}
	})
	t.Run("nothing was set aside", func(t *testing.T) {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "state.") {
				t.Errorf("set aside: %s", e.Name())
			}
		}
	})
}
