package plinz

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore/persist/driver"
)

// fatalTB records RequireLinearizable's failure instead of ending the test.
type fatalTB struct {
	testing.TB
	dir   string
	fatal string
}

func (f *fatalTB) Helper()             {}
func (f *fatalTB) ArtifactDir() string { return f.dir }
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
}

// TestRequireLinearizable: a stale read fails the test with the history's
// name, the explanation and a visualization on disk; a right history
// passes; both count their calls.
func TestRequireLinearizable(t *testing.T) {
	done := driver.RunRecord{RunID: "p0-r0", ThreadID: "p0-t0", Status: driver.RunCompleted, StartedAt: 1}
	running := done
	running.Status = driver.RunRunning
	hist := func(got driver.RunRecord) *RunsHistory {
		ops := []RunOp{
			{In: RunCall{Kind: RunCreate, Slot: 0, StartedAt: 1, Status: driver.RunCompleted}, Out: RunReturn{Rec: rec(t, done)}},
			{In: RunCall{Kind: RunUpdate, Patch: PatchSpec{Status: driver.RunRunning}}},
			{In: RunCall{Kind: RunGet}, Out: RunReturn{Rec: rec(t, got)}},
		}
		for i := range ops {
			ops[i].Call, ops[i].Return = int64(10*i), int64(10*i+5)
		}
		return &RunsHistory{Ops: ops}
	}
	ok := &fatalTB{TB: t, dir: t.TempDir()}
	if st := RequireLinearizable(ok, hist(running), "seed 1"); ok.fatal != "" || st.Operations != 3 {
		t.Errorf("a linearizable history: %d operations, failure %q", st.Operations, ok.fatal)
	}
	bad := &fatalTB{TB: t, dir: t.TempDir()}
	if st := RequireLinearizable(bad, hist(done), "seed 2"); st.Operations != 3 {
		t.Errorf("counted %d operations, want 3", st.Operations)
	}
	if !strings.HasPrefix(bad.fatal, "seed 2: verdict Illegal") || !strings.Contains(bad.fatal, "could not place") {
		t.Errorf("the failure does not name the history and explain it: %q", bad.fatal)
	}
	if _, err := os.Stat(filepath.Join(bad.dir, "runs.html")); err != nil {
		t.Errorf("no visualization: %v", err)
	}
}
