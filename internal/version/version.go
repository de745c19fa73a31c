// Package version tells which build of Hookline is running: the version and commit a release build stamps
// in with -ldflags -X (the image builder, deploy/image, does), else what the Go toolchain recorded on its own
// (the module version and the VCS revision of a `go build` inside a git checkout).
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Stamped at link time by release builds:
//
//	-ldflags "-X github.com/hookline/hookline/internal/version.Version=v1.2.3 -X github.com/hookline/hookline/internal/version.Commit=<sha>"
//
// Left empty, Get falls back to debug.ReadBuildInfo.
var (
	Version string
	Commit  string
)

// Info is one build's identity.
type Info struct {
	Version   string // v1.2.3, a git describe, or "(devel)" for an unstamped local build
	Commit    string // full VCS revision, or "unknown" when the build recorded none
	Modified  bool   // built from a checkout with uncommitted changes
	GoVersion string // the toolchain that compiled the binary
	Platform  string // GOOS/GOARCH of the binary
}

// Get reads the stamped values, falling back to the build information the Go toolchain embeds.
func Get() Info {
	info := Info{Version: Version, Commit: Commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if info.Version == "" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if info.Commit == "" {
					info.Commit = s.Value
				}
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	if info.Version == "" {
		info.Version = "(devel)"
	}
	if info.Commit == "" {
		info.Commit = "unknown"
	}
	return info
}

// String is the one line `server version` prints.
func (i Info) String() string {
	modified := ""
	if i.Modified {
		modified = " (modified)"
	}
	return fmt.Sprintf("hookline %s commit %s%s %s %s", i.Version, i.Commit, modified, i.GoVersion, i.Platform)
}
