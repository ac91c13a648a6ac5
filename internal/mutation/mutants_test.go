package mutation

// The behavioural mutants: each is a wrapper around a working store that
// changes one observable behaviour, as if one state check or one effect of
// docs/contract.md were missing or wrong. They use only the store's own
// methods, so they hold across refactors of any store's code.

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
)

// mutant is one planted bug.
type mutant struct {
	name string
	// rule is what the bug breaks, in docs/contract.md's words.
	rule string
	// wrap returns the store with the bug; opts are the options the
	// store was built with (after tweak).
	wrap func(s store, opts ckptstore.Options) store
	// tweak, when set, changes the options the store is built with.
	tweak func(*ckptstore.Options)
	// inst, for an instance store mutant, wraps the instance store
	// instead (wrap is then nil).
	inst func(instances) instances
	// equivalent, when set, says why the mutant cannot change behaviour:
	// it is then left out of the kill rate, and a kill is an error (the
	// argument was wrong).
	equivalent string
}

// plain adapts a wrapper that needs no options.
func plain[T store](f func(store) T) func(store, ckptstore.Options) store {
	return func(s store, _ ckptstore.Options) store { return f(s) }
}

var mutants = []mutant{
	// ---- reads ----
	{name: "get-shared", rule: "Checkpoints never change: a read returns the caller's own copy (Get)",
		wrap: plain(func(s store) store { return &getShared{store: s} })},
	{name: "get-lax-id", rule: "Ids are valid, in reads as in writes (Get)", wrap: plain(func(s store) store { return getLaxID{s} })},
	{name: "get-ignores-ctx", rule: "a done context fails every method (Get)", wrap: plain(func(s store) store { return getIgnoresCtx{s} })},
	{name: "list-reverse", rule: "Reads are ordered: List by createdAt, then id", wrap: plain(func(s store) store { return listReverse{s} })},
	{name: "list-id-desc", rule: "Reads are ordered: equal createdAt by the bytes of the id", wrap: plain(func(s store) store { return listIDDesc{s} })},
	{name: "list-chain-only", rule: "List returns checkpoints on and off the head chain", wrap: plain(func(s store) store { return listChainOnly{s} })},
	{name: "list-shared", rule: "Checkpoints never change: a read returns the caller's own copy (List)",
		wrap: plain(func(s store) store { return &listShared{store: s} })},
	{name: "list-lax-id", rule: "Ids are valid, in reads as in writes (List)", wrap: plain(func(s store) store { return listLaxID{s} })},
	{name: "head-lax-id", rule: "Ids are valid, in reads as in writes (Head)", wrap: plain(func(s store) store { return headLaxID{s} })},
	{name: "refs-off-by-one", rule: "a blob key's count is the number of stored checkpoints using it", wrap: plain(func(s store) store { return refsOffByOne{s} })},
	{name: "refs-unsorted", rule: "Reads are ordered: blob keys in byte order", wrap: plain(func(s store) store { return refsUnsorted{s} })},
	{name: "refs-missing-key", rule: "BlobReferences returns every key with a count above 0", wrap: plain(func(s store) store { return refsMissingKey{s} })},
	{name: "refs-zero-kept", rule: "a count that reaches 0 is forgotten",
		wrap: plain(func(s store) store { return &refsZeroKept{store: s, seen: map[string]bool{}} })},
	{name: "refs-per-entry", rule: "each distinct key is counted once per checkpoint", wrap: plain(func(s store) store { return refsPerEntry{s} })},
	{name: "refs-no-artifacts", rule: "a checkpoint's blob keys are those of its files and of its artifacts", wrap: plain(func(s store) store { return refsNoArtifacts{s} })},

	// ---- Append ----

	{name: "append-stale-head", rule: "Append 5: head = expectedHeadID (the stale-head check skipped)", wrap: plain(func(s store) store { return appendStaleHead{s} })},
	{name: "append-no-parent-check", rule: "Append 6: parent = expectedHeadID (the parent is taken as expected)", wrap: plain(func(s store) store { return appendNoParentCheck{s} })},
	{name: "append-dup-before-writer", rule: "Append check order: writer (3) before id unused (4)", wrap: plain(func(s store) store { return appendDupBeforeWriter{s} })},
	{name: "append-head-before-dup", rule: "Append check order: id unused (4) before head (5)", wrap: plain(func(s store) store { return appendHeadBeforeDup{s} })},
	{name: "append-parent-before-head", rule: "Append check order: head (5) before parent (6)", wrap: plain(func(s store) store { return appendParentBeforeHead{s} })},
	{name: "append-conflict-as-mismatch", rule: "every violation has its own sentinel: ErrConflict reported as ErrParentMismatch", wrap: plain(func(s store) store { return appendConflictAsMismatch{s} })},
	{name: "append-swallow-conflict", rule: "a write reports success only when it happened (stale head)", wrap: plain(func(s store) store { return appendSwallowConflict{s} })},
	{name: "append-swallow-invalid", rule: "bad input fails with ErrInvalidEntry", wrap: plain(func(s store) store { return appendSwallowInvalid{s} })},
	{name: "append-noop", rule: "Append stores the checkpoint (a success that did nothing)", wrap: plain(func(s store) store { return appendNoop{s} })},
	{name: "append-shared-input", rule: "Checkpoints never change: changing an input after a write changes nothing stored",
		wrap: plain(func(s store) store { return &appendSharedInput{store: s} })},
	{name: "append-stale-writer", rule: "The writer first: a stale lease fails with ErrWriterLost (any lost writer replaced by the newest lease)", wrap: plain(func(s store) store { return appendStaleWriter{track(s)} })},
	{name: "append-ignore-fence", rule: "a writer is current when its owner token and fence equal the lease's (fence not compared)", wrap: plain(func(s store) store { return appendIgnoreFence{track(s)} })},
	{name: "append-other-thread-writer", rule: "The writer's threadId is the thread written", wrap: plain(func(s store) store { return appendOtherThreadWriter{track(s)} })},
	{name: "append-op-token-ignored", rule: "a repeated Append with the op token of a committed call reports its success", wrap: plain(func(s store) store { return appendOpTokenIgnored{s} })},
	{name: "append-failed-token-succeeds", rule: "a failed call's repeat with its op token fails again (reported as done)",
		wrap: plain(func(s store) store { return &appendFailedTokenSucceeds{store: s, failed: map[string]bool{}} })},
	{name: "append-ignores-ctx", rule: "a done context fails every method and changes nothing (Append)", wrap: plain(func(s store) store { return appendIgnoresCtx{s} })},

	// ---- leases ----
	{name: "acquire-steals-live", rule: "AcquireWriter on a thread with a live lease fails with ErrWriterConflict (release then acquire)", wrap: plain(func(s store) store { return acquireStealsLive{track(s)} })},
	{name: "acquire-conflict-as-lost", rule: "every violation has its own sentinel: ErrWriterConflict reported as ErrWriterLost", wrap: plain(func(s store) store { return acquireConflictAsLost{s} })},
	{name: "acquire-op-token-ignored", rule: "a repeated AcquireWriter with the op token of a committed call returns the same lease", wrap: plain(func(s store) store { return acquireOpTokenIgnored{s} })},
	{name: "acquire-renew-after-lease", rule: "RenewAfter is the store's option (reported as the whole lease)", wrap: plain(func(s store) store { return acquireRenewAfterLease{s} })},
	{name: "lease-late-expiry", rule: "a lease is live while now < expiresAt (kept 1 ms past the expiry it reports)",
		tweak: func(o *ckptstore.Options) {
			_, d := clock(*o)
			o.LeaseDuration = d + time.Millisecond
			if o.RenewAfter == 0 {
				o.RenewAfter = d * 3 / 8
			}
		},
		wrap: func(s store, o ckptstore.Options) store { return &lateExpiry{store: s} }},
	{name: "renew-noop", rule: "Renew sets expiresAt = now + the lease duration (reported, not done)",
		wrap: func(s store, o ckptstore.Options) store {
			now, d := clock(o)
			return &renewNoop{store: s, now: now, d: d}
		}},
	{name: "renew-from-old-expiry", rule: "Renew extends from now, not from the old expiry",
		wrap: func(s store, o ckptstore.Options) store {
			_, d := clock(o)
			return &renewFromOldExpiry{store: s, d: d, expiry: map[string]time.Time{}}
		}},
	{name: "renew-lost-ok", rule: "Renew of a lease that expired, was released or replaced fails with ErrWriterLost",
		wrap: func(s store, o ckptstore.Options) store {
			now, d := clock(o)
			return &renewLostOK{store: s, now: now, d: d}
		}},
	{name: "release-any", rule: "Release does nothing unless the writer is the thread's lease", wrap: plain(func(s store) store { return &releaseAny{track(s)} })},
	{name: "release-noop", rule: "Release ends the lease", wrap: plain(func(s store) store { return &releaseNoop{s} })},

	// ---- DeleteHead ----
	{name: "dh-swallow-not-head", rule: "DeleteHead 3: a checkpoint that is not the head fails with ErrNotHead", wrap: plain(func(s store) store { return dhSwallowNotHead{s} })},
	{name: "dh-not-head-before-writer", rule: "DeleteHead check order: writer (2) before the head (3)", wrap: plain(func(s store) store { return dhNotHeadBeforeWriter{s} })},
	{name: "dh-noop", rule: "DeleteHead removes the head (a success that did nothing)", wrap: plain(func(s store) store { return dhNoop{s} })},
	{name: "dh-deletes-head-anyway", rule: "DeleteHead removes only the checkpoint named, and only when it is the head", wrap: plain(func(s store) store { return dhDeletesHeadAnyway{s} })},
	{name: "dh-op-token-ignored", rule: "a repeated DeleteHead with the op token of a committed call reports its success", wrap: plain(func(s store) store { return dhOpTokenIgnored{s} })},

	// ---- DeleteCheckpoints ----
	{name: "prune-one-too-many", rule: "DeleteCheckpoints keeps the head and keep−1 before it (deletes one more)", wrap: plain(func(s store) store { return pruneOneTooMany{s} })},
	{name: "prune-one-too-few", rule: "DeleteCheckpoints deletes every older checkpoint of the chain (keeps one more)", wrap: plain(func(s store) store { return pruneOneTooFew{s} })},
	{name: "prune-newest-first", rule: "DeleteCheckpoints returns the deleted ids farthest from the head first", wrap: plain(func(s store) store { return pruneNewestFirst{s} })},
	{name: "prune-ids-dropped", rule: "DeleteCheckpoints returns the ids it deleted", wrap: plain(func(s store) store { return pruneIDsDropped{s} })},
	{name: "prune-writer-before-keep", rule: "DeleteCheckpoints check order: keep (2) before writer (3)", wrap: plain(func(s store) store { return pruneWriterBeforeKeep{s} })},
	{name: "prune-swallow-writer-lost", rule: "DeleteCheckpoints with a lost writer fails with ErrWriterLost", wrap: plain(func(s store) store { return pruneSwallowWriterLost{s} })},

	// ---- ForkFromCheckpoint ----
	{name: "fork-into-non-empty", rule: "Fork 7: the destination is empty (emptied, then forked into)", wrap: plain(func(s store) store { return forkIntoNonEmpty{s} })},
	{name: "fork-dest-before-writer", rule: "Fork check order: writer (6) before destination empty (7)", wrap: plain(func(s store) store { return forkDestBeforeWriter{s} })},
	{name: "fork-mismatch-as-not-found", rule: "every violation has its own sentinel: ErrForkSourceThreadMismatch reported as ErrForkSourceNotFound", wrap: plain(func(s store) store { return forkMismatchAsNotFound{s} })},
	{name: "fork-keeps-label", rule: "the fork root has no label or sourceRunId", wrap: plain(func(s store) store { return forkKeepsLabel{s} })},
	{name: "fork-source-createdat", rule: "the fork root's createdAt is the input's", wrap: plain(func(s store) store { return forkSourceCreatedAt{s} })},
	{name: "fork-transcript-empty", rule: "a fork sets the destination's transcript to the copied conversation", wrap: plain(func(s store) store { return forkTranscriptEmpty{s} })},
	{name: "fork-op-token-ignored", rule: "a repeated fork with the op token of a committed call reports its success", wrap: plain(func(s store) store { return forkOpTokenIgnored{s} })},
	{name: "fork-other-thread-writer", rule: "Fork 6: the writer is the destination's", wrap: plain(func(s store) store { return forkOtherThreadWriter{track(s)} })},

	// ---- transcripts ----
	{name: "save-dropped", rule: "SaveThread replaces the transcript (a success that did nothing)", wrap: plain(func(s store) store { return saveDropped{s} })},
	{name: "save-swallow-invalid", rule: "SaveThread refuses what is not a JSON array with ErrInvalidEntry", wrap: plain(func(s store) store { return saveSwallowInvalid{s} })},
	{name: "load-no-default", rule: "LoadThread returns [] when none was saved", wrap: plain(func(s store) store { return loadNoDefault{s} })},
	{name: "save-shared", rule: "changing an input after a write changes nothing stored (SaveThread)",
		wrap: plain(func(s store) store { return &saveShared{store: s} })},
	{name: "load-shared", rule: "a read returns the caller's own copy (LoadThread)",
		wrap: plain(func(s store) store { return &loadShared{store: s} })},

	// ---- DeleteThread ----
	{name: "dt-keeps-transcript", rule: "DeleteThread removes the transcript", wrap: plain(func(s store) store { return dtKeepsTranscript{s} })},
	{name: "dt-keeps-off-chain", rule: "DeleteThread removes checkpoints on and off the chain", wrap: plain(func(s store) store { return dtKeepsOffChain{s} })},
	{name: "dt-count-plus-one", rule: "DeleteThread returns how many checkpoints it removed", wrap: plain(func(s store) store { return dtCountPlusOne{s} })},
	{name: "dt-ends-lease", rule: "after DeleteThread the lease and its fence stay", wrap: plain(func(s store) store { return dtEndsLease{s} })},
	{name: "dt-swallow-writer-lost", rule: "DeleteThread with a lost writer fails with ErrWriterLost", wrap: plain(func(s store) store { return dtSwallowWriterLost{s} })},
	{name: "dt-other-thread-writer", rule: "DeleteThread: the writer's threadId is the thread deleted", wrap: plain(func(s store) store { return dtOtherThreadWriter{track(s)} })},

	// ---- ListPage ----
	{name: "page-repeats-cursor", rule: "ListPage returns checkpoints strictly after the cursor", wrap: plain(func(s store) store { return pageRepeatsCursor{s} })},
	{name: "page-limit-plus-one", rule: "ListPage returns at most limit checkpoints", wrap: plain(func(s store) store { return pageLimitPlusOne{s} })},
	{name: "page-next-missing", rule: "ListPage returns the next page's cursor while checkpoints follow", wrap: plain(func(s store) store { return pageNextMissing{s} })},
	{name: "page-reverse-ignored", rule: "ListPage pages newest first when Reverse is set", wrap: plain(func(s store) store { return pageReverseIgnored{s} })},
	{name: "page-bad-cursor-from-start", rule: "a cursor that does not decode fails with ErrInvalidEntry", wrap: plain(func(s store) store { return pageBadCursorFromStart{s} })},

	// ---- Threads ----
	{name: "threads-need-checkpoints", rule: "Threads lists threads with a head, a checkpoint or a transcript (a transcript alone left out)", wrap: plain(func(s store) store { return threadsNeedCheckpoints{s} })},
	{name: "threads-with-leases", rule: "a lease alone does not make a thread", wrap: plain(func(s store) store { return threadsWithLeases{track(s)} })},
	{name: "threads-keeps-emptied", rule: "Threads lists only threads that have a head, a checkpoint or a transcript (emptied ones kept)",
		wrap: plain(func(s store) store { return &threadsKeepsEmptied{store: s, written: map[string]bool{}} })},
	{name: "threads-unsorted", rule: "Reads are ordered: thread ids in byte order", wrap: plain(func(s store) store { return threadsUnsorted{s} })},
	{name: "threads-limit-ignored", rule: "Threads returns at most limit ids", wrap: plain(func(s store) store { return threadsLimitIgnored{s} })},
	{name: "threads-next-missing", rule: "Threads returns the next page's cursor while threads follow", wrap: plain(func(s store) store { return threadsNextMissing{s} })},

	// ---- Import ----
	{name: "import-repeat-fails", rule: "Import is idempotent: a repeated batch succeeds (refused as a duplicate)", wrap: plain(func(s store) store { return importRepeatFails{s} })},
	{name: "import-repeat-counts", rule: "Import returns how many checkpoints it newly wrote", wrap: plain(func(s store) store { return importRepeatCounts{s} })},
	{name: "import-skips-other-content", rule: "Import 4: an id stored with other content fails with ErrDuplicateID", wrap: plain(func(s store) store { return importSkipsOtherContent{s} })},
	{name: "import-head-ignored", rule: "Import with SetHead sets the head", wrap: plain(func(s store) store { return importHeadIgnored{s} })},
	{name: "import-head-conflict-skipped", rule: "Import 5: with SetHead, another head fails with ErrConflict", wrap: plain(func(s store) store { return importHeadConflictSkipped{s} })},
	{name: "import-transcript-ignored", rule: "Import replaces the transcript when one is given", wrap: plain(func(s store) store { return importTranscriptIgnored{s} })},
	{name: "import-dup-before-writer", rule: "Import check order: writer (3) before ids (4)", wrap: plain(func(s store) store { return importDupBeforeWriter{s} })},

	// ---- instance store ----
	{name: "inst-upsert-dropped", rule: "Upsert replaces the record (a success that did nothing)", inst: func(s instances) instances { return instUpsertDropped{s} }},
	{name: "inst-upsert-merges", rule: "Upsert replaces the whole record: optional fields left out are cleared", inst: func(s instances) instances { return instUpsertMerges{s} }},
	{name: "inst-get-shared", rule: "instance reads return copies",
		inst: func(s instances) instances { return &instGetShared{instances: s} }},
	{name: "inst-upsert-shared", rule: "changing an upserted record changes nothing stored",
		inst: func(s instances) instances { return &instUpsertShared{instances: s} }},
	{name: "inst-delete-noop", rule: "Delete removes the record", inst: func(s instances) instances { return instDeleteNoop{s} }},
	{name: "inst-lax-key", rule: "an empty or invalid key fails with ErrInvalidID (Get)", inst: func(s instances) instances { return instLaxKey{s} }},
}

// ---- reads ----

// getShared hands every caller of Get one shared copy per id while the
// stored checkpoint stays the same.
type getShared struct {
	store
	shared
}

func (m *getShared) Get(ctx context.Context, id string) (*ckptstore.Checkpoint, error) {
	c, err := m.store.Get(ctx, id)
	return m.share(c), err
}

type getLaxID struct{ store }

func (m getLaxID) Get(ctx context.Context, id string) (*ckptstore.Checkpoint, error) {
	c, err := m.store.Get(ctx, id)
	if is(err, ckptstore.ErrInvalidID) {
		return nil, nil
	}
	return c, err
}

type getIgnoresCtx struct{ store }

func (m getIgnoresCtx) Get(ctx context.Context, id string) (*ckptstore.Checkpoint, error) {
	return m.store.Get(context.WithoutCancel(ctx), id)
}

type listReverse struct{ store }

func (m listReverse) List(ctx context.Context, thread string) ([]*ckptstore.Checkpoint, error) {
	l, err := m.store.List(ctx, thread)
	slices.Reverse(l)
	return l, err
}

type listIDDesc struct{ store }

func (m listIDDesc) List(ctx context.Context, thread string) ([]*ckptstore.Checkpoint, error) {
	l, err := m.store.List(ctx, thread)
	slices.SortStableFunc(l, func(a, b *ckptstore.Checkpoint) int {
		if a.CreatedAt != b.CreatedAt {
			return cmp.Compare(a.CreatedAt, b.CreatedAt)
		}
		return strings.Compare(b.ID, a.ID)
	})
	return l, err
}

type listChainOnly struct{ store }

func (m listChainOnly) List(ctx context.Context, thread string) ([]*ckptstore.Checkpoint, error) {
	l, err := m.store.List(ctx, thread)
	if err != nil {
		return l, err
	}
	head, err := m.store.GetHead(ctx, thread)
	if err != nil {
		return nil, err
	}
	on := chain(head, l)
	return slices.DeleteFunc(l, func(c *ckptstore.Checkpoint) bool { return !on[c.ID] }), nil
}

// listShared returns the same copies from every List while the stored
// checkpoints stay the same.
type listShared struct {
	store
	shared
}

func (m *listShared) List(ctx context.Context, thread string) ([]*ckptstore.Checkpoint, error) {
	l, err := m.store.List(ctx, thread)
	for i, c := range l {
		l[i] = m.share(c)
	}
	return l, err
}

type listLaxID struct{ store }

func (m listLaxID) List(ctx context.Context, thread string) ([]*ckptstore.Checkpoint, error) {
	l, err := m.store.List(ctx, thread)
	if is(err, ckptstore.ErrInvalidID) {
		return nil, nil
	}
	return l, err
}

type headLaxID struct{ store }

func (m headLaxID) GetHead(ctx context.Context, thread string) (string, error) {
	h, err := m.store.GetHead(ctx, thread)
	if is(err, ckptstore.ErrInvalidID) {
		return "", nil
	}
	return h, err
}

type refsOffByOne struct{ store }

func (m refsOffByOne) ListBlobReferences(ctx context.Context) ([]ckptstore.BlobRef, error) {
	refs, err := m.store.ListBlobReferences(ctx)
	for i := range refs {
		refs[i].References++
	}
	return refs, err
}

type refsUnsorted struct{ store }

func (m refsUnsorted) ListBlobReferences(ctx context.Context) ([]ckptstore.BlobRef, error) {
	refs, err := m.store.ListBlobReferences(ctx)
	slices.Reverse(refs)
	return refs, err
}

type refsMissingKey struct{ store }

func (m refsMissingKey) ListBlobReferences(ctx context.Context) ([]ckptstore.BlobRef, error) {
	refs, err := m.store.ListBlobReferences(ctx)
	if len(refs) > 0 {
		refs = refs[1:]
	}
	return refs, err
}

// refsZeroKept reports every key it ever reported, at 0 once it is gone.
type refsZeroKept struct {
	store
	mu   sync.Mutex
	seen map[string]bool
}

func (m *refsZeroKept) ListBlobReferences(ctx context.Context) ([]ckptstore.BlobRef, error) {
	refs, err := m.store.ListBlobReferences(ctx)
	if err != nil {
		return refs, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	have := map[string]bool{}
	for _, r := range refs {
		m.seen[r.Key], have[r.Key] = true, true
	}
	for k := range m.seen {
		if !have[k] {
			refs = append(refs, ckptstore.BlobRef{Key: k})
		}
	}
	slices.SortFunc(refs, func(a, b ckptstore.BlobRef) int { return strings.Compare(a.Key, b.Key) })
	return refs, nil
}

// refsPerEntry counts a key once per entry that names it, not once per
// checkpoint.
type refsPerEntry struct{ store }

func (m refsPerEntry) ListBlobReferences(ctx context.Context) ([]ckptstore.BlobRef, error) {
	if _, err := m.store.ListBlobReferences(ctx); err != nil {
		return nil, err
	}
	n := map[string]int64{}
	for _, th := range allThreads(ctx, m.store) {
		l, _ := m.store.List(ctx, th)
		for _, c := range l {
			for _, e := range c.Files {
				if e.Kind == ckptstore.KindFile {
					n[e.BlobKey]++
				}
			}
			for _, a := range c.Artifacts {
				n[a.BlobKey]++
			}
		}
	}
	var refs []ckptstore.BlobRef
	for k, c := range n {
		refs = append(refs, ckptstore.BlobRef{Key: k, References: c})
	}
	slices.SortFunc(refs, func(a, b ckptstore.BlobRef) int { return strings.Compare(a.Key, b.Key) })
	return refs, nil
}

// refsNoArtifacts recounts the stored checkpoints' file blob keys only.
type refsNoArtifacts struct{ store }

func (m refsNoArtifacts) ListBlobReferences(ctx context.Context) ([]ckptstore.BlobRef, error) {
	if _, err := m.store.ListBlobReferences(ctx); err != nil {
		return nil, err
	}
	n := map[string]int64{}
	for _, th := range allThreads(ctx, m.store) {
		l, _ := m.store.List(ctx, th)
		for _, c := range l {
			keys := map[string]bool{}
			for _, e := range c.Files {
				if e.Kind == ckptstore.KindFile {
					keys[e.BlobKey] = true
				}
			}
			for k := range keys {
				n[k]++
			}
		}
	}
	var refs []ckptstore.BlobRef
	for k, c := range n {
		refs = append(refs, ckptstore.BlobRef{Key: k, References: c})
	}
	slices.SortFunc(refs, func(a, b ckptstore.BlobRef) int { return strings.Compare(a.Key, b.Key) })
	return refs, nil
}

// ---- Append ----

type appendStaleHead struct{ store }

func (m appendStaleHead) Append(ctx context.Context, c *ckptstore.Checkpoint, expected string, w ckptstore.Writer) error {
	err := m.store.Append(ctx, c, expected, w)
	if is(err, ckptstore.ErrConflict) {
		if h, herr := m.store.GetHead(ctx, c.ThreadID); herr == nil {
			return m.store.Append(ctx, c, h, w)
		}
	}
	return err
}

type appendNoParentCheck struct{ store }

// appendNoParentCheck stores a checkpoint whose parent is not the
// expected head, with the expected head as its parent.
func (m appendNoParentCheck) Append(ctx context.Context, c *ckptstore.Checkpoint, expected string, w ckptstore.Writer) error {
	err := m.store.Append(ctx, c, expected, w)
	if is(err, ckptstore.ErrParentMismatch) {
		c = c.Clone()
		c.ParentCheckpointID = expected
		return m.store.Append(ctx, c, expected, w)
	}
	return err
}

type appendDupBeforeWriter struct{ store }

func (m appendDupBeforeWriter) Append(ctx context.Context, c *ckptstore.Checkpoint, expected string, w ckptstore.Writer) error {
	err := m.store.Append(ctx, c, expected, w)
	if is(err, ckptstore.ErrWriterLost) {
		if old, _ := m.store.Get(ctx, c.ID); old != nil {
			return errorf(ckptstore.ErrDuplicateID, "%q", c.ID)
		}
	}
	return err
}

type appendHeadBeforeDup struct{ store }

func (m appendHeadBeforeDup) Append(ctx context.Context, c *ckptstore.Checkpoint, expected string, w ckptstore.Writer) error {
	err := m.store.Append(ctx, c, expected, w)
	if is(err, ckptstore.ErrDuplicateID) {
		if h, _ := m.store.GetHead(ctx, c.ThreadID); h != expected {
			return errorf(ckptstore.ErrConflict, "head %q", h)
		}
	}
	return err
}

type appendParentBeforeHead struct{ store }

func (m appendParentBeforeHead) Append(ctx context.Context, c *ckptstore.Checkpoint, expected string, w ckptstore.Writer) error {
	err := m.store.Append(ctx, c, expected, w)
	if is(err, ckptstore.ErrConflict) && c.ParentCheckpointID != expected {
		return errorf(ckptstore.ErrParentMismatch, "parent %q", c.ParentCheckpointID)
	}
	return err
}

type appendConflictAsMismatch struct{ store }

func (m appendConflictAsMismatch) Append(ctx context.Context, c *ckptstore.Checkpoint, expected string, w ckptstore.Writer) error {
	err := m.store.Append(ctx, c, expected, w)
	if is(err, ckptstore.ErrConflict) {
		return errorf(ckptstore.ErrParentMismatch, "stale head")
	}
	return err
}

type appendSwallowConflict struct{ store }

func (m appendSwallowConflict) Append(ctx context.Context, c *ckptstore.Checkpoint, expected string, w ckptstore.Writer) error {
	if err := m.store.Append(ctx, c, expected, w); !is(err, ckptstore.ErrConflict) {
		return err
	}
	return nil
}

type appendSwallowInvalid struct{ store }

func (m appendSwallowInvalid) Append(ctx context.Context, c *ckptstore.Checkpoint, expected string, w ckptstore.Writer) error {
	if err := m.store.Append(ctx, c, expected, w); !is(err, ckptstore.ErrInvalidEntry) {
		return err
	}
	return nil
}

type appendNoop struct{ store }

func (m appendNoop) Append(ctx context.Context, c *ckptstore.Checkpoint, expected string, w ckptstore.Writer) error {
	return nil
}

// appendSharedInput keeps the caller's checkpoint and hands it back from
// Get while the stored one is what was appended, as a store that stores
// the pointer would.
type appendSharedInput struct {
	store
	shared
}

func (m *appendSharedInput) Append(ctx context.Context, c *ckptstore.Checkpoint, expected string, w ckptstore.Writer) error {
	err := m.store.Append(ctx, c, expected, w)
	if err == nil {
		m.keep(c)
	}
	return err
}

func (m *appendSharedInput) Get(ctx context.Context, id string) (*ckptstore.Checkpoint, error) {
	c, err := m.store.Get(ctx, id)
	return m.share(c), err
}

type appendStaleWriter struct{ *tracked }

func (m appendStaleWriter) Append(ctx context.Context, c *ckptstore.Checkpoint, expected string, w ckptstore.Writer) error {
	err := m.store.Append(ctx, c, expected, w)
	if nw, ok := m.newest(w.ThreadID); ok && is(err, ckptstore.ErrWriterLost) && nw != w {
		return m.store.Append(ctx, c, expected, nw)
	}
	return err
}

type appendIgnoreFence struct{ *tracked }

func (m appendIgnoreFence) Append(ctx context.Context, c *ckptstore.Checkpoint, expected string, w ckptstore.Writer) error {
	if nw, ok := m.newest(w.ThreadID); ok && nw.OwnerToken == w.OwnerToken {
		w.Fence = nw.Fence
	}
	return m.store.Append(ctx, c, expected, w)
}

type appendOtherThreadWriter struct{ *tracked }

func (m appendOtherThreadWriter) Append(ctx context.Context, c *ckptstore.Checkpoint, expected string, w ckptstore.Writer) error {
	err := m.store.Append(ctx, c, expected, w)
	if is(err, ckptstore.ErrWriterLost) && w.ThreadID != c.ThreadID {
		if nw, ok := m.newest(c.ThreadID); ok {
			return m.store.Append(ctx, c, expected, nw)
		}
	}
	return err
}

// noToken drops the caller's op token.
func noToken(ctx context.Context) context.Context { return ckptstore.WithOpToken(ctx, "") }

type appendOpTokenIgnored struct{ store }

func (m appendOpTokenIgnored) Append(ctx context.Context, c *ckptstore.Checkpoint, expected string, w ckptstore.Writer) error {
	return m.store.Append(noToken(ctx), c, expected, w)
}

// appendFailedTokenSucceeds remembers the op tokens of failed Appends and
// reports their repeats as done.
type appendFailedTokenSucceeds struct {
	store
	mu     sync.Mutex
	failed map[string]bool
}

func (m *appendFailedTokenSucceeds) Append(ctx context.Context, c *ckptstore.Checkpoint, expected string, w ckptstore.Writer) error {
	tok, ok := driver.OpToken(ctx)
	m.mu.Lock()
	repeat := ok && m.failed[tok]
	m.mu.Unlock()
	if repeat {
		return nil
	}
	err := m.store.Append(ctx, c, expected, w)
	if ok && err != nil && ckptstore.Code(err) != "" {
		m.mu.Lock()
		m.failed[tok] = true
		m.mu.Unlock()
	}
	return err
}

type appendIgnoresCtx struct{ store }

func (m appendIgnoresCtx) Append(ctx context.Context, c *ckptstore.Checkpoint, expected string, w ckptstore.Writer) error {
	return m.store.Append(context.WithoutCancel(ctx), c, expected, w)
}

// ---- leases ----

type acquireStealsLive struct{ *tracked }

func (m acquireStealsLive) AcquireWriter(ctx context.Context, thread string) (*ckptstore.Lease, error) {
	l, err := m.tracked.AcquireWriter(ctx, thread)
	if nw, ok := m.newest(thread); ok && is(err, ckptstore.ErrWriterConflict) {
		_ = m.store.Release(ctx, nw)
		return m.tracked.AcquireWriter(ctx, thread)
	}
	return l, err
}

type acquireConflictAsLost struct{ store }

func (m acquireConflictAsLost) AcquireWriter(ctx context.Context, thread string) (*ckptstore.Lease, error) {
	l, err := m.store.AcquireWriter(ctx, thread)
	if is(err, ckptstore.ErrWriterConflict) {
		return nil, errorf(ckptstore.ErrWriterLost, "%q", thread)
	}
	return l, err
}

type acquireOpTokenIgnored struct{ store }

func (m acquireOpTokenIgnored) AcquireWriter(ctx context.Context, thread string) (*ckptstore.Lease, error) {
	return m.store.AcquireWriter(noToken(ctx), thread)
}

type acquireRenewAfterLease struct{ store }

func (m acquireRenewAfterLease) AcquireWriter(ctx context.Context, thread string) (*ckptstore.Lease, error) {
	l, err := m.store.AcquireWriter(ctx, thread)
	if err == nil {
		l.RenewAfter += time.Millisecond
	}
	return l, err
}

// lateExpiry runs on a store whose leases last 1 ms longer than it
// reports, as if it tested now > expiresAt instead of now >= expiresAt.
type lateExpiry struct{ store }

func (m *lateExpiry) AcquireWriter(ctx context.Context, thread string) (*ckptstore.Lease, error) {
	l, err := m.store.AcquireWriter(ctx, thread)
	if err != nil {
		return l, err
	}
	return driver.NewLease(l.Writer, l.ExpiresAt.Add(-time.Millisecond), l.RenewAfter, m), nil
}

func (m *lateExpiry) Renew(ctx context.Context, w ckptstore.Writer) (time.Time, error) {
	t, err := m.store.Renew(ctx, w)
	if err == nil {
		t = t.Add(-time.Millisecond)
	}
	return t, err
}

// renewNoop reports a renewal it does not make.
type renewNoop struct {
	store
	now func() time.Time
	d   time.Duration
}

func (m *renewNoop) AcquireWriter(ctx context.Context, thread string) (*ckptstore.Lease, error) {
	l, err := m.store.AcquireWriter(ctx, thread)
	return rekeep(l, err, m)
}

func (m *renewNoop) Renew(ctx context.Context, w ckptstore.Writer) (time.Time, error) {
	return m.now().Truncate(time.Millisecond).Add(m.d), nil
}

// renewFromOldExpiry reports (and asks for) an expiry one lease duration
// after the old expiry instead of after now: the store's renewal happens,
// the reported instant is wrong.
type renewFromOldExpiry struct {
	store
	d      time.Duration
	mu     sync.Mutex
	expiry map[string]time.Time // by owner token
}

func (m *renewFromOldExpiry) AcquireWriter(ctx context.Context, thread string) (*ckptstore.Lease, error) {
	l, err := m.store.AcquireWriter(ctx, thread)
	if err == nil {
		m.mu.Lock()
		m.expiry[l.OwnerToken] = l.ExpiresAt
		m.mu.Unlock()
	}
	return rekeep(l, err, m)
}

func (m *renewFromOldExpiry) Renew(ctx context.Context, w ckptstore.Writer) (time.Time, error) {
	t, err := m.store.Renew(ctx, w)
	if err != nil {
		return t, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.expiry[w.OwnerToken]; ok {
		t = old.Add(m.d)
	}
	m.expiry[w.OwnerToken] = t
	return t, nil
}

// renewLostOK reports a successful renewal for a lost writer.
type renewLostOK struct {
	store
	now func() time.Time
	d   time.Duration
}

func (m *renewLostOK) AcquireWriter(ctx context.Context, thread string) (*ckptstore.Lease, error) {
	l, err := m.store.AcquireWriter(ctx, thread)
	return rekeep(l, err, m)
}

func (m *renewLostOK) Renew(ctx context.Context, w ckptstore.Writer) (time.Time, error) {
	t, err := m.store.Renew(ctx, w)
	if is(err, ckptstore.ErrWriterLost) {
		return m.now().Truncate(time.Millisecond).Add(m.d), nil
	}
	return t, err
}

// releaseAny releases the thread's newest lease whatever writer it is
// given.
type releaseAny struct{ *tracked }

func (m *releaseAny) AcquireWriter(ctx context.Context, thread string) (*ckptstore.Lease, error) {
	l, err := m.tracked.AcquireWriter(ctx, thread)
	return rekeep(l, err, m)
}

func (m *releaseAny) Release(ctx context.Context, w ckptstore.Writer) error {
	if nw, ok := m.newest(w.ThreadID); ok {
		w = nw
	}
	return m.store.Release(ctx, w)
}

type releaseNoop struct{ store }

func (m *releaseNoop) AcquireWriter(ctx context.Context, thread string) (*ckptstore.Lease, error) {
	l, err := m.store.AcquireWriter(ctx, thread)
	return rekeep(l, err, m)
}

func (m *releaseNoop) Release(context.Context, ckptstore.Writer) error { return nil }

// ---- DeleteHead ----

type dhSwallowNotHead struct{ store }

func (m dhSwallowNotHead) DeleteHead(ctx context.Context, thread, id string, w ckptstore.Writer) error {
	if err := m.store.DeleteHead(ctx, thread, id, w); !is(err, ckptstore.ErrNotHead) {
		return err
	}
	return nil
}

type dhNotHeadBeforeWriter struct{ store }

func (m dhNotHeadBeforeWriter) DeleteHead(ctx context.Context, thread, id string, w ckptstore.Writer) error {
	err := m.store.DeleteHead(ctx, thread, id, w)
	if is(err, ckptstore.ErrWriterLost) {
		if h, _ := m.store.GetHead(ctx, thread); h != id {
			return errorf(ckptstore.ErrNotHead, "%q", id)
		}
	}
	return err
}

type dhNoop struct{ store }

func (m dhNoop) DeleteHead(context.Context, string, string, ckptstore.Writer) error { return nil }

type dhDeletesHeadAnyway struct{ store }

func (m dhDeletesHeadAnyway) DeleteHead(ctx context.Context, thread, id string, w ckptstore.Writer) error {
	err := m.store.DeleteHead(ctx, thread, id, w)
	if is(err, ckptstore.ErrNotHead) {
		if h, _ := m.store.GetHead(ctx, thread); h != "" {
			return m.store.DeleteHead(ctx, thread, h, w)
		}
	}
	return err
}

type dhOpTokenIgnored struct{ store }

func (m dhOpTokenIgnored) DeleteHead(ctx context.Context, thread, id string, w ckptstore.Writer) error {
	return m.store.DeleteHead(noToken(ctx), thread, id, w)
}

// ---- DeleteCheckpoints ----

type pruneOneTooMany struct{ store }

func (m pruneOneTooMany) DeleteCheckpoints(ctx context.Context, thread string, keep int, w ckptstore.Writer) ([]string, error) {
	if keep > 1 {
		keep--
	}
	return m.store.DeleteCheckpoints(ctx, thread, keep, w)
}

type pruneOneTooFew struct{ store }

func (m pruneOneTooFew) DeleteCheckpoints(ctx context.Context, thread string, keep int, w ckptstore.Writer) ([]string, error) {
	if keep >= 1 && keep < 1<<53-1 {
		keep++
	}
	return m.store.DeleteCheckpoints(ctx, thread, keep, w)
}

type pruneNewestFirst struct{ store }

func (m pruneNewestFirst) DeleteCheckpoints(ctx context.Context, thread string, keep int, w ckptstore.Writer) ([]string, error) {
	d, err := m.store.DeleteCheckpoints(ctx, thread, keep, w)
	slices.Reverse(d)
	return d, err
}

type pruneIDsDropped struct{ store }

func (m pruneIDsDropped) DeleteCheckpoints(ctx context.Context, thread string, keep int, w ckptstore.Writer) ([]string, error) {
	_, err := m.store.DeleteCheckpoints(ctx, thread, keep, w)
	return nil, err
}

type pruneWriterBeforeKeep struct{ store }

func (m pruneWriterBeforeKeep) DeleteCheckpoints(ctx context.Context, thread string, keep int, w ckptstore.Writer) ([]string, error) {
	d, err := m.store.DeleteCheckpoints(ctx, thread, keep, w)
	if is(err, ckptstore.ErrInvalidEntry) {
		// A prune that keeps everything checks the writer alone.
		if _, werr := m.store.DeleteCheckpoints(ctx, thread, 1<<53-1, w); is(werr, ckptstore.ErrWriterLost) {
			return nil, werr
		}
	}
	return d, err
}

type pruneSwallowWriterLost struct{ store }

func (m pruneSwallowWriterLost) DeleteCheckpoints(ctx context.Context, thread string, keep int, w ckptstore.Writer) ([]string, error) {
	d, err := m.store.DeleteCheckpoints(ctx, thread, keep, w)
	if is(err, ckptstore.ErrWriterLost) {
		return nil, nil
	}
	return d, err
}

// ---- ForkFromCheckpoint ----

// forkIntoNonEmpty empties a non-empty destination, then forks into it.
type forkIntoNonEmpty struct{ store }

func (m forkIntoNonEmpty) ForkFromCheckpoint(ctx context.Context, in ckptstore.ForkInput) (*ckptstore.Checkpoint, error) {
	c, err := m.store.ForkFromCheckpoint(ctx, in)
	if is(err, ckptstore.ErrForkDestinationNotEmpty) {
		if _, derr := m.store.DeleteThread(ctx, in.DestinationThreadID, in.Writer); derr == nil {
			return m.store.ForkFromCheckpoint(ctx, in)
		}
	}
	return c, err
}

type forkDestBeforeWriter struct{ store }

func (m forkDestBeforeWriter) ForkFromCheckpoint(ctx context.Context, in ckptstore.ForkInput) (*ckptstore.Checkpoint, error) {
	c, err := m.store.ForkFromCheckpoint(ctx, in)
	if is(err, ckptstore.ErrWriterLost) {
		h, _ := m.store.GetHead(ctx, in.DestinationThreadID)
		l, _ := m.store.List(ctx, in.DestinationThreadID)
		tr, _ := m.store.LoadThread(ctx, in.DestinationThreadID)
		used, _ := m.store.Get(ctx, in.DestinationCheckpointID)
		if h != "" || len(l) > 0 || (tr != nil && string(tr) != "[]") || used != nil {
			return nil, errorf(ckptstore.ErrForkDestinationNotEmpty, "%q", in.DestinationThreadID)
		}
	}
	return c, err
}

type forkMismatchAsNotFound struct{ store }

func (m forkMismatchAsNotFound) ForkFromCheckpoint(ctx context.Context, in ckptstore.ForkInput) (*ckptstore.Checkpoint, error) {
	c, err := m.store.ForkFromCheckpoint(ctx, in)
	if is(err, ckptstore.ErrForkSourceThreadMismatch) {
		return nil, errorf(ckptstore.ErrForkSourceNotFound, "%q", in.SourceCheckpointID)
	}
	return c, err
}

type forkKeepsLabel struct{ store }

func (m forkKeepsLabel) ForkFromCheckpoint(ctx context.Context, in ckptstore.ForkInput) (*ckptstore.Checkpoint, error) {
	c, err := m.store.ForkFromCheckpoint(ctx, in)
	if err == nil {
		if src, _ := m.store.Get(ctx, in.SourceCheckpointID); src != nil {
			c.Label, c.SourceRunID = src.Label, src.SourceRunID
		}
	}
	return c, err
}

type forkSourceCreatedAt struct{ store }

func (m forkSourceCreatedAt) ForkFromCheckpoint(ctx context.Context, in ckptstore.ForkInput) (*ckptstore.Checkpoint, error) {
	if src, _ := m.store.Get(ctx, in.SourceCheckpointID); src != nil {
		in.CreatedAt = src.CreatedAt
	}
	return m.store.ForkFromCheckpoint(ctx, in)
}

type forkTranscriptEmpty struct{ store }

func (m forkTranscriptEmpty) ForkFromCheckpoint(ctx context.Context, in ckptstore.ForkInput) (*ckptstore.Checkpoint, error) {
	c, err := m.store.ForkFromCheckpoint(ctx, in)
	if err == nil {
		_ = m.store.SaveThread(ctx, in.DestinationThreadID, json.RawMessage("[]"))
	}
	return c, err
}

type forkOpTokenIgnored struct{ store }

func (m forkOpTokenIgnored) ForkFromCheckpoint(ctx context.Context, in ckptstore.ForkInput) (*ckptstore.Checkpoint, error) {
	return m.store.ForkFromCheckpoint(noToken(ctx), in)
}

type forkOtherThreadWriter struct{ *tracked }

func (m forkOtherThreadWriter) ForkFromCheckpoint(ctx context.Context, in ckptstore.ForkInput) (*ckptstore.Checkpoint, error) {
	c, err := m.store.ForkFromCheckpoint(ctx, in)
	if is(err, ckptstore.ErrWriterLost) && in.Writer.ThreadID != in.DestinationThreadID {
		if nw, ok := m.newest(in.DestinationThreadID); ok {
			in.Writer = nw
			return m.store.ForkFromCheckpoint(ctx, in)
		}
	}
	return c, err
}

// ---- transcripts ----

type saveDropped struct{ store }

func (m saveDropped) SaveThread(context.Context, string, json.RawMessage) error { return nil }

type saveSwallowInvalid struct{ store }

func (m saveSwallowInvalid) SaveThread(ctx context.Context, thread string, msgs json.RawMessage) error {
	if err := m.store.SaveThread(ctx, thread, msgs); !is(err, ckptstore.ErrInvalidEntry) {
		return err
	}
	return nil
}

type loadNoDefault struct{ store }

func (m loadNoDefault) LoadThread(ctx context.Context, thread string) (json.RawMessage, error) {
	tr, err := m.store.LoadThread(ctx, thread)
	if err == nil && string(tr) == "[]" {
		return json.RawMessage("null"), nil
	}
	return tr, err
}

// saveShared keeps the caller's bytes and loads them back while the
// transcript is what was saved.
type saveShared struct {
	store
	sharedBytes
}

func (m *saveShared) SaveThread(ctx context.Context, thread string, msgs json.RawMessage) error {
	err := m.store.SaveThread(ctx, thread, msgs)
	if err == nil {
		m.keep(thread, msgs)
	}
	return err
}

func (m *saveShared) LoadThread(ctx context.Context, thread string) (json.RawMessage, error) {
	tr, err := m.store.LoadThread(ctx, thread)
	return m.share(thread, tr), err
}

// loadShared hands every LoadThread of a thread one shared slice while
// the transcript stays the same.
type loadShared struct {
	store
	sharedBytes
}

func (m *loadShared) LoadThread(ctx context.Context, thread string) (json.RawMessage, error) {
	tr, err := m.store.LoadThread(ctx, thread)
	return m.share(thread, tr), err
}

// ---- DeleteThread ----

type dtKeepsTranscript struct{ store }

func (m dtKeepsTranscript) DeleteThread(ctx context.Context, thread string, w ckptstore.Writer) (int, error) {
	tr, _ := m.store.LoadThread(ctx, thread)
	n, err := m.store.DeleteThread(ctx, thread, w)
	if err == nil && string(tr) != "[]" {
		_ = m.store.SaveThread(ctx, thread, tr)
	}
	return n, err
}

// dtKeepsOffChain deletes the thread, then imports back the checkpoints
// that were off the head chain.
type dtKeepsOffChain struct{ store }

func (m dtKeepsOffChain) DeleteThread(ctx context.Context, thread string, w ckptstore.Writer) (int, error) {
	l, _ := m.store.List(ctx, thread)
	h, _ := m.store.GetHead(ctx, thread)
	on := chain(h, l)
	off := slices.DeleteFunc(l, func(c *ckptstore.Checkpoint) bool { return on[c.ID] })
	n, err := m.store.DeleteThread(ctx, thread, w)
	if err != nil || len(off) == 0 {
		return n, err
	}
	if _, err := m.store.Import(ctx, ckptstore.ImportBatch{ThreadID: thread, Checkpoints: off, Writer: w}); err != nil {
		return n, err
	}
	return n - len(off), nil
}

type dtCountPlusOne struct{ store }

func (m dtCountPlusOne) DeleteThread(ctx context.Context, thread string, w ckptstore.Writer) (int, error) {
	n, err := m.store.DeleteThread(ctx, thread, w)
	if err == nil {
		n++
	}
	return n, err
}

type dtEndsLease struct{ store }

func (m dtEndsLease) DeleteThread(ctx context.Context, thread string, w ckptstore.Writer) (int, error) {
	n, err := m.store.DeleteThread(ctx, thread, w)
	if err == nil {
		_ = m.store.Release(ctx, w)
	}
	return n, err
}

type dtSwallowWriterLost struct{ store }

type dtOtherThreadWriter struct{ *tracked }

func (m dtOtherThreadWriter) DeleteThread(ctx context.Context, thread string, w ckptstore.Writer) (int, error) {
	n, err := m.store.DeleteThread(ctx, thread, w)
	if is(err, ckptstore.ErrWriterLost) && w.ThreadID != thread {
		if nw, ok := m.newest(thread); ok {
			return m.store.DeleteThread(ctx, thread, nw)
		}
	}
	return n, err
}

func (m dtSwallowWriterLost) DeleteThread(ctx context.Context, thread string, w ckptstore.Writer) (int, error) {
	n, err := m.store.DeleteThread(ctx, thread, w)
	if is(err, ckptstore.ErrWriterLost) {
		return 0, nil
	}
	return n, err
}

// ---- ListPage ----

// pageRepeatsCursor starts a page at the cursor's checkpoint instead of
// after it.
type pageRepeatsCursor struct{ store }

func (m pageRepeatsCursor) ListPage(ctx context.Context, thread string, opt ckptstore.ListOptions) ([]*ckptstore.Checkpoint, string, error) {
	page, next, err := m.store.ListPage(ctx, thread, opt)
	if err != nil || opt.After == "" {
		return page, next, err
	}
	pos, _ := driver.DecodeCursor(opt.After)
	if c, _ := m.store.Get(ctx, pos.ID); c != nil && c.ThreadID == thread && c.CreatedAt == pos.CreatedAt {
		page = append([]*ckptstore.Checkpoint{c}, page...)
		if limit := cmp.Or(opt.Limit, driver.DefaultPageLimit); len(page) > limit {
			page = page[:limit]
		}
	}
	return page, next, nil
}

type pageLimitPlusOne struct{ store }

func (m pageLimitPlusOne) ListPage(ctx context.Context, thread string, opt ckptstore.ListOptions) ([]*ckptstore.Checkpoint, string, error) {
	if opt.Limit > 0 && opt.Limit < driver.MaxPageLimit {
		opt.Limit++
	}
	return m.store.ListPage(ctx, thread, opt)
}

type pageNextMissing struct{ store }

func (m pageNextMissing) ListPage(ctx context.Context, thread string, opt ckptstore.ListOptions) ([]*ckptstore.Checkpoint, string, error) {
	page, _, err := m.store.ListPage(ctx, thread, opt)
	return page, "", err
}

type pageReverseIgnored struct{ store }

func (m pageReverseIgnored) ListPage(ctx context.Context, thread string, opt ckptstore.ListOptions) ([]*ckptstore.Checkpoint, string, error) {
	opt.Reverse = false
	return m.store.ListPage(ctx, thread, opt)
}

type pageBadCursorFromStart struct{ store }

func (m pageBadCursorFromStart) ListPage(ctx context.Context, thread string, opt ckptstore.ListOptions) ([]*ckptstore.Checkpoint, string, error) {
	page, next, err := m.store.ListPage(ctx, thread, opt)
	if is(err, ckptstore.ErrInvalidEntry) && opt.After != "" {
		opt.After = ""
		return m.store.ListPage(ctx, thread, opt)
	}
	return page, next, err
}

// ---- Threads ----

type threadsNeedCheckpoints struct{ store }

func (m threadsNeedCheckpoints) Threads(ctx context.Context, after string, limit int) ([]string, string, error) {
	ids, next, err := m.store.Threads(ctx, after, limit)
	if err != nil {
		return ids, next, err
	}
	return slices.DeleteFunc(ids, func(id string) bool {
		h, _ := m.store.GetHead(ctx, id)
		l, _ := m.store.List(ctx, id)
		return h == "" && len(l) == 0
	}), next, nil
}

// threadsWithLeases lists, on a first page that holds every thread, the
// threads that only have a lease too.
type threadsWithLeases struct{ *tracked }

func (m threadsWithLeases) Threads(ctx context.Context, after string, limit int) ([]string, string, error) {
	ids, next, err := m.store.Threads(ctx, after, limit)
	if err != nil || after != "" || next != "" {
		return ids, next, err
	}
	m.mu.Lock()
	for th := range m.latest {
		if !slices.Contains(ids, th) {
			ids = append(ids, th)
		}
	}
	m.mu.Unlock()
	slices.Sort(ids)
	if n := cmp.Or(limit, driver.DefaultPageLimit); len(ids) > n {
		ids = ids[:n]
	}
	return ids, next, nil
}

type threadsUnsorted struct{ store }

// threadsKeepsEmptied lists, on a first page that holds every thread, the
// threads it ever appended to, emptied or not.
type threadsKeepsEmptied struct {
	store
	mu      sync.Mutex
	written map[string]bool
}

func (m *threadsKeepsEmptied) Append(ctx context.Context, c *ckptstore.Checkpoint, expected string, w ckptstore.Writer) error {
	err := m.store.Append(ctx, c, expected, w)
	if err == nil {
		m.mu.Lock()
		m.written[c.ThreadID] = true
		m.mu.Unlock()
	}
	return err
}

func (m *threadsKeepsEmptied) Threads(ctx context.Context, after string, limit int) ([]string, string, error) {
	ids, next, err := m.store.Threads(ctx, after, limit)
	if err != nil || after != "" || next != "" {
		return ids, next, err
	}
	m.mu.Lock()
	for th := range m.written {
		if !slices.Contains(ids, th) {
			ids = append(ids, th)
		}
	}
	m.mu.Unlock()
	slices.Sort(ids)
	if n := cmp.Or(limit, driver.DefaultPageLimit); len(ids) > n {
		ids = ids[:n]
	}
	return ids, next, nil
}

func (m threadsUnsorted) Threads(ctx context.Context, after string, limit int) ([]string, string, error) {
	ids, next, err := m.store.Threads(ctx, after, limit)
	slices.Reverse(ids)
	return ids, next, err
}

type threadsLimitIgnored struct{ store }

func (m threadsLimitIgnored) Threads(ctx context.Context, after string, limit int) ([]string, string, error) {
	if limit > 0 && limit <= driver.MaxPageLimit {
		limit = driver.MaxPageLimit
	}
	return m.store.Threads(ctx, after, limit)
}

type threadsNextMissing struct{ store }

func (m threadsNextMissing) Threads(ctx context.Context, after string, limit int) ([]string, string, error) {
	ids, _, err := m.store.Threads(ctx, after, limit)
	return ids, "", err
}

// ---- Import ----

type importRepeatFails struct{ store }

func (m importRepeatFails) Import(ctx context.Context, b ckptstore.ImportBatch) (int, error) {
	n, err := m.store.Import(ctx, b)
	if err == nil && len(b.Checkpoints) > 0 && n == 0 {
		return 0, errorf(ckptstore.ErrDuplicateID, "batch already stored")
	}
	return n, err
}

type importRepeatCounts struct{ store }

func (m importRepeatCounts) Import(ctx context.Context, b ckptstore.ImportBatch) (int, error) {
	n, err := m.store.Import(ctx, b)
	if err == nil {
		n = len(b.Checkpoints)
	}
	return n, err
}

type importSkipsOtherContent struct{ store }

func (m importSkipsOtherContent) Import(ctx context.Context, b ckptstore.ImportBatch) (int, error) {
	n, err := m.store.Import(ctx, b)
	if !is(err, ckptstore.ErrDuplicateID) {
		return n, err
	}
	// Retry without the checkpoints stored in this thread, whatever their
	// content.
	b.Checkpoints = slices.DeleteFunc(slices.Clone(b.Checkpoints), func(c *ckptstore.Checkpoint) bool {
		old, _ := m.store.Get(ctx, c.ID)
		return old != nil && old.ThreadID == b.ThreadID
	})
	return m.store.Import(ctx, b)
}

type importHeadIgnored struct{ store }

func (m importHeadIgnored) Import(ctx context.Context, b ckptstore.ImportBatch) (int, error) {
	if b.Head == "" || utf8.ValidString(b.Head) { // a head that passes the id check
		b.SetHead = false
	}
	return m.store.Import(ctx, b)
}

type importHeadConflictSkipped struct{ store }

func (m importHeadConflictSkipped) Import(ctx context.Context, b ckptstore.ImportBatch) (int, error) {
	n, err := m.store.Import(ctx, b)
	if is(err, ckptstore.ErrConflict) {
		b.SetHead = false
		return m.store.Import(ctx, b)
	}
	return n, err
}

type importTranscriptIgnored struct{ store }

func (m importTranscriptIgnored) Import(ctx context.Context, b ckptstore.ImportBatch) (int, error) {
	var msgs []json.RawMessage
	if json.Unmarshal(b.Transcript, &msgs) == nil { // a transcript that passes the content check
		b.Transcript = nil
	}
	return m.store.Import(ctx, b)
}

type importDupBeforeWriter struct{ store }

func (m importDupBeforeWriter) Import(ctx context.Context, b ckptstore.ImportBatch) (int, error) {
	n, err := m.store.Import(ctx, b)
	if !is(err, ckptstore.ErrWriterLost) {
		return n, err
	}
	for _, c := range b.Checkpoints {
		if old, _ := m.store.Get(ctx, c.ID); old != nil && (old.ThreadID != b.ThreadID || !driver.EqualCheckpoints(old, c)) {
			return 0, errorf(ckptstore.ErrDuplicateID, "%q", c.ID)
		}
	}
	return n, err
}

// ---- instance store ----

type instUpsertDropped struct{ instances }

func (m instUpsertDropped) Upsert(context.Context, *ckptstore.InstanceRecord) error { return nil }

type instUpsertMerges struct{ instances }

func (m instUpsertMerges) Upsert(ctx context.Context, r *ckptstore.InstanceRecord) error {
	if r != nil && (r.LatestSnapshotID == "" || r.LatestRunID == "") {
		if old, _ := m.instances.Get(ctx, r.Key); old != nil {
			r = r.Clone()
			r.LatestSnapshotID = cmp.Or(r.LatestSnapshotID, old.LatestSnapshotID)
			r.LatestRunID = cmp.Or(r.LatestRunID, old.LatestRunID)
		}
	}
	return m.instances.Upsert(ctx, r)
}

// instGetShared hands every Get of a key one shared record while the
// stored record stays the same.
type instGetShared struct {
	instances
	sharedRecords
}

func (m *instGetShared) Get(ctx context.Context, key string) (*ckptstore.InstanceRecord, error) {
	r, err := m.instances.Get(ctx, key)
	return m.share(r), err
}

// instUpsertShared keeps the caller's record and hands it back from Get
// while the stored record is what was upserted.
type instUpsertShared struct {
	instances
	sharedRecords
}

func (m *instUpsertShared) Upsert(ctx context.Context, r *ckptstore.InstanceRecord) error {
	err := m.instances.Upsert(ctx, r)
	if err == nil {
		m.keep(r)
	}
	return err
}

func (m *instUpsertShared) Get(ctx context.Context, key string) (*ckptstore.InstanceRecord, error) {
	r, err := m.instances.Get(ctx, key)
	return m.share(r), err
}

type instDeleteNoop struct{ instances }

func (m instDeleteNoop) Delete(context.Context, string) error { return nil }

type instLaxKey struct{ instances }

func (m instLaxKey) Get(ctx context.Context, key string) (*ckptstore.InstanceRecord, error) {
	r, err := m.instances.Get(ctx, key)
	if is(err, ckptstore.ErrInvalidID) {
		return nil, nil
	}
	return r, err
}
