package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestBuildInformation(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.0",
		Main:      debug.Module{Path: "github.com/waitroom/waitroom", Version: "v1.4.0"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "3e29333b2f0c1d4e5f60718293a4b5c6d7e8f901"},
			{Key: "vcs.time", Value: "2026-12-06T11:20:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	cases := []struct {
		name      string
		in        Info
		short     string
		wantLines []string
	}{
		{
			name:      "a release built from a checkout names its version and commit",
			in:        fromBuildInfo(bi, Info{Platform: "linux/amd64"}),
			short:     "v1.4.0 (3e29333b2f0c-modified)",
			wantLines: []string{"waitroom v1.4.0", "commit   3e29333b2f0c1d4e5f60718293a4b5c6d7e8f901 (with uncommitted changes)", "built    from a commit of 2026-12-06T11:20:00Z", "go       go1.26.0 linux/amd64"},
		},
		{
			name:      "a build outside a checkout names only its version",
			in:        fromBuildInfo(&debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}}, Info{Platform: "linux/arm64"}),
			short:     "(devel)",
			wantLines: []string{"waitroom (devel)", "go       go1.26.0 linux/arm64"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.in.Short(); got != c.short {
				t.Errorf("Short() = %q, want %q", got, c.short)
			}
			if got := strings.Split(strings.TrimSpace(c.in.String()), "\n"); strings.Join(got, "|") != strings.Join(c.wantLines, "|") {
				t.Errorf("String() =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.wantLines, "\n"))
			}
		})
	}
	t.Run("the link flag's version wins over the module's", func(t *testing.T) {
		if got := Read("v9.9.9").Version; got != "v9.9.9" {
			t.Errorf("Read(v9.9.9).Version = %q", got)
		}
		if got := Read("dev").Version; got == "dev" {
			t.Errorf("the placeholder dev was taken as a version")
		}
	})
}
