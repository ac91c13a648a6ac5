package fdbstore

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	ckptdriver "github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
	"github.com/stretchr/testify/require"
)

// TestCheckReportsCorruption: Check passes a store with one of every
// record, then reports each corruption of one key: an index entry gone,
// an orphan entry, an entry that disagrees with its record, a record that
// does not decode, a record under another id's key, a key of no space;
// and the checkpoint store's Check reports the same problems.
func TestCheckReportsCorruption(t *testing.T) {
	ctx := context.Background()
	db := memkv.New()
	d, err := NewPersistence(db, PersistenceOptions{})
	require.NoError(t, err)
	ds := int64(5)
	_, err = d.CreateOrResumeRun(ctx, &pdriver.RunRecord{RunID: "r", ThreadID: "t", Status: pdriver.RunRunning, StartedAt: 1})
	require.NoError(t, err)
	_, err = d.UpdateRun(ctx, "r", pdriver.RunPatch{DetachedSince: pdriver.Set(ds)})
	require.NoError(t, err)
	_, err = d.CreateOrResumeGenerationRun(ctx, &pdriver.GenerationRunRecord{RunID: "g", ThreadID: "t", Status: pdriver.RunRunning, StartedAt: 1})
	require.NoError(t, err)
	require.NoError(t, d.CreateInterrupt(ctx, &pdriver.InterruptRecord{InterruptID: "i", RunID: "r", ThreadID: "t", Status: pdriver.InterruptPending, RequestedAt: 1, Payload: json.RawMessage(`{}`)}))
	require.NoError(t, d.SaveArtifact(ctx, &pdriver.ArtifactRecord{ArtifactID: "a", RunID: "r", ThreadID: "t", Name: "n", MimeType: "m", CreatedAt: 1}))
	require.NoError(t, d.SetMetadata(ctx, "ns", "k", json.RawMessage(`1`)))
	_, _, err = d.PutBlob(ctx, &pdriver.BlobMeta{BlobRecord: pdriver.BlobRecord{Key: "b", ETag: "e"}, Object: "o"})
	require.NoError(t, err)
	_, err = d.AcquireLock(ctx, pdriver.LockRequest{Key: "k", Token: "x", Lease: 1e9})
	require.NoError(t, err)
	problems, err := d.check(ctx)
	require.NoError(t, err)
	require.Empty(t, problems, "a sound store")
	s, err := NewDriver(db, Options{}) // the default store, whose persistence d is
	require.NoError(t, err)

	runKey := d.k.record(spaceRun, "r")
	var runVal []byte
	require.NoError(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) (err error) { runVal, err = tr.Get(runKey).Get(); return }))
	defer func() {
		problems, err := d.check(ctx)
		require.NoError(t, err)
		require.Empty(t, problems, "restored")
	}()
	for _, c := range []struct {
		name   string
		break_ func(tr kv.Transaction)
		want   string
	}{
		{"an index entry is gone", func(tr kv.Transaction) { tr.Clear(d.k.reclaim(ds, "r")) }, "index entry missing"},
		{"an orphan entry", func(tr kv.Transaction) { tr.Set(d.k.entry(spaceRunActive, "t", 7, "ghost"), runVal) }, "orphan"},
		{"an entry that disagrees", func(tr kv.Transaction) {
			tr.Set(d.k.entry(spaceIntRunPend, "r", 1, "i"), []byte(`{"interruptId":"i"}`))
		}, "disagrees"},
		{"a record that does not decode", func(tr kv.Transaction) { tr.Set(d.k.record(spaceArt, "a"), []byte("{")) }, "artifact record"},
		{"a record under another id's key", func(tr kv.Transaction) { tr.Set(d.k.record(spaceRun, "other"), runVal) }, "under another key"},
		{"a key of no space", func(tr kv.Transaction) { tr.Set(d.k.space("zz"), nil) }, "not one of this driver's"},
		{"a lock that does not decode", func(tr kv.Transaction) { tr.Set(d.k.lock("k"), []byte("x")) }, "lock"},
		{"a marker that does not decode", func(tr kv.Transaction) { tr.Set(d.k.op("m"), []byte(`{"at":1}`)) }, "op marker"},
		{"a checkpoint write's marker", func(tr kv.Transaction) { tr.Set(d.k.op("m"), encodeMarker(1, opAppend, nil)) }, "not a persistence call's"},
	} {
		t.Run(c.name, func(t *testing.T) {
			snap := dump(t, db)
			require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error { c.break_(tr); return nil }))
			defer restore(t, db, snap)
			problems, err := d.check(ctx)
			require.NoError(t, err)
			require.NotEmpty(t, problems)
			// The engine's one Check reports them among its own.
			engine, err := s.Check(ctx)
			require.NoError(t, err)
			require.Equal(t, problems, engine)
			var all []string
			for _, p := range problems {
				all = append(all, p.String())
			}
			require.Contains(t, strings.Join(all, "\n"), c.want)
		})
	}
}

func dump(t *testing.T, db *memkv.DB) []kv.KeyValue {
	var out []kv.KeyValue
	require.NoError(t, db.ReadTransact(context.Background(), func(tr kv.ReadTransaction) (err error) {
		out, err = tr.GetRange(kv.KeyRange{Begin: []byte{0}, End: []byte{0xff}}, kv.RangeOptions{}).Get()
		return
	}))
	return out
}

func restore(t *testing.T, db *memkv.DB, snap []kv.KeyValue) {
	require.NoError(t, db.Transact(context.Background(), func(tr kv.Transaction) error {
		tr.ClearRange(kv.KeyRange{Begin: []byte{0}, End: []byte{0xff}})
		for _, p := range snap {
			tr.Set(p.Key, p.Value)
		}
		return nil
	}))
}

// TestPersistPrefixOverlap: a persistence prefix that overlaps the store's
// own is refused, since Check would read the one's keys as the other's.
func TestPersistPrefixOverlap(t *testing.T) {
	for _, c := range []struct{ prefix, persist string }{
		{"p/", "p/q/"}, {"p/q/", "p/"}, {"p/", "p/"}, {"", DefaultPrefix + "x"},
	} {
		_, err := NewDriver(memkv.New(), Options{Prefix: c.prefix, PersistPrefix: c.persist})
		require.ErrorIs(t, err, ckptdriver.ErrInvalidOptions, "prefix %q, persistence %q", c.prefix, c.persist)
	}
}

// TestLegacyMarkerIsNoProblem: a marker in the JSON form the persistence
// wrote before it shared the checkpoints' encoding, left by a process that
// stopped, is not reported; the current form is not either.
func TestLegacyMarkerIsNoProblem(t *testing.T) {
	ctx := context.Background()
	db := memkv.New()
	d, err := NewPersistence(db, PersistenceOptions{})
	require.NoError(t, err)
	require.NoError(t, db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Set(d.k.op("old"), []byte(`{"at":1700000000000,"r":{"st":{"held":true}}}`))
		tr.Set(d.k.op("new"), encodeMarker(1700000000000, opCall, []byte(`true`)))
		return nil
	}))
	problems, err := d.check(ctx)
	require.NoError(t, err)
	require.Empty(t, problems)
}
