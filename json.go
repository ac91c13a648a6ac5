package ckptstore

// JSON in the shape of @tanstack/ai-sandbox: camelCase names,
// parentCheckpointId null when empty, a directory entry without blobKey and
// size, a file entry always with size, optional strings left out when empty,
// arrays never null. Decoding checks the shape the TypeScript types imply
// (a field of the wrong JSON type, a size that is not a safe integer, a
// directory with file fields) and fails with ErrInvalidEntry, or
// ErrInvalidID for a missing or non-string id; the rules of Validate are
// left to Validate.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

func jsonValid(b []byte) bool { return json.Valid(b) }

// marshal is json.Marshal without HTML escaping, as JSON.stringify writes
// '<', '>' and '&'.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

type entryJSON struct {
	Path    string    `json:"path"`
	Kind    EntryKind `json:"kind"`
	BlobKey *string   `json:"blobKey,omitempty"`
	Size    *int64    `json:"size,omitempty"`
}

// MarshalJSON encodes e; a directory has no blobKey or size.
func (e Entry) MarshalJSON() ([]byte, error) {
	j := entryJSON{Path: e.Path, Kind: e.Kind}
	if e.Kind != KindDir {
		j.BlobKey, j.Size = &e.BlobKey, &e.Size
	}
	return marshal(j)
}

// UnmarshalJSON decodes an entry, rejecting a directory with a blobKey or
// size and a file without them.
func (e *Entry) UnmarshalJSON(b []byte) error {
	var j struct {
		Path    *string         `json:"path"`
		Kind    *string         `json:"kind"`
		BlobKey *string         `json:"blobKey"`
		Size    json.RawMessage `json:"size"`
	}
	if err := decodeShape(b, &j, "entry"); err != nil {
		return err
	}
	if j.Path == nil || j.Kind == nil {
		return invalid("entry needs a string path and kind")
	}
	out := Entry{Path: *j.Path, Kind: EntryKind(*j.Kind)}
	switch out.Kind {
	case KindDir:
		if j.BlobKey != nil || !isNull(j.Size) {
			return invalid("directory %q carries blobKey or size", out.Path)
		}
	case KindFile:
		if j.BlobKey == nil || isNull(j.Size) {
			return invalid("file %q needs blobKey and size", out.Path)
		}
		size, err := decodeSafeInt(j.Size, "size")
		if err != nil {
			return err
		}
		out.BlobKey, out.Size = *j.BlobKey, size
	default:
		return invalid("entry %q has kind %q, not file or dir", out.Path, out.Kind)
	}
	*e = out
	return nil
}

type artifactJSON struct {
	ArtifactID string  `json:"artifactId"`
	Name       string  `json:"name"`
	MimeType   string  `json:"mimeType"`
	Size       int64   `json:"size"`
	BlobKey    string  `json:"blobKey"`
	CreatedAt  float64 `json:"createdAt"`
}

// MarshalJSON encodes a.
func (a Artifact) MarshalJSON() ([]byte, error) { return marshal(artifactJSON(a)) }

// UnmarshalJSON decodes an artifact; every field is required.
func (a *Artifact) UnmarshalJSON(b []byte) error {
	var j struct {
		ArtifactID *string         `json:"artifactId"`
		Name       *string         `json:"name"`
		MimeType   *string         `json:"mimeType"`
		Size       json.RawMessage `json:"size"`
		BlobKey    *string         `json:"blobKey"`
		CreatedAt  *float64        `json:"createdAt"`
	}
	if err := decodeShape(b, &j, "artifact"); err != nil {
		return err
	}
	if j.ArtifactID == nil || j.Name == nil || j.MimeType == nil || j.BlobKey == nil || j.CreatedAt == nil {
		return invalid("artifact needs artifactId, name, mimeType, blobKey and createdAt")
	}
	size, err := decodeSafeInt(j.Size, "artifact size")
	if err != nil {
		return err
	}
	*a = Artifact{ArtifactID: *j.ArtifactID, Name: *j.Name, MimeType: *j.MimeType,
		Size: size, BlobKey: *j.BlobKey, CreatedAt: *j.CreatedAt}
	return nil
}

type checkpointJSON struct {
	ID                 string          `json:"id"`
	ThreadID           string          `json:"threadId"`
	ParentCheckpointID *string         `json:"parentCheckpointId"`
	CreatedAt          float64         `json:"createdAt"`
	Reason             Reason          `json:"reason"`
	Label              string          `json:"label,omitempty"`
	SourceRunID        string          `json:"sourceRunId,omitempty"`
	Files              []Entry         `json:"files"`
	Conversation       json.RawMessage `json:"conversation"`
	Artifacts          []Artifact      `json:"artifacts"`
}

// MarshalJSON encodes cp; an empty conversation, files or artifacts encode
// as [], and the conversation is copied byte for byte.
func (cp Checkpoint) MarshalJSON() ([]byte, error) {
	j := checkpointJSON{ID: cp.ID, ThreadID: cp.ThreadID, CreatedAt: cp.CreatedAt,
		Reason: cp.Reason, Label: cp.Label, SourceRunID: cp.SourceRunID,
		Files: cp.Files, Conversation: cp.Conversation, Artifacts: cp.Artifacts}
	if cp.ParentCheckpointID != "" {
		j.ParentCheckpointID = &cp.ParentCheckpointID
	}
	if j.Files == nil {
		j.Files = []Entry{}
	}
	if j.Artifacts == nil {
		j.Artifacts = []Artifact{}
	}
	if len(j.Conversation) == 0 {
		j.Conversation = json.RawMessage("[]")
	}
	// encoding/json compacts a RawMessage; the conversation must keep its
	// bytes, so it is spliced in after encoding the rest.
	conv := j.Conversation
	j.Conversation = json.RawMessage(`0`)
	out, err := marshal(j)
	if err != nil {
		return nil, err
	}
	if !json.Valid(conv) {
		return nil, invalid("conversation is not valid JSON")
	}
	const placeholder = `"conversation":0,`
	i := bytes.LastIndex(out, []byte(placeholder))
	if i < 0 {
		return nil, fmt.Errorf("ckptstore: internal error encoding conversation")
	}
	res := make([]byte, 0, len(out)+len(conv))
	res = append(res, out[:i+len(`"conversation":`)]...)
	res = append(res, conv...)
	res = append(res, out[i+len(placeholder)-1:]...)
	return res, nil
}

// UnmarshalJSON decodes a checkpoint. The conversation is kept as its exact
// bytes; it must be a JSON array (null or absent means empty).
func (cp *Checkpoint) UnmarshalJSON(b []byte) error {
	var j struct {
		ID                 *string         `json:"id"`
		ThreadID           *string         `json:"threadId"`
		ParentCheckpointID *string         `json:"parentCheckpointId"`
		CreatedAt          *float64        `json:"createdAt"`
		Reason             *string         `json:"reason"`
		Label              *string         `json:"label"`
		SourceRunID        *string         `json:"sourceRunId"`
		Files              []Entry         `json:"files"`
		Conversation       json.RawMessage `json:"conversation"`
		Artifacts          []Artifact      `json:"artifacts"`
	}
	if err := decodeShape(b, &j, "checkpoint"); err != nil {
		return err
	}
	if j.ID == nil || j.ThreadID == nil {
		return fmt.Errorf("%w: checkpoint needs string id and threadId", ErrInvalidID)
	}
	if j.CreatedAt == nil || j.Reason == nil {
		return invalid("checkpoint needs createdAt and reason")
	}
	out := Checkpoint{ID: *j.ID, ThreadID: *j.ThreadID, CreatedAt: *j.CreatedAt,
		Reason: Reason(*j.Reason), Files: j.Files, Artifacts: j.Artifacts}
	if j.ParentCheckpointID != nil {
		out.ParentCheckpointID = *j.ParentCheckpointID
	}
	if j.Label != nil {
		out.Label = *j.Label
	}
	if j.SourceRunID != nil {
		out.SourceRunID = *j.SourceRunID
	}
	if !isNull(j.Conversation) {
		if err := validateConversation(j.Conversation); err != nil {
			return err
		}
		out.Conversation = bytes.Clone(j.Conversation)
	}
	*cp = out
	return nil
}

type instanceJSON struct {
	Key               string `json:"key"`
	Provider          string `json:"provider"`
	ProviderSandboxID string `json:"providerSandboxId"`
	ThreadID          string `json:"threadId"`
	LatestSnapshotID  string `json:"latestSnapshotId,omitempty"`
	LatestRunID       string `json:"latestRunId,omitempty"`
	UpdatedAt         int64  `json:"updatedAt"`
}

// MarshalJSON encodes r; absent optional fields are left out.
func (r InstanceRecord) MarshalJSON() ([]byte, error) {
	return marshal(instanceJSON(r))
}

// UnmarshalJSON decodes an instance record; key, provider,
// providerSandboxId, threadId and updatedAt are required.
func (r *InstanceRecord) UnmarshalJSON(b []byte) error {
	var j struct {
		Key               *string         `json:"key"`
		Provider          *string         `json:"provider"`
		ProviderSandboxID *string         `json:"providerSandboxId"`
		ThreadID          *string         `json:"threadId"`
		LatestSnapshotID  *string         `json:"latestSnapshotId"`
		LatestRunID       *string         `json:"latestRunId"`
		UpdatedAt         json.RawMessage `json:"updatedAt"`
	}
	if err := decodeShape(b, &j, "instance record"); err != nil {
		return err
	}
	if j.Key == nil {
		return fmt.Errorf("%w: instance record needs a string key", ErrInvalidID)
	}
	if j.Provider == nil || j.ProviderSandboxID == nil || j.ThreadID == nil {
		return invalid("instance record needs provider, providerSandboxId and threadId")
	}
	updated, err := decodeInt(j.UpdatedAt, "updatedAt", math.MinInt64)
	if err != nil {
		return err
	}
	out := InstanceRecord{Key: *j.Key, Provider: *j.Provider, ProviderSandboxID: *j.ProviderSandboxID,
		ThreadID: *j.ThreadID, UpdatedAt: updated}
	if j.LatestSnapshotID != nil {
		out.LatestSnapshotID = *j.LatestSnapshotID
	}
	if j.LatestRunID != nil {
		out.LatestRunID = *j.LatestRunID
	}
	*r = out
	return nil
}

// decodeShape decodes b into v, turning a JSON type mismatch into
// ErrInvalidEntry; contract errors from nested decoders pass through.
func decodeShape(b []byte, v any, what string) error {
	if err := json.Unmarshal(b, v); err != nil {
		if Code(err) != "" {
			return err
		}
		return fmt.Errorf("%w: %s: %v", ErrInvalidEntry, what, err)
	}
	return nil
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// decodeSafeInt decodes a JSON number that is an integer from 0 to 2^53−1,
// as JavaScript's Number.isSafeInteger accepts it (1e3 and 2.0 included).
func decodeSafeInt(raw json.RawMessage, what string) (int64, error) {
	return decodeInt(raw, what, 0)
}

func decodeInt(raw json.RawMessage, what string, lowest int64) (int64, error) {
	if isNull(raw) || !(raw[0] == '-' || '0' <= raw[0] && raw[0] <= '9') {
		return 0, invalid("%s must be a number", what)
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > MaxSize || f < float64(lowest) {
		return 0, invalid("%s %s is not a safe integer in range", what, raw)
	}
	return int64(f), nil
}
