package version

import (
	"maps"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func TestFromBuildInfo(t *testing.T) {
	for _, tc := range []struct {
		name string
		bi   debug.BuildInfo
		want Info
		line string
	}{
		{
			name: "go test or go run: no version, no VCS",
			bi:   debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/ckptstore/ckptstore", Version: "(devel)"}},
			want: Info{Version: Devel, Revision: Unknown, GoVersion: "go1.26.0"},
			line: "(devel) (revision unknown) go1.26.0 ",
		},
		{
			name: "empty main version",
			bi:   debug.BuildInfo{GoVersion: "go1.26.0"},
			want: Info{Version: Devel, Revision: Unknown, GoVersion: "go1.26.0"},
			line: "(devel) (revision unknown) go1.26.0 ",
		},
		{
			name: "go build in a dirty checkout",
			bi: debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.0.0-20261206014500-0123456789ab+dirty"}, Settings: []debug.BuildSetting{
				{Key: "vcs", Value: "git"},
				{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
				{Key: "vcs.time", Value: "2026-12-06T01:45:00Z"},
				{Key: "vcs.modified", Value: "true"},
			}},
			want: Info{Version: "v0.0.0-20261206014500-0123456789ab+dirty", Revision: "0123456789abcdef0123456789abcdef01234567", Time: "2026-12-06T01:45:00Z", Modified: true, GoVersion: "go1.26.0"},
			line: "v0.0.0-20261206014500-0123456789ab+dirty (revision 0123456789abcdef0123456789abcdef01234567, 2026-12-06T01:45:00Z, modified) go1.26.0 ",
		},
		{
			name: "go install at a tag",
			bi: debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "v1.2.0"}, Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"},
			}},
			want: Info{Version: "v1.2.0", Revision: "abc", GoVersion: "go1.26.1"},
			line: "v1.2.0 (revision abc) go1.26.1 ",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := FromBuildInfo(&tc.bi)
			if got != tc.want {
				t.Fatalf("FromBuildInfo = %+v, want %+v", got, tc.want)
			}
			if want := tc.line + runtime.GOOS + "/" + runtime.GOARCH; got.String() != want {
				t.Fatalf("String = %q, want %q", got.String(), want)
			}
		})
	}
}

func TestRequested(t *testing.T) {
	for args, want := range map[string]bool{
		"--version":               true,
		"-version":                true,
		"--version=true":          true,
		"--store mem --version":   true,
		"":                        false,
		"--store mem":             false,
		"-- --version":            false,
		"--versions":              false,
		"--version=false":         false,
		"export --store mem -h":   false,
		"--store mem -- -version": false,
	} {
		if got := Requested(strings.Fields(args)); got != want {
			t.Errorf("Requested(%q) = %v, want %v", args, got, want)
		}
	}
}

func TestCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(Collector())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) != 1 || mfs[0].GetName() != "ckptstore_build_info" || mfs[0].GetType() != dto.MetricType_GAUGE || len(mfs[0].GetMetric()) != 1 {
		t.Fatalf("gathered %v, want the one gauge ckptstore_build_info", mfs)
	}
	m := mfs[0].GetMetric()[0]
	labels := map[string]string{}
	for _, l := range m.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	in := Get()
	want := map[string]string{"version": in.Version, "revision": in.Revision, "goversion": runtime.Version()}
	if !maps.Equal(labels, want) || m.GetGauge().GetValue() != 1 {
		t.Fatalf("ckptstore_build_info%v = %v, want %v = 1", labels, m.GetGauge().GetValue(), want)
	}
}

// TestBinaries builds the three binaries as a user does (go build in the
// checkout) and runs each with --version: the line names the binary, the
// toolchain, and the module version and VCS revision that `go version -m`
// reads from the same binary. (The go command stamps a revision in a git
// clone unless -buildvcs=false; it stamps none in a git worktree, whose
// .git is a file, and then both say so.)
func TestBinaries(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to build the binaries with")
	}
	root := moduleRoot(t, goBin)
	dir := t.TempDir()
	build := exec.Command(goBin, "build", "-o", dir+string(filepath.Separator), "./cmd/ckptserver", "./cmd/ckptctl", "./cmd/loadgen")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, name := range []string{"ckptserver", "ckptctl", "loadgen"} {
		bin := filepath.Join(dir, name)
		m, err := exec.Command(goBin, "version", "-m", bin).Output()
		if err != nil {
			t.Fatalf("go version -m %s: %v", name, err)
		}
		wantVersion, wantRev := Devel, Unknown
		for l := range strings.Lines(string(m)) {
			f := strings.Fields(l)
			switch {
			case len(f) >= 3 && f[0] == "mod" && f[1] == "github.com/ckptstore/ckptstore":
				wantVersion = f[2]
			case len(f) == 2 && f[0] == "build" && strings.HasPrefix(f[1], "vcs.revision="):
				wantRev = strings.TrimPrefix(f[1], "vcs.revision=")
			}
		}
		for _, flag := range []string{"--version", "-version"} {
			out, err := exec.Command(bin, flag).Output()
			if err != nil {
				t.Fatalf("%s %s: %v", name, flag, err)
			}
			line := strings.TrimSuffix(string(out), "\n")
			want := name + " " + wantVersion + " (revision " + wantRev
			if strings.Contains(line, "\n") || !strings.HasPrefix(line, want) {
				t.Fatalf("%s %s printed %q, want one line starting %q", name, flag, out, want)
			}
			if !strings.HasSuffix(line, ") "+runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH) {
				t.Errorf("%s %s: %q does not end with the toolchain %s and the platform", name, flag, line, runtime.Version())
			}
			t.Logf("%s %s: %s", name, flag, line)
		}
	}
}

func moduleRoot(t *testing.T, goBin string) string {
	t.Helper()
	out, err := exec.Command(goBin, "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}
