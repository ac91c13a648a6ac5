package driver

// Validation shared by every store, so that each store rejects the same
// input with the same error in the same order. The functions here are pure:
// they read only their arguments. The checks that need the store's state
// (writer, duplicate id, head, parent) are each store's own.

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ckptstore/ckptstore/contract"
)

// MaxSize is the largest Entry or Artifact size: contract.MaxSafeInteger,
// the largest integer a JSON number (a JavaScript double) holds exactly.
const MaxSize = contract.MaxSafeInteger

const (
	filesKeyPrefix     = "sandbox-files/sha256/"
	artifactsKeyPrefix = "sandbox-artifacts/sha256/"
)

// MaxIDBytes is the longest id the contract accepts, in bytes:
// contract.MaxIDBytes, the one limit of every id, key, namespace and token
// of every contract.
const MaxIDBytes = contract.MaxIDBytes

// ValidateID returns ErrInvalidID, naming what, unless id is 1 to
// MaxIDBytes bytes of valid UTF-8 (contract.CheckNamedID). The error
// quotes at most a short prefix of id.
func ValidateID(what, id string) error { return contract.CheckNamedID(what, id, ErrInvalidID) }

// QuoteShort quotes s for an error message, at most its first 64 bytes
// and its length (contract.QuoteShort): an error never echoes an unbounded
// input.
func QuoteShort(s string) string { return contract.QuoteShort(s) }

// CutUTF8 is s cut to at most n bytes, not inside a UTF-8 sequence
// (contract.CutUTF8).
func CutUTF8(s string, n int) string { return contract.CutUTF8(s, n) }

// validateOptionalID is ValidateID for ids where "" means none.
func validateOptionalID(what, id string) error {
	if id == "" {
		return nil
	}
	return ValidateID(what, id)
}

// Validate runs the checks of Append steps 1 and 2 that depend on cp alone:
// its id, thread id and parent id (ErrInvalidID), then its fields, files and
// artifacts (ErrInvalidEntry).
func Validate(cp *Checkpoint) error {
	if cp == nil {
		return fmt.Errorf("%w: checkpoint is nil", ErrInvalidEntry)
	}
	if err := validateCheckpointIDs(cp); err != nil {
		return err
	}
	return validateContent(cp)
}

func validateCheckpointIDs(cp *Checkpoint) error {
	if err := ValidateID("checkpoint id", cp.ID); err != nil {
		return err
	}
	if err := ValidateID("thread id", cp.ThreadID); err != nil {
		return err
	}
	return validateOptionalID("parentCheckpointId", cp.ParentCheckpointID)
}

// ValidateAppend runs Append's checks 1 and 2 in order: the ids of cp, the
// writer's thread id and the expected head (ErrInvalidID), then cp's content
// (ErrInvalidEntry).
func ValidateAppend(cp *Checkpoint, expectedHeadID string, w Writer) error {
	return validateAppend(cp, expectedHeadID, w, false)
}

// ValidateAppendDecoded is ValidateAppend for a checkpoint JSONReader
// decoded: the same checks in the same order, but the conversation, which
// the reader held to validateConversation's rules as it read it, is not
// scanned again.
func ValidateAppendDecoded(d Decoded, expectedHeadID string, w Writer) error {
	return validateAppend(d.cp, expectedHeadID, w, true)
}

// validateAppend is ValidateAppend; convChecked skips the conversation's
// scan, which the caller has done.
func validateAppend(cp *Checkpoint, expectedHeadID string, w Writer, convChecked bool) error {
	if cp == nil {
		return fmt.Errorf("%w: checkpoint is nil", ErrInvalidEntry)
	}
	if err := ValidateID("checkpoint id", cp.ID); err != nil {
		return err
	}
	if err := ValidateID("thread id", cp.ThreadID); err != nil {
		return err
	}
	if err := ValidateID("writer thread id", w.ThreadID); err != nil {
		return err
	}
	if err := validateOptionalID("expected head id", expectedHeadID); err != nil {
		return err
	}
	if err := validateOptionalID("parentCheckpointId", cp.ParentCheckpointID); err != nil {
		return err
	}
	return validateContentChecked(cp, convChecked)
}

// ValidateDeleteHead runs DeleteHead's id checks: thread, checkpoint and
// writer thread ids.
func ValidateDeleteHead(threadID, checkpointID string, w Writer) error {
	if err := ValidateID("thread id", threadID); err != nil {
		return err
	}
	if err := ValidateID("checkpoint id", checkpointID); err != nil {
		return err
	}
	return ValidateID("writer thread id", w.ThreadID)
}

// ValidatePrune runs DeleteCheckpoints' checks before the writer check: the
// thread and writer thread ids (ErrInvalidID), then keep ≥ 1
// (ErrInvalidEntry).
func ValidatePrune(threadID string, keep int, w Writer) error {
	if err := ValidateID("thread id", threadID); err != nil {
		return err
	}
	if err := ValidateID("writer thread id", w.ThreadID); err != nil {
		return err
	}
	if keep < 1 || int64(keep) > MaxSize { // int64: MaxSize overflows a 32-bit int
		return fmt.Errorf("%w: keep must be an integer from 1 to 2^53-1, got %d", ErrInvalidEntry, keep)
	}
	return nil
}

// ValidateFork runs ForkFromCheckpoint's checks that need no store state,
// in the order of docs/contract.md: the five ids (ErrInvalidID), a finite createdAt
// (ErrInvalidEntry), and distinct threads (ErrForkSourceThreadMismatch).
func ValidateFork(in ForkInput) error {
	for _, id := range []struct{ what, id string }{
		{"source thread id", in.SourceThreadID},
		{"source checkpoint id", in.SourceCheckpointID},
		{"destination thread id", in.DestinationThreadID},
		{"destination checkpoint id", in.DestinationCheckpointID},
		{"writer thread id", in.Writer.ThreadID},
	} {
		if err := ValidateID(id.what, id.id); err != nil {
			return err
		}
	}
	if !finite(in.CreatedAt) {
		return fmt.Errorf("%w: createdAt %v is not finite", ErrInvalidEntry, in.CreatedAt)
	}
	if in.SourceThreadID == in.DestinationThreadID {
		return ForkSameThreadError(in.SourceThreadID)
	}
	return nil
}

// ValidateInstanceKey returns ErrInvalidID unless key is 1 to MaxIDBytes
// bytes of valid UTF-8.
func ValidateInstanceKey(key string) error { return ValidateID("instance key", key) }

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidEntry}, args...)...)
}

// validateContent is Append step 2: everything but the ids.
func validateContent(cp *Checkpoint) error { return validateContentChecked(cp, false) }

// validateContentChecked is validateContent; convChecked skips the
// conversation's scan, which the caller has done.
func validateContentChecked(cp *Checkpoint, convChecked bool) error {
	if !finite(cp.CreatedAt) {
		return invalid("createdAt %v is not finite", cp.CreatedAt)
	}
	switch cp.Reason {
	case ReasonAutomatic, ReasonNamed, ReasonForkRoot:
	default:
		return invalid("reason %s is not automatic, named or fork-root", QuoteShort(string(cp.Reason)))
	}
	if !utf8.ValidString(cp.Label) {
		return invalid("label is not valid UTF-8")
	}
	if !utf8.ValidString(cp.SourceRunID) {
		return invalid("sourceRunId is not valid UTF-8")
	}
	if !convChecked {
		if err := validateConversation(cp.Conversation); err != nil {
			return err
		}
	}
	if err := validateFiles(cp.Files); err != nil {
		return err
	}
	return validateArtifacts(cp.Artifacts)
}

// validateConversation accepts an empty conversation or a JSON array
// within the contract's JSON-validity rule (CheckJSON): the same inputs as
//
//	json.Valid(conv) && utf8.Valid(conv) && first non-space byte is '[' &&
//	nesting at most contract.MaxJSONDepth
//
// which conversation_test.go holds it to (a table, an exhaustive sweep of
// short inputs and a differential fuzz target). It runs on every Append, so
// its cost is linear in len(conv) and its stack depth bounded.
func validateConversation(conv []byte) error { return validateArray("conversation", conv) }

// validateArray is validateConversation of the value named what.
func validateArray(what string, conv []byte) error {
	if len(conv) == 0 {
		return nil
	}
	i := 0
	for i < len(conv) && (conv[i] == ' ' || conv[i] == '\t' || conv[i] == '\n' || conv[i] == '\r') {
		i++
	}
	if len(conv)-i == 2 && conv[i+1] == ']' && conv[i] == '[' {
		return nil // "[]", a new thread's: the JSON scanner's setup would be most of its cost
	}
	// A valid JSON text that starts with '[' is an array. jsonValid, like
	// json.Valid, lets invalid UTF-8 through inside strings; a JSON text
	// must be UTF-8 (RFC 8259 §8.1), and the TypeScript side could not read
	// it back. utf8.Valid goes first: it costs a few percent of the JSON
	// scan and rejects binary garbage before it.
	if i == len(conv) || conv[i] != '[' || !utf8.Valid(conv) {
		return invalid("%s is not a JSON array", what)
	}
	if deep, err := scanJSON(conv, contract.MaxJSONDepth); deep {
		return invalid("%s is nested deeper than %d levels", what, contract.MaxJSONDepth)
	} else if err != nil {
		return invalid("%s is not a JSON array", what)
	}
	return nil
}

func validateFiles(files []Entry) error {
	kinds := make(map[string]EntryKind, len(files))
	for i, e := range files {
		if err := validatePath(e.Path); err != nil {
			return fmt.Errorf("%w (file %d)", err, i)
		}
		switch e.Kind {
		case KindFile:
			if err := validateBlobKey(e.BlobKey, filesKeyPrefix); err != nil {
				return fmt.Errorf("%w (file %s)", err, QuoteShort(e.Path))
			}
			if e.Size < 0 || e.Size > MaxSize {
				return invalid("file %s has size %d outside 0..2^53-1", QuoteShort(e.Path), e.Size)
			}
		case KindDir:
			if e.BlobKey != "" || e.Size != 0 {
				return invalid("directory %s has a blobKey or size", QuoteShort(e.Path))
			}
		default:
			return invalid("entry %s has kind %s, not file or dir", QuoteShort(e.Path), QuoteShort(string(e.Kind)))
		}
		if _, dup := kinds[e.Path]; dup {
			return invalid("duplicate path %s", QuoteShort(e.Path))
		}
		kinds[e.Path] = e.Kind
	}
	// No entry may lie beneath a file. Checking every proper ancestor of
	// every path costs O(total path length).
	for _, e := range files {
		p := e.Path
		for j := strings.LastIndexByte(p, '/'); j > 0; j = strings.LastIndexByte(p, '/') {
			p = p[:j]
			if kinds[p] == KindFile {
				return invalid("entry %s is beneath file %s", QuoteShort(e.Path), QuoteShort(p))
			}
		}
	}
	return nil
}

// validatePath checks that p is a relative, normalized, slash-separated path.
func validatePath(p string) error {
	switch {
	case p == "":
		return invalid("path is empty")
	case !utf8.ValidString(p):
		return invalid("path %s is not valid UTF-8", QuoteShort(p))
	case strings.IndexByte(p, 0) >= 0:
		return invalid("path %s contains NUL", QuoteShort(p))
	case p[0] == '/' || p[0] == '\\':
		return invalid("path %s is absolute", QuoteShort(p))
	case len(p) >= 2 && isASCIILetter(p[0]) && p[1] == ':' && (len(p) == 2 || p[2] == '/' || p[2] == '\\'):
		return invalid("path %s is absolute (drive letter)", QuoteShort(p))
	case strings.IndexByte(p, '\\') >= 0:
		return invalid("path %s contains a backslash", QuoteShort(p))
	}
	// One pass over the bytes, not strings.SplitSeq: its iterator and
	// searches cost more than the few bytes of a path.
	for lo, i := 0, 0; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		if seg := p[lo:i]; seg == "" || seg == "." || seg == ".." {
			return invalid("path %s has an empty, . or .. segment", QuoteShort(p))
		}
		lo = i + 1
	}
	return nil
}

func isASCIILetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// validateBlobKey checks that key is prefix followed by 64 lowercase hex
// digits. It needs no UTF-8 check of its own: a key that passes is ASCII,
// and one with invalid UTF-8 fails the rule with the same error (its
// quote shows its bytes).
func validateBlobKey(key, prefix string) error {
	hex, ok := strings.CutPrefix(key, prefix)
	if !ok || len(hex) != 64 {
		return invalid("blobKey %s is not %s<64 lowercase hex>", quoteBlobKey(key, prefix), prefix)
	}
	for i := 0; i < len(hex); i++ {
		if !lowerHex[hex[i]] {
			return invalid("blobKey %s is not %s<64 lowercase hex>", quoteBlobKey(key, prefix), prefix)
		}
	}
	return nil
}

// quoteBlobKey quotes a blob key for an error: whole when it is no longer
// than a valid one (so the error shows the digit that is wrong), else as
// QuoteShort does, since a longer one is unbounded.
func quoteBlobKey(key, prefix string) string {
	if len(key) <= len(prefix)+64 {
		return strconv.Quote(key)
	}
	return QuoteShort(key)
}

// lowerHex tells the lowercase hex digits: one load a byte, where the
// range tests were most of an Append's time spent on its blob keys.
var lowerHex = func() (t [256]bool) {
	for c := range len(t) {
		t[c] = '0' <= c && c <= '9' || 'a' <= c && c <= 'f'
	}
	return t
}()

func validateArtifacts(arts []Artifact) error {
	for i, a := range arts {
		for _, f := range []struct{ name, v string }{
			{"artifactId", a.ArtifactID}, {"name", a.Name}, {"mimeType", a.MimeType},
		} {
			if f.v == "" {
				return invalid("artifact %d has an empty %s", i, f.name)
			}
			if !utf8.ValidString(f.v) {
				return invalid("artifact %d has a %s that is not valid UTF-8", i, f.name)
			}
		}
		if err := validateBlobKey(a.BlobKey, artifactsKeyPrefix); err != nil {
			return fmt.Errorf("%w (artifact %s)", err, QuoteShort(a.ArtifactID))
		}
		if a.Size < 0 || a.Size > MaxSize {
			return invalid("artifact %s has size %d outside 0..2^53-1", QuoteShort(a.ArtifactID), a.Size)
		}
		if !finite(a.CreatedAt) {
			return invalid("artifact %s has a createdAt that is not finite", QuoteShort(a.ArtifactID))
		}
	}
	return nil
}

// ValidateInstanceRecord checks rec for Upsert: a non-empty, valid UTF-8 key
// (ErrInvalidID), and valid UTF-8 in every other string (ErrInvalidEntry).
func ValidateInstanceRecord(rec *InstanceRecord) error {
	if rec == nil {
		return invalid("instance record is nil")
	}
	if err := ValidateInstanceKey(rec.Key); err != nil {
		return err
	}
	for _, f := range []struct{ name, v string }{
		{"provider", rec.Provider}, {"providerSandboxId", rec.ProviderSandboxID},
		{"threadId", rec.ThreadID}, {"latestSnapshotId", rec.LatestSnapshotID},
		{"latestRunId", rec.LatestRunID},
	} {
		if !utf8.ValidString(f.v) {
			return invalid("instance record %s is not valid UTF-8", f.name)
		}
	}
	// updatedAt crosses the wire as a JSON number, which holds an integer
	// exactly only within ±(2^53−1): the HTTP layer refuses any other, so
	// every store does.
	if rec.UpdatedAt > MaxSize || rec.UpdatedAt < -MaxSize {
		return invalid("instance record updatedAt %d is not a safe integer", rec.UpdatedAt)
	}
	return nil
}

// ValidateTranscript checks a transcript for SaveThread: a JSON array, kept
// byte for byte. Unlike a checkpoint's conversation, an empty value is not
// "[]" but invalid (ErrInvalidEntry).
func ValidateTranscript(messages []byte) error {
	if len(messages) == 0 {
		return invalid("transcript is empty, not a JSON array")
	}
	return validateArray("transcript", messages)
}

// ValidateDeleteThread runs DeleteThread's id checks: the thread and the
// writer's thread (ErrInvalidID).
func ValidateDeleteThread(threadID string, w Writer) error {
	if err := ValidateID("thread id", threadID); err != nil {
		return err
	}
	return ValidateID("writer thread id", w.ThreadID)
}

// ValidateImport runs Import's checks that need no store state, in order:
// every id (ErrInvalidID), then every checkpoint's content, its thread and
// the transcript (ErrInvalidEntry).
func ValidateImport(b ImportBatch) error {
	if err := ValidateID("thread id", b.ThreadID); err != nil {
		return err
	}
	if err := ValidateID("writer thread id", b.Writer.ThreadID); err != nil {
		return err
	}
	for _, cp := range b.Checkpoints {
		if cp == nil {
			continue // an entry error, reported after every id
		}
		if err := validateCheckpointIDs(cp); err != nil {
			return err
		}
	}
	if b.SetHead {
		if err := validateOptionalID("head id", b.Head); err != nil {
			return err
		}
	}
	seen := make(map[string]struct{}, len(b.Checkpoints))
	for i, cp := range b.Checkpoints {
		if cp == nil {
			return invalid("import checkpoint %d is nil", i)
		}
		if cp.ThreadID != b.ThreadID {
			return invalid("import checkpoint %q is of thread %q, not %q", cp.ID, cp.ThreadID, b.ThreadID)
		}
		if _, dup := seen[cp.ID]; dup {
			return invalid("import batch holds checkpoint %q twice", cp.ID)
		}
		seen[cp.ID] = struct{}{}
		if err := validateContent(cp); err != nil {
			return err
		}
	}
	if b.Transcript != nil {
		return ValidateTranscript(b.Transcript)
	}
	return nil
}
