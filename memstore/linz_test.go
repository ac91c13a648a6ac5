package memstore_test

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/internal/linz"
	"github.com/ckptstore/ckptstore/internal/testkit"
	"github.com/ckptstore/ckptstore/memstore"
)

// TestLinearizable checks concurrent histories of memstore against the
// contract's sequential model. LINZ_RUNS sets the number of histories
// (default 4).
func TestLinearizable(t *testing.T) {
	runs := 4
	if n, err := strconv.Atoi(os.Getenv("LINZ_RUNS")); err == nil && n > 0 {
		runs = n
	}
	var total linz.Result
	for seed := range uint64(runs) {
		clock := testkit.NewClock(time.UnixMilli(1_700_000_000_000))
		opt := linz.Options{Seed: seed}
		r := linz.Run(t, memstore.New(opt.StoreOptions(clock)), clock, opt)
		total.Operations += r.Operations
		total.Conflicts += r.Conflicts
	}
	t.Logf("%d histories, %d operations checked (%d contract errors among them)", runs, total.Operations, total.Conflicts)
}
