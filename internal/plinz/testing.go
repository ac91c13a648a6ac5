package plinz

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/ckptstore/ckptstore/blobs"
	"github.com/ckptstore/ckptstore/persist"
	"github.com/ckptstore/ckptstore/persist/driver"
)

// CheckTimeout bounds porcupine's search in RequireLinearizable, and in
// Explain there.
const CheckTimeout = 30 * time.Second

// OpenStores opens n Store values on d, as n clients of one driver, each
// with opts and, when opts has no Bucket, a bucket of its own in memory
// (the runs histories touch no blob).
func OpenStores(t testing.TB, d driver.Driver, n int, opts persist.Options) []*persist.Store {
	t.Helper()
	out := make([]*persist.Store, 0, n)
	for range n {
		o := opts
		if o.Bucket == nil {
			o.Bucket = blobs.NewMem(blobs.MemOptions{})
		}
		s, err := persist.New(d, o)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// Add adds o's counts to s, for a test's totals over many histories.
func (s *RunsStats) Add(o RunsStats) {
	s.Operations += o.Operations
	s.Unknown += o.Unknown
	s.Errors += o.Errors
}

// RequireLinearizable checks h against the runs model and, when it is
// not linearizable, writes porcupine's visualization to runs.html in t's
// artifact directory and fails t with Explain's text; what names the
// history in the message (its seed, where its calls came from). It
// returns h's Stats for the caller's totals.
func RequireLinearizable(t testing.TB, h *RunsHistory, what string) RunsStats {
	t.Helper()
	st := h.Stats()
	if v, vis := h.Check(CheckTimeout); v != porcupine.Ok {
		path := filepath.Join(t.ArtifactDir(), "runs.html")
		_ = vis(path)
		t.Fatalf("%s: verdict %v for %d operations; visualization %s\n%s", what, v, st.Operations, path, h.Explain(CheckTimeout))
	}
	return st
}
