package redisstore

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore/persist/driver"
)

// TestStoredMembersReadable: a hash written before the records had a codec
// (each member json.Marshal'd, so HTML-escaped; raw members as they are)
// reads back as the record, the driver's '~' fields skipped; a member
// whose value is not JSON, or carries a second member, is corrupt.
func TestStoredMembersReadable(t *testing.T) {
	old := []any{"runId", `"r\u003c1"`, "threadId", `"t"`, "status", `"failed"`, "startedAt", "5",
		"error", `{"message":"a\u0026b","code":"c"}`, "usage", ` {"t" : 1} `, "cancelRequested", "false",
		"~m", "\x00member bytes", "~r", "x"}
	got, err := decode[driver.RunRecord](old)
	require.NoError(t, err)
	code, f := "c", false
	require.Equal(t, &driver.RunRecord{RunID: "r<1", ThreadID: "t", Status: driver.RunFailed, StartedAt: 5,
		Error: &driver.RunError{Message: "a&b", Code: &code}, Usage: json.RawMessage(` {"t" : 1} `), CancelRequested: &f}, got)

	pairs, err := fields(got)
	require.NoError(t, err)
	require.Equal(t, []any{"runId", `"r<1"`, "threadId", `"t"`, "status", `"failed"`, "startedAt", "5",
		"error", `{"message":"a&b","code":"c"}`, "usage", ` {"t" : 1} `, "cancelRequested", "false"}, pairs)

	blob, err := decode[driver.BlobRecord]([]any{"key", `"k"`, "size", "1", "etag", `"e"`,
		"customMetadata", `{"a":"\u003e"}`, "createdAt", "1", "updatedAt", "2", "~o", "obj"})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"a": ">"}, blob.CustomMetadata)

	for _, bad := range [][]any{
		{"runId", `"r"`, "startedAt", `1,"threadId":"x"`},
		{"runId", `"r`},
		{"nope", `1`},
	} {
		_, err := decode[driver.RunRecord](bad)
		require.ErrorIs(t, err, driver.ErrCorrupt, "%v", bad)
	}
	p := driver.RunPatch{Status: driver.Set(driver.RunCompleted), SandboxKey: driver.Clear[string]()}
	pp, err := patchPairs(&p)
	require.NoError(t, err)
	require.Equal(t, []any{"status", `"completed"`, "sandboxKey", ""}, pp, "a cleared member is \"\": delete the field")
}
