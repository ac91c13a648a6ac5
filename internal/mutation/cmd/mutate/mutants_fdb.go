package main

// The fdbstore mutants. Ids start with fdb-. They are caught by fdbstore's
// own tests on memkv (conformance, faults, interleavings through memkv's
// hook between a transaction's reads and its commit, Check), without
// -race. Among them are the three families issue 13 found surviving:
// snapshot reads in Append (fdb-append-snapshot-*), the CompareAndClear
// after a count reaches 0 left out (fdb-no-compare-and-clear), and, on
// redisstore, a release that ignores the fence (rs-release-no-fence).
//
// A snapshot-read mutant turns one read of a write into a snapshot read:
// the transaction then takes no read conflict on that key, so a write
// that commits between its read and its commit goes unnoticed. No
// sequential test can tell; only an interleaving can.

import "strings"

const (
	fdbWrite  = "fdbstore/write.go"
	fdbMarks  = "fdbstore/markers.go"
	fdbStore  = "fdbstore/store.go"
	fdbDelT   = "fdbstore/deletethread.go"
	fdbImport = "fdbstore/import.go"
	fdbTrans  = "fdbstore/transcripts.go"
	fdbPage   = "fdbstore/page.go"
	fdbKeys   = "fdbstore/keys.go"
	fdbCheck  = "fdbstore/check.go"
)

// fdbTests is the selection every fdbstore mutant runs: the whole package
// (a few seconds on memkv), less the hot-range runs, which measure key
// placement and take a second each, stopping at the first failure.
var fdbTests = testSel{pkgs: []string{"./fdbstore/"}, skip: "TestNoHotRange|TestHotRangeFindsGlobalMarkers", failfast: true}

// fdb is an fdbstore mutant. Its tests run first with a -run pattern
// (fdbFirst), and only if those all pass with the whole selection
// (testWidening).
func fdb(id, file, old, new, desc string) mutant {
	return withTests(fdbTests, fdbFirst(id), one(id, file, old, new, desc))
}

// fdbFirst is the -run pattern of the tests likely to catch a mutant
// first: the interleavings for a lost read conflict, the checker's tests
// for the checker, the marker tests for markers, else the conformance
// suite.
func fdbFirst(id string) string {
	switch {
	case strings.Contains(id, "snapshot") || strings.Contains(id, "no-conflict"):
		return `^TestInterleave`
	case strings.HasPrefix(id, "fdb-check-"):
		return `^TestCheck`
	case strings.HasPrefix(id, "fdb-marker-") || id == "fdb-no-give-up" || strings.HasSuffix(id, "-no-marker"):
		return `^(TestMarkers|TestCallerTokenWindow|TestTokenReused|TestWritesAreIdempotent|TestRenewReports|TestLegacy|TestCapabilitiesIdempotent|TestGiveUp)`
	}
	return `^TestConformance$`
}

// Append's read round, made unique by the index read that follows it.
const fdbAppendRound = `r, err := s.startRound(tr, o, readLease|readHead)
		if err != nil {
			return err
		}
		idf := tr.Get(st.indexKey)`

func init() {
	mutants = append(mutants, fdbSnapshotMutants()...)
	mutants = append(mutants, fdbAppendMutants()...)
	mutants = append(mutants, fdbDeleteMutants()...)
	mutants = append(mutants, fdbForkLeaseMutants()...)
	mutants = append(mutants, fdbCapabilityMutants()...)
}

// fdbSnapshotMutants are issue 13's families (a), snapshot reads in Append, and (b), counts.
func fdbSnapshotMutants() []mutant {
	return []mutant{
		// ---- issue 13, family (a): Append with snapshot reads ----
		fdb("fdb-append-snapshot-lease", fdbWrite, fdbAppendRound, `r, err := s.startRound(tr, o, readHead)
		if err != nil {
			return err
		}
		r.lease = tr.Snapshot().Get(s.k.lease(c.ThreadID))
		idf := tr.Get(st.indexKey)`, "Append reads the lease as a snapshot: a takeover between its read and its commit is not seen"),
		fdb("fdb-append-snapshot-head", fdbWrite, fdbAppendRound, `r, err := s.startRound(tr, o, readLease)
		if err != nil {
			return err
		}
		r.head = tr.Snapshot().Get(st.headKey)
		idf := tr.Get(st.indexKey)`, "Append reads the head as a snapshot: two appends on one head both commit"),
		fdb("fdb-append-snapshot-index", fdbWrite, `idf := tr.Get(st.indexKey)`, `idf := tr.Snapshot().Get(st.indexKey)`,
			"Append reads the id index as a snapshot: one id can be stored in two threads"),
		// The same reads for every write at once, in the shared read round.
		fdb("fdb-round-snapshot-lease", fdbMarks, `r.lease = tr.Get(s.k.lease(o.thread))`, `r.lease = tr.Snapshot().Get(s.k.lease(o.thread))`,
			"every write reads the lease as a snapshot"),
		fdb("fdb-round-snapshot-head", fdbMarks, `r.head = tr.Get(s.k.head(o.thread))`, `r.head = tr.Snapshot().Get(s.k.head(o.thread))`,
			"every write reads the head as a snapshot"),
		equiv(fdb("fdb-round-snapshot-marker", fdbMarks, `marker: tr.Get(o.marker),`, `marker: tr.Snapshot().Get(o.marker),`,
			"every write reads its op marker as a snapshot"),
			"only a caller's token repeats an op, on Append, DeleteHead, Fork and AcquireWriter, and each writes the head or the lease, which both runs read with a conflict"),
		// Each write's own reads.
		fdb("fdb-dh-snapshot-index", fdbWrite, `idf := s.startByID(tr, checkpointID)`, `idf := s.startByID(tr.Snapshot(), checkpointID)`,
			"DeleteHead reads the checkpoint by id as a snapshot"),
		fdb("fdb-dh-unlist-no-conflict-links", fdbWrite, `tr.AddReadConflictRange(lr)`, `_ = lr`,
			"unlistIfEmpty takes no conflict on the thread's links: a checkpoint stored meanwhile leaves the thread unlisted"),
		fdb("fdb-dh-unlist-no-conflict-transcript", fdbWrite, `tr.AddReadConflictRange(mr)`, `_ = mr`,
			"unlistIfEmpty takes no conflict on the transcript: one saved meanwhile leaves the thread unlisted"),
		fdb("fdb-prune-snapshot-links", fdbWrite, `linksf := tr.GetRange(rangeOf(linksPrefix), kv.RangeOptions{})`,
			`linksf := tr.Snapshot().GetRange(rangeOf(linksPrefix), kv.RangeOptions{})`, "DeleteCheckpoints reads the chain as a snapshot"),
		fdb("fdb-fork-snapshot-source", fdbWrite, `srcf := s.startByID(tr, in.SourceCheckpointID)`, `srcf := s.startByID(tr.Snapshot(), in.SourceCheckpointID)`,
			"ForkFromCheckpoint reads the source as a snapshot: a prune of the source meanwhile is not seen"),
		fdb("fdb-fork-snapshot-links", fdbWrite, `anyf := tr.GetRange(rangeOf(s.k.linksPrefix(dst)), kv.RangeOptions{Limit: 1})`,
			`anyf := tr.Snapshot().GetRange(rangeOf(s.k.linksPrefix(dst)), kv.RangeOptions{Limit: 1})`, "ForkFromCheckpoint reads the destination's checkpoints as a snapshot"),
		fdb("fdb-fork-snapshot-transcript", fdbWrite, `msgf := tr.GetRange(rangeOf(s.k.transcriptPrefix(dst)), kv.RangeOptions{Limit: 1})`,
			`msgf := tr.Snapshot().GetRange(rangeOf(s.k.transcriptPrefix(dst)), kv.RangeOptions{Limit: 1})`, "ForkFromCheckpoint reads the destination's transcript as a snapshot"),
		fdb("fdb-fork-snapshot-dest-id", fdbWrite, `dstf := s.startByID(tr, in.DestinationCheckpointID)`, `dstf := s.startByID(tr.Snapshot(), in.DestinationCheckpointID)`,
			"ForkFromCheckpoint reads the destination id as a snapshot"),
		fdb("fdb-release-snapshot-lease", fdbWrite, `raw, err := tr.Get(s.k.lease(w.ThreadID)).Get()`, `raw, err := tr.Snapshot().Get(s.k.lease(w.ThreadID)).Get()`,
			"ReleaseWriter reads the lease as a snapshot: it can release a lease taken over meanwhile"),
		fdb("fdb-dt-snapshot-data", fdbDelT, `dataf := tr.GetRange(rangeOf(p), kv.RangeOptions{Limit: limit})`, `dataf := tr.Snapshot().GetRange(rangeOf(p), kv.RangeOptions{Limit: limit})`,
			"DeleteThread reads the thread's data as a snapshot: an import meanwhile is lost or half deleted"),
		fdb("fdb-import-snapshot-ids", fdbImport, `fs[i] = s.startByID(tr, st.cp.ID)`, `fs[i] = s.startByID(tr.Snapshot(), st.cp.ID)`,
			"Import reads its ids as a snapshot: an id stored in another thread meanwhile is stored twice"),

		// ---- issue 13, family (b): counts ----
		fdb("fdb-no-compare-and-clear", fdbWrite, `tr.CompareAndClear(k, zeroCount)`, ``,
			"a blob count that reaches 0 is left in place (BlobReferences hides it; the keyspace leaks)"),
		fdb("fdb-remove-no-decrement", fdbWrite, `tr.Add(k, -1)
		tr.CompareAndClear(k, zeroCount)`, `tr.CompareAndClear(k, zeroCount)`, "removing a checkpoint drops no blob counts"),
		fdb("fdb-insert-no-count", fdbWrite, `for _, k := range st.refKeys {
		tr.Add(k, 1)
	}`, ``, "storing a checkpoint counts no blobs"),
		equiv(fdb("fdb-blobrefs-zero", fdbStore, `if n := kv.DecodeInt64(kvp.Value); n > 0 {`, `if n := kv.DecodeInt64(kvp.Value); n >= 0 {`,
			"BlobReferences reports counts at 0"),
			"a count that reaches 0 is cleared in the same transaction (CompareAndClear), so no stored count is 0"),
	}
}

// fdbAppendMutants break the writer check and Append.
func fdbAppendMutants() []mutant {
	return []mutant{
		// ---- the writer check ----
		equiv(fdb("fdb-writer-released-ok", fdbWrite, `if l.token == "" {`, `if false {`,
			"checkWriter skips its released-lease check"),
			"a released lease keeps expires at the Unix epoch, so the expiry check then fails it with the same error"),
		fdb("fdb-writer-no-token", fdbWrite, `if l.token != w.OwnerToken || l.fence != w.Fence {`, `if l.fence != w.Fence {`, "checkWriter ignores the owner token"),
		fdb("fdb-writer-no-fence", fdbWrite, `if l.token != w.OwnerToken || l.fence != w.Fence {`, `if l.token != w.OwnerToken {`, "checkWriter ignores the fence"),
		fdb("fdb-writer-expiry-edge", fdbWrite, `if !now.Before(l.expires) {`, `if now.After(l.expires) {`, "checkWriter accepts a lease at now == expiry"),

		// ---- Append ----
		fdb("fdb-append-no-marker", fdbWrite, `idf := tr.Get(st.indexKey)
		if done, _, err := r.done(); err != nil || done {
			return err
		}`, `idf := tr.Get(st.indexKey)`, "Append ignores its op marker: a retry after commit_unknown_result fails"),
		fdb("fdb-append-skip-writer", fdbWrite, `if err := r.checkWriter(w); err != nil {
			return err
		}
		if idx, err := idf.Get(); err != nil {`, `if idx, err := idf.Get(); err != nil {`, "Append skips the writer check"),
		fdb("fdb-append-skip-dup", fdbWrite, `} else if idx != nil {
			return fmt.Errorf("%w: %q", ckptstore.ErrDuplicateID, c.ID)
		}`, `} else if idx != nil && false {
			return nil
		}`, "Append skips the duplicate id check"),
		fdb("fdb-append-skip-head", fdbWrite, `if head != expectedHeadID {
			return fmt.Errorf("%w: head of thread %q is %q, expected %q"`, `if false {
			return fmt.Errorf("%w: head of thread %q is %q, expected %q"`, "Append skips the expected head check"),
		fdb("fdb-append-skip-parent", fdbWrite, `if c.ParentCheckpointID != expectedHeadID {`, `if false {`, "Append skips the parent check"),
		fdb("fdb-append-no-listed", fdbWrite, `if head == "" {
			// The thread may have been empty: list it. With a head it is
			// listed already.
			tr.Set(s.k.listed(c.ThreadID), nil)
		}`, ``, "Append does not list a new thread"),
		fdb("fdb-append-no-finish", fdbWrite, `s.insert(tr, st, true)
		if head == "" {`, `s.insert(tr, st, false)
		if head == "" {`, "Append does not move the head"),
		fdb("fdb-insert-no-link", fdbWrite, `tr.Set(st.linkKey, linkValue{`, `_ = (linkValue{`, "a stored checkpoint has no link: prunes and forks do not see it"),
		fdb("fdb-insert-no-copy", fdbWrite, `if st.copied {
			tr.Set(st.copyKeys[i], part)
		}`, ``, "a checkpoint marked copied has no copy under its index"),
	}
}

// fdbDeleteMutants break DeleteHead and DeleteCheckpoints.
func fdbDeleteMutants() []mutant {
	return []mutant{
		// ---- DeleteHead ----
		fdb("fdb-dh-skip-writer", fdbWrite, `if err := r.checkWriter(w); err != nil {
			return err
		}
		head, err := r.headID()
		if err != nil {
			return err
		}
		notHead :=`, `head, err := r.headID()
		if err != nil {
			return err
		}
		notHead :=`, "DeleteHead skips the writer check"),
		fdb("fdb-dh-skip-head", fdbWrite, `if head != checkpointID {
			return notHead
		}`, `_ = head`, "DeleteHead deletes a checkpoint that is not the head"),
		fdb("fdb-dh-other-thread", fdbWrite, `if idx == nil || idx.thread != threadID {`, `if idx == nil {`,
			"DeleteHead deletes a head id that another thread reused"),
		fdb("fdb-dh-head-cleared", fdbWrite, `if cp.ParentCheckpointID != "" {
			tr.Set(s.k.head(threadID), []byte(cp.ParentCheckpointID))
		} else {`, `if false {
		} else {`, "DeleteHead leaves the thread without a head instead of the parent"),
		fdb("fdb-dh-no-unlist", fdbWrite, `if err := s.unlistIfEmpty(tr, threadID, checkpointID, lf, mf); err != nil {
				return err
			}`, `_, _ = lf, mf`, "DeleteHead of a root keeps the thread listed"),
		fdb("fdb-unlist-ignores-transcript", fdbWrite, `ms, err := msgs.Get()
	if err != nil {
		return err
	}`, `ms, err := msgs.Get()
	if err != nil {
		return err
	}
	ms = nil`, "deleting a root unlists a thread that keeps its transcript"),
		fdb("fdb-unlist-ignores-links", fdbWrite, `if string(l.Key) != own {`, `if _ = own; l.Key == nil {`,
			"deleting a root unlists a thread that keeps other checkpoints"),
		fdb("fdb-remove-keeps-copy", fdbWrite, `tr.ClearRange(s.k.idRange(cp.ID))`, ``, "removing a checkpoint keeps its index and copy"),
		fdb("fdb-remove-keeps-link", fdbWrite, `tr.Clear(s.k.link(cp.ThreadID, cp.ID))`, ``, "removing a checkpoint keeps its link"),

		// ---- DeleteCheckpoints ----
		fdb("fdb-prune-skip-writer", fdbWrite, `if err := r.checkWriter(w); err != nil {
			return err
		}
		head, err := r.headID()
		if err != nil {
			return err
		}
		linkKVs, err := linksf.Get()`, `head, err := r.headID()
		if err != nil {
			return err
		}
		linkKVs, err := linksf.Get()`, "DeleteCheckpoints skips the writer check"),
		fdb("fdb-prune-keep-edge", fdbWrite, `if len(chain) <= keep {
			ids, more = []string{}, false`, `if len(chain) <= keep+1 {
			ids, more = []string{}, false`, "DeleteCheckpoints keeps one more than keep when the chain is one longer"),
		fdb("fdb-prune-nearest-first", fdbWrite, `slices.Reverse(doomed) // farthest first`, ``,
			"DeleteCheckpoints deletes nearest the head first: a batch midway leaves a broken chain"),
		fdb("fdb-prune-no-more", fdbWrite, `ids, more = slices.Clone(batch), len(batch) < len(doomed)`, `ids, more = slices.Clone(batch), false`,
			"DeleteCheckpoints stops after one batch"),
		fdb("fdb-chain-no-seen", fdbWrite, `for id := head; id != "" && !seen[id]; {`, `for id := head; id != "" && len(chain) <= len(links); {`,
			"the chain walk does not stop at a parent cycle (it stops after as many steps as links)"),
	}
}

// fdbForkLeaseMutants break ForkFromCheckpoint, leases and op markers.
func fdbForkLeaseMutants() []mutant {
	return []mutant{
		// ---- ForkFromCheckpoint ----
		fdb("fdb-fork-skip-notfound", fdbWrite, `return nil, fmt.Errorf("%w: %q", ckptstore.ErrForkSourceNotFound, in.SourceCheckpointID)`,
			`return nil, fmt.Errorf("%w: %q", ckptstore.ErrForkSourceThreadMismatch, in.SourceCheckpointID)`, "a missing fork source reports a thread mismatch"),
		fdb("fdb-fork-skip-mismatch", fdbWrite, `if srcIdx.thread != in.SourceThreadID {`, `if false {`, "ForkFromCheckpoint skips the source thread check"),
		fdb("fdb-fork-skip-writer-thread", fdbWrite, `if err := precheck.WriterThread(in.Writer, dst); err != nil {
			return err
		}`, ``, "ForkFromCheckpoint skips the writer's thread check"),
		fdb("fdb-fork-skip-writer", fdbWrite, `if err := r.checkWriter(in.Writer); err != nil {
			return err
		}`, ``, "ForkFromCheckpoint skips the writer check"),
		fdb("fdb-fork-skip-dest-head", fdbWrite, `if head != "" || len(members) != 0 {`, `if _ = head; len(members) != 0 {`, "fork into a thread whose head names a pruned checkpoint"),
		fdb("fdb-fork-skip-dest-members", fdbWrite, `if head != "" || len(members) != 0 {`, `if _ = members; head != "" {`, "fork into a thread with checkpoints but no head"),
		fdb("fdb-fork-skip-dest-transcript", fdbWrite, `if len(msgs) != 0 {
			return fmt.Errorf("%w: thread %q has a transcript"`, `if _ = msgs; false {
			return fmt.Errorf("%w: thread %q has a transcript"`, "fork into a thread with a transcript"),
		fdb("fdb-fork-skip-dest-id", fdbWrite, `} else if len(used) != 0 {`, `} else if _ = used; false {`, "fork onto a used checkpoint id"),
		fdb("fdb-fork-no-transcript", fdbWrite, `s.writeTranscript(tr, dst, transcript)
		if err := r.finish(tr, nil); err != nil {`, `if err := r.finish(tr, nil); err != nil {`, "fork leaves the destination without a transcript"),
		fdb("fdb-fork-empty-transcript", fdbWrite, `if len(cp.Conversation) == 0 {
		return driver.EmptyTranscript()
	}`, ``, "fork of a root without conversation stores an empty transcript, not []"),
		fdb("fdb-fork-repeat-no-root", fdbWrite, `if err == nil && root == nil {`, `if false {`,
			"a fork repeated with its op token returns no root"),

		// ---- leases ----
		fdb("fdb-acquire-ignore-live", fdbWrite, `if cur.token != "" && now.Before(cur.expires) {`, `if false {`, "AcquireWriter takes over a live lease"),
		equiv(fdb("fdb-acquire-released-live", fdbWrite, `if cur.token != "" && now.Before(cur.expires) {`, `if now.Before(cur.expires) {`,
			"AcquireWriter refuses a released lease until it would have expired"),
			"ReleaseWriter sets expires to the Unix epoch, so a released lease is never before its expiry"),
		fdb("fdb-acquire-fence-reset", fdbWrite, `fence = cur.fence
		}`, `}`, "AcquireWriter restarts fences at 1"),
		fdb("fdb-acquire-marker-lease", fdbWrite, `taken, err = decodeTaken(o.token, result)`, `taken, err = decodeTaken(o.token+"x", result)`,
			"AcquireWriter repeated with its op token reports another owner token"),
		fdb("fdb-renew-skip-writer", fdbWrite, `if err := r.checkWriter(w); err != nil {
			return err
		}
		exp := r.now.Add(s.opts.LeaseDuration)`, `exp := r.now.Add(s.opts.LeaseDuration)`, "RenewWriter skips the writer check"),
		fdb("fdb-renew-no-marker", fdbWrite, `if done, result, err := r.done(); err != nil || done {
			if err == nil {
				var l leaseValue`, `if done, result, err := r.done(); err != nil || (done && false) {
			if err == nil {
				var l leaseValue`, "RenewWriter retried after commit_unknown_result renews again"),
		fdb("fdb-renew-half", fdbWrite, `exp := r.now.Add(s.opts.LeaseDuration)`, `exp := r.now.Add(s.opts.LeaseDuration / 2)`, "RenewWriter extends by half a lease"),
		fdb("fdb-release-no-fence", fdbWrite, `if l.token == "" || l.token != w.OwnerToken || l.fence != w.Fence {`, `if l.token == "" || l.token != w.OwnerToken {`,
			"ReleaseWriter ignores the fence"),
		fdb("fdb-release-no-token", fdbWrite, `if l.token == "" || l.token != w.OwnerToken || l.fence != w.Fence {`, `if l.token == "" || l.fence != w.Fence {`,
			"ReleaseWriter ignores the owner token"),
		fdb("fdb-release-resets-fence", fdbWrite, `tr.Set(s.k.lease(w.ThreadID), leaseValue{fence: l.fence, expires: time.Unix(0, 0)}.encode())`,
			`tr.Clear(s.k.lease(w.ThreadID))`, "ReleaseWriter deletes the lease and its fence"),

		// ---- markers ----
		fdb("fdb-marker-no-prev-epoch", fdbMarks, `if v == nil && r.prev != nil {`, `if false {`,
			"a caller's repeat in the next marker epoch is not recognised"),
		fdb("fdb-marker-any-kind", fdbMarks, `if opKind(rest[0]) != r.o.kind {`, `if false {`,
			"a marker of another kind of write (a reused caller token) counts as this write's"),
		fdb("fdb-marker-no-expiry", fdbMarks, `tr.ClearRange(r.s.k.opsBefore(o.thread, r.epoch-1))`, ``, "expired op markers are never cleared"),
		fdb("fdb-marker-clears-prev", fdbMarks, `tr.ClearRange(r.s.k.opsBefore(o.thread, r.epoch-1))`, `tr.ClearRange(r.s.k.opsBefore(o.thread, r.epoch))`,
			"writes clear the markers of the previous epoch, which a caller's repeat still looks up"),
		fdb("fdb-no-give-up", fdbMarks, `if o.attempts > 1 && s.wallNow().Sub(o.start) > markerTTL/2 {`, `if false {`,
			"a write retries past half the marker lifetime"),
	}
}

// fdbCapabilityMutants break DeleteThread, Import, transcripts, the reads and Check.
func fdbCapabilityMutants() []mutant {
	return []mutant{
		// ---- DeleteThread, Import, transcripts ----
		fdb("fdb-dt-skip-writer", fdbDelT, `if err := r.checkWriter(w); err != nil {
			return err
		}
		kvs, err := dataf.Get()`, `kvs, err := dataf.Get()`, "DeleteThread skips the writer check"),
		fdb("fdb-dt-keep-head", fdbDelT, `tr.Clear(s.k.head(threadID))
			tr.ClearRange(rangeOf(s.k.transcriptPrefix(threadID)))`, `tr.ClearRange(rangeOf(s.k.transcriptPrefix(threadID)))`, "DeleteThread keeps the head"),
		fdb("fdb-dt-keep-transcript", fdbDelT, `tr.ClearRange(rangeOf(s.k.transcriptPrefix(threadID)))
			tr.Clear(s.k.listed(threadID))`, `tr.Clear(s.k.listed(threadID))`, "DeleteThread keeps the transcript"),
		fdb("fdb-dt-keep-listed", fdbDelT, `tr.Clear(s.k.listed(threadID))
		}`, `}`, "DeleteThread keeps the thread listed"),
		equiv(fdb("fdb-dt-last-cut", fdbDelT, `last := len(batch) == len(groups) && len(kvs) < limit`, `last := len(batch) == len(groups)`,
			"DeleteThread ends when its read was cut by the limit"),
			"a cut read leaves its last group out of the batch, so the batch is shorter than groups anyway"),
		fdb("fdb-dt-count", fdbDelT, `n, more = len(batch), !last`, `n, more = min(len(batch), 1), !last`, "DeleteThread counts batches, not checkpoints"),
		fdb("fdb-import-skip-writer", fdbImport, `if err := r.checkWriter(b.Writer); err != nil {
			return err
		}`, ``, "Import skips the writer check"),
		equiv(fdb("fdb-import-other-thread", fdbImport, `case idx.thread != thread:
			return nil, fmt.Errorf("%w: checkpoint %q is stored in thread %q", ckptstore.ErrDuplicateID, st.cp.ID, idx.thread)`, ``,
			"Import accepts an id stored in another thread"),
			"the stored checkpoint then differs in its thread id from the batch's, so the content check fails it with the same ErrDuplicateID"),
		fdb("fdb-import-other-content", fdbImport, `case !driver.EqualCheckpoints(cur, st.cp):`, `case cur == nil:`,
			"Import takes a stored id with other content as the same checkpoint"),
		fdb("fdb-import-skip-head", fdbImport, `if b.SetHead && head != "" && head != b.Head {`, `if false {`, "Import replaces a head it did not expect"),
		fdb("fdb-import-head-empty", fdbImport, `if b.SetHead && head != "" && head != b.Head {`, `if b.SetHead && head != b.Head {`,
			"Import refuses to set the head of a thread without one"),
		fdb("fdb-import-no-transcript", fdbImport, `if transcript != nil {
			s.writeTranscript(tr, b.ThreadID, transcript)
		}`, ``, "Import drops the transcript"),
		fdb("fdb-import-no-listed", fdbImport, `if len(fresh) > 0 || (b.SetHead && b.Head != "") {`, `if false {`, "Import does not list the thread"),
		fdb("fdb-import-count", fdbImport, `written = len(fresh)`, `written = len(sts)`, "Import counts the checkpoints it skipped as written"),
		fdb("fdb-save-no-listed", fdbTrans, `tr.Set(s.k.listed(threadID), nil)
}`, `}`, "SaveThread does not list the thread"),
		fdb("fdb-save-no-clear", fdbTrans, `tr.ClearRange(rangeOf(s.k.transcriptPrefix(threadID)))
	for i := range chunks(len(b)) {`, `for i := range chunks(len(b)) {`, "a shorter transcript keeps the old one's later chunks"),
		fdb("fdb-load-nil", fdbTrans, `if out == nil {
		return driver.EmptyTranscript(), nil
	}`, ``, "LoadThread of a thread never saved returns nil, not []"),

		// ---- reads ----
		fdb("fdb-sortkey-negzero", fdbKeys, `if createdAt == 0 {
		return 0
	}`, ``, "-0 sorts before 0"),
		fdb("fdb-page-after-inclusive", fdbPage, `_, r.Begin = tuple.Range(at) // after every chunk of the position`, `r.Begin = at`,
			"ListPage repeats the cursor's checkpoint"),
		fdb("fdb-page-more", fdbPage, `case len(groups) > pg.Limit:`, `case len(groups) >= pg.Limit:`, "a page of exactly Limit checkpoints drops one"),
		fdb("fdb-threads-inclusive", fdbPage, `r.Begin = append(s.k.listed(cursorID(tp.After)), 0x00)`, `r.Begin = s.k.listed(cursorID(tp.After))`,
			"Threads repeats the cursor's thread"),
		fdb("fdb-threads-more", fdbPage, `more := len(kvs) > tp.Limit`, `more := len(kvs) >= tp.Limit`, "Threads gives a cursor after a last full page"),

		// ---- Check ----
		fdb("fdb-check-zero-count", fdbCheck, `case n <= 0:
			c.bad(subject{}, c.s.k.ref(key), "count %d: a count at 0 is cleared", n)`, `case n < 0:
			c.bad(subject{}, c.s.k.ref(key), "count %d: a count at 0 is cleared", n)`, "Check accepts a count at 0"),
		fdb("fdb-check-recount", fdbCheck, `case n != c.counted[key]:`, `case false:`, "Check does not recount blob references"),
		fdb("fdb-check-uncounted", fdbCheck, `if _, ok := c.refs[key]; !ok && !c.badRefs[key] {`, `if false {`, "Check misses a used blob without a count"),
		fdb("fdb-check-fence-down", fdbCheck, `case top.fence > fence:`, `case false:`, "Check misses a fence that went down"),
	}
}
