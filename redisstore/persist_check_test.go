package redisstore_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	ckptdriver "github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/persist/driver"
	"github.com/ckptstore/ckptstore/redisstore"
)

// TestPersistCheckFindsCorruption fills a store through the persistence
// driver (the engine's Check finds nothing), then breaks one invariant of
// each kind behind its back; Check reports each at its key.
func TestPersistCheckFindsCorruption(t *testing.T) {
	ctx := context.Background()
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	d, err := redisstore.NewPersistence(redisstore.PersistenceOptions{Client: c, Prefix: "chk"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })

	_, err = d.CreateOrResumeRun(ctx, &driver.RunRecord{RunID: "r1", ThreadID: "t", Status: driver.RunRunning, StartedAt: 1})
	require.NoError(t, err)
	_, err = d.UpdateRun(ctx, "r1", driver.RunPatch{DetachedSince: driver.Set[int64](2)})
	require.NoError(t, err)
	_, err = d.CreateOrResumeRun(ctx, &driver.RunRecord{RunID: "r2", ThreadID: "t", Status: driver.RunCompleted, StartedAt: 1})
	require.NoError(t, err)
	require.NoError(t, d.CreateInterrupt(ctx, &driver.InterruptRecord{InterruptID: "i", RunID: "r1", ThreadID: "t",
		Status: driver.InterruptPending, RequestedAt: 3, Payload: json.RawMessage(`{}`)}))
	require.NoError(t, d.SaveArtifact(ctx, &driver.ArtifactRecord{ArtifactID: "a", RunID: "r1", ThreadID: "t", CreatedAt: 4}))
	_, _, err = d.PutBlob(ctx, &driver.BlobMeta{BlobRecord: driver.BlobRecord{Key: "b", ETag: "e"}, Object: "o"})
	require.NoError(t, err)
	require.NoError(t, d.SetMetadata(ctx, "ns", "k", json.RawMessage(`{"a":1}`)))
	_, err = d.AcquireLock(ctx, driver.LockRequest{Key: "l", Token: "x", Lease: 1e9})
	require.NoError(t, err)
	require.Empty(t, engineCheck(t, c, "chk"))

	base := "{chk}:p:"
	must := func(err error) { t.Helper(); require.NoError(t, err) }
	must(c.ZRemRangeByLex(ctx, base+"runs:active", "-", "+").Err()) // r1 running, not active
	must(c.HSet(ctx, base+"run:r2", "status", `"running"`).Err())   // r2 running, not active either
	must(c.ZAdd(ctx, base+"blobs", redis.Z{Member: "ghost"}).Err()) // a key without a row
	must(c.HDel(ctx, base+"int:i", "~t").Err())                     // an interrupt without its member
	must(c.HSet(ctx, base+"art:a", "createdAt", "5").Err())         // moved in time, not in the index
	must(c.HSet(ctx, base+"meta", "\x00\x02nsk", "not json").Err()) // a value that is not JSON
	must(c.HDel(ctx, base+"lock:l", "x").Err())                     // a holder without an expiry
	must(c.Set(ctx, "{chk}:o:R:forever", "[]", 0).Err())            // a persistence op key that never expires
	must(c.Set(ctx, "{chk}:o:M:long", "[]", time.Hour).Err())       // one that outlives OpTokenTTL
	var got []string
	for _, p := range engineCheck(t, c, "chk") {
		require.ErrorIs(t, p, ckptdriver.ErrCorrupt) // the checkpoint drivers' Problem
		got = append(got, strings.TrimPrefix(p.Key, base)+": "+p.What)
	}
	want := []string{"arts:run", "arts:thread", "blobs", "art:a", "int:i", "lock:l", "meta", "runs:active",
		"{chk}:o:R:forever", "{chk}:o:M:long"}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || strings.HasPrefix(g, w+":")
		}
		require.True(t, found, "no problem at %s in %q", w, got)
	}
}
