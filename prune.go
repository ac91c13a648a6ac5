package ckptstore

import "context"

// KeepNewest keeps the thread's head and the keep−1 checkpoints before it on
// the parent chain and deletes the older ones of that chain. It takes the
// thread's writer lease for the call (ErrWriterConflict while a run or a
// capture holds it), calls DeleteCheckpoints and releases the lease. It
// returns the deleted ids, farthest from the head first. s is a *Store or
// a wrapper of one (the two methods are all it needs).
func KeepNewest(ctx context.Context, s interface {
	AcquireWriter(ctx context.Context, threadID string) (*Lease, error)
	DeleteCheckpoints(ctx context.Context, threadID string, keep int, w Writer) ([]string, error)
}, threadID string, keep int) ([]string, error) {
	lease, err := s.AcquireWriter(ctx, threadID)
	if err != nil {
		return nil, err
	}
	// The release must run even when ctx is done, or the lease would block
	// the thread until it expires.
	defer lease.Release(context.WithoutCancel(ctx))
	return s.DeleteCheckpoints(ctx, threadID, keep, lease.Writer)
}
