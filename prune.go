package ckptstore

import (
	"context"
	"errors"
	"fmt"
)

// ErrPruneUnsupported is returned by KeepNewest for a store that does not
// implement Pruner. It is not a contract error: Code returns "" for it.
var ErrPruneUnsupported = errors.New("ckptstore: this store cannot delete checkpoints")

// KeepNewest keeps the thread's head and the keep−1 checkpoints before it on
// the parent chain and deletes the older ones of that chain. It takes the
// thread's writer lease for the call (ErrWriterConflict while a run or a
// capture holds it), calls DeleteCheckpoints and releases the lease. It
// returns the deleted ids, farthest from the head first.
func KeepNewest(ctx context.Context, s Store, threadID string, keep int) ([]string, error) {
	p, ok := s.(Pruner)
	if !ok {
		return nil, fmt.Errorf("%w (%T)", ErrPruneUnsupported, s)
	}
	lease, err := s.AcquireWriter(ctx, threadID)
	if err != nil {
		return nil, err
	}
	// The release must run even when ctx is done, or the lease would block
	// the thread until it expires.
	defer lease.Release(context.WithoutCancel(ctx))
	return p.DeleteCheckpoints(ctx, threadID, keep, lease.Writer)
}
