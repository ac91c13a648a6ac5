// Package version reports which build of ckptstore a binary is: the main
// module's version and the VCS revision the go command stamped into it
// (runtime/debug.ReadBuildInfo), for the binaries' --version flag and
// ckptserver's ckptstore_build_info gauge.
//
// Nothing here is set by hand or by -ldflags: a binary built by `go build`
// in a checkout carries the revision, its commit time and whether the tree
// had uncommitted changes; one built by `go install …@vX.Y.Z` carries that
// version. A build with neither (go run, go test, -buildvcs=false) says
// "(devel)" and "unknown", never an empty string.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Devel is the version of a build that carries none: the main module built
// from a directory rather than from a module version (the go command's own
// word for it).
const Devel = "(devel)"

// Unknown stands for a revision the build did not record.
const Unknown = "unknown"

// Info is what a build records about itself.
type Info struct {
	// Version is the main module's version: vX.Y.Z, a pseudo-version
	// (v0.0.0-20260102150405-abcdef012345, +dirty with uncommitted
	// changes) or Devel.
	Version string
	// Revision is the VCS commit the binary was built from, or Unknown.
	Revision string
	// Time is the commit's time in RFC 3339, or "" when not recorded.
	Time string
	// Modified reports uncommitted changes in the tree the binary was
	// built from.
	Modified bool
	// GoVersion is the toolchain that built the binary (go1.26.0).
	GoVersion string
}

// Get reads the running binary's build info.
func Get() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: Devel, Revision: Unknown, GoVersion: runtime.Version()}
	}
	return FromBuildInfo(bi)
}

// FromBuildInfo is Get's reading of bi, separate so that a test can hand
// it each form a build info takes.
func FromBuildInfo(bi *debug.BuildInfo) Info {
	in := Info{Version: bi.Main.Version, Revision: Unknown, GoVersion: bi.GoVersion}
	if in.Version == "" {
		in.Version = Devel
	}
	if in.GoVersion == "" {
		in.GoVersion = runtime.Version()
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			if s.Value != "" {
				in.Revision = s.Value
			}
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
}

// String is the one line --version prints after the binary's name:
// "v1.2.0 (revision 0123abcd…, 2026-12-06T01:02:03Z, modified) go1.26.0 linux/amd64".
func (in Info) String() string {
	var b strings.Builder
	b.WriteString(in.Version)
	b.WriteString(" (revision ")
	b.WriteString(in.Revision)
	if in.Time != "" {
		b.WriteString(", ")
		b.WriteString(in.Time)
	}
	if in.Modified {
		b.WriteString(", modified")
	}
	fmt.Fprintf(&b, ") %s %s/%s", in.GoVersion, runtime.GOOS, runtime.GOARCH)
	return b.String()
}

// Line is what `name --version` prints: the name, then Get's String.
func Line(name string) string { return name + " " + Get().String() }

// Requested reports whether a command line asks for the version: -version
// or --version (=true) among the flags, before a "--" terminator. The
// binaries check it before their own parsing, so that --version needs none
// of the flags a run requires (ckptserver's --tokens, say).
func Requested(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-version", "--version", "-version=true", "--version=true":
			return true
		}
	}
	return false
}

// Collector is the ckptstore_build_info gauge of the running binary: always
// 1, with the build's version, revision and Go version as labels, so that a
// dashboard can join any series on the build that produced it.
func Collector() prometheus.Collector {
	in := Get()
	rev := in.Revision
	if in.Modified {
		rev += "-modified"
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "ckptstore_build_info",
		Help:        "Always 1; the labels name the build of the running ckptserver: the module version, the VCS revision (-modified with uncommitted changes) and the Go version.",
		ConstLabels: prometheus.Labels{"version": in.Version, "revision": rev, "goversion": in.GoVersion},
	})
	g.Set(1)
	return g
}
