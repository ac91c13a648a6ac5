// Package sweep deletes the blobs that no checkpoint uses any more.
//
// Invariants:
//
//   - Only keys under blobs.ArtifactsPrefix and blobs.FilesPrefix are ever
//     listed or deleted; a key the bucket lists outside the prefix it was
//     asked for stops the sweep.
//   - A key is deleted only when the store does not list it in
//     ListBlobReferences (whatever count it lists it with) and its ModTime is
//     strictly before the cutoff Now() − OlderThan, taken once when Run
//     starts, before any reference is read: a blob uploaded by a capture
//     that has not appended its checkpoint yet survives while it is younger
//     than OlderThan. The final check of the ModTime and the deletion are
//     one step on a bucket that implements blobs.OlderDeleter (mem, file,
//     S3 with versioning); on others the sweep reads the ModTime with Head
//     and then deletes. Either way a blob touched or re-uploaded since the
//     listing stays.
//   - Safe while captures run. Captures that reuse blobs through
//     blobs.PutFile / blobs.PutArtifact freshen those older than the
//     freshen threshold F (blobs.Uploader.FreshenAfter, default
//     blobs.DefaultFreshenAfter = 1 h). Exactly: with G = OlderThan, D the
//     longest time from a capture's PutFile of a blob to the end of the
//     Append that references it, U the longest upload where the bucket
//     stamps ModTime at an upload's start (S3; 0 for mem and file), and ε
//     the largest skew between the bucket's, the uploader's and the
//     sweep's clocks, a sweep with G > F + D + U + 2ε, on a bucket whose
//     blobs.OlderDeleter is one step (mem, file on Unix, S3 with
//     versioning), never deletes a blob between a capture's PutFile of it
//     and the end of its Append, so no stored checkpoint references a
//     missing blob. docs/sweep.md has the proof and where it stops.
//   - Memory is constant in the number of keys: the bucket lists in ascending
//     key order, the references come sorted by key too, and the sweep merges
//     the two streams, holding one key of each. Stores implementing RefLister
//     stream their references; for the others the sweep holds the slice that
//     ListBlobReferences returns. Only the returned list of deleted keys grows;
//     Options.OnDeleted avoids it.
//   - Either stream going backwards stops the sweep with blobs.ErrUnsorted
//     before anything is decided on the out-of-order key.
//   - Invalid options fail before anything is listed.
//   - A bucket that implements blobs.DebrisRemover (a file bucket) also
//     removes the leftovers of uploads killed mid-stream, by its own rule,
//     once the merge has ended without a fatal error, and not in DryRun.
//
// Run pruning (ckptstore.KeepNewest) first, then the sweep, so the sweep also
// frees the bytes that only pruned checkpoints used.
package sweep

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/blobs"
	"github.com/ckptstore/ckptstore/driver"
)

// DefaultConcurrency is the number of deletions in flight when
// Options.Concurrency is 0. Deletes against S3 cost a round trip each, so
// some parallelism pays; more mostly adds request-rate pressure.
const DefaultConcurrency = 16

// maxKeyErrors is how many per-key errors Run's error lists; the rest are
// counted in a final line.
const maxKeyErrors = 100

// prefixes are the key prefixes the sweep lists, in ascending byte order,
// so that the two listings form one sorted stream.
var prefixes = [...]string{blobs.ArtifactsPrefix, blobs.FilesPrefix}

// Options configures Run. The zero value deletes every unreferenced blob
// uploaded before now, 16 at a time — including those of captures still in
// progress: set OlderThan (24 h is the recommended value; see
// docs/sweep.md for the condition it must meet).
type Options struct {
	// OlderThan is the grace period: only blobs whose ModTime is strictly
	// before Now() − OlderThan are deleted. For a sweep that may run while
	// captures do, it must exceed the captures' freshen threshold
	// (blobs.DefaultFreshenAfter unless they set another) plus the longest
	// capture plus clock skew. Negative is an error.
	OlderThan time.Duration
	// Now is the clock the grace period is measured from; nil means
	// time.Now.
	Now func() time.Time
	// Concurrency is the number of deletions in flight; 0 means
	// DefaultConcurrency. Negative is an error.
	Concurrency int
	// DryRun reports the keys that would be deleted without deleting them
	// (nor checking their ModTime again).
	DryRun bool
	// OnDeleted, when set, receives each deleted key (in DryRun, each key
	// that would be), one call at a time, in no particular order, and Run
	// returns no key list: this keeps memory constant however many keys go.
	OnDeleted func(key string)
	// Stats, when set, is filled with the sweep's counts before Run returns.
	//
	// Deprecated: use RunStats, which returns the counts; an output does
	// not belong in the options.
	Stats *Stats
}

// Stats counts what a sweep saw and did.
type Stats struct {
	Examined   int64 // keys listed under the two prefixes
	Referenced int64 // kept because a checkpoint uses them
	Young      int64 // kept because they are not older than OlderThan, at the listing or at the final check (touched or re-uploaded since)
	// Spared counts, among Young, the keys that were old at the listing
	// but not at the final check: touched or re-uploaded since (or deleted
	// by someone else), what a capture reusing them does.
	Spared  int64
	Deleted int64 // deleted (in DryRun: that would be)
	Failed  int64 // a Head or Delete failed
	// Debris counts the leftovers of dead uploads the bucket removed (a
	// file bucket's stale tmp/*.part; see blobs.DebrisRemover). DryRun
	// removes none.
	Debris int64
}

// Refs is what a sweep reads from a store: every blob key that a stored
// checkpoint uses. *ckptstore.Store has it, and so has any wrapper of one.
type Refs interface {
	ListBlobReferences(ctx context.Context) ([]ckptstore.BlobRef, error)
}

// RefLister is the streaming form of Refs: a Refs that also implements it,
// as *ckptstore.Store does, is streamed, so that a sweep does not load
// every reference.
//
// BlobReferencesSeq yields the same references as ListBlobReferences: every key
// with a count above 0, each once, in strictly ascending byte order of the
// key. An error ends the sequence. The sequence need not be one snapshot
// (a store may read it in pages), but a key referenced for the whole
// iteration must be yielded.
//
// The sweep relies on the order: it decides a key is unreferenced once the
// stream has passed it, so a reference yielded out of order can let the
// key it names be deleted before the sweep notices. It then stops with
// blobs.ErrUnsorted (also when the disorder comes after the last blob).
type RefLister interface {
	BlobReferencesSeq(ctx context.Context) iter.Seq2[ckptstore.BlobRef, error]
}

// KeyError is the failure to check or delete one key.
type KeyError struct {
	Key string
	Err error
}

// Error names the key and what went wrong with it.
func (e *KeyError) Error() string { return fmt.Sprintf("sweep: %s: %v", e.Key, e.Err) }

// Unwrap returns the underlying error.
func (e *KeyError) Unwrap() error { return e.Err }

// Run deletes every blob under the two prefixes that refs does not reference
// and that is older than opts.OlderThan, and returns the deleted keys in
// ascending order. Errors on single keys do not stop the sweep: Run returns
// them joined (each a *KeyError) with the keys it did delete. A listing or
// store error, or a cancelled ctx, stops it; the deletions already started
// finish and are returned. RunStats does the same and also returns the
// counts.
func Run(ctx context.Context, refs Refs, b blobs.Bucket, opts Options) ([]string, error) {
	deleted, _, err := RunStats(ctx, refs, b, opts)
	return deleted, err
}

// RunStats is Run that also returns what the sweep saw and did. The counts
// cover the whole run, also when an error stopped it early.
func RunStats(ctx context.Context, refs Refs, b blobs.Bucket, opts Options) ([]string, Stats, error) {
	if refs == nil || b == nil {
		return nil, Stats{}, fmt.Errorf("%w: sweep needs a store and a bucket", driver.ErrInvalidOptions)
	}
	if opts.OlderThan < 0 {
		return nil, Stats{}, fmt.Errorf("%w: sweep OlderThan %v is negative", driver.ErrInvalidOptions, opts.OlderThan)
	}
	if opts.Concurrency < 0 {
		return nil, Stats{}, fmt.Errorf("%w: sweep Concurrency %d is negative", driver.ErrInvalidOptions, opts.Concurrency)
	}
	if opts.Concurrency == 0 {
		opts.Concurrency = DefaultConcurrency
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	// The cutoff is taken before any reference is read: the safety
	// condition in docs/sweep.md relies on every reference the sweep reads
	// being at least as new as the cutoff's clock reading.
	cutoff := now().Add(-opts.OlderThan)

	d := newDeleter(ctx, b, opts, cutoff)
	fatal := merge(ctx, refs, b, cutoff, d)
	var debrisErr error
	if dr, ok := b.(blobs.DebrisRemover); ok && !opts.DryRun && fatal == nil {
		// Not a blob any checkpoint can use: the bucket's own rule (a
		// file bucket's StalePartAge and part locks) decides, not OlderThan.
		n, err := dr.RemoveDebris(ctx)
		if err != nil {
			debrisErr = fmt.Errorf("sweep: remove debris: %w", err)
		}
		d.mu.Lock()
		d.stats.Debris = int64(n)
		d.mu.Unlock()
	}
	deleted, stats, err := d.finish(fatal)
	if debrisErr != nil {
		err = errors.Join(err, debrisErr)
	}
	return deleted, stats, err
}

// merge walks the listing of both prefixes against the references and hands
// each unreferenced, old key to d. It returns the error that stopped it.
func merge(ctx context.Context, store Refs, b blobs.Bucket, cutoff time.Time, d *deleter) error {
	refs, err := refSeq(ctx, store)
	if err != nil {
		return err
	}
	next, stop := iter.Pull2(refs)
	defer stop()
	rc := &refCursor{next: next}
	var prev string
	for _, prefix := range prefixes {
		for obj, err := range b.List(ctx, prefix) {
			if err != nil {
				return fmt.Errorf("sweep: list %q: %w", prefix, err)
			}
			if !strings.HasPrefix(obj.Key, prefix) {
				return fmt.Errorf("sweep: bucket listed %q under prefix %q", obj.Key, prefix)
			}
			if prev != "" && obj.Key <= prev {
				return fmt.Errorf("%w: bucket listed %q after %q", blobs.ErrUnsorted, obj.Key, prev)
			}
			prev = obj.Key
			d.stats.Examined++
			used, err := rc.referenced(obj.Key)
			if err != nil {
				return err
			}
			switch {
			case used:
				d.stats.Referenced++
			case !obj.ModTime.Before(cutoff):
				d.stats.Young++
			default:
				if err := d.submit(obj); err != nil {
					return err
				}
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// Read the references past the last key too: a stream that fails or
	// goes backwards there was wrong all along, and the caller must know.
	for !rc.end {
		if err := rc.pull(); err != nil {
			return err
		}
	}
	return nil
}

// refCursor walks the store's references, in key order, alongside the
// bucket listing, checking the order as it goes.
type refCursor struct {
	next    func() (ckptstore.BlobRef, error, bool)
	ref     ckptstore.BlobRef // the smallest reference not yet passed
	haveRef bool              // ref holds one
	end     bool              // the references are over
	last    string            // the key of the last reference read
	started bool              // one was read
}

// pull reads the next reference into ref, checking the order.
func (c *refCursor) pull() error {
	r, err, ok := c.next()
	switch {
	case !ok:
		c.end = true
	case err != nil:
		return fmt.Errorf("sweep: blob references: %w", err)
	case c.started && r.Key < c.last:
		return fmt.Errorf("%w: store listed reference %q after %q", blobs.ErrUnsorted, r.Key, c.last)
	default:
		c.ref, c.haveRef, c.last, c.started = r, true, r.Key, true
	}
	return nil
}

// referenced advances the references to key and reports whether key is
// one of them.
func (c *refCursor) referenced(key string) (bool, error) {
	for !c.end {
		if !c.haveRef {
			if err := c.pull(); err != nil {
				return false, err
			}
			continue
		}
		if c.ref.Key >= key {
			return c.ref.Key == key, nil
		}
		c.haveRef = false
	}
	return false, nil
}

// refSeq returns the store's references as a sorted sequence: streamed when
// the store is a RefLister, else from the slice, sorted if it is not.
func refSeq(ctx context.Context, store Refs) (iter.Seq2[ckptstore.BlobRef, error], error) {
	if rl, ok := store.(RefLister); ok {
		return rl.BlobReferencesSeq(ctx), nil
	}
	refs, err := store.ListBlobReferences(ctx)
	if err != nil {
		return nil, fmt.Errorf("sweep: blob references: %w", err)
	}
	cmp := func(a, b ckptstore.BlobRef) int { return strings.Compare(a.Key, b.Key) }
	if !slices.IsSortedFunc(refs, cmp) {
		// Sorting costs nothing that holding the slice did not already,
		// and a merge over unsorted input would delete referenced keys.
		refs = slices.Clone(refs)
		slices.SortFunc(refs, cmp)
	}
	return func(yield func(ckptstore.BlobRef, error) bool) {
		for _, r := range refs {
			if !yield(r, nil) {
				return
			}
		}
	}, nil
}

// deleter runs the deletions with bounded concurrency and collects results.
type deleter struct {
	ctx    context.Context
	b      blobs.Bucket
	opts   Options
	cutoff time.Time
	work   chan blobs.Object
	wg     sync.WaitGroup

	mu      sync.Mutex
	stopped bool // a fatal error: queued deletions are dropped
	deleted []string
	errs    []error
	stats   Stats // Examined, Referenced, Young: merge goroutine only
	// refreshed counts keys found young when re-read before deletion.
	refreshed int64
}

func newDeleter(ctx context.Context, b blobs.Bucket, opts Options, cutoff time.Time) *deleter {
	d := &deleter{ctx: ctx, b: b, opts: opts, cutoff: cutoff}
	if !opts.DryRun {
		d.work = make(chan blobs.Object, opts.Concurrency)
		for range opts.Concurrency {
			d.wg.Go(d.worker)
		}
	}
	return d
}

func (d *deleter) submit(o blobs.Object) error {
	if d.opts.DryRun {
		d.done(o.Key)
		return nil
	}
	select {
	case d.work <- o:
		return nil
	case <-d.ctx.Done():
		return d.ctx.Err()
	}
}

func (d *deleter) worker() {
	for o := range d.work {
		d.mu.Lock()
		stopped := d.stopped
		d.mu.Unlock()
		if stopped || d.ctx.Err() != nil {
			continue
		}
		gone, err := d.deleteOld(o.Key)
		switch {
		case err != nil:
			d.fail(o.Key, err)
		case gone:
			d.done(o.Key)
		default:
			d.mu.Lock()
			d.refreshed++
			d.mu.Unlock()
		}
	}
}

// deleteOld deletes key if it is still older than the cutoff: a capture
// may have touched or uploaded it again since the listing, making it
// young, and it must then stay. The check and the deletion are one step on
// an OlderDeleter; otherwise a Head reads the ModTime again first.
func (d *deleter) deleteOld(key string) (bool, error) {
	if od, ok := d.b.(blobs.OlderDeleter); ok {
		return od.DeleteOlder(d.ctx, key, d.cutoff)
	}
	h, err := d.b.Head(d.ctx, key)
	switch {
	case errors.Is(err, blobs.ErrNotFound):
		return false, nil // already gone
	case err != nil:
		return false, err
	case !h.ModTime.Before(d.cutoff):
		return false, nil
	}
	if err := d.b.Delete(d.ctx, key); err != nil {
		return false, err
	}
	return true, nil
}

func (d *deleter) done(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stats.Deleted++
	if d.opts.OnDeleted != nil {
		d.opts.OnDeleted(key)
	} else {
		d.deleted = append(d.deleted, key)
	}
}

func (d *deleter) fail(key string, err error) {
	if d.ctx.Err() != nil {
		return // reported once, as the context's error
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stats.Failed++
	if len(d.errs) < maxKeyErrors {
		d.errs = append(d.errs, &KeyError{Key: key, Err: err})
	}
}

// finish waits for the deletions in flight and assembles Run's results.
func (d *deleter) finish(fatal error) ([]string, Stats, error) {
	if d.work != nil {
		if fatal != nil {
			d.mu.Lock()
			d.stopped = true
			d.mu.Unlock()
		}
		close(d.work)
		d.wg.Wait()
	}
	slices.Sort(d.deleted)
	d.stats.Young += d.refreshed
	d.stats.Spared = d.refreshed
	errs := append([]error{fatal}, d.errs...)
	if n := d.stats.Failed - int64(len(d.errs)); n > 0 {
		errs = append(errs, fmt.Errorf("sweep: %d more keys failed", n))
	}
	if d.opts.Stats != nil {
		*d.opts.Stats = d.stats
	}
	return d.deleted, d.stats, errors.Join(errs...)
}
