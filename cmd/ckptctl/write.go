package main

// The commands that change one thread or the bucket: delete-thread, prune,
// sweep; and the lease handling every write shares.

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/sweep"
)

// releaseTimeout bounds the release of a lease on the way out, which runs
// also after the command's context was cancelled.
const releaseTimeout = 5 * time.Second

// acquire takes thread's writer lease. With wait, a lease held by someone
// else (WRITER_CONFLICT) is retried every e.poll until it frees or ctx
// ends; before the first wait a line on stderr says so, so the operator
// knows why nothing happens.
//
// Each attempt carries an op token (it becomes the lease's owner token).
// An attempt that fails for another reason — the context cancelled by an
// interrupt, a lost connection — may still have taken the lease, which
// would then block the thread until it expires; the same token asked
// again reports that lease (or takes one), which is released at once.
func acquire(ctx context.Context, e *env, s *ckptstore.Store, thread string, wait bool) (*ckptstore.Lease, error) {
	for first := true; ; first = false {
		token := rand.Text()
		l, err := s.AcquireWriter(ckptstore.WithOpToken(ctx, token), thread)
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, ckptstore.ErrWriterConflict) {
			if !errors.Is(err, ckptstore.ErrInvalidID) {
				abandon(ctx, s, thread, token)
			}
			return nil, err
		}
		if !wait {
			return nil, err
		}
		if first {
			fmt.Fprintf(e.stderr, "ckptctl: thread %q is held by another writer; waiting for its lease (--wait)\n", thread)
		}
		t := time.NewTimer(e.poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("waiting for the lease of thread %q: %w", thread, ctx.Err())
		case <-t.C:
		}
	}
}

// abandon releases the lease a failed AcquireWriter with token may have
// taken, on a context that outlives ctx.
func abandon(ctx context.Context, s *ckptstore.Store, thread, token string) {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	if l, err := s.AcquireWriter(ckptstore.WithOpToken(actx, token), thread); err == nil {
		l.Release(actx)
	}
}

// release ends l even when ctx was cancelled.
func release(ctx context.Context, l *ckptstore.Lease) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	l.Release(rctx)
}

// keeper renews a lease once RenewAfter has passed since it was taken or
// last renewed, between the batches of a long import.
type keeper struct {
	l       *ckptstore.Lease
	now     func() time.Time
	renewed time.Time
}

func newKeeper(l *ckptstore.Lease, now func() time.Time) *keeper {
	return &keeper{l: l, now: now, renewed: now()}
}

func (k *keeper) maybeRenew(ctx context.Context) error {
	if k.now().Sub(k.renewed) < k.l.RenewAfter {
		return nil
	}
	t := k.now()
	if _, err := k.l.Renew(ctx); err != nil {
		return err
	}
	k.renewed = t
	return nil
}

// waitFlag is the --wait of a command that writes one thread.
func waitFlag(f *flags) *bool {
	return f.Bool("wait", false, "wait while another writer holds the thread's lease, instead of failing with WRITER_CONFLICT")
}

// underLease checks thread's id, takes its lease (waiting for it with
// wait) and runs write under it, releasing the lease after: the frame of
// delete-thread and prune.
func underLease(ctx context.Context, e *env, s *store, thread string, wait bool, write func(ckptstore.Writer) error) error {
	if err := driver.ValidateID("thread id", thread); err != nil {
		return err
	}
	l, err := acquire(ctx, e, s.Store, thread, wait)
	if err != nil {
		return err
	}
	defer release(ctx, l)
	return write(l.Writer)
}

func runDeleteThread(ctx context.Context, e *env, args []string) error {
	f := newStoreFlags(e, "delete-thread", "the store URL")
	wait := waitFlag(f)
	pos, err := f.parse(args, 1)
	if err != nil {
		return err
	}
	s, err := f.openStore(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	thread := pos[0]
	return underLease(ctx, e, s, thread, *wait, func(w ckptstore.Writer) error {
		n, err := s.DeleteThread(ctx, thread, w)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(e.stdout, "deleted thread %s: %d checkpoints\n", thread, n)
		return err
	})
}

func runPrune(ctx context.Context, e *env, args []string) error {
	f := newStoreFlags(e, "prune", "the store URL")
	keep := f.Int("keep", 0, "checkpoints to keep on the head chain, the head included (at least 1)")
	wait := waitFlag(f)
	pos, err := f.parse(args, 1)
	if err != nil {
		return err
	}
	if *keep < 1 {
		return usageErr("--keep must be at least 1, got %d", *keep)
	}
	s, err := f.openStore(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	thread := pos[0]
	return underLease(ctx, e, s, thread, *wait, func(w ckptstore.Writer) error {
		ids, err := s.DeleteCheckpoints(ctx, thread, *keep, w)
		if err != nil {
			return err
		}
		for _, id := range ids {
			fmt.Fprintln(e.stdout, id)
		}
		fmt.Fprintf(e.stderr, "pruned thread %s: %d checkpoints deleted\n", thread, len(ids))
		return nil
	})
}

func runSweep(ctx context.Context, e *env, args []string) error {
	f := newStoreFlags(e, "sweep", "the store URL")
	bucketURL := f.String("bucket", "", "the blob bucket: mem://, file:///dir or s3://bucket?endpoint=…&region=…")
	olderThan := f.Duration("older-than", -1, "grace period: only blobs older than this are deleted; longer than the longest capture (required)")
	dryRun := f.Bool("dry-run", false, "print what would be deleted, delete nothing")
	if _, err := f.parse(args, 0); err != nil {
		return err
	}
	if *bucketURL == "" {
		return usageErr("--bucket is required")
	}
	if *olderThan < 0 {
		return usageErr("--older-than is required and must not be negative (e.g. 24h)")
	}
	// A tenant's token shows that tenant's references only, and the
	// bucket is the server's, shared by every tenant: a sweep through the
	// server would delete the blobs of the others.
	if httpstore.IsURL(*f.store) {
		return usageErr("sweep needs every reference to the bucket's blobs, and a ckptserver shows one tenant's; sweep with the backend's store URL")
	}
	s, err := f.openStore(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	b, err := e.openBucket(ctx, *bucketURL)
	if err != nil {
		return fmt.Errorf("--bucket: %w", err)
	}
	_, st, err := sweep.RunStats(ctx, s.Store, b, sweep.Options{
		OlderThan: *olderThan,
		DryRun:    *dryRun,
		OnDeleted: func(key string) { fmt.Fprintln(e.stdout, key) },
	})
	verb := "deleted"
	if *dryRun {
		verb = "would delete"
	}
	fmt.Fprintf(e.stderr, "sweep: %d blobs examined, %d referenced, %d younger than %v, %s %d, %d failed\n",
		st.Examined, st.Referenced, st.Young, *olderThan, verb, st.Deleted, st.Failed)
	if st.Debris > 0 {
		fmt.Fprintf(e.stderr, "sweep: removed %d stale upload parts, the debris of killed uploads\n", st.Debris)
	}
	return err
}
