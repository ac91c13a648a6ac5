package driver

import (
	"bytes"
	"cmp"
	"encoding/json"
	"math"
	"slices"
	"strings"
)

// Reason says why a checkpoint was taken.
type Reason string

// The three reasons a checkpoint may carry.
const (
	ReasonAutomatic Reason = "automatic" // after a run
	ReasonNamed     Reason = "named"     // a version the user named
	ReasonForkRoot  Reason = "fork-root" // the root of a forked thread
)

// EntryKind is the kind of a file entry.
type EntryKind string

// The two kinds of entry.
const (
	KindFile EntryKind = "file"
	KindDir  EntryKind = "dir"
)

// Entry is one path of a sandbox's workspace. A file points at its bytes by
// a content-addressed blob key; a directory has neither BlobKey nor Size.
type Entry struct {
	Path    string
	Kind    EntryKind
	BlobKey string // files only: sandbox-files/sha256/<64 lowercase hex>
	Size    int64  // files only: 0 ≤ Size ≤ 2^53−1
}

// Artifact is a file a run produced, stored as a blob.
type Artifact struct {
	ArtifactID, Name, MimeType string
	Size                       int64
	BlobKey                    string // sandbox-artifacts/sha256/<64 lowercase hex>
	CreatedAt                  float64
}

// Checkpoint is the state of a thread's sandbox after a run. A stored
// checkpoint never changes; every read returns the caller's own copy.
type Checkpoint struct {
	ID, ThreadID       string
	ParentCheckpointID string          // "" = none (JSON null)
	CreatedAt          float64         // milliseconds since the epoch; finite
	Reason             Reason          //
	Label, SourceRunID string          // optional ("" = absent)
	Files              []Entry         // order kept
	Conversation       json.RawMessage // a JSON array, opaque, kept byte for byte; empty means []
	Artifacts          []Artifact      // order kept
}

// Clone returns a deep copy of cp (nil for nil), sharing no memory with it.
func (cp *Checkpoint) Clone() *Checkpoint {
	if cp == nil {
		return nil
	}
	c := *cp
	c.Files = slices.Clone(cp.Files)
	c.Artifacts = slices.Clone(cp.Artifacts)
	c.Conversation = bytes.Clone(cp.Conversation)
	return &c
}

// BlobKeys returns the distinct blob keys of cp — the BlobKey of each file
// entry and of each artifact — sorted by their bytes. A store adds one
// reference to each of them when cp is stored, and removes one when cp is
// deleted.
func (cp *Checkpoint) BlobKeys() []string {
	keys := make([]string, 0, len(cp.Files)+len(cp.Artifacts))
	for _, e := range cp.Files {
		if e.Kind == KindFile {
			keys = append(keys, e.BlobKey)
		}
	}
	for _, a := range cp.Artifacts {
		keys = append(keys, a.BlobKey)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// CompareCheckpoints orders checkpoints as List returns them: by CreatedAt,
// then by the bytes of the id.
func CompareCheckpoints(a, b *Checkpoint) int {
	if c := cmp.Compare(a.CreatedAt, b.CreatedAt); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// Writer identifies a writer lease: the thread, the lease's random owner
// token and its fence. Every write carries one and must be the thread's
// current, live lease.
type Writer struct {
	ThreadID, OwnerToken string
	Fence                int64
}

// BlobRef is a blob key and the number of stored checkpoints that use it.
type BlobRef struct {
	Key        string
	References int64
}

// ForkInput names the checkpoint to fork and the new thread to fork it into.
type ForkInput struct {
	SourceThreadID, SourceCheckpointID           string
	DestinationThreadID, DestinationCheckpointID string
	CreatedAt                                    float64
	Writer                                       Writer // the destination thread's lease
}

// ForkRoot returns the checkpoint that ForkFromCheckpoint stores for in,
// copied from src: the destination id and thread, no parent, reason
// fork-root, no label or source run, and src's files, conversation and
// artifacts.
func ForkRoot(src *Checkpoint, in ForkInput) *Checkpoint {
	c := src.Clone()
	c.ID = in.DestinationCheckpointID
	c.ThreadID = in.DestinationThreadID
	c.ParentCheckpointID = ""
	c.CreatedAt = in.CreatedAt
	c.Reason = ReasonForkRoot
	c.Label = ""
	c.SourceRunID = ""
	return c
}

// InstanceRecord maps a key to the provider sandbox that serves it.
type InstanceRecord struct {
	Key, Provider, ProviderSandboxID, ThreadID string
	LatestSnapshotID, LatestRunID              string // optional ("" = absent)
	UpdatedAt                                  int64  // milliseconds since the epoch
}

// Clone returns a copy of r (nil for nil).
func (r *InstanceRecord) Clone() *InstanceRecord {
	if r == nil {
		return nil
	}
	c := *r
	return &c
}

// EqualCheckpoints reports whether a and b hold the same checkpoint: every
// field equal, createdAt to the bit (math.Float64bits), the conversation
// byte for byte with an empty one equal to "[]", and nil slices equal to
// empty ones. Import uses it to tell a resumed batch from a conflicting one.
func EqualCheckpoints(a, b *Checkpoint) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.ID == b.ID && a.ThreadID == b.ThreadID &&
		a.ParentCheckpointID == b.ParentCheckpointID &&
		math.Float64bits(a.CreatedAt) == math.Float64bits(b.CreatedAt) &&
		a.Reason == b.Reason && a.Label == b.Label && a.SourceRunID == b.SourceRunID &&
		slices.Equal(a.Files, b.Files) && slices.Equal(a.Artifacts, b.Artifacts) &&
		bytes.Equal(conversationBytes(a.Conversation), conversationBytes(b.Conversation))
}

func conversationBytes(c json.RawMessage) []byte {
	if len(c) == 0 {
		return []byte("[]")
	}
	return c
}

// EmptyTranscript returns "[]", what LoadThread returns for a thread with no
// transcript, as a new slice the caller owns.
func EmptyTranscript() json.RawMessage { return json.RawMessage("[]") }

// Transcript is a thread's transcript that has passed ValidateTranscript:
// a JSON array of valid UTF-8, as its exact bytes. Only this package makes
// one (JSONReader.Transcript, CheckTranscript), so a Transcript is valid by
// construction, and a store takes it without checking it again.
type Transcript struct {
	b []byte
}

// Bytes returns the transcript's bytes, byte for byte as they came in.
// They are the input's (a reader's, a caller's) and must not be changed.
func (t Transcript) Bytes() []byte { return t.b }

// CheckTranscript returns messages as a Transcript after ValidateTranscript,
// without copying them.
func CheckTranscript(messages []byte) (Transcript, error) {
	if err := ValidateTranscript(messages); err != nil {
		return Transcript{}, err
	}
	return Transcript{b: messages}, nil
}
