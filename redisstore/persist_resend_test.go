package redisstore_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/persist/driver"
)

// TestResendAfterLostReply loses the reply of each write after the server
// ran it; go-redis resends the script, and the resend must answer as the
// first run did: no double write, no false failure. Each step names what a
// resend without the op key would have answered instead.
func TestResendAfterLostReply(t *testing.T) {
	ctx := context.Background()
	srv, _ := startLoaded(t)
	proxy := redistest.NewProxy(t, srv.Addr)
	c := redistest.NewClient(t, proxy.Addr, &redis.Options{MaxRetries: 20, MinRetryBackoff: time.Millisecond, MaxRetryBackoff: 2 * time.Millisecond})
	require.NoError(t, c.Ping(ctx).Err())
	d := newDriver(t, c, nil)
	lost := int64(0)
	loseNext := func() {
		t.Helper()
		require.Equal(t, lost, proxy.DroppedReplies(), "the proxy lost a reply too many or too few")
		lost++
		proxy.DropReplies(1)
	}

	loseNext()
	run, err := d.CreateOrResumeRun(ctx, &driver.RunRecord{RunID: "r", ThreadID: "t", Status: driver.RunRunning, StartedAt: 1})
	require.NoError(t, err)
	require.Equal(t, "r", run.RunID)
	loseNext()
	ok, err := d.UpdateRun(ctx, "r", driver.RunPatch{DetachedSince: driver.Set[int64](5)})
	require.NoError(t, err)
	require.True(t, ok)
	rs, err := d.ReclaimableRuns(ctx, 5, nil, 10)
	require.NoError(t, err)
	require.Len(t, rs, 1, "the resent update indexed the run once")

	for _, id := range []string{"i1", "i2"} {
		loseNext()
		require.NoError(t, d.CreateInterrupt(ctx, &driver.InterruptRecord{InterruptID: id, RunID: "r", ThreadID: "t",
			Status: driver.InterruptPending, RequestedAt: 2, Payload: json.RawMessage(`{}`)}))
	}
	loseNext()
	err = d.CommitInterrupts(ctx, []driver.InterruptCommitEntry{{InterruptID: "i1", Status: driver.InterruptResolved},
		{InterruptID: "i2", Status: driver.InterruptCancelled}}, 3, "")
	require.NoError(t, err, "a resent commit batch must not fail as not pending")
	pending, err := d.ListInterrupts(ctx, driver.InterruptScope{RunID: "r", PendingOnly: true}, nil, 10)
	require.NoError(t, err)
	require.Empty(t, pending)

	blob := func(obj string, created int64) *driver.BlobMeta {
		return &driver.BlobMeta{BlobRecord: driver.BlobRecord{Key: "b", Size: 1, ETag: obj, CreatedAt: created, UpdatedAt: created}, Object: obj}
	}
	loseNext()
	_, replaced, err := d.PutBlob(ctx, blob("o1", 10))
	require.NoError(t, err)
	require.Empty(t, replaced, "a resent first put must not name its own bytes as replaced")
	loseNext()
	stored, replaced, err := d.PutBlob(ctx, blob("o2", 20))
	require.NoError(t, err)
	require.Equal(t, "o1", replaced, "a resent overwrite names the old bytes, not its own")
	require.EqualValues(t, 10, stored.CreatedAt)
	loseNext()
	obj, err := d.DeleteBlob(ctx, "b")
	require.NoError(t, err)
	require.Equal(t, "o2", obj, "a resent delete still names the bytes to remove")

	for _, id := range []string{"a1", "a2", "a3"} {
		loseNext()
		require.NoError(t, d.SaveArtifact(ctx, &driver.ArtifactRecord{ArtifactID: id, RunID: "r", ThreadID: "t", Name: id, MimeType: "text/plain", CreatedAt: 4}))
	}
	loseNext()
	n, err := d.DeleteRunArtifacts(ctx, "r", 2)
	require.NoError(t, err)
	require.Equal(t, 2, n, "a resent delete reports what it removed")
	loseNext()
	n, err = d.DeleteRunArtifacts(ctx, "r", 2)
	require.NoError(t, err)
	require.Equal(t, 1, n)

	loseNext()
	require.NoError(t, d.SetMetadata(ctx, "ns", "k", json.RawMessage(`1`)))
	v, err := d.GetMetadata(ctx, "ns", "k")
	require.NoError(t, err)
	require.JSONEq(t, `1`, string(v))

	req := driver.LockRequest{Key: "k", Token: "a", Lease: time.Minute}
	loseNext()
	st, err := d.AcquireLock(ctx, req)
	require.NoError(t, err)
	require.True(t, st.Held)
	require.EqualValues(t, 1, st.Fence, "a resent acquire is not a second grant")
	loseNext()
	st, err = d.RenewLock(ctx, "k", "a", time.Minute)
	require.NoError(t, err)
	require.True(t, st.Held)
	loseNext()
	st, err = d.ReleaseLock(ctx, "k", "a")
	require.NoError(t, err)
	require.True(t, st.Held, "a resent release reports that the token held the lease")
	require.Equal(t, lost, proxy.DroppedReplies())
}
