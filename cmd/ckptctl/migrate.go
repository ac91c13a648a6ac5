package main

// export, import and copy. A migration reads threads from a source (a
// store, or an export stream) and writes each into the destination with
// importThread: under the destination thread's lease, after comparing
// what the destination already holds, in batches through Importer.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/internal/seqs"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
)

// Batch limits. FoundationDB refuses a transaction above 10 MB and
// degrades well before; fdbstore keeps its own writes under 9 MB. A batch
// of 1 MiB of checkpoint JSON (plus its blob count keys, which the size
// estimate counts) stays far below that on every store.
const (
	defaultBatchCount = 256
	defaultBatchBytes = 1 << 20
	maxBatchCount     = 10_000
	maxBatchBytes     = 4 << 20
)

// blobKeyCost is what one distinct blob key of a checkpoint adds to a
// batch beyond the checkpoint's JSON: its count key and value.
const blobKeyCost = 32

// sized is a checkpoint with the bytes it adds to a batch.
type sized struct {
	cp   *ckptstore.Checkpoint
	size int
}

// srcThread is one thread of a migration source.
type srcThread struct {
	id   string
	head string // "" = none
	// transcript is nil when the thread has none to copy.
	transcript json.RawMessage
	// cps yields the thread's checkpoints. A store source yields them in
	// List order and can be read again (reiterable); a stream yields them
	// in stream order, once.
	cps        func() iter.Seq2[sized, error]
	reiterable bool
}

// batchCost is the bytes cp adds to a batch, given its JSON length.
func batchCost(cp *ckptstore.Checkpoint, jsonLen int) int {
	n := jsonLen
	for _, k := range cp.BlobKeys() {
		n += len(k) + blobKeyCost
	}
	return n
}

// jsonLenEstimate is about the length of cp's JSON, without encoding it.
func jsonLenEstimate(cp *ckptstore.Checkpoint) int {
	n := 200 + len(cp.ID) + len(cp.ThreadID) + len(cp.ParentCheckpointID) + len(cp.Label) + len(cp.SourceRunID) + len(cp.Conversation)
	for _, f := range cp.Files {
		n += 60 + len(f.Path) + len(f.BlobKey)
	}
	for _, a := range cp.Artifacts {
		n += 120 + len(a.ArtifactID) + len(a.Name) + len(a.MimeType) + len(a.BlobKey)
	}
	return n
}

// storeThread reads the header of thread id from s: its head and its
// transcript. LoadThread cannot tell "[]" saved from no transcript; the
// two differ only for a thread without head and checkpoints (which
// Threads lists only because it has a transcript), so "[]" is kept
// exactly there and dropped elsewhere, where a destination without it
// behaves the same. listed says that Threads returned id; a thread named
// by the operator (export --thread) that has nothing may not exist at
// all, so it gets no "[]" either.
func storeThread(ctx context.Context, s *ckptstore.Store, id string, listed bool) (*srcThread, error) {
	head, err := s.GetHead(ctx, id)
	if err != nil {
		return nil, err
	}
	th := &srcThread{id: id, head: head, reiterable: true}
	t, err := s.LoadThread(ctx, id)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(t, []byte("[]")) {
		th.transcript = t
	} else if head == "" && listed {
		has, err := hasCheckpoint(ctx, s, id)
		if err != nil {
			return nil, err
		}
		if !has {
			th.transcript = t
		}
	}
	th.cps = func() iter.Seq2[sized, error] {
		return func(yield func(sized, error) bool) {
			for cp, err := range checkpointSeq(ctx, s, id, driver.MaxPageLimit, false) {
				if err != nil {
					yield(sized{}, err)
					return
				}
				if !yield(sized{cp, batchCost(cp, jsonLenEstimate(cp))}, nil) {
					return
				}
			}
		}
	}
	return th, nil
}

// hasCheckpoint reports whether thread id of s holds any checkpoint.
func hasCheckpoint(ctx context.Context, s *ckptstore.Store, id string) (bool, error) {
	for _, err := range checkpointSeq(ctx, s, id, 1, false) {
		return err == nil, err
	}
	return false, nil
}

// options of a migration.
type migrateOptions struct {
	batchCount, batchBytes int
	wait                   bool
	progressEvery          time.Duration
	verb                   string // "import" or "copy", for messages
}

func (o *migrateOptions) register(f *flags, verb string) {
	o.verb = verb
	f.IntVar(&o.batchCount, "batch", defaultBatchCount, "most checkpoints per import batch (one atomic write)")
	f.IntVar(&o.batchBytes, "batch-bytes", defaultBatchBytes, "most bytes per import batch (checkpoint JSON plus blob count keys; at most 4 MiB)")
	f.BoolVar(&o.wait, "wait", false, "wait while another writer holds a destination thread's lease, instead of skipping the thread")
	f.DurationVar(&o.progressEvery, "progress", 2*time.Second, "interval of the progress lines on stderr (0 = none)")
}

func (o *migrateOptions) validate() error {
	switch {
	case o.batchCount < 1 || o.batchCount > maxBatchCount:
		return usageErr("--batch must be in 1..%d, got %d", maxBatchCount, o.batchCount)
	case o.batchBytes < 1024 || o.batchBytes > maxBatchBytes:
		return usageErr("--batch-bytes must be in 1024..%d, got %d", maxBatchBytes, o.batchBytes)
	case o.progressEvery < 0:
		return usageErr("--progress must not be negative")
	}
	return nil
}

// migrator writes source threads into dst and keeps the counts.
type migrator struct {
	e    *env
	opts migrateOptions
	dst  *store

	// mu guards what follows: copy --parallel runs threads concurrently.
	mu    sync.Mutex
	start time.Time
	// prog prints the progress lines; its thread total is the source's
	// when the command counted them (copy), else unknown (import).
	prog     *progress
	threads  int // threads handled (written, complete or failed)
	complete int // threads that needed nothing
	written  int // checkpoints newly written
	present  int // checkpoints the destination already held
	batches  int
	failed   []error // refused or skipped threads
}

func newMigrator(e *env, dst *store, opts migrateOptions) *migrator {
	return &migrator{e: e, opts: opts, dst: dst, start: e.now(), prog: newProgress(e, opts.verb, opts.progressEvery)}
}

// failure is a thread or a persistence record the migration did not
// write: the destination differs, another writer holds the thread, or a
// blob's bytes could not be copied. The migration reports it and goes on.
type failure struct {
	what   string // `thread "T"`, or the record's kind and id: `run "R"`
	reason string
	err    error
}

func (f *failure) Error() string { return f.what + ": " + f.reason }

func (f *failure) Unwrap() error { return f.err }

// threadFailure is the failure of thread, for reason, caused by err (nil
// for none).
func threadFailure(thread, reason string, err error) *failure {
	return &failure{what: fmt.Sprintf("thread %q", thread), reason: reason, err: err}
}

func refuse(thread, format string, args ...any) error {
	return threadFailure(thread, "refused: "+fmt.Sprintf(format, args...), nil)
}

// thread migrates one thread. A *failure is recorded and the
// migration goes on; any other error stops it.
func (m *migrator) thread(ctx context.Context, th *srcThread) error {
	err := m.importThread(ctx, th)
	m.update(th.id, func() {
		m.threads++
		if f, ok := errors.AsType[*failure](err); ok {
			m.failed = append(m.failed, f)
			fmt.Fprintf(m.e.stderr, "ckptctl %s: %v\n", m.opts.verb, f)
			err = nil
		}
	})
	return err
}

// importThread writes th into the destination under the destination
// thread's lease: it reads what the destination holds, refuses a thread
// that differs (before writing anything), and sends the missing
// checkpoints in batches, the last with the head and the transcript.
func (m *migrator) importThread(ctx context.Context, th *srcThread) error {
	l, err := acquire(ctx, m.e, m.dst.Store, th.id, m.opts.wait)
	if errors.Is(err, ckptstore.ErrWriterConflict) {
		return threadFailure(th.id, "skipped: another writer holds its lease (rerun, with --wait to wait for it)", err)
	}
	if err != nil {
		return err
	}
	defer release(ctx, l)
	k := newKeeper(l, m.e.now)
	d, err := m.readDestination(ctx, th)
	if err != nil {
		return err
	}
	src, present, err := m.presentIn(ctx, th, d, k)
	if err != nil {
		return err
	}
	b := &threadBatches{m: m, th: th, w: l.Writer, k: k}
	for sc, err := range src {
		if err != nil {
			return err
		}
		if sc.cp.ThreadID != th.id {
			return usageErr("thread %q: checkpoint %q belongs to thread %q", th.id, sc.cp.ID, sc.cp.ThreadID)
		}
		if present[sc.cp.ID] {
			m.update(th.id, func() { m.present++ })
			continue
		}
		if len(b.batch) > 0 && (len(b.batch) >= m.opts.batchCount || b.size+sc.size > m.opts.batchBytes) {
			if err := b.flush(ctx, false); err != nil {
				return err
			}
		}
		b.batch = append(b.batch, sc.cp)
		b.size += sc.size
	}
	needHead := th.head != "" && d.head != th.head
	// A saved "[]" reads like no transcript at all, so it is always sent
	// (it only comes for a thread that has nothing else).
	needTranscript := th.transcript != nil && (!bytes.Equal(d.transcript, th.transcript) || bytes.Equal(th.transcript, []byte("[]")))
	if needTranscript && len(b.batch) > 0 && b.size+len(th.transcript) > m.opts.batchBytes {
		if err := b.flush(ctx, false); err != nil {
			return err
		}
	}
	if len(b.batch) == 0 && !needHead && !needTranscript {
		if len(present) > 0 || d.empty {
			m.update(th.id, func() { m.complete++ })
		}
		return nil
	}
	return b.flush(ctx, true)
}

// destination is what the destination holds of a thread before the
// migration writes to it.
type destination struct {
	head       string
	transcript json.RawMessage // "[]" when none
	empty      bool            // no checkpoint
}

// readDestination reads what the destination holds of th, and refuses th
// when the destination's head or transcript is neither empty nor the
// source's.
func (m *migrator) readDestination(ctx context.Context, th *srcThread) (*destination, error) {
	head, err := m.dst.GetHead(ctx, th.id)
	if err != nil {
		return nil, err
	}
	if head != "" && head != th.head {
		return nil, refuse(th.id, "the destination's head is %q, the source's %q", head, th.head)
	}
	d := &destination{head: head}
	if d.transcript, err = m.dst.LoadThread(ctx, th.id); err != nil {
		return nil, err
	}
	srcTranscript := th.transcript
	if srcTranscript == nil {
		srcTranscript = driver.EmptyTranscript()
	}
	if !bytes.Equal(d.transcript, []byte("[]")) && !bytes.Equal(d.transcript, srcTranscript) {
		return nil, refuse(th.id, "the destination's transcript differs from the source's")
	}
	has, err := hasCheckpoint(ctx, m.dst.Store, th.id)
	if err != nil {
		return nil, err
	}
	d.empty = !has
	return d, nil
}

// presentIn returns th's checkpoints to send and the ids of those the
// destination d already holds. A destination with checkpoints is compared
// with the source first (compare), which refuses th on a difference; a
// source that is a stream is then kept in memory, to be read twice.
func (m *migrator) presentIn(ctx context.Context, th *srcThread, d *destination, k *keeper) (iter.Seq2[sized, error], map[string]bool, error) {
	src := th.cps()
	if d.empty {
		return src, map[string]bool{}, nil
	}
	if !th.reiterable {
		// A stream is read once: keep the thread to read it twice,
		// in List order as the comparison needs.
		all, err := seqs.Collect(src)
		if err != nil {
			return nil, nil, err
		}
		slices.SortFunc(all, func(a, b sized) int { return driver.ComparePosition(a.cp, driver.PositionOf(b.cp)) })
		src = sliceSeq(all)
	}
	present, err := m.compare(ctx, th.id, src, k)
	if err != nil {
		return nil, nil, err
	}
	return src, present, nil
}

// threadBatches gathers the checkpoints of one thread into import
// batches, written under the lease of w.
type threadBatches struct {
	m     *migrator
	th    *srcThread
	w     ckptstore.Writer
	k     *keeper
	batch []*ckptstore.Checkpoint
	size  int // the estimated bytes of batch
}

// flush imports the batch gathered so far; the final one sets the head
// and the transcript. A batch the destination refuses fails the thread.
func (b *threadBatches) flush(ctx context.Context, final bool) error {
	m, th := b.m, b.th
	ib := ckptstore.ImportBatch{ThreadID: th.id, Checkpoints: b.batch, Writer: b.w}
	if final {
		ib.SetHead, ib.Head = th.head != "", th.head
		ib.Transcript = th.transcript
	}
	if err := b.k.maybeRenew(ctx); err != nil {
		return err
	}
	n, err := m.importBatch(ctx, ib)
	if errors.Is(err, ckptstore.ErrDuplicateID) || errors.Is(err, ckptstore.ErrConflict) {
		return threadFailure(th.id, "refused by the destination: "+err.Error(), err)
	}
	if err != nil {
		return err
	}
	m.update(th.id, func() {
		m.written += n
		m.present += len(ib.Checkpoints) - n
		if m.e.afterBatch != nil {
			err = m.e.afterBatch()
		}
	})
	b.batch, b.size = nil, 0
	return err
}

// importBatch imports b. A batch the destination refuses as invalid is
// imported in two halves, recursively: a store may find a batch too large
// for one transaction (fdbstore's limit counts its own encoding, which
// the size estimate only approximates), and a checkpoint that is itself
// invalid still fails, alone. The head and the transcript go with the
// last part, so they are set only once every checkpoint is in.
func (m *migrator) importBatch(ctx context.Context, b ckptstore.ImportBatch) (int, error) {
	n, err := m.dst.Import(ctx, b)
	if err == nil {
		m.update(b.ThreadID, func() { m.batches++ })
		return n, nil
	}
	if !errors.Is(err, ckptstore.ErrInvalidEntry) || len(b.Checkpoints) < 2 || ctx.Err() != nil {
		return 0, err
	}
	half := len(b.Checkpoints) / 2
	first, second := b, b
	first.Checkpoints, second.Checkpoints = b.Checkpoints[:half:half], b.Checkpoints[half:]
	first.SetHead, first.Head, first.Transcript = false, "", nil
	n1, err := m.importBatch(ctx, first)
	if err != nil {
		return n1, err
	}
	n2, err := m.importBatch(ctx, second)
	return n1 + n2, err
}

// compare walks the destination's checkpoints of thread against the
// source's, both in List order, and returns the ids the destination
// already holds. A destination checkpoint that the source does not hold,
// or holds with other content, refuses the thread.
func (m *migrator) compare(ctx context.Context, thread string, src iter.Seq2[sized, error], k *keeper) (map[string]bool, error) {
	next, stop := iter.Pull2(src)
	defer stop()
	cur, curErr, ok := next()
	present := map[string]bool{}
	for d, err := range checkpointSeq(ctx, m.dst.Store, thread, driver.MaxPageLimit, false) {
		if err != nil {
			return nil, err
		}
		if err := k.maybeRenew(ctx); err != nil { // a long thread takes a while
			return nil, err
		}
		pos := driver.PositionOf(d)
		for ok && curErr == nil && driver.ComparePosition(cur.cp, pos) < 0 {
			cur, curErr, ok = next()
		}
		if curErr != nil {
			return nil, curErr
		}
		if !ok || driver.ComparePosition(cur.cp, pos) != 0 {
			return nil, refuse(thread, "the destination holds checkpoint %q, which the source does not", d.ID)
		}
		if !driver.EqualCheckpoints(cur.cp, d) {
			return nil, refuse(thread, "the destination's checkpoint %q differs from the source's", d.ID)
		}
		present[d.ID] = true
	}
	return present, nil
}

// update runs f under the lock, then prints a progress line when the
// interval has passed.
func (m *migrator) update(thread string, f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f()
	m.prog.tick(m.threads, m.written+m.present, func() string {
		return fmt.Sprintf("%d written, %d already present, at thread %q", m.written, m.present, thread)
	})
}

func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// summary prints what the migration did, and returns an error when a
// thread failed.
func (m *migrator) summary(w io.Writer) error {
	d := m.e.now().Sub(m.start)
	fmt.Fprintf(w, "%s: %d threads (%d already complete), %d checkpoints written, %d already present, %d batches, %v, %.0f checkpoints/s\n",
		m.opts.verb, m.threads, m.complete, m.written, m.present, m.batches, d.Round(time.Millisecond), rate(m.written+m.present, d))
	if len(m.failed) > 0 {
		return fmt.Errorf("%d threads not written (listed above): %w", len(m.failed), errors.Join(m.failed...))
	}
	return nil
}

// ---- export ----

func runExport(ctx context.Context, e *env, args []string) error {
	f := newStoreFlags(e, "export", "the store URL")
	out := f.String("out", "-", "the file to write (- = stdout)")
	every := f.Duration("progress", 2*time.Second, "interval of the progress lines on stderr (0 = none)")
	var only []string
	f.Func("thread", "export only this thread (repeatable; default: every thread)", func(s string) error {
		only = append(only, s)
		return nil
	})
	if _, err := f.parse(args, 0); err != nil {
		return err
	}
	for _, id := range only {
		if err := driver.ValidateID("thread id", id); err != nil {
			return err
		}
	}
	s, err := f.openStore(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	ids, total := threadSeq(ctx, s), len(only)
	if len(only) > 0 {
		ids = sliceSeq(only)
	} else if *every > 0 {
		// The total of the progress lines: one pass over the thread
		// index, small beside the export.
		if total, err = countThreads(ctx, s); err != nil {
			return err
		}
	}
	w := e.stdout
	var file *os.File
	if *out != "-" {
		if file, err = os.Create(*out); err != nil {
			return usageErr("--out: %v", err)
		}
		defer file.Close()
		w = file
	}
	start := e.now()
	x := &exporter{e: e, s: s, whole: len(only) == 0, every: *every, total: total}
	threads, cps, err := x.write(ctx, ids, w)
	if err != nil {
		return err
	}
	if file != nil {
		if err := file.Close(); err != nil {
			return err
		}
	}
	d := e.now().Sub(start)
	fmt.Fprintf(e.stderr, "export: %d threads, %d checkpoints, %d persistence records, %d streams, %v, %.0f checkpoints/s\n", threads, cps, x.records, x.streams, d.Round(time.Millisecond), rate(cps, d))
	return nil
}

// exporter writes an export stream of s.
type exporter struct {
	e *env
	s *store
	// whole is an export of the whole store: the thread ids come from
	// its Threads (see storeThread's listed), and the persistence records
	// follow the threads; records is how many were written.
	whole   bool
	records int
	// streams is how many streams were written, after the records.
	streams int
	// every is the interval of the progress lines (0 = none), and total
	// the threads to write when known (0 = unknown).
	every time.Duration
	total int
}

// write writes the threads ids names to w as an export stream, each a
// header line and then its checkpoints, one line each, and returns the
// counts.
func (x *exporter) write(ctx context.Context, ids iter.Seq2[string, error], w io.Writer) (threads, cps int, err error) {
	e, s := x.e, x.s
	bw := bufio.NewWriterSize(w, 1<<20)
	prog := newProgress(e, "export", x.every)
	prog.threads = x.total
	for id, err := range ids {
		if err != nil {
			return threads, cps, err
		}
		th, err := storeThread(ctx, s.Store, id, x.whole)
		if err != nil {
			return threads, cps, err
		}
		writeHeader(bw, th)
		for sc, err := range th.cps() {
			if err != nil {
				return threads, cps, err
			}
			b, err := sc.cp.MarshalJSON()
			if err != nil {
				return threads, cps, err
			}
			bw.Write(b)
			bw.WriteByte('\n')
			cps++
		}
		threads++
		prog.tick(threads, cps, nil)
	}
	if x.whole {
		n, err := writePersist(ctx, s, bw, e.stderr)
		x.records = n
		if err != nil {
			return threads, cps, err
		}
		if x.streams, err = writeStreams(ctx, s, bw, e.stderr); err != nil {
			return threads, cps, err
		}
	}
	return threads, cps, bw.Flush()
}

// writeHeader writes the header line of th:
// {"thread":ID,"head":ID|null,"transcript":[…]|null}, its strings as the
// checkpoint codec writes them. The transcript goes out as its stored
// bytes.
func writeHeader(w *bufio.Writer, th *srcThread) {
	b := append(w.AvailableBuffer(), `{"thread":`...)
	b = driver.AppendJSONString(b, th.id)
	b = append(b, `,"head":`...)
	if th.head == "" {
		b = append(b, "null"...)
	} else {
		b = driver.AppendJSONString(b, th.head)
	}
	b = append(b, `,"transcript":`...)
	if th.transcript == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, th.transcript...)
	}
	w.Write(append(b, "}\n"...))
}

// ---- the stream reader ----

// streamReader reads an export stream: a sequence of JSON values (one per
// line as export writes them, but any whitespace between them is fine),
// each a thread header — an object whose first member is "thread" — or a
// checkpoint of the last header's thread.
type streamReader struct {
	dec  *jsontext.Decoder
	n    int // values read
	peek jsontext.Value
	seen map[string]bool
	// cur is the thread whose checkpoints are being read.
	cur string
	// onPersist takes each persistence record value ({"persist": …});
	// nil refuses them.
	onPersist func(v jsontext.Value) error
	// onStream takes each stream record value ({"stream": …} or
	// {"streamData": …}); nil refuses them.
	onStream func(v jsontext.Value) error
}

func newStreamReader(r io.Reader) *streamReader {
	return &streamReader{
		// The options accept what a stored conversation may hold, as
		// ckptstore's own validation does.
		dec:  jsontext.NewDecoder(r, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)),
		seen: map[string]bool{},
	}
}

// value returns the next value (a copy), or nil at the end.
func (r *streamReader) value() (jsontext.Value, error) {
	if r.peek != nil {
		v := r.peek
		r.peek = nil
		return v, nil
	}
	v, err := r.dec.ReadValue()
	if err == io.EOF {
		return nil, nil
	}
	if err != nil {
		return nil, usageErr("input value %d: %v", r.n+1, err)
	}
	r.n++
	return bytes.Clone(v), nil
}

// isHeader reports whether v is an object whose first member is "thread".
func isHeader(v jsontext.Value) bool { return firstMember(v, "thread") }

// firstMember reports whether v is an object whose first member is name
// (a name without escapes).
func firstMember(v jsontext.Value, name string) bool {
	b := bytes.TrimLeft(v, " \t\r\n")
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	b = bytes.TrimLeft(b[1:], " \t\r\n")
	quoted := `"` + name + `"`
	if !bytes.HasPrefix(b, []byte(quoted)) {
		return false
	}
	b = bytes.TrimLeft(b[len(quoted):], " \t\r\n")
	return len(b) > 0 && b[0] == ':'
}

// nextThread skips what is left of the current thread's checkpoints and
// returns the next thread, or nil at the end of the stream.
func (r *streamReader) nextThread() (*srcThread, error) {
	for {
		v, err := r.value()
		if err != nil || v == nil {
			return nil, err
		}
		if isHeader(v) {
			return r.header(v)
		}
		if isPersist(v) {
			// A persistence record ends the thread before it.
			r.cur = ""
			if r.onPersist == nil {
				return nil, usageErr("input value %d: a persistence record, which this command does not read", r.n)
			}
			if err := r.onPersist(v); err != nil {
				return nil, err
			}
			continue
		}
		if isStream(v) {
			// So does a stream record.
			r.cur = ""
			if r.onStream == nil {
				return nil, usageErr("input value %d: a stream record, which this command does not read", r.n)
			}
			if err := r.onStream(v); err != nil {
				return nil, err
			}
			continue
		}
		if r.cur == "" {
			return nil, usageErr("input value %d: a checkpoint before the first thread header", r.n)
		}
	}
}

func (r *streamReader) header(v jsontext.Value) (*srcThread, error) {
	var h struct {
		Thread     *string         `json:"thread"`
		Head       *string         `json:"head"`
		Transcript json.RawMessage `json:"transcript"`
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return nil, usageErr("input value %d: a thread header must be {\"thread\": ID, \"head\": ID|null, \"transcript\": [...]|null}: %v", r.n, err)
	}
	if h.Thread == nil {
		return nil, usageErr("input value %d: thread header without a thread id", r.n)
	}
	if err := driver.ValidateID("thread id", *h.Thread); err != nil {
		return nil, fmt.Errorf("input value %d: %w", r.n, err)
	}
	th := &srcThread{id: *h.Thread}
	if r.seen[th.id] {
		return nil, usageErr("input value %d: thread %q comes twice", r.n, th.id)
	}
	r.seen[th.id] = true
	r.cur = th.id
	if h.Head != nil {
		if err := driver.ValidateID("head id", *h.Head); err != nil {
			return nil, fmt.Errorf("input value %d: %w", r.n, err)
		}
		th.head = *h.Head
	}
	if len(h.Transcript) > 0 && !bytes.Equal(h.Transcript, []byte("null")) {
		if h.Transcript[0] != '[' {
			return nil, usageErr("input value %d: thread %q: the transcript is not a JSON array", r.n, th.id)
		}
		th.transcript = h.Transcript
	}
	// The checkpoints follow the header, up to the next header.
	th.cps = func() iter.Seq2[sized, error] {
		return func(yield func(sized, error) bool) {
			for {
				if r.cur != th.id {
					return
				}
				v, err := r.value()
				if err != nil {
					yield(sized{}, err)
					return
				}
				if v == nil {
					r.cur = ""
					return
				}
				if isHeader(v) || isPersist(v) || isStream(v) {
					r.peek = v
					r.cur = ""
					return
				}
				cp := new(ckptstore.Checkpoint)
				if err := cp.UnmarshalJSON(v); err != nil {
					yield(sized{}, fmt.Errorf("input value %d: %w", r.n, err))
					return
				}
				if cp.ThreadID != th.id {
					yield(sized{}, usageErr("input value %d: checkpoint %q of thread %q under the header of thread %q", r.n, cp.ID, cp.ThreadID, th.id))
					return
				}
				if !yield(sized{cp, batchCost(cp, len(v))}, nil) {
					return
				}
			}
		}
	}
	return th, nil
}

// ---- import ----

func runImport(ctx context.Context, e *env, args []string) error {
	f := newStoreFlags(e, "import", "the destination store URL")
	in := f.String("in", "-", "the export stream to read (- = stdin)")
	var opts migrateOptions
	opts.register(f, "import")
	if _, err := f.parse(args, 0); err != nil {
		return err
	}
	if err := opts.validate(); err != nil {
		return err
	}
	r := e.stdin
	if *in != "-" {
		file, err := os.Open(*in)
		if err != nil {
			return usageErr("--in: %v", err)
		}
		defer file.Close()
		r = file
	}
	s, err := f.openStore(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	m := newMigrator(e, s, opts)
	l, err := newLoader(m, s, nil)
	if err != nil {
		return err
	}
	sr := newStreamReader(bufio.NewReaderSize(r, 1<<20))
	sr.onPersist = func(v jsontext.Value) error {
		var rec pdriver.Record
		if err := rec.UnmarshalJSON(v); err != nil {
			return fmt.Errorf("input value %d: %w", sr.n, err)
		}
		return l.add(ctx, rec, len(v))
	}
	sl, err := newStreamLoader(m, s)
	if err != nil {
		return err
	}
	sr.onStream = func(v jsontext.Value) error {
		rec, err := parseStreamRecord(v)
		if err != nil {
			return fmt.Errorf("input value %d: %w", sr.n, err)
		}
		// Persistence records come before the streams: load them first.
		if err := l.flush(ctx); err != nil {
			return err
		}
		return sl.add(ctx, rec, len(v))
	}
	for {
		th, err := sr.nextThread()
		if err != nil {
			return err
		}
		if th == nil {
			break
		}
		if err := m.thread(ctx, th); err != nil {
			return err
		}
	}
	if err := l.flush(ctx); err != nil {
		return err
	}
	if err := sl.flush(ctx); err != nil {
		return err
	}
	return errors.Join(m.summary(e.stdout), l.summary(e.stdout), sl.summary(e.stdout))
}

// ---- copy ----

func runCopy(ctx context.Context, e *env, args []string) error {
	f := newFlags(e, "copy")
	from := f.String("from", "", "the source store URL")
	to := f.String("to", "", "the destination store URL")
	verify := f.Bool("verify", false, "compare the two stores at the end: threads, heads, transcripts, every checkpoint, blob counts")
	parallel := f.Int("parallel", 8, "threads copied at the same time (1..64)")
	fromBucket := f.String("bucket", "", "the source's blob bucket (mem://, file:///dir, s3://…): with --to-bucket, the bytes of every blob row are copied there before the row")
	toBucket := f.String("to-bucket", "", "the destination's blob bucket (with --bucket)")
	fromToken := f.String("from-token", "", "bearer token of an http(s):// --from ckptserver (default --token)")
	toToken := f.String("to-token", "", "bearer token of an http(s):// --to ckptserver (default --token)")
	var opts migrateOptions
	opts.register(f, "copy")
	if _, err := f.parse(args, 0); err != nil {
		return err
	}
	if err := opts.validate(); err != nil {
		return err
	}
	if *parallel < 1 || *parallel > 64 {
		return usageErr("--parallel must be in 1..64, got %d", *parallel)
	}
	// One server's URL with two tokens is two tenants.
	if *from != "" && *from == *to && (!httpstore.IsURL(*from) || *fromToken == *toToken) {
		return usageErr("--from and --to name the same store")
	}
	bc, err := openBuckets(ctx, e, *fromBucket, *toBucket)
	if err != nil {
		return err
	}
	src, err := openWithToken(ctx, e, "from", *from, *fromToken)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := openWithToken(ctx, e, "to", *to, *toToken)
	if err != nil {
		return err
	}
	defer dst.Close()
	threads, cps, threadsErr := copyStores(ctx, e, src, dst, opts, *parallel)
	if ctx.Err() != nil {
		return threadsErr
	}
	// The persistence records go after the threads, also when a thread
	// was refused: they do not depend on the checkpoints.
	pm := newMigrator(e, dst, opts)
	persistErr := copyPersist(ctx, pm, src, dst, bc)
	if ctx.Err() != nil {
		return errors.Join(threadsErr, persistErr)
	}
	// And the streams, which depend on neither.
	if err := errors.Join(threadsErr, persistErr, copyStreams(ctx, newMigrator(e, dst, opts), src, dst)); err != nil {
		return err
	}
	if *verify {
		// The copy's counts are the totals of the verify's progress: the
		// source's threads and checkpoints, as the copy read them.
		prog := newProgress(e, "verify", opts.progressEvery)
		prog.threads, prog.cps = threads, cps
		return verifyStores(ctx, e, src, dst, bc, prog)
	}
	return nil
}

// openWithToken is openFlag with token, when not empty, in place of
// --token: copy's --from-token and --to-token, so that one copy moves a
// namespace from one tenant (or server) to another.
func openWithToken(ctx context.Context, e *env, name, url, token string) (*store, error) {
	if token == "" {
		return openFlag(ctx, e, name, url)
	}
	if !httpstore.IsURL(url) {
		return nil, usageErr("--%s-token is for an http:// or https:// --%s", name, name)
	}
	saved := e.token
	e.token = token
	defer func() { e.token = saved }()
	return openFlag(ctx, e, name, url)
}

// copyStores copies every thread of src into dst, parallel threads at a
// time, prints the summary and returns how many threads and checkpoints
// of the source it went through. The first error that is not a thread's
// own failure stops every worker (each releases its lease) and is
// returned.
func copyStores(ctx context.Context, e *env, src, dst *store, opts migrateOptions, parallel int) (threads, cps int, err error) {
	m := newMigrator(e, dst, opts)
	if opts.progressEvery > 0 {
		// The total of the progress lines: one pass over the source's
		// thread index, small beside the copy.
		if m.prog.threads, err = countThreads(ctx, src); err != nil {
			return 0, 0, fmt.Errorf("source: %w", err)
		}
		m.prog.start = e.now()
	}
	ids := threadSeq(ctx, src)
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	work := make(chan string)
	var wg sync.WaitGroup
	for range parallel {
		wg.Go(func() {
			for id := range work {
				th, err := storeThread(wctx, src.Store, id, true)
				if err != nil {
					cancel(fmt.Errorf("source thread %q: %w", id, err))
					continue // drain: the feeder stops at the cancel
				}
				if err := m.thread(wctx, th); err != nil {
					cancel(err)
				}
			}
		})
	}
	feedErr := func() error {
		defer close(work)
		for id, err := range ids {
			if err != nil {
				return fmt.Errorf("source: %w", err)
			}
			select {
			case work <- id:
			case <-wctx.Done():
				return nil
			}
		}
		return nil
	}()
	wg.Wait()
	threads, cps = m.threads, m.written+m.present
	if feedErr != nil {
		return threads, cps, feedErr
	}
	if err := context.Cause(wctx); err != nil && wctx.Err() != nil {
		return threads, cps, err
	}
	return threads, cps, m.summary(e.stdout)
}
