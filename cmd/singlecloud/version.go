package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/zdnscloud/singlecloud/server"
)

// version is the release this binary is, set at build time with
//
//	go build -ldflags "-X main.version=v1.2.3" ./cmd/singlecloud
//
// It is the command's one package-level variable: -X can set nothing else,
// and nothing assigns it at run time. Commit and build date need no flag:
// the Go toolchain stamps them into the binary (see buildVersion).
var version = "dev"

// buildVersion describes the running binary: version, and the VCS
// revision and commit time that `go build` stamped into it (none for
// `go run` or a build outside a git checkout). A dirty tree marks the
// commit "-dirty". A binary installed with `go install …@vX` reports vX
// when no -X version was given.
func buildVersion() server.VersionInfo {
	v := server.VersionInfo{Version: version, GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v.Version = bi.Main.Version
	}
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.BuildDate = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && v.Commit != "" {
		v.Commit += "-dirty"
	}
	return v
}

// versionText is what `singlecloud --version` prints.
func versionText(v server.VersionInfo) string {
	orUnknown := func(s string) string {
		if s == "" {
			return "unknown"
		}
		return s
	}
	return fmt.Sprintf("singlecloud %s\ncommit: %s\nbuild date: %s\ngo: %s\n", v.Version, orUnknown(v.Commit), orUnknown(v.BuildDate), v.GoVersion)
}
