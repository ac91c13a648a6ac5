package driver_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore/persist/driver"
	"github.com/stretchr/testify/require"
)

// TestRecordShapes pins the JSON of each record to TanStack's shapes: the
// field names, optional fields left out when absent, false and 0 kept.
func TestRecordShapes(t *testing.T) {
	f, z := false, int64(0)
	cases := []struct {
		v    any
		want string
	}{
		{driver.RunRecord{RunID: "r", ThreadID: "t", Status: driver.RunRunning, StartedAt: 1},
			`{"runId":"r","threadId":"t","status":"running","startedAt":1}`},
		{driver.RunRecord{RunID: "r", ThreadID: "t", Status: driver.RunFailed, StartedAt: 1, FinishedAt: &z,
			Error: &driver.RunError{Message: "m"}, Usage: json.RawMessage(`{"totalTokens":1}`),
			SandboxKey: new(string), DetachedSince: &z, CancelRequested: &f, DriverEpoch: &z},
			`{"runId":"r","threadId":"t","status":"failed","startedAt":1,"finishedAt":0,"error":{"message":"m"},
			  "usage":{"totalTokens":1},"sandboxKey":"","detachedSince":0,"cancelRequested":false,"driverEpoch":0}`},
		{driver.InterruptRecord{InterruptID: "i", RunID: "r", ThreadID: "t", Status: driver.InterruptResolved,
			RequestedAt: 1, ResolvedAt: &z, Payload: json.RawMessage(`{}`), Response: json.RawMessage(`null`)},
			`{"interruptId":"i","runId":"r","threadId":"t","status":"resolved","requestedAt":1,"resolvedAt":0,"payload":{},"response":null}`},
		{driver.ArtifactRecord{ArtifactID: "a", RunID: "r", ThreadID: "t", Name: "n", MimeType: "m", Size: 0, CreatedAt: 0},
			`{"artifactId":"a","runId":"r","threadId":"t","name":"n","mimeType":"m","size":0,"createdAt":0}`},
		{driver.BlobMeta{Object: "secret", BlobRecord: driver.BlobRecord{Key: "k", Size: 1, ETag: "e", CreatedAt: 2, UpdatedAt: 3}},
			`{"key":"k","size":1,"etag":"e","createdAt":2,"updatedAt":3}`},
		{driver.GenerationRunRecord{RunID: "g", ThreadID: "t", Activity: "image", Provider: "p", Model: "m", Status: driver.RunRunning, StartedAt: 1},
			`{"runId":"g","threadId":"t","activity":"image","provider":"p","model":"m","status":"running","startedAt":1}`},
	}
	for _, c := range cases {
		b, err := json.Marshal(c.v)
		require.NoError(t, err)
		require.JSONEq(t, c.want, string(b))
	}
	var r driver.RunRecord
	require.NoError(t, json.Unmarshal([]byte(`{"runId":"r","threadId":"t","status":"running","startedAt":5,"cancelRequested":false}`), &r))
	require.NotNil(t, r.CancelRequested)
	require.Nil(t, r.DetachedSince)
	require.Error(t, json.Unmarshal([]byte(`{"startedAt":1.5}`), &r), "times are integers")
}

func TestPatchFields(t *testing.T) {
	var keep driver.Field[int64]
	require.False(t, keep.Named())
	set := driver.Set[int64](4)
	require.True(t, set.Named() && set.IsSet() && !set.IsClear())
	require.Equal(t, int64(4), set.Value())
	clr := driver.Clear[int64]()
	require.True(t, clr.Named() && clr.IsClear() && !clr.IsSet())

	one := int64(1)
	rec := &driver.RunRecord{RunID: "r", Status: driver.RunRunning, DetachedSince: &one, DriverEpoch: &one}
	out := driver.RunPatch{Status: driver.Set(driver.RunCompleted), DetachedSince: driver.Clear[int64]()}.Apply(rec)
	require.Equal(t, driver.RunCompleted, out.Status)
	require.Nil(t, out.DetachedSince)
	require.Equal(t, &one, out.DriverEpoch)
	require.Equal(t, driver.RunRunning, rec.Status, "Apply leaves its input alone")
	require.Equal(t, &one, rec.DetachedSince)
}

func TestCodes(t *testing.T) {
	for _, e := range []error{driver.ErrInvalidID, driver.ErrInvalidEntry, driver.ErrDuplicateEntry, driver.ErrNotFound,
		driver.ErrNotPending, driver.ErrRangeNotSatisfiable, driver.ErrLockLost} {
		code := driver.Code(fmt.Errorf("wrapped: %w", e))
		require.NotEmpty(t, code)
		require.Equal(t, e, driver.ErrorFor(code))
	}
	require.Empty(t, driver.Code(driver.ErrCorrupt))
	require.Empty(t, driver.Code(errors.New("other")))
	require.Nil(t, driver.ErrorFor("SANDBOX_SNAPSHOT_STALE_HEAD"))
}

func TestOrders(t *testing.T) {
	a := func(at int64, id string) *driver.ArtifactRecord {
		return &driver.ArtifactRecord{CreatedAt: at, ArtifactID: id}
	}
	require.Negative(t, driver.ArtifactOrder(a(1, "z"), a(2, "a")), "time first")
	require.Negative(t, driver.ArtifactOrder(a(1, "\ue000"), a(1, "\U00010000")), "then UTF-8 bytes")
	require.Negative(t, driver.ArtifactOrder(a(1, "ab"), a(1, "abc")), "shorter equal prefix first")
	var p *driver.Position
	require.True(t, p.After(-1<<62, ""), "nil is before everything")
	q := &driver.Position{At: 5, ID: "m"}
	require.False(t, q.After(5, "m"), "strictly after")
	require.True(t, q.After(5, "n"))
	require.False(t, q.After(4, "z"))
}

// TestRecordCheckBoundsItsError: a record whose id is over the one id
// limit is refused with ErrInvalidID, and the error quotes only a prefix.
func TestRecordCheckBoundsItsError(t *testing.T) {
	for _, n := range []int{driver.MaxIDBytes + 1, 1 << 20} {
		r := driver.Record{Kind: driver.KindRun, Run: &driver.RunRecord{RunID: strings.Repeat("r", n), ThreadID: "t", Status: driver.RunRunning}}
		err := r.Check()
		require.ErrorIs(t, err, driver.ErrInvalidID)
		require.Less(t, len(err.Error()), 300, "a %d-byte id", n)
	}
}
