package main

// copy --verify: compare two stores in full.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
)

// maxReported is how many differences verify prints before it only counts.
const maxReported = 20

type verifier struct {
	e     *env
	diffs int
	// threads and cps are the source's threads and checkpoints compared
	// so far, for the progress lines of prog (nil: none).
	threads, cps int
	prog         *progress
}

func (v *verifier) diff(format string, args ...any) {
	v.diffs++
	if v.diffs <= maxReported {
		fmt.Fprintf(v.e.stderr, "verify: "+format+"\n", args...)
	}
}

// verifyStores compares a (the source) and b (the destination): the same
// threads, and for each the same head, transcript and checkpoints
// (driver.EqualCheckpoints, in List order), and the same blob
// references. It prints each difference (the first maxReported) and fails
// when there is any. prog, when not nil, prints progress lines as the
// checkpoints are compared (its totals are the copy's).
func verifyStores(ctx context.Context, e *env, a, b *store, bc *blobCopier, prog *progress) error {
	v := &verifier{e: e, prog: prog}
	err := mergeSeqs(threadSeq(ctx, a), threadSeq(ctx, b), strings.Compare, func(x, y *string) error {
		switch {
		case y == nil:
			v.diff("thread %q is only in the source", *x)
			return nil
		case x == nil:
			v.diff("thread %q is only in the destination", *y)
			return nil
		}
		_, err := v.thread(ctx, a, b, *x)
		v.threads++
		return err
	})
	if err != nil {
		return err
	}
	ra, rb, err := both(a, b, func(s *store) ([]ckptstore.BlobRef, error) { return s.ListBlobReferences(ctx) })
	if err != nil {
		return err
	}
	err = mergeSeqs(sliceSeq(ra), sliceSeq(rb), func(x, y ckptstore.BlobRef) int { return strings.Compare(x.Key, y.Key) },
		func(x, y *ckptstore.BlobRef) error {
			switch {
			case y == nil:
				v.diff("blob %s: %d references in the source, none in the destination", x.Key, x.References)
			case x == nil:
				v.diff("blob %s: none in the source, %d references in the destination", y.Key, y.References)
			case x.References != y.References:
				v.diff("blob %s: %d references in the source, %d in the destination", x.Key, x.References, y.References)
			}
			return nil
		})
	if err != nil {
		return err
	}
	records, err := verifyPersist(ctx, v, a, b, bc)
	if err != nil {
		return err
	}
	nstreams, err := verifyStreams(ctx, v, a, b)
	if err != nil {
		return err
	}
	if v.diffs > 0 {
		return fmt.Errorf("verify: %d differences between %s and %s", v.diffs, a.desc, b.desc)
	}
	fmt.Fprintf(e.stdout, "verify: equal: %d threads, %d checkpoints, %d blob keys, %d persistence records, %d streams\n", v.threads, v.cps, len(ra), records, nstreams)
	return nil
}

// thread compares one thread of both stores and returns how many
// checkpoints the source holds.
func (v *verifier) thread(ctx context.Context, a, b *store, id string) (int, error) {
	ha, hb, err := both(a, b, func(s *store) (string, error) { return s.GetHead(ctx, id) })
	if err != nil {
		return 0, err
	}
	if ha != hb {
		v.diff("thread %q: head %q in the source, %q in the destination", id, ha, hb)
	}
	tra, trb, err := both(a, b, func(s *store) (json.RawMessage, error) { return s.LoadThread(ctx, id) })
	if err != nil {
		return 0, err
	}
	if !bytes.Equal(tra, trb) {
		v.diff("thread %q: the transcripts differ (%d bytes in the source, %d in the destination)", id, len(tra), len(trb))
	}
	n := 0
	byPos := func(x, y *ckptstore.Checkpoint) int { return driver.ComparePosition(x, driver.PositionOf(y)) }
	err = mergeSeqs(checkpointSeq(ctx, a.Store, id, driver.MaxPageLimit, false), checkpointSeq(ctx, b.Store, id, driver.MaxPageLimit, false), byPos,
		func(x, y **ckptstore.Checkpoint) error {
			if x != nil {
				n++
				v.cps++
				if v.prog != nil {
					v.prog.tick(v.threads, v.cps, func() string { return fmt.Sprintf("at thread %q", id) })
				}
			}
			switch {
			case y == nil:
				v.diff("thread %q: checkpoint %q is only in the source", id, (*x).ID)
			case x == nil:
				v.diff("thread %q: checkpoint %q is only in the destination", id, (*y).ID)
			default:
				if !driver.EqualCheckpoints(*x, *y) {
					v.diff("thread %q: checkpoint %q differs", id, (*x).ID)
				}
			}
			return nil
		})
	return n, err
}

// both reads the same thing from a and then from b, stopping at the first
// error.
func both[T any](a, b *store, read func(*store) (T, error)) (T, T, error) {
	x, err := read(a)
	if err != nil {
		var zero T
		return x, zero, err
	}
	y, err := read(b)
	return x, y, err
}

func sliceSeq[T any](s []T) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for _, x := range s {
			if !yield(x, nil) {
				return
			}
		}
	}
}

// mergeSeqs walks two sorted sequences side by side and calls f with the
// elements at each position: both when they compare equal, else the
// smaller one with nil for the other side.
func mergeSeqs[T any](a, b iter.Seq2[T, error], compare func(T, T) int, f func(x, y *T) error) error {
	na, stopA := iter.Pull2(a)
	defer stopA()
	nb, stopB := iter.Pull2(b)
	defer stopB()
	x, errA, okA := na()
	y, errB, okB := nb()
	for okA || okB {
		if errA != nil {
			return errA
		}
		if errB != nil {
			return errB
		}
		c := -1 // b has ended
		if !okA {
			c = 1
		} else if okB {
			c = compare(x, y)
		}
		var err error
		switch {
		case c < 0:
			err = f(&x, nil)
			x, errA, okA = na()
		case c > 0:
			err = f(nil, &y)
			y, errB, okB = nb()
		default:
			err = f(&x, &y)
			x, errA, okA = na()
			y, errB, okB = nb()
		}
		if err != nil {
			return err
		}
	}
	return nil
}
