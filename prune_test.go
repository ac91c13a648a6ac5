package ckptstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/conformance"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/memstore"
)

// appendChain appends n checkpoints <thread>-1 … <thread>-n to thread, each
// the parent of the next, under a lease it releases again. Each has a blob
// of its own (keyed by len(thread) and i, so threads of different name
// lengths never share one) and one blob shared by all.
func appendChain(t *testing.T, s conformance.Store, thread string, n int) []string {
	t.Helper()
	ctx := context.Background()
	lease, err := s.AcquireWriter(ctx, thread)
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release(ctx)
	head, err := s.GetHead(ctx, thread)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("%s-%d", thread, i)
		cp := &ckptstore.Checkpoint{ID: id, ThreadID: thread, ParentCheckpointID: head, CreatedAt: float64(i), Reason: ckptstore.ReasonAutomatic,
			Files: []ckptstore.Entry{
				{Path: "own", Kind: ckptstore.KindFile, BlobKey: fmt.Sprintf("sandbox-files/sha256/%032x%032x", len(thread), i)},
				{Path: "shared", Kind: ckptstore.KindFile, BlobKey: fileKey(0)},
			}}
		if err := s.Append(ctx, cp, head, lease.Writer); err != nil {
			t.Fatalf("Append %s: %v", id, err)
		}
		head = id
		ids = append(ids, id)
	}
	return ids
}

func listIDs(t *testing.T, s conformance.Store, thread string) []string {
	t.Helper()
	cps, err := s.List(context.Background(), thread)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(cps))
	for i, c := range cps {
		ids[i] = c.ID
	}
	return ids
}

func refs(t *testing.T, s conformance.Store) map[string]int64 {
	t.Helper()
	rs, err := s.ListBlobReferences(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]int64{}
	for _, r := range rs {
		m[r.Key] = r.References
	}
	return m
}

func TestKeepNewest(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(ckptstore.Options{Now: newClock().Now})
	a := appendChain(t, s, "a", 5)
	b := appendChain(t, s, "bb", 3)

	deleted, err := ckptstore.KeepNewest(ctx, s, "a", 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := a[:3]; !slices.Equal(deleted, want) {
		t.Fatalf("deleted %q, want %q (farthest from the head first)", deleted, want)
	}
	if got := listIDs(t, s, "a"); !slices.Equal(got, a[3:]) {
		t.Fatalf("thread a keeps %q, want %q", got, a[3:])
	}
	if got := listIDs(t, s, "bb"); !slices.Equal(got, b) {
		t.Fatalf("thread bb changed: %q", got)
	}
	if head, _ := s.GetHead(ctx, "a"); head != "a-5" {
		t.Fatalf("head = %q, want a-5", head)
	}
	r := refs(t, s)
	if got := r[fileKey(0)]; got != 2+3 {
		t.Fatalf("shared blob has %d references, want 5 (2 kept in a, 3 in bb)", got)
	}
	if len(r) != 2+3+1 {
		t.Fatalf("blob references %v: want the deleted checkpoints' own blobs gone", r)
	}

	// Nothing left to delete: no ids, not an error.
	deleted, err = ckptstore.KeepNewest(ctx, s, "a", 2)
	if err != nil || len(deleted) != 0 {
		t.Fatalf("second KeepNewest = %q, %v; want none", deleted, err)
	}
	deleted, err = ckptstore.KeepNewest(ctx, s, "never-written", 1)
	if err != nil || len(deleted) != 0 {
		t.Fatalf("KeepNewest of an empty thread = %q, %v; want none", deleted, err)
	}
}

func TestKeepNewestReleasesLease(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(ckptstore.Options{Now: newClock().Now})
	appendChain(t, s, "t", 3)
	for _, keep := range []int{1, 0} { // success, then a failing call
		if _, err := ckptstore.KeepNewest(ctx, s, "t", keep); keep == 0 && !errors.Is(err, ckptstore.ErrInvalidEntry) {
			t.Fatalf("KeepNewest(keep 0) error = %v, want ErrInvalidEntry", err)
		}
		// The clock never moved: only a released lease can be taken again.
		lease, err := s.AcquireWriter(ctx, "t")
		if err != nil {
			t.Fatalf("after KeepNewest(keep %d), AcquireWriter: %v (lease not released)", keep, err)
		}
		lease.Release(ctx)
	}
}

func TestKeepNewestWriterConflict(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(ckptstore.Options{Now: newClock().Now})
	ids := appendChain(t, s, "t", 3)
	lease, err := s.AcquireWriter(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	deleted, err := ckptstore.KeepNewest(ctx, s, "t", 1)
	if !errors.Is(err, ckptstore.ErrWriterConflict) || deleted != nil {
		t.Fatalf("KeepNewest while leased = %q, %v; want ErrWriterConflict", deleted, err)
	}
	if got := listIDs(t, s, "t"); !slices.Equal(got, ids) {
		t.Fatalf("KeepNewest deleted %q while the lease was held", got)
	}
	// The running writer's lease is untouched.
	if _, err := lease.Renew(ctx); err != nil {
		t.Fatalf("the held lease was disturbed: %v", err)
	}
}

func TestKeepNewestInvalidThread(t *testing.T) {
	s := memstore.New(ckptstore.Options{})
	for _, id := range []string{"", "\xff"} {
		if _, err := ckptstore.KeepNewest(context.Background(), s, id, 1); !errors.Is(err, ckptstore.ErrInvalidID) {
			t.Errorf("KeepNewest(%q) error = %v, want ErrInvalidID", id, err)
		}
	}
}

// cancelStore cancels the caller's context in the middle of KeepNewest, and
// backs its leases with a keeper that refuses a cancelled context, as a
// network store would.
type cancelStore struct {
	*ckptstore.Store
	cancel context.CancelFunc
}

type ctxKeeper struct{ s *ckptstore.Store }

func (k ctxKeeper) Renew(ctx context.Context, w ckptstore.Writer) (time.Time, error) {
	return k.s.Renew(ctx, w)
}

func (k ctxKeeper) Release(ctx context.Context, w ckptstore.Writer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return k.s.Release(ctx, w)
}

func (c cancelStore) AcquireWriter(ctx context.Context, threadID string) (*ckptstore.Lease, error) {
	l, err := c.Store.AcquireWriter(ctx, threadID)
	if err != nil {
		return nil, err
	}
	return driver.NewLease(l.Writer, l.ExpiresAt, l.RenewAfter, ctxKeeper{c.Store}), nil
}

func (c cancelStore) DeleteCheckpoints(ctx context.Context, threadID string, keep int, w ckptstore.Writer) ([]string, error) {
	c.cancel()
	return c.Store.DeleteCheckpoints(ctx, threadID, keep, w)
}

// A cancelled context must not leave the lease held until it expires.
func TestKeepNewestReleasesAfterCancel(t *testing.T) {
	inner := memstore.New(ckptstore.Options{Now: newClock().Now})
	appendChain(t, inner, "t", 3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := ckptstore.KeepNewest(ctx, cancelStore{inner, cancel}, "t", 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("KeepNewest error = %v, want context.Canceled", err)
	}
	lease, err := inner.AcquireWriter(context.Background(), "t")
	if err != nil {
		t.Fatalf("lease still held after a cancelled KeepNewest: %v", err)
	}
	lease.Release(context.Background())
}
