package main

import (
	"context"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/blobs"
	_ "github.com/ckptstore/ckptstore/blobs/s3blob" // --blob-url s3://…
	"github.com/ckptstore/ckptstore/sweep"
)

// sweepOutcome is what the closing sweep did.
type sweepOutcome struct {
	deleted   []string
	olderThan time.Duration
}

// runSweep is the closing sweep: it deletes the bucket's blobs that no
// checkpoint uses and that are older than olderThan.
func runSweep(ctx context.Context, st *ckptstore.Store, b blobs.Bucket, olderThan time.Duration) ([]string, error) {
	return sweep.Run(ctx, st, b, sweep.Options{OlderThan: olderThan})
}
