// Package buildinfo says which waitroom a binary is: the module version and
// the commit it was built from, as `waitroom version` prints them, so that an
// operator can tell the nodes of a ring apart during a rolling upgrade and
// quote the build in a report.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Info is what a binary knows of its own build.
type Info struct {
	Version   string // the module version (v1.2.3, a pseudo-version, or "(devel)")
	Commit    string // the VCS revision, "" when not built from a checkout
	Time      string // the commit's time (RFC 3339), when known
	Modified  bool   // built from a checkout with uncommitted changes
	GoVersion string
	Platform  string // GOOS/GOARCH
}

// Read returns the binary's build information; override, when set (the
// -X main.version link flag of a release build), names the version.
func Read(override string) Info {
	in := Info{Version: "(devel)", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		in = fromBuildInfo(bi, in)
	}
	if override != "" && override != "dev" {
		in.Version = override
	}
	return in
}

// fromBuildInfo fills in from what the Go toolchain recorded.
func fromBuildInfo(bi *debug.BuildInfo, in Info) Info {
	if v := bi.Main.Version; v != "" {
		in.Version = v
	}
	if bi.GoVersion != "" {
		in.GoVersion = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Commit = s.Value
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
}

// Short is the version with the commit's first twelve digits, as the root
// command's --version shows it.
func (in Info) Short() string {
	if in.Commit == "" {
		return in.Version
	}
	c := in.Commit
	if len(c) > 12 {
		c = c[:12]
	}
	if in.Modified {
		c += "-modified"
	}
	return in.Version + " (" + c + ")"
}

// String is the whole build information, one fact per line.
func (in Info) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "waitroom %s\n", in.Version)
	if in.Commit != "" {
		mod := ""
		if in.Modified {
			mod = " (with uncommitted changes)"
		}
		fmt.Fprintf(&b, "commit   %s%s\n", in.Commit, mod)
		if in.Time != "" {
			fmt.Fprintf(&b, "built    from a commit of %s\n", in.Time)
		}
	}
	fmt.Fprintf(&b, "go       %s %s\n", in.GoVersion, in.Platform)
	return b.String()
}
