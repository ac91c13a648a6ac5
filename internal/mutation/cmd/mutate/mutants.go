package main

// The hand-made mutants. Each is one small edit that breaks a rule of
// SPEC.md (or of the root package's documented API), written as exact old
// and new text. Whitespace runs in old match any whitespace, so the texts
// need not copy the file's indentation; old must match exactly once.
//
// A mutant with an equivalent argument is one that cannot change any
// observable behaviour; it stays in the list to document why, and it is
// excluded from the kill rate only if it survives.

import "strings"

type edit struct{ file, old, new string }

type mutant struct {
	id, desc   string
	edits      []edit
	equivalent string // why behaviour is unchanged; "" for a real mutant
}

// file names the files the mutant edits.
func (m mutant) file() string {
	var fs []string
	for _, e := range m.edits {
		if !strings.Contains(strings.Join(fs, " "), e.file) {
			fs = append(fs, e.file)
		}
	}
	return strings.Join(fs, ", ")
}

const (
	ms    = "memstore/memstore.go"
	mscap = "memstore/capabilities.go"
	pre   = "precheck/precheck.go"
	msop  = "memstore/optokens.go"
	msref = "memstore/blobrefs.go"
	msrec = "memstore/rec.go"
	mscpy = "memstore/copy.go"
	inst  = "memstore/instance.go"
	val   = "validate.go"
	typ   = "types.go"
	opt   = "options.go"
	prn   = "prune.go"
	lse   = "lease.go"
	errs  = "errors.go"
	jsn   = "json.go"
)

func one(id, file, old, new, desc string) mutant {
	return mutant{id: id, desc: desc, edits: []edit{{file, old, new}}}
}

func equiv(m mutant, why string) mutant { m.equivalent = why; return m }

// A stored checkpoint is a packed rec, not a *ckptstore.Checkpoint, so a
// read can no longer return it and a write can no longer keep the
// caller's. The nearest bugs the layout allows share the one array of a
// rec that a caller can write into, the conversation bytes: a read whose
// copy points at the stored bytes (shareConv), or a write whose rec reads
// the caller's bytes after the call (keepCallerConv, with the rec's src
// field set by the write's own edit).

// shareConv is Go that points the copy c's conversation at the stored
// bytes of the rec r (a caller writing into it writes into the store).
func shareConv(c, r string) string {
	return "if len(" + c + ".Conversation) > 0 { " + c + ".Conversation = unsafe.Slice(unsafe.StringData(" + r +
		".conversation()), len(" + c + ".Conversation)) }"
}

// importUnsafe adds unsafe to the imports of a file that has "slices" and
// not unsafe, for shareConv.
func importUnsafe(file string) edit { return edit{file, `"slices"`, "\"slices\"\n\t\"unsafe\""} }

// keepCallerConv gives rec a field src that, when set, replaces the
// packed conversation: the bytes are read from it at every read.
var keepCallerConv = []edit{
	{msrec, `convFrom uint32 // the conversation is text[convFrom:], last`, "convFrom uint32\n\tsrc []byte // the caller's conversation (mutant)"},
	{msrec, `func (r *rec) conversation() string { return r.text[r.convFrom:] }`,
		`func (r *rec) conversation() string { if r.src != nil { return string(r.src) }; return r.text[r.convFrom:] }`},
}

// Blocks of memstore's Append, reused by the swap mutants.
const (
	appendWriter = `if err := s.checkWriter(w, now); err != nil { return err }`
	appendDup    = `if _, dup := s.checkpoints[c.ID]; dup { return fmt.Errorf("%w: %q", ckptstore.ErrDuplicateID, c.ID) }`
	appendThread = `th := s.thread(c.ThreadID, true)`
	appendHead   = `if th.head != expectedHeadID { return fmt.Errorf("%w: head of thread %q is %q, expected %q", ckptstore.ErrConflict, c.ThreadID, th.head, expectedHeadID) }`
	appendParent = `if c.ParentCheckpointID != expectedHeadID { return fmt.Errorf("%w: parent %q, expected head %q", ckptstore.ErrParentMismatch, c.ParentCheckpointID, expectedHeadID) }`

	forkNotFound = `src, ok := s.checkpoints[in.SourceCheckpointID]
	if !ok { return nil, fmt.Errorf("%w: %q", ckptstore.ErrForkSourceNotFound, in.SourceCheckpointID) }`
	forkMismatch = `if src.ThreadID != in.SourceThreadID { return nil, fmt.Errorf("%w: checkpoint %q is in thread %q, not %q", ckptstore.ErrForkSourceThreadMismatch, src.ID, src.ThreadID, in.SourceThreadID) }`
	forkWriter   = `if err := precheck.WriterThread(in.Writer, in.DestinationThreadID); err != nil { return nil, err }
	if err := s.checkWriter(in.Writer, now); err != nil { return nil, err }`
	forkDest = `th := s.thread(in.DestinationThreadID, true)
	if th.head != "" || th.cps.Len() > 0 { return nil, fmt.Errorf("%w: thread %q has checkpoints", ckptstore.ErrForkDestinationNotEmpty, in.DestinationThreadID) }
	if th.transcript != nil { return nil, fmt.Errorf("%w: thread %q has a transcript", ckptstore.ErrForkDestinationNotEmpty, in.DestinationThreadID) }
	if _, used := s.checkpoints[in.DestinationCheckpointID]; used { return nil, fmt.Errorf("%w: checkpoint id %q is used", ckptstore.ErrForkDestinationNotEmpty, in.DestinationCheckpointID) }`

	forkIDsLoop = `for _, id := range []struct{ what, id string }{ {"source thread id", in.SourceThreadID}, {"source checkpoint id", in.SourceCheckpointID}, {"destination thread id", in.DestinationThreadID}, {"destination checkpoint id", in.DestinationCheckpointID}, {"writer thread id", in.Writer.ThreadID}, } { if err := ValidateID(id.what, id.id); err != nil { return err } }`
	forkCreated = `if !finite(in.CreatedAt) { return fmt.Errorf("%w: createdAt %v is not finite", ErrInvalidEntry, in.CreatedAt) }`
	forkSame    = `if in.SourceThreadID == in.DestinationThreadID { return fmt.Errorf("%w: source and destination are both thread %q", ErrForkSourceThreadMismatch, in.SourceThreadID) }`

	pruneIDs = `if err := ValidateID("thread id", threadID); err != nil { return err }
	if err := ValidateID("writer thread id", w.ThreadID); err != nil { return err }`
	pruneKeep = `if keep < 1 || int64(keep) > MaxSize { // int64: MaxSize overflows a 32-bit int
	return fmt.Errorf("%w: keep must be an integer from 1 to 2^53-1, got %d", ErrInvalidEntry, keep) }`
)

// compareUTF16 is the body the utf16 mutant adds to types.go: it compares
// ids by their UTF-16 code units, as JavaScript's < does, not by bytes.
const compareUTF16 = `
func compareUTF16(a, b string) int {
	units := func(s string) []int {
		var u []int
		for _, r := range s {
			if r >= 0x10000 {
				r -= 0x10000
				u = append(u, 0xD800+int(r>>10), 0xDC00+int(r&0x3FF))
			} else {
				u = append(u, int(r))
			}
		}
		return u
	}
	return slices.Compare(units(a), units(b))
}
`

var mutants = []mutant{
	// ---- memstore: Append and its check order ----
	one("ms-append-no-validate", ms, `if err := precheck.Append(ctx, cp, expectedHeadID, w); err != nil { return err }`, ``,
		"Append skips checks 1 and 2 (ids, entries)"),
	one("ms-append-skip-writer", ms, appendWriter+" "+appendDup, appendDup, "Append skips check 3 (writer)"),
	one("ms-append-skip-dup", ms, appendDup, ``, "Append skips check 4 (duplicate id)"),
	one("ms-append-skip-head", ms, `if th.head != expectedHeadID {`, `if false {`, "Append skips check 5 (expected head)"),
	one("ms-append-skip-parent", ms, `if c.ParentCheckpointID != expectedHeadID {`, `if false {`, "Append skips check 6 (parent)"),
	{id: "ms-append-swap-validate-writer", desc: "Append checks the writer (3) before ids and entries (1, 2)", edits: []edit{
		{ms, `if err := precheck.Append(ctx, cp, expectedHeadID, w); err != nil { return err }`, `if cp == nil { return ckptstore.ErrInvalidEntry }`},
		{ms, appendWriter + " " + appendDup, appendWriter + "\n\tif err := precheck.Append(ctx, cp, expectedHeadID, w); err != nil { return err }\n" + appendDup},
	}},
	{id: "ms-append-swap-entries-writer", desc: "Append checks the writer (3) before entries (2)", edits: []edit{
		{val, `if err := validateOptionalID("parentCheckpointId", cp.ParentCheckpointID); err != nil { return err } return validateContent(cp)`,
			`if err := validateOptionalID("parentCheckpointId", cp.ParentCheckpointID); err != nil { return err }; return nil`},
		{ms, appendWriter + " " + appendDup, appendWriter + "\n\tif err := driver.Validate(cp); err != nil { return err }\n" + appendDup},
	}},
	one("ms-append-swap-writer-dup", ms, appendWriter+" "+appendDup, appendDup+"\n"+appendWriter,
		"Append checks duplicate id (4) before writer (3)"),
	one("ms-append-swap-dup-head", ms, appendDup+" "+appendThread+" "+appendHead, appendThread+"\n"+appendHead+"\n"+appendDup,
		"Append checks expected head (5) before duplicate id (4)"),
	one("ms-append-swap-head-parent", ms, appendHead+" "+appendParent, appendParent+"\n"+appendHead,
		"Append checks parent (6) before expected head (5)"),
	{id: "ms-append-no-clone", desc: "Append keeps reading the caller's conversation bytes instead of a copy " +
		"(it can no longer store the caller's checkpoint: a stored checkpoint is a packed rec)",
		edits: append(keepCallerConv[:len(keepCallerConv):len(keepCallerConv)],
			edit{ms, `c, err := pack(cp)`, `c, err := pack(cp); if err == nil { c.src = cp.Conversation }`})},
	one("ms-append-no-ctx", ms, `if err := precheck.Append(ctx, cp, expectedHeadID, w); err != nil { return err }`,
		`if err := precheck.Append(context.Background(), cp, expectedHeadID, w); err != nil { return err }`,
		"Append ignores a cancelled context"),
	one("ms-insert-no-refs", ms, `s.refs.add(r, c, like)`, ``, "Append/Fork do not count blob references"),
	one("ms-refs-like-any-key", msref, `&& like.files[i].key == f.key`, ``,
		"a file takes the count of its parent's entry at the same index, whatever its key"),
	one("ms-refs-like-other-index", msref, `f.ref = like.files[i].ref`, `f.ref = like.files[0].ref`,
		"a file whose key is its parent's at its index takes the count of the parent's first entry"),
	equiv(one("ms-append-no-like", ms, `s.insert(th, c, cp, s.checkpoints[expectedHeadID])`, `s.insert(th, c, cp, s.checkpoints[c.ID])`,
		"an Append takes counts by index from itself (nil) instead of its parent"),
		"like only saves lookups by key: with nil every key is looked up, and the counts are the same"),

	// ---- memstore: the writer check ----
	one("pre-writer-any-thread", pre, `if w.ThreadID != threadID {`, `if false {`, "a writer of another thread may write (precheck.WriterThread)"),
	one("ms-writer-no-token", ms, `if l.token != w.OwnerToken || l.fence != w.Fence {`, `if l.fence != w.Fence {`,
		"the writer's ownerToken is not checked"),
	one("ms-writer-no-fence", ms, `if l.token != w.OwnerToken || l.fence != w.Fence {`, `if l.token != w.OwnerToken {`,
		"the writer's fence is not checked"),
	one("ms-writer-expiry-boundary", ms, `if !now.Before(l.expiresAt) {`, `if now.After(l.expiresAt) {`,
		"a lease is still live at now == expiresAt"),
	one("ms-writer-no-expiry", ms, `if !now.Before(l.expiresAt) {`, `if false {`, "an expired lease may still write"),
	one("ms-writer-released-panics", ms, `if th == nil || th.lease == nil {`, `if th == nil {`,
		"a released lease is dereferenced (panic)"),

	// ---- memstore: DeleteHead ----
	one("ms-deletehead-skip-writer", ms, `if err := s.checkWriter(w, now); err != nil { return err } th := s.threads[threadID] c, ok := s.checkpoints[checkpointID]`,
		`th := s.threads[threadID]; if th == nil { th = &thread{} }; c, ok := s.checkpoints[checkpointID]`, "DeleteHead skips the writer check"),
	one("ms-deletehead-swap-writer-nothead", ms,
		`if err := s.checkWriter(w, now); err != nil { return err } th := s.threads[threadID] c, ok := s.checkpoints[checkpointID] if th.head != checkpointID || !ok || c.ThreadID != threadID { return fmt.Errorf("%w: %q is not the head of thread %q", ckptstore.ErrNotHead, checkpointID, threadID) }`,
		`th := s.threads[threadID]
	c, ok := s.checkpoints[checkpointID]
	if th == nil || th.head != checkpointID || !ok || c.ThreadID != threadID {
		return fmt.Errorf("%w: %q is not the head of thread %q", ckptstore.ErrNotHead, checkpointID, threadID)
	}
	if err := s.checkWriter(w, now); err != nil {
		return err
	}`, "DeleteHead checks not-head before the writer"),
	one("ms-deletehead-any", ms, `if th.head != checkpointID || !ok || c.ThreadID != threadID {`, `if !ok || c.ThreadID != threadID {`,
		"DeleteHead deletes any checkpoint of the thread, not only the head"),
	one("ms-deletehead-missing", ms, `if th.head != checkpointID || !ok || c.ThreadID != threadID {`, `if th.head != checkpointID || c.ThreadID != threadID || !ok && false {`,
		"DeleteHead of a head whose checkpoint is gone dereferences nil"),
	one("ms-deletehead-foreign", ms, `if th.head != checkpointID || !ok || c.ThreadID != threadID {`, `if th.head != checkpointID || !ok {`,
		"DeleteHead deletes another thread's checkpoint that the head names"),
	one("ms-deletehead-head-empty", ms, `th.head = c.ParentCheckpointID`, `th.head = ""`, "DeleteHead empties the head instead of moving it to the parent"),
	one("ms-deletehead-head-stays", ms, `th.head = c.ParentCheckpointID`, `_ = c`, "DeleteHead leaves the head naming the deleted checkpoint"),

	// ---- memstore: blob counts on delete ----
	one("ms-remove-keep-zero", msref, `if r.slots[it.at].n > 0 {`, `if true {`,
		"a count that reaches 0 is kept (listed at 0), not forgotten"),
	one("ms-remove-no-drop", ms, `s.refs.drop(c)`, ``,
		"deleting a checkpoint does not drop its blob counts"),
	one("ms-remove-drop-at-two", msref, `if b.n--; b.n == 0 {`, `if b.n--; b.n <= 1 {`, "a count of 2 is forgotten instead of becoming 1"),
	one("ms-refs-per-entry", msref, `if b := &r.slots[at]; b.seen != r.change { b.seen = r.change b.n++ }`, `r.slots[at].n++`,
		"a checkpoint counts a key once per entry that holds it, not once"),
	one("ms-refs-drop-per-entry", msref, `if b.seen == r.change { return }`, ``,
		"deleting a checkpoint drops a key once per entry that holds it"),
	one("ms-refs-no-free", msref, `r.free = append(r.free, it.at) // its one item is gone`, ``,
		"the slots of dead keys are never reused"),
	one("ms-refs-free-early", msref, `r.byKey[k] = at r.pending = append(r.pending, refItem{k, at})`,
		`r.byKey[k] = at
		r.pending = append(r.pending, refItem{k, at})
		if len(r.pending) == 1 { r.free = append(r.free, at) }`,
		"a live key's slot is also on the free list: a new key takes it over"),
	one("ms-remove-keep-member", ms, `th.cps.Delete(c)`, ``, "a deleted checkpoint stays a member of its thread"),
	one("ms-remove-keep-checkpoint", ms, `delete(s.checkpoints, id)`, ``, "a deleted checkpoint stays readable (and its id used)"),

	// ---- memstore: DeleteCheckpoints (prune) ----
	one("ms-prune-skip-writer", ms, `if err := s.checkWriter(w, s.opts.Now()); err != nil { return nil, err } th := s.threads[threadID]`,
		`th := s.threads[threadID]; if th == nil { th = &thread{} }`, "DeleteCheckpoints skips the writer check"),
	one("ms-prune-keep-plus-one", ms, `doomed := chain[keep:]`, `doomed := chain[keep+1:]`, "prune keeps one checkpoint too many"),
	one("ms-prune-keep-minus-one", ms, `doomed := chain[keep:]`, `doomed := chain[keep-1:]`, "prune keeps one checkpoint too few"),
	equiv(one("ms-prune-guard-lt", ms, `if len(chain) <= keep {`, `if len(chain) < keep {`, "prune guard < instead of <="),
		"when len(chain) == keep, chain[keep:] is empty and the empty slice is returned: same result"),
	one("ms-prune-order", ms, `slices.Reverse(doomed)`, ``, "prune returns ids nearest the head first"),
	one("ms-prune-cross-thread", ms, `if !ok || c.ThreadID != threadID {`, `if !ok {`, "prune follows the chain through other threads' checkpoints"),
	one("ms-prune-by-createdat", ms, `for id := th.head; id != "" && !seen[id]; { c, ok := s.checkpoints[id] if !ok || c.ThreadID != threadID { break } seen[id] = true chain = append(chain, id) id = c.ParentCheckpointID }`,
		`_ = seen
	th.cps.Descend(func(c *rec) bool {
		chain = append(chain, c.ID)
		return true
	})`,
		"prune keeps the newest by createdAt (all members) instead of following the parent chain"),
	one("ms-prune-no-cycle-stop", ms, `id != "" && !seen[id];`, `id != "";`, "prune loops forever on a parent cycle made by id reuse"),

	// ---- memstore: ForkFromCheckpoint ----
	one("ms-fork-skip-writer", ms, `if err := s.checkWriter(in.Writer, now); err != nil { return nil, err }`, ``, "Fork skips the writer check"),
	one("ms-fork-skip-writer-thread", ms, `if err := precheck.WriterThread(in.Writer, in.DestinationThreadID); err != nil { return nil, err }`, ``,
		"Fork takes a live writer of another thread as the destination's"),
	one("ms-fork-skip-dest-empty", ms, `if th.head != "" || th.cps.Len() > 0 {`, `if false {`, "Fork into a thread that has checkpoints"),
	one("ms-fork-dest-head-only", ms, `if th.head != "" || th.cps.Len() > 0 {`, `if th.head != "" {`,
		"Fork checks only the destination head (Import can store checkpoints under no head)"),
	one("ms-fork-skip-dest-id", ms, `if _, used := s.checkpoints[in.DestinationCheckpointID]; used {`, `if _, used := s.checkpoints[in.DestinationCheckpointID]; used && false {`,
		"Fork reuses a destination id already used in another thread"),
	equiv(one("ms-fork-swap-notfound-mismatch", ms, forkNotFound+" "+forkMismatch,
		`src, ok := s.checkpoints[in.SourceCheckpointID]
	if ok && src.ThreadID != in.SourceThreadID {
		return nil, fmt.Errorf("%w: checkpoint %q is in thread %q, not %q", ckptstore.ErrForkSourceThreadMismatch, src.ID, src.ThreadID, in.SourceThreadID)
	}
	if !ok {
		return nil, fmt.Errorf("%w: %q", ckptstore.ErrForkSourceNotFound, in.SourceCheckpointID)
	}`, "Fork checks source thread before source existence"),
		"a missing source checkpoint is in no thread, so the two checks can never both fail"),
	one("ms-fork-swap-mismatch-writer", ms, forkMismatch+" "+forkWriter, forkWriter+"\n"+forkMismatch,
		"Fork checks the writer before the source's thread"),
	one("ms-fork-writer-first", ms, forkNotFound+" "+forkMismatch+" "+forkWriter, forkWriter+"\n"+forkNotFound+"\n"+forkMismatch,
		"Fork checks the writer before the source exists"),
	one("ms-fork-swap-writer-dest", ms, forkWriter+" "+forkDest, forkDest+"\n"+forkWriter,
		"Fork checks destination-not-empty before the writer"),
	{id: "ms-fork-return-stored", desc: "Fork returns a root whose conversation is the stored root's bytes " +
		"(it can no longer return the stored checkpoint: a stored checkpoint is a packed rec)", edits: []edit{
		{ms, `"time"`, "\"time\"\n\t\"unsafe\""},
		{ms, `return root, nil // the caller's`, shareConv("root", "stored") + "\n\treturn root, nil // the caller's"},
	}},

	// ---- memstore: leases ----
	one("ms-acquire-no-live-check", ms, `if th.lease != nil && now.Before(th.lease.expiresAt) {`, `if false {`,
		"AcquireWriter takes over a live lease"),
	one("ms-acquire-boundary", ms, `if th.lease != nil && now.Before(th.lease.expiresAt) {`, `if th.lease != nil && !now.After(th.lease.expiresAt) {`,
		"AcquireWriter treats a lease as live at now == expiresAt"),
	one("ms-acquire-no-fence-inc", ms, `th.fence++`, ``, "every lease gets fence 0"),
	one("ms-acquire-fixed-token", ms, `token = rand.Text()`, `token = rand.Text()[:0] + "owner"`, "every lease gets the same ownerToken"),
	one("ms-acquire-short-expiry", ms, `expiresAt: now.Add(s.opts.LeaseDuration)`, `expiresAt: now.Add(s.opts.RenewAfter)`,
		"a new lease expires after RenewAfter instead of the lease duration"),
	one("ms-acquire-renewafter", ms, `th.lease.expiresAt, s.opts.RenewAfter, s)`, `th.lease.expiresAt, s.opts.LeaseDuration, s)`,
		"Lease.RenewAfter is the lease duration"),
	one("ms-acquire-no-validate", ms, `if err := precheck.AcquireWriter(ctx, threadID); err != nil { return nil, err }`,
		`if err := ctx.Err(); err != nil { return nil, err }`, "AcquireWriter accepts invalid thread ids"),
	one("ms-release-reset-fence", ms, `th.lease = nil`, `th.lease = nil; th.fence = 0`, "Release resets the fence, so the next lease reuses fence 1"),
	one("ms-release-any", ms, `if th != nil && th.lease != nil && th.lease.token == w.OwnerToken && th.lease.fence == w.Fence {`,
		`if th != nil && th.lease != nil {`, "a stale Release ends the newer lease"),
	one("ms-release-noop", ms, `th.lease = nil`, `_ = th`, "Release does nothing"),
	one("ms-release-token-only", ms, `th.lease.token == w.OwnerToken && th.lease.fence == w.Fence {`, `th.lease.token == w.OwnerToken {`,
		"Release compares only the token (a forged fence with the live token ends the lease)"),
	one("ms-renew-expired", ms, `if err := s.checkWriter(w, now); err != nil { return time.Time{}, err }`,
		`if th := s.threads[w.ThreadID]; th == nil || th.lease == nil || th.lease.token != w.OwnerToken { return time.Time{}, ckptstore.ErrWriterLost }`,
		"Renew revives an expired lease"),
	one("ms-renew-any", ms, `if err := s.checkWriter(w, now); err != nil { return time.Time{}, err }`,
		`if th := s.threads[w.ThreadID]; th == nil || th.lease == nil { return time.Time{}, ckptstore.ErrWriterLost }`,
		"Renew of a replaced or expired lease extends whatever lease the thread has"),
	one("ms-renew-from-old-expiry", ms, `l.expiresAt = now.Add(s.opts.LeaseDuration)`, `l.expiresAt = l.expiresAt.Add(s.opts.LeaseDuration)`,
		"Renew adds the duration to the old expiry instead of to now"),
	one("ms-renew-no-update", ms, `l.expiresAt = now.Add(s.opts.LeaseDuration)`, `_ = now`,
		"Renew succeeds without extending the lease"),

	// ---- memstore: reads ----
	{id: "ms-get-shared", desc: "Get returns a copy whose conversation is the stored bytes " +
		"(it can no longer return the stored pointer: a stored checkpoint is a packed rec)", edits: []edit{
		{ms, `"time"`, "\"time\"\n\t\"unsafe\""},
		{ms, `return s.checkpoints[id].Clone(), nil`, "c := s.checkpoints[id].Clone()\n\tif c != nil { " + shareConv("c", "s.checkpoints[id]") + " }\n\treturn c, nil"},
	}},
	{id: "ms-list-shared", desc: "List returns copies whose conversations are the stored bytes " +
		"(it can no longer return the stored pointers: a stored checkpoint is a packed rec)", edits: []edit{
		{ms, `"time"`, "\"time\"\n\t\"unsafe\""},
		{ms, `return cloneAll(stored), nil`, "out := cloneAll(stored)\n\tfor i, c := range out { " + shareConv("c", "stored[i]") + " }\n\treturn out, nil"},
	}},
	one("ms-list-unsorted", ms, `func listLess(a, b *rec) bool { if c := cmp.Compare(a.CreatedAt, b.CreatedAt); c != 0 { return c < 0 } return a.ID < b.ID }`,
		`func listLess(a, b *rec) bool { _ = cmp.Compare[float64]; return a.ID < b.ID }`, "a thread's checkpoints are kept (and listed) in id order"),
	one("ms-list-desc", ms, `th.cps.Ascend(func(c *rec) bool { stored = append(stored, c)`,
		`th.cps.Descend(func(c *rec) bool { stored = append(stored, c)`, "List newest first"),
	one("ms-blobrefs-unsorted", msref, `slices.SortFunc(r.pending, func(a, b refItem) int { return strings.Compare(a.key, b.key) })`,
		`_, _ = slices.SortFunc[[]refItem], strings.Compare`,
		"new blob keys merge into the sorted run unsorted"),
	one("ms-get-no-validate", ms, `if err := precheck.Read(ctx, "checkpoint id", id); err != nil { return nil, err }`, ``,
		"Get accepts invalid ids"),
	one("ms-list-no-validate", ms, `func (s *Store) List(ctx context.Context, threadID string) ([]*ckptstore.Checkpoint, error) { if err := precheck.Read(ctx, "thread id", threadID); err != nil { return nil, err }`,
		`func (s *Store) List(ctx context.Context, threadID string) ([]*ckptstore.Checkpoint, error) {`, "List accepts invalid ids"),
	one("ms-head-no-validate", ms, `if err := precheck.Read(ctx, "thread id", threadID); err != nil { return "", err }`, ``,
		"Head accepts invalid ids"),

	// ---- memstore: the packed layout (rec.go) and the batch copy (copy.go) ----
	equiv(one("ms-rec-kind-dir-as-file", msrec, `kinds   = [kindOther]ckptstore.EntryKind{kindFile: ckptstore.KindFile, kindDir: ckptstore.KindDir}`,
		`kinds   = [kindOther]ckptstore.EntryKind{kindFile: ckptstore.KindFile, kindDir: ckptstore.KindFile}`,
		"the code table names no directory kind"),
		"pack and unpack share the table: \"dir\" then matches no code and is kept as text (kindOther), so it reads back as dir and is not counted; only the record is bigger"),
	one("ms-rec-span-short", msrec, `return span{lo, uint32(p.b.Len())}`, `return span{lo, max(lo, uint32(p.b.Len())-1)}`,
		"every packed label, path, kind, reason and artifact field reads back one byte short"),
	one("ms-rec-conv-nil-empty-swapped", msrec, `case c.Conversation == nil: r.convK = convNil case len(c.Conversation) == 0: r.convK = convEmpty`,
		`case c.Conversation == nil:
		r.convK = convEmpty
	case len(c.Conversation) == 0:
		r.convK = convNil`,
		"a nil conversation reads back empty and an empty one nil"),
	one("ms-copy-conv-uncapped", mscpy, `c.Conversation, conv = conv[:n:n], conv[n:]`, `c.Conversation, conv = conv[:n], conv[n:]`,
		"a batch copy's conversation is not capped at its end, so appending to it writes into the next copy's"),

	// ---- memstore: transcripts ----
	one("ms-load-no-validate", mscap, `if err := precheck.LoadThread(ctx, threadID); err != nil { return nil, err }`, ``,
		"LoadThread accepts invalid thread ids"),
	one("ms-load-shared", mscap, `return slices.Clone(th.transcript), nil`, `return th.transcript, nil`, "LoadThread returns the stored bytes"),
	one("ms-load-default-empty", mscap, `return driver.EmptyTranscript(), nil`, `return json.RawMessage{}, nil`,
		"LoadThread of a thread without a transcript returns an empty value, not []"),
	one("ms-save-no-validate", mscap, `if err := precheck.SaveThread(ctx, threadID, messages); err != nil { return err }`,
		`if err := precheck.LoadThread(ctx, threadID); err != nil { return err }`, "SaveThread accepts anything as messages"),
	one("ms-save-ids-only", mscap, `if err := precheck.SaveThread(ctx, threadID, messages); err != nil { return err }`,
		`if err := driver.ValidateTranscript(messages); err != nil { return err }
	if err := precheck.LoadThread(ctx, threadID); err != nil { return err }`, "SaveThread checks the messages before the thread id"),
	one("ms-save-no-clone", mscap, `m := slices.Clone(messages)`, `m := messages`, "SaveThread keeps the caller's slice"),
	one("ms-save-empty-is-none", mscap, `th.transcript = m`, `th.transcript = m
	if string(m) == "[]" {
		th.transcript = nil
	}`, "a saved [] does not count as a transcript"),
	one("ms-save-no-relist", mscap, `th.transcript = m s.relist(threadID, th)`, `th.transcript = m`,
		"a thread with only a transcript is not listed"),

	// ---- memstore: fork and transcripts ----
	one("ms-fork-skip-transcript", ms, `if th.transcript != nil {`, `if false {`, "Fork into a thread that has a transcript"),
	one("ms-fork-no-transcript", ms, `th.transcript = slices.Clone(root.Conversation) if len(th.transcript) == 0 { th.transcript = driver.EmptyTranscript() }`, ``,
		"Fork does not write the destination's transcript"),
	one("ms-fork-transcript-empty", ms, `th.transcript = slices.Clone(root.Conversation)`, `th.transcript = nil`,
		"Fork writes [] as the destination's transcript, whatever the conversation"),
	one("ms-fork-transcript-none-if-empty", ms, `if len(th.transcript) == 0 { th.transcript = driver.EmptyTranscript() }`, ``,
		"a fork of a checkpoint without conversation leaves the destination without a transcript"),
	// Not equivalent since the packed layout: Fork returns root itself (the
	// store keeps its packed copy), so the caller can write into the bytes.
	one("ms-fork-transcript-shared", ms, `th.transcript = slices.Clone(root.Conversation)`, `th.transcript = root.Conversation`,
		"the fork's transcript shares the conversation bytes of the root Fork returns"),

	// ---- memstore: DeleteThread ----
	one("ms-delthread-no-validate", mscap, `if err := precheck.DeleteThread(ctx, threadID, w); err != nil { return 0, err }`, ``,
		"DeleteThread skips its pure checks (ids)"),
	one("ms-delthread-skip-writer", mscap, `if err := s.checkWriter(w, s.opts.Now()); err != nil { return 0, err } th := s.threads[threadID]`,
		`th := s.thread(threadID, true)`, "DeleteThread skips the writer check"),
	one("ms-delthread-keep-head", mscap, `th.head = "" th.transcript = nil`, `th.transcript = nil`, "DeleteThread leaves the head"),
	one("ms-delthread-keep-transcript", mscap, `th.head = "" th.transcript = nil`, `th.head = ""`, "DeleteThread leaves the transcript"),
	one("ms-delthread-count", mscap, `return len(doomed), nil`, `return th.cps.Len(), nil`, "DeleteThread reports 0 deleted"),
	one("ms-delthread-no-refs", mscap, `for _, id := range doomed { s.remove(th, id) } th.head = ""`,
		`for _, id := range doomed {
		c := s.checkpoints[id]
		delete(s.checkpoints, id)
		th.cps.Delete(c)
	}
	th.head = ""`, "DeleteThread does not drop blob counts"),
	one("ms-delthread-ends-lease", mscap, `th.head = "" th.transcript = nil`, `th.head = ""
	th.transcript = nil
	th.lease = nil`, "DeleteThread ends the lease"),
	one("ms-delthread-chain-only", mscap, `th.cps.Ascend(func(c *rec) bool { doomed = append(doomed, c.ID) return true })`,
		`for id := th.head; id != ""; {
		c, ok := s.checkpoints[id]
		if !ok || c.ThreadID != threadID || slices.Contains(doomed, id) {
			break
		}
		doomed = append(doomed, id)
		id = c.ParentCheckpointID
	}`, "DeleteThread deletes only the head chain, not the checkpoints off it"),
	one("ms-delthread-no-relist", mscap, `th.transcript = nil s.relist(threadID, th)`, `th.transcript = nil`, "a deleted thread stays listed"),

	// ---- memstore: ListPage ----
	one("ms-page-no-validate", mscap, `p, err := precheck.ListPage(ctx, threadID, opt) if err != nil { return nil, "", err }`,
		`p, _ := precheck.ListPage(ctx, "t", ckptstore.ListOptions{Limit: opt.Limit, Reverse: opt.Reverse})
	if p.Limit == 0 {
		p.Limit = 100
	}`, "ListPage accepts invalid ids, limits and cursors (and ignores the cursor)"),
	one("ms-page-repeat-cursor", mscap, `if !p.Includes(&ckptstore.Checkpoint{ID: c.ID, CreatedAt: c.CreatedAt}) { return true // the checkpoint at the cursor's own position }`, ``,
		"ListPage returns the checkpoint at the cursor again"),
	one("ms-page-no-more", mscap, `more = true return false } page = append(page, c)`, `return false }
	page = append(page, c)`, "ListPage's next is always empty"),
	one("ms-page-limit-plus-one", mscap, `if len(page) == p.Limit { more = true return false } page = append(page, c)`,
		`if len(page) == p.Limit+1 { more = true; return false }; page = append(page, c)`, "ListPage returns one more than the limit"),
	one("ms-page-next-always", mscap, `out := cloneAll(page) return out, p.Next(out, more), nil`,
		`out := cloneAll(page)
	return out, p.Next(out, more || len(out) > 0), nil`, "ListPage returns a next cursor after the last page too"),
	one("ms-page-reverse-ignored", mscap, `case p.After == nil: th.cps.Descend(visit)`, `case p.After == nil: th.cps.Ascend(visit)`,
		"ListPage from the start ignores Reverse"),
	equiv(one("ms-page-reverse-cursor", mscap, `th.cps.DescendLessOrEqual(pivot(*p.After), visit)`, `th.cps.Descend(visit)`,
		"a reverse ListPage with a cursor scans from the end"),
		"Includes drops everything from the end down to the cursor, so the page is the same; only slower"),
	{id: "ms-page-shared", desc: "ListPage returns copies whose conversations are the stored bytes " +
		"(it can no longer return the stored pointers: a stored checkpoint is a packed rec)", edits: []edit{
		importUnsafe(mscap),
		{mscap, `out := cloneAll(page)`, "out := cloneAll(page)\n\tfor i, c := range out { " + shareConv("c", "page[i]") + " }"},
	}},
	one("ms-page-pivot-zero", mscap, `return &rec{CreatedAt: pos.CreatedAt, ID: pos.ID}`,
		`return &rec{ID: pos.ID}`, "the seek ignores the cursor's createdAt"),
	equiv(one("ms-page-forward-from-start", mscap, `th.cps.AscendGreaterOrEqual(pivot(*p.After), visit)`, `th.cps.Ascend(visit)`,
		"a forward ListPage with a cursor scans from the start"),
		"Includes drops everything up to the cursor, so the page is the same; only slower"),

	// ---- memstore: Threads and what is listed ----
	one("ms-threads-no-validate", mscap, `p, err := precheck.Threads(ctx, after, limit) if err != nil { return nil, "", err }`,
		`p, _ := precheck.Threads(ctx, "", limit)
	if p.Limit == 0 {
		p.Limit = 100
	}`, "Threads accepts invalid limits and cursors (and ignores the cursor)"),
	one("ms-threads-repeat-cursor", mscap, `if id == p.After { return true // the cursor's own thread ("" is never listed) }`, ``,
		"Threads returns the thread at the cursor again"),
	one("ms-threads-no-more", mscap, `more = true return false } page = append(page, id)`, `return false }
	page = append(page, id)`, "Threads' next is always empty"),
	one("ms-threads-limit-minus-one", mscap, `if len(page) == p.Limit { more = true return false } page = append(page, id)`,
		`if len(page) == p.Limit-1 { more = true; return false }; page = append(page, id)`, "Threads returns one less than the limit"),
	one("ms-relist-all", ms, `if th.head != "" || th.cps.Len() > 0 || th.transcript != nil {`, `if true {`,
		"an emptied thread stays listed"),
	one("ms-relist-no-transcript", ms, `if th.head != "" || th.cps.Len() > 0 || th.transcript != nil {`, `if th.head != "" || th.cps.Len() > 0 {`,
		"a thread with only a transcript is not listed"),
	one("ms-relist-no-head", ms, `if th.head != "" || th.cps.Len() > 0 || th.transcript != nil {`, `if th.cps.Len() > 0 || th.transcript != nil {`,
		"a thread with only a head (naming a pruned checkpoint) is not listed"),
	one("ms-relist-no-checkpoints", ms, `if th.head != "" || th.cps.Len() > 0 || th.transcript != nil {`, `if th.head != "" || th.transcript != nil {`,
		"a thread with checkpoints but no head is not listed"),
	one("ms-append-no-relist", ms, `s.relist(c.ThreadID, th)`, ``, "Append does not list a new thread"),
	one("ms-deletehead-no-relist", ms, `s.relist(threadID, th) if hasToken { s.ops.record(token, &opRecord{kind: opDeleteHead}, now) }`,
		`if hasToken { s.ops.record(token, &opRecord{kind: opDeleteHead}, now) }`, "a thread emptied by DeleteHead stays listed"),
	one("ms-fork-no-relist", ms, `s.relist(in.DestinationThreadID, th)`, ``, "a fork's destination is not listed"),
	one("ms-import-no-relist", mscap, `th.transcript = transcript } s.relist(b.ThreadID, th)`, `th.transcript = transcript }`,
		"an imported thread is not listed"),

	// ---- memstore: Import ----
	one("ms-import-no-validate", mscap, `if err := precheck.Import(ctx, b); err != nil { return 0, err }`, `if err := ctx.Err(); err != nil { return 0, err }
	for _, c := range b.Checkpoints { if c == nil { return 0, ckptstore.ErrInvalidEntry } }`,
		"Import skips its pure checks (ids, content, the writer's thread)"),
	one("ms-import-skip-writer", mscap, `if err := s.checkWriter(b.Writer, s.opts.Now()); err != nil { return 0, err } var fresh []int`,
		`var fresh []int`, "Import skips the writer check"),
	equiv(one("ms-import-dup-thread-unchecked", mscap, `case old.ThreadID != b.ThreadID: return 0, fmt.Errorf("%w: %q is stored in thread %q", ckptstore.ErrDuplicateID, c.ID, old.ThreadID)`, ``,
		"Import does not compare the stored checkpoint's thread"),
		"each checkpoint of the batch is of b.ThreadID (checked before), so a stored one of another thread differs in ThreadID "+
			"and EqualCheckpoints refuses it with the same ErrDuplicateID"),
	one("ms-import-other-content", mscap, `case !driver.EqualCheckpoints(old.Clone(), b.Checkpoints[i]):`, `case false:`,
		"Import skips a stored checkpoint with other content instead of refusing it"),
	one("ms-import-zero-sign", mscap, `case !driver.EqualCheckpoints(old.Clone(), b.Checkpoints[i]):`,
		`case !driver.EqualCheckpoints(old.Clone(), func() *ckptstore.Checkpoint { x := *b.Checkpoints[i]; if x.CreatedAt == old.CreatedAt { x.CreatedAt = old.CreatedAt }; return &x }()):`,
		"Import treats createdAt -0 and +0 as equal content"),
	one("ms-import-no-head-check", mscap, `if b.SetHead && th.head != "" && th.head != b.Head {`, `if false {`,
		"Import overwrites another head"),
	one("ms-import-head-empty-conflict", mscap, `if b.SetHead && th.head != "" && th.head != b.Head {`, `if b.SetHead && th.head != b.Head {`,
		"Import refuses to set the head of a thread without one"),
	one("ms-import-head-always", mscap, `if b.SetHead { th.head = b.Head }`, `th.head = b.Head`, "Import sets the head without SetHead"),
	one("ms-import-head-never", mscap, `if b.SetHead { th.head = b.Head }`, ``, "Import never sets the head"),
	one("ms-import-transcript-ignored", mscap, `if transcript != nil { th.transcript = transcript }`, `_ = transcript`, "Import ignores the transcript"),
	one("ms-import-transcript-nil-clears", mscap, `if transcript != nil { th.transcript = transcript }`, `th.transcript = transcript`,
		"an Import without a transcript clears the thread's"),
	one("ms-import-count-all", mscap, `return len(fresh), nil`, `return len(cps), nil`, "Import reports the batch size, not what it wrote"),
	{id: "ms-import-no-clone", desc: "Import keeps reading the caller's conversation bytes instead of a copy " +
		"(it can no longer store the caller's checkpoints: a stored checkpoint is a packed rec)",
		edits: append(keepCallerConv[:len(keepCallerConv):len(keepCallerConv)],
			edit{mscap, `if cps[i], err = pack(c); err != nil { return 0, err }`,
				`if cps[i], err = pack(c); err != nil { return 0, err }; cps[i].src = c.Conversation`})},
	one("ms-import-rewrite", mscap, `case !ok: fresh = append(fresh, i)`, `case !ok || driver.EqualCheckpoints(old.Clone(), b.Checkpoints[i]): fresh = append(fresh, i)`,
		"Import writes again (and counts again) a checkpoint stored with equal content"),
	one("ms-import-partial", mscap, `case !ok: fresh = append(fresh, i)`, `case !ok: s.insert(s.thread(b.ThreadID, true), c, b.Checkpoints[i], nil)`,
		"Import writes each new checkpoint before checking the rest of the batch"),
	one("ms-import-swap-writer-dup", mscap, `if err := s.checkWriter(b.Writer, s.opts.Now()); err != nil { return 0, err } var fresh []int`,
		`var fresh []int
	for i, c := range cps {
		if old, ok := s.checkpoints[c.ID]; ok && !driver.EqualCheckpoints(old.Clone(), b.Checkpoints[i]) {
			return 0, ckptstore.ErrDuplicateID
		}
	}
	if err := s.checkWriter(b.Writer, s.opts.Now()); err != nil { return 0, err }`, "Import checks ids before the writer"),
	one("ms-import-swap-dup-head", mscap, `var fresh []int`, `if th := s.threads[b.ThreadID]; b.SetHead && th.head != "" && th.head != b.Head {
		return 0, ckptstore.ErrConflict
	}
	var fresh []int`, "Import checks the head before the ids"),

	// ---- memstore: op tokens ----
	one("ms-optoken-append-ignored", ms, `if hasToken && s.ops.done(token, opAppend, now) != nil {`, `if false {`,
		"a repeated Append with its op token runs again"),
	one("ms-optoken-deletehead-ignored", ms, `if hasToken && s.ops.done(token, opDeleteHead, now) != nil {`, `if false {`,
		"a repeated DeleteHead with its op token runs again"),
	one("ms-optoken-fork-ignored", ms, `if r := s.ops.done(token, opFork, now); r != nil {`, `if r := s.ops.done(token, opFork, now); r != nil && false {`,
		"a repeated fork with its op token runs again"),
	{id: "ms-optoken-fork-shared", desc: "a repeated fork returns a root whose conversation is the stored root's bytes " +
		"(it can no longer return the stored root: a stored checkpoint is a packed rec)", edits: []edit{
		{ms, `"time"`, "\"time\"\n\t\"unsafe\""},
		{ms, `return r.root.Clone(), nil`, "c := r.root.Clone()\n\t" + shareConv("c", "r.root") + "\n\treturn c, nil"},
	}},
	one("ms-optoken-acquire-ignored", ms, `if r := s.ops.done(token, opAcquire, now); r != nil {`, `if r := s.ops.done(token, opAcquire, now); r != nil && false {`,
		"a repeated AcquireWriter with its op token runs again"),
	one("ms-optoken-acquire-random-owner", ms, `if !hasToken { token = rand.Text() }`, `token = rand.Text()`,
		"the lease's owner token is not the op token"),
	one("ms-optoken-append-after-writer", ms, `if hasToken && s.ops.done(token, opAppend, now) != nil { return nil // a retry of an Append that committed } if err := s.checkWriter(w, now); err != nil { return err }`,
		`if err := s.checkWriter(w, now); err != nil { return err }
	if hasToken && s.ops.done(token, opAppend, now) != nil { return nil }`, "a repeated Append checks the writer before its op token"),
	one("ms-optoken-record-failed", ms, `if hasToken && s.ops.done(token, opAppend, now) != nil { return nil // a retry of an Append that committed }`,
		`if hasToken && s.ops.done(token, opAppend, now) != nil { return nil }
	if hasToken { s.ops.record(token, &opRecord{kind: opAppend}, now) }`, "an Append's op token is remembered before its checks"),
	equiv(one("ms-optoken-kind-ignored", msop, `if r == nil || r.kind != kind || !now.Before(r.expires) {`, `if r == nil || !now.Before(r.expires) {`,
		"an op token answers a retry of another method"),
		"a token names one logical write and no other (ckptstore.WithOpToken), so no contract call reuses it for another method"),
	one("ms-optoken-ttl-zero", msop, `r.expires = now.Add(opTokenTTL)`, `r.expires = now`, "op tokens are forgotten at once"),
	one("ms-optoken-ttl-forever", msop, `if r == nil || r.kind != kind || !now.Before(r.expires) {`, `if r == nil || r.kind != kind {`,
		"op tokens are never forgotten"),
	one("ms-optoken-ttl-boundary", msop, `if r == nil || r.kind != kind || !now.Before(r.expires) {`, `if r == nil || r.kind != kind || now.After(r.expires) {`,
		"an op token is still remembered at its expiry"),
	one("ms-optoken-purge-live", msop, `if old != nil && now.Before(old.expires) { break }`, `_ = old`, "recording a token forgets the live ones"),
	one("ms-optoken-malformed", msop, `if ok && !driver.ValidOpToken(t) {`, `if false {`, "a malformed op token is used"),

	// ---- memstore: instance store ----
	one("inst-merge", inst, `s.records[rec.Key] = *rec`, `r := *rec
	if o, ok := s.records[rec.Key]; ok {
		if r.LatestSnapshotID == "" {
			r.LatestSnapshotID = o.LatestSnapshotID
		}
		if r.LatestRunID == "" {
			r.LatestRunID = o.LatestRunID
		}
	}
	s.records[rec.Key] = r`, "Upsert merges optional fields instead of replacing the record"),
	one("inst-delete-noop", inst, `delete(s.records, key)`, `_ = key`, "instance Delete does nothing"),
	one("inst-upsert-no-validate", inst, `if err := precheck.InstanceUpsert(ctx, rec); err != nil { return err }`,
		`if rec == nil { return ckptstore.ErrInvalidEntry }`, "Upsert accepts invalid keys and fields"),
	one("inst-get-no-validate", inst, `if err := precheck.InstanceKey(ctx, key); err != nil { return nil, err }`, ``,
		"instance Get accepts invalid keys"),
	one("inst-delete-no-validate", inst, `if err := precheck.InstanceKey(ctx, key); err != nil { return err }`, ``,
		"instance Delete accepts invalid keys"),

	// ---- root: ids and check order in validation ----
	one("val-id-utf8", val, `if !utf8.ValidString(id) {`, `if false {`, "ValidateID accepts invalid UTF-8"),
	one("val-id-empty", val, `if id == "" { return fmt.Errorf("%w: %s is empty", ErrInvalidID, what) }`, ``,
		"ValidateID accepts the empty id"),
	one("val-append-skip-cpid", val, `if err := ValidateID("checkpoint id", cp.ID); err != nil { return err } if err := ValidateID("thread id", cp.ThreadID); err != nil { return err } if err := ValidateID("writer thread id", w.ThreadID)`,
		`if err := ValidateID("thread id", cp.ThreadID); err != nil { return err }; if err := ValidateID("writer thread id", w.ThreadID)`,
		"Append does not check the checkpoint id"),
	one("val-append-skip-threadid", val, `if err := ValidateID("thread id", cp.ThreadID); err != nil { return err } if err := ValidateID("writer thread id", w.ThreadID)`,
		`if err := ValidateID("writer thread id", w.ThreadID)`, "Append does not check the thread id"),
	one("val-append-skip-writerid", val, `if err := ValidateID("writer thread id", w.ThreadID); err != nil { return err } if err := validateOptionalID("expected head id"`,
		`if err := validateOptionalID("expected head id"`, "Append does not check the writer's thread id"),
	one("val-append-skip-expected", val, `if err := validateOptionalID("expected head id", expectedHeadID); err != nil { return err }`, ``,
		"Append does not check expectedHeadID"),
	one("val-append-skip-parent", val, `if err := validateOptionalID("parentCheckpointId", cp.ParentCheckpointID); err != nil { return err }`, ``,
		"Append does not check the parent id"),
	one("val-append-entries-first", val, `func ValidateAppend(cp *Checkpoint, expectedHeadID string, w Writer) error { if cp == nil { return fmt.Errorf("%w: checkpoint is nil", ErrInvalidEntry) }`,
		`func ValidateAppend(cp *Checkpoint, expectedHeadID string, w Writer) error {
	if cp == nil {
		return fmt.Errorf("%w: checkpoint is nil", ErrInvalidEntry)
	}
	if err := validateContent(cp); err != nil {
		return err
	}`, "Append checks entries (2) before ids (1)"),
	one("val-deletehead-skip-thread", val, `func ValidateDeleteHead(threadID, checkpointID string, w Writer) error { if err := ValidateID("thread id", threadID); err != nil { return err }`,
		`func ValidateDeleteHead(threadID, checkpointID string, w Writer) error {`, "DeleteHead does not check the thread id"),
	one("val-deletehead-skip-cpid", val, `if err := ValidateID("checkpoint id", checkpointID); err != nil { return err }`, ``,
		"DeleteHead does not check the checkpoint id"),
	one("val-deletehead-skip-writerid", val, `if err := ValidateID("checkpoint id", checkpointID); err != nil { return err } return ValidateID("writer thread id", w.ThreadID)`,
		"if err := ValidateID(\"checkpoint id\", checkpointID); err != nil { return err }\nreturn nil",
		"DeleteHead does not check the writer's thread id"),
	one("val-prune-keep-zero", val, `if keep < 1 ||`, `if keep < 0 ||`, "DeleteCheckpoints accepts keep = 0"),
	one("val-prune-keep-first", val, pruneIDs+" "+pruneKeep, pruneKeep+"\n"+pruneIDs, "DeleteCheckpoints checks keep before the ids"),
	one("val-prune-skip-writerid", val, `if err := ValidateID("writer thread id", w.ThreadID); err != nil { return err } if keep < 1`,
		`if keep < 1`, "DeleteCheckpoints does not check the writer's thread id"),
	one("val-fork-skip-srcthread", val, `{"source thread id", in.SourceThreadID},`, ``, "Fork does not check the source thread id"),
	one("val-fork-skip-srccp", val, `{"source checkpoint id", in.SourceCheckpointID},`, ``, "Fork does not check the source checkpoint id"),
	one("val-fork-skip-dstthread", val, `{"destination thread id", in.DestinationThreadID},`, ``, "Fork does not check the destination thread id"),
	one("val-fork-skip-dstcp", val, `{"destination checkpoint id", in.DestinationCheckpointID},`, ``, "Fork does not check the destination checkpoint id"),
	one("val-fork-skip-writerid", val, `{"writer thread id", in.Writer.ThreadID},`, ``, "Fork does not check the writer's thread id"),
	one("val-fork-skip-createdat", val, `if !finite(in.CreatedAt) {`, `if false {`, "Fork accepts a non-finite createdAt"),
	one("val-fork-skip-same-thread", val, `if in.SourceThreadID == in.DestinationThreadID {`, `if false {`, "Fork into its own source thread"),
	one("val-fork-same-before-createdat", val, forkCreated+" "+forkSame, forkSame+"\n"+forkCreated, "Fork checks same-thread before createdAt"),
	one("val-fork-createdat-before-ids", val, forkIDsLoop+" "+forkCreated, forkCreated+"\n"+forkIDsLoop, "Fork checks createdAt before the ids"),

	// ---- root: checkpoint content ----
	one("val-createdat", val, `if !finite(cp.CreatedAt) {`, `if false {`, "createdAt NaN/Inf accepted"),
	one("val-finite-inf", val, `return !math.IsNaN(f) && !math.IsInf(f, 0)`, `return !math.IsNaN(f)`, "finite() accepts ±Inf"),
	one("val-finite-neginf", val, `!math.IsInf(f, 0)`, `!math.IsInf(f, 1)`, "finite() accepts -Inf"),
	one("val-reason-empty", val, `case ReasonAutomatic, ReasonNamed, ReasonForkRoot:`, `case ReasonAutomatic, ReasonNamed, ReasonForkRoot, "":`,
		"the empty reason is accepted"),
	one("val-reason-no-forkroot", val, `case ReasonAutomatic, ReasonNamed, ReasonForkRoot:`, `case ReasonAutomatic, ReasonNamed:`,
		"reason fork-root is rejected"),
	one("val-label-utf8", val, `if !utf8.ValidString(cp.Label) {`, `if false {`, "label with invalid UTF-8 accepted"),
	one("val-sourcerun-utf8", val, `if !utf8.ValidString(cp.SourceRunID) {`, `if false {`, "sourceRunId with invalid UTF-8 accepted"),
	one("val-conv-object", val, `conv[i] != '['`, `conv[i] != '[' && conv[i] != '{'`, "a conversation that is a JSON object is accepted"),
	one("val-conv-utf8", val, `!utf8.Valid(conv) ||`, ``, "a conversation with invalid UTF-8 in a string is accepted"),
	one("val-conv-json", val, `|| !jsonValid(conv)`, ``, "a conversation that starts with [ but is not JSON is accepted"),
	one("val-conv-leading-space", val, `for i < len(conv) && (`, `for false && (`, "a conversation with leading whitespace is rejected"),

	// ---- root: paths and entries ----
	one("val-path-empty", val, `case p == "": return invalid("path is empty")`, ``, "the empty path is not rejected first (panics)"),
	one("val-path-utf8", val, `case !utf8.ValidString(p):`, `case false:`, "a path with invalid UTF-8 is accepted"),
	one("val-path-nul", val, `case strings.IndexByte(p, 0) >= 0:`, `case false:`, "a path with NUL is accepted"),
	equiv(one("val-path-abs-slash", val, `case p[0] == '/' || p[0] == '\\':`, `case p[0] == '\\':`, "a leading / is not checked as absolute"),
		"a path starting with / has an empty first segment, which the segment rule rejects with the same ErrInvalidEntry"),
	equiv(one("val-path-abs-backslash", val, `case p[0] == '/' || p[0] == '\\':`, `case p[0] == '/':`, "a leading \\ is not checked as absolute"),
		"the backslash rule rejects it with the same ErrInvalidEntry"),
	one("val-path-drive", val, `case len(p) >= 2 && isASCIILetter(p[0]) && p[1] == ':' && (len(p) == 2 || p[2] == '/' || p[2] == '\\'):`, `case false:`,
		"drive-letter paths (C:, C:/x) are accepted"),
	one("val-path-drive-bare", val, `(len(p) == 2 || p[2] == '/'`, `(p[2] == '/'`, "a bare drive letter C: is not rejected (panics)"),
	one("val-path-drive-slash", val, `|| p[2] == '/' ||`, `||`, "C:/x is accepted"),
	equiv(one("val-path-drive-backslash", val, `|| p[2] == '\\'):`, `):`, "C:\\x is not checked as a drive path"),
		"the backslash rule rejects it with the same ErrInvalidEntry"),
	one("val-path-drive-lower-only", val, `func isASCIILetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }`,
		`func isASCIILetter(c byte) bool { return 'a' <= c && c <= 'z' }`, "only lowercase drive letters are absolute"),
	one("val-path-backslash", val, `case strings.IndexByte(p, '\\') >= 0:`, `case false:`, "a path with a backslash is accepted"),
	one("val-path-empty-seg", val, `seg == "" || seg == "." || seg == ".." {`, `seg == "." || seg == ".." {`, "a//b and a/ are accepted"),
	one("val-path-dot-seg", val, `seg == "" || seg == "." || seg == ".." {`, `seg == "" || seg == ".." {`, "a/./b is accepted"),
	one("val-path-dotdot-seg", val, `seg == "" || seg == "." || seg == ".." {`, `seg == "" || seg == "." {`, "a/../b is accepted"),
	one("val-dup-path", val, `if _, dup := kinds[e.Path]; dup {`, `if _, dup := kinds[e.Path]; dup && false {`, "duplicate paths are accepted"),
	one("val-beneath-file", val, `if kinds[p] == KindFile {`, `if false {`, "an entry beneath a file is accepted"),
	one("val-beneath-boundary", val, `j > 0; j = strings.LastIndexByte(p, '/')`, `j > 1; j = strings.LastIndexByte(p, '/')`,
		"an entry beneath a one-letter file is accepted"),
	one("val-beneath-parent-only", val, `j > 0; j = strings.LastIndexByte(p, '/')`, `j > 0; j = 0`,
		"only the direct parent is checked for being a file"),
	one("val-kind", val, `default: return invalid("entry %q has kind %q, not file or dir", e.Path, e.Kind)`, `default:`,
		"an entry of another kind is accepted"),
	one("val-dir-size", val, `if e.BlobKey != "" || e.Size != 0 {`, `if e.BlobKey != "" {`, "a directory with a size is accepted"),
	one("val-dir-blobkey", val, `if e.BlobKey != "" || e.Size != 0 {`, `if e.Size != 0 {`, "a directory with a blobKey is accepted"),
	one("val-file-size-negative", val, `if e.Size < 0 || e.Size > MaxSize {`, `if e.Size > MaxSize {`, "a negative file size is accepted"),
	one("val-file-size-max", val, `if e.Size < 0 || e.Size > MaxSize {`, `if e.Size < 0 || e.Size > MaxSize+1 {`, "file size 2^53 is accepted"),
	one("val-art-size-negative", val, `if a.Size < 0 || a.Size > MaxSize {`, `if a.Size > MaxSize {`, "a negative artifact size is accepted"),
	one("val-art-size-max", val, `if a.Size < 0 || a.Size > MaxSize {`, `if a.Size < 0 || a.Size > MaxSize+1 {`, "artifact size 2^53 is accepted"),
	one("val-maxsize-low", val, `const MaxSize = 1<<53 - 1`, `const MaxSize = 1<<53 - 2`, "size 2^53−1 is rejected"),
	one("val-key-upper", val, `'a' <= c && c <= 'f' }`, `'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }`, "uppercase hex in a blob key is accepted"),
	one("val-key-nonhex", val, `'a' <= c && c <= 'f' }`, `'a' <= c && c <= 'z' }`, "non-hex letters in a blob key are accepted"),
	one("val-key-long", val, `!ok || len(hex) != 64`, `!ok || len(hex) < 64`, "a blob key with more than 64 hex digits is accepted"),
	one("val-key-short", val, `!ok || len(hex) != 64`, `!ok || len(hex) > 64`, "a blob key with fewer than 64 hex digits is accepted"),
	{id: "val-key-no-prefix", desc: "a blob key of 64 hex digits without the prefix is accepted", edits: []edit{
		{val, `hex, ok := strings.CutPrefix(key, prefix)`, `hex, _ := strings.CutPrefix(key, prefix)`},
		{val, `!ok || len(hex) != 64`, `len(hex) != 64`},
	}},
	one("val-key-art-prefix", val, `validateBlobKey(a.BlobKey, artifactsKeyPrefix)`, `validateBlobKey(a.BlobKey, filesKeyPrefix)`,
		"artifacts must use the sandbox-files/ prefix"),
	one("val-key-file-prefix", val, `validateBlobKey(e.BlobKey, filesKeyPrefix)`, `validateBlobKey(e.BlobKey, artifactsKeyPrefix)`,
		"files must use the sandbox-artifacts/ prefix"),
	one("val-path-seg-from-start", val, `lo = i + 1`, `lo = 0`, "a path's later segments are checked from its start (a/. accepted)"),
	one("val-conv-empty-any-first", val, `&& conv[i+1] == ']' && conv[i] == '['`, `&& conv[i+1] == ']'`,
		"any two bytes ending in ] are a conversation"),
	one("val-conv-empty-any-last", val, `&& conv[i+1] == ']' && conv[i] == '['`, `&& conv[i] == '['`,
		"any two bytes starting with [ are a conversation"),
	one("val-art-empty-field", val, `if f.v == "" {`, `if false {`, "artifacts with an empty artifactId, name or mimeType are accepted"),
	one("val-art-field-utf8", val, `if !utf8.ValidString(f.v) { return invalid("artifact`, `if false { return invalid("artifact`,
		"artifact fields with invalid UTF-8 are accepted"),
	one("val-art-mimetype", val, `{"name", a.Name}, {"mimeType", a.MimeType},`, `{"name", a.Name},`, "the artifact mimeType is not checked"),
	one("val-art-createdat", val, `if !finite(a.CreatedAt) {`, `if false {`, "an artifact with a non-finite createdAt is accepted"),
	one("val-instance-fields-utf8", val, `if !utf8.ValidString(f.v) { return invalid("instance record`, `if false { return invalid("instance record`,
		"instance record fields with invalid UTF-8 are accepted"),
	one("val-instance-key", val, `if err := ValidateInstanceKey(rec.Key); err != nil { return err }`, ``, "Upsert accepts invalid keys"),

	// ---- root: types ----
	one("typ-clone-files", typ, `c.Files = slices.Clone(cp.Files)`, ``, "Clone shares Files"),
	one("typ-clone-artifacts", typ, `c.Artifacts = slices.Clone(cp.Artifacts)`, ``, "Clone shares Artifacts"),
	one("typ-clone-conversation", typ, `c.Conversation = bytes.Clone(cp.Conversation)`, `_ = bytes.Clone`, "Clone shares Conversation"),
	one("typ-blobkeys-not-distinct", typ, `return slices.Compact(keys)`, `return keys`, "a key used twice in a checkpoint counts twice"),
	one("typ-blobkeys-unsorted", typ, `slices.Sort(keys)`, ``, "BlobKeys unsorted, so non-adjacent repeats count twice"),
	one("typ-blobkeys-dirs", typ, `if e.Kind == KindFile {`, `if e.Kind != "" {`, "directories add the empty blob key"),
	one("typ-blobkeys-no-artifacts", typ, `keys = append(keys, a.BlobKey)`, `_ = a`, "artifact blob keys are not counted"),
	one("typ-compare-id-only", typ, `cmp.Compare(a.CreatedAt, b.CreatedAt)`, `cmp.Compare(0, 0)`, "List sorted by id only"),
	one("typ-compare-createdat-only", typ, `return strings.Compare(a.ID, b.ID)`, `return strings.Compare("", "")`, "List sorted by createdAt only"),
	one("typ-compare-utf16", typ, `return strings.Compare(a.ID, b.ID) }`, "return compareUTF16(a.ID, b.ID) }\n"+compareUTF16+"\nvar _ = strings.Compare\n",
		"ids compared by UTF-16 code units instead of bytes"),
	one("typ-forkroot-label", typ, `c.Label = ""`, ``, "a fork root keeps the source's label"),
	one("typ-forkroot-sourcerun", typ, `c.SourceRunID = ""`, ``, "a fork root keeps the source's sourceRunId"),
	one("typ-forkroot-parent", typ, `c.ParentCheckpointID = ""`, ``, "a fork root keeps the source's parent"),
	one("typ-forkroot-reason", typ, `c.Reason = ReasonForkRoot`, ``, "a fork root keeps the source's reason"),
	one("typ-forkroot-createdat", typ, `c.CreatedAt = in.CreatedAt`, ``, "a fork root keeps the source's createdAt"),
	one("typ-forkroot-shallow", typ, `c := src.Clone()`, `cc := *src; c := &cc`, "ForkRoot shares the source's slices"),

	// ---- root: options, prune, lease, errors ----
	one("opt-negative-renew", opt, `if o.LeaseDuration < 0 || o.RenewAfter < 0 {`, `if o.LeaseDuration < 0 {`, "a negative RenewAfter is accepted"),
	equiv(one("opt-negative-lease", opt, `if o.LeaseDuration < 0 || o.RenewAfter < 0 {`, `if o.RenewAfter < 0 {`, "a negative LeaseDuration passes the first check"),
		"RenewAfter is then ≥ 0 or 3/8 of the negative duration, so always ≥ LeaseDuration: the second check returns ErrInvalidOptions"),
	one("opt-renew-equal", opt, `if o.RenewAfter >= o.LeaseDuration {`, `if o.RenewAfter > o.LeaseDuration {`, "RenewAfter == LeaseDuration is accepted"),
	one("opt-half", opt, `o.RenewAfter = o.LeaseDuration/8*3 + o.LeaseDuration%8*3/8`, `o.RenewAfter = o.LeaseDuration / 2`, "RenewAfter defaults to 1/2, not 3/8"),
	one("opt-three-eighths-trunc", opt, `o.RenewAfter = o.LeaseDuration/8*3 + o.LeaseDuration%8*3/8`, `o.RenewAfter = o.LeaseDuration/8*3`,
		"3/8 loses the remainder (differs when the duration is not a multiple of 8ns)"),
	one("opt-default-lease", opt, `DefaultLeaseDuration = 120 * time.Second`, `DefaultLeaseDuration = 121 * time.Second`, "default lease 121 s"),
	one("opt-default-renew", opt, `DefaultRenewAfter    = 45 * time.Second`, `DefaultRenewAfter    = 44 * time.Second`, "default RenewAfter 44 s"),
	one("opt-renew-only-lease", opt, `case o.LeaseDuration == 0: o.LeaseDuration = DefaultLeaseDuration`, `case o.LeaseDuration == 0: o.LeaseDuration = o.RenewAfter * 8 / 3`,
		"when only RenewAfter is set the lease is 8/3 of it, not 120 s"),
	one("opt-now-nil", opt, `if o.Now == nil { o.Now = time.Now }`, ``, "a nil Now is not defaulted"),
	one("prune-no-release", prn, `defer lease.Release(context.WithoutCancel(ctx))`, ``, "KeepNewest does not release the lease"),
	one("prune-release-ctx", prn, `defer lease.Release(context.WithoutCancel(ctx))`, `defer lease.Release(ctx)`,
		"KeepNewest releases with the caller's (maybe cancelled) context"),
	one("prune-release-early", prn, `defer lease.Release(context.WithoutCancel(ctx))`, `lease.Release(context.WithoutCancel(ctx))`,
		"KeepNewest releases the lease before pruning"),
	one("prune-unsupported-nil", prn, `return nil, fmt.Errorf("%w (%T)", ErrPruneUnsupported, s)`, `_ = fmt.Sprint(s); return nil, nil`,
		"KeepNewest on a store without DeleteCheckpoints succeeds"),
	one("lease-renew-no-update", lse, `l.ExpiresAt = t`, ``, "Lease.Renew does not update ExpiresAt"),
	one("err-code-nothead", errs, `"SANDBOX_SNAPSHOT_NOT_HEAD"`, `"SANDBOX_SNAPSHOT_NOTHEAD"`, "ErrNotHead has a wrong wire code"),
	one("err-code-empty", errs, `return ce.code`, `return ""`, "Code returns no code"),

	// ---- root: JSON ----
	one("json-dir-fields", jsn, `if e.Kind != KindDir {`, `if true {`, "a directory entry encodes blobKey and size"),
	one("json-dir-size-accepted", jsn, `if !isNull(o["blobKey"]) || !isNull(o["size"]) {`, `if !isNull(o["blobKey"]) {`, "a directory with size decodes"),
	one("json-parent-empty-string", jsn, `if cp.ParentCheckpointID != "" {`, `if true {`, "no parent encodes as \"\" instead of null"),
	one("json-files-null", jsn, `if j.Files == nil {`, `if false {`, "nil files encode as null"),
	one("json-lone-low-surrogate", jsn, `case 0xDC00 <= r && r < 0xE000: return false`, `case 0xDC00 <= r && r < 0xE000:`,
		"a lone low surrogate escape decodes"),
	one("json-fraction-int", jsn, `f != math.Trunc(f) ||`, ``, "a fractional size decodes"),
	one("json-int-max", jsn, `math.Abs(f) > MaxSize`, `math.Abs(f) > MaxSize+1`, "size 2^53 decodes"),
	one("json-conv-unchecked", jsn, `if err := validateConversation(conv); err != nil { return err }`, ``, "a conversation that is not an array decodes"),
	// Found by go-gremlins (internal/mutation/gremlins.sh), kept here so
	// that the hand-made run covers them too.
	one("val-drive-a-edge", val, `return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'`, `return 'a' < c && c <= 'z' || 'A' <= c && c <= 'Z'`,
		"a: is not a drive path"),
	one("val-drive-A-edge", val, `return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'`, `return 'a' <= c && c <= 'z' || 'A' < c && c <= 'Z'`,
		"A: is not a drive path"),
	one("val-drive-Z-edge", val, `return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'`, `return 'a' <= c && c <= 'z' || 'A' <= c && c < 'Z'`,
		"Z: is not a drive path"),
	equiv(one("val-beneath-j-ge0", val, `j > 0; j = strings.LastIndexByte(p, '/')`, `j >= 0; j = strings.LastIndexByte(p, '/')`,
		"the ancestor walk also runs at j == 0"),
		"validatePath already rejected a path starting with /, so LastIndexByte is never 0"),
	one("typ-blobkeys-cap", typ, `make([]string, 0, len(cp.Files)+len(cp.Artifacts))`, `make([]string, 0, len(cp.Files)-len(cp.Artifacts))`,
		"BlobKeys panics when there are more artifacts than files"),
	one("json-conv-cap", jsn, `make([]byte, 0, len(out)+len(conv))`, `make([]byte, 0, len(out)-len(conv))`,
		"MarshalJSON panics when the conversation is longer than the rest"),
	equiv(one("json-placeholder-le0", jsn, `if i < 0 {`, `if i <= 0 {`, "the conversation placeholder at offset 0 is an error"),
		"the encoded object starts with {\"id\":, so the placeholder is never at offset 0"),
	one("json-pair-or", jsn, `if i+6 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {`, `if i+6 < len(s) || s[i+1] == '\\' && s[i+2] == 'u' {`,
		"a high surrogate followed by any 6 bytes ending in low-surrogate hex is a pair"),
	one("json-low-edge", jsn, `0xDC00 <= r2 && r2 < 0xE000`, `0xDC00 < r2 && r2 < 0xE000`, "\\ud800\\udc00 is rejected"),
	one("json-low-past-edge", jsn, `0xDC00 <= r2 && r2 < 0xE000`, `0xDC00 <= r2 && r2 <= 0xE000`, "\\ud800\\ue000 is accepted"),
	one("json-hex-upper", jsn, `c -= 'A' - 10`, `c -= 'A' + 10`, "uppercase hex digits in \\u escapes decode wrongly"),
	equiv(one("json-number-start", jsn, `func decodeInt(raw json.RawMessage, what string, lowest int64) (int64, error) { if isNull(raw) || !(raw[0] == '-' || '0' <= raw[0] && raw[0] <= '9') {`,
		`func decodeInt(raw json.RawMessage, what string, lowest int64) (int64, error) { if isNull(raw) || !(raw[0] == '-' || '0' <= raw[0] || raw[0] <= '9') {`,
		"any JSON value reaches ParseFloat"),
		"raw is a valid JSON value; one that is not a number (string, object, array, true, false) fails ParseFloat with the same ErrInvalidEntry"),
	one("json-instance-omitempty", jsn, "`json:\"latestRunId,omitempty\"`", "`json:\"latestRunId\"`", "an absent latestRunId encodes as \"\""),
}
