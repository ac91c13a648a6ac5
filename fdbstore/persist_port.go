package fdbstore

// Export and import (pdriver.Porter). Dump pages through the record key
// spaces (runs, generation runs, interrupts, metadata, artifacts, blob
// rows) with Check's walk, in transactions of 256 keys, far inside
// FoundationDB's 5 s transaction age; the index copies, markers, op tokens
// and locks are not read. Load is one transaction per call: every record's key is read in
// one round, a differing record fails the call before any write, and the
// absent ones are written with their index copies. A retry after
// commit_unknown_result finds its own records equal and skips them, so
// Load needs no marker.

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/ckptstore/ckptstore/fdbstore/internal/tuple"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
)

// dumpLimits are Dump's pages: 256 keys a transaction, at most 256 values
// of at most 100 kB, 25 MB, read well inside 5 s.
var dumpLimits = checkLimits{rangeKeys: 256, txKeys: 256, txBytes: 64 << 20, txTime: 2 * time.Second}

// maxLoadBytes bounds the bytes one Load writes (records and their index
// copies), below FoundationDB's 10 MB transaction limit with room for the
// keys and the conflict ranges.
const maxLoadBytes = 8_000_000

var _ pdriver.Porter = (*Persistence)(nil)

// dumpSpaces are the record key spaces in pdriver.Kinds order.
var dumpSpaces = []struct {
	space string
	kind  pdriver.RecordKind
}{
	{spaceRun, pdriver.KindRun}, {spaceGen, pdriver.KindGenerationRun}, {spaceInt, pdriver.KindInterrupt},
	{spaceMeta, pdriver.KindMetadata}, {spaceArt, pdriver.KindArtifact}, {spaceBlob, pdriver.KindBlob},
}

// Dump implements pdriver.Porter. Within a kind the records come in key
// order: by hash bucket of the id, then id (metadata and blob rows by
// their identity's bytes). A resume reads from the key after the
// position's: it costs nothing of the records before it.
func (d *Persistence) Dump(ctx context.Context, after pdriver.DumpPosition) iter.Seq2[pdriver.Record, error] {
	return func(yield func(pdriver.Record, error) bool) {
		kinds, err := after.KindsAfter()
		if err != nil {
			yield(pdriver.Record{}, err)
			return
		}
		for _, at := range kinds {
			space := d.k.space(spaceOf(at.Kind))
			r := kv.PrefixRange(space)
			if at.Key != "" {
				r.Begin = append(append(append([]byte(nil), space...), at.Key...), 0x00)
			}
			more := true
			n := 0
			err := walk(ctx, d.db, r, dumpLimits, &n, nil, func(p kv.KeyValue) bool {
				rec, err := d.decodeRecord(at.Kind, p)
				more = yield(rec, err) && err == nil
				return more
			})
			if err != nil {
				yield(pdriver.Record{}, err)
				return
			}
			if !more {
				return
			}
		}
	}
}

// spaceOf is the key space of kind's records.
func spaceOf(kind pdriver.RecordKind) string {
	for _, sp := range dumpSpaces {
		if sp.kind == kind {
			return sp.space
		}
	}
	panic("fdbstore: no key space for record kind " + string(kind))
}

// PositionOf implements pdriver.Porter: the kind and the record's key
// within its kind's key space.
func (d *Persistence) PositionOf(r pdriver.Record) pdriver.DumpPosition {
	return pdriver.DumpPosition{Kind: r.Kind, Key: string(d.recordKey(r)[len(d.k.space(spaceOf(r.Kind))):])}
}

// decodeRecord reads the record of kind stored at p.
func (d *Persistence) decodeRecord(kind pdriver.RecordKind, p kv.KeyValue) (pdriver.Record, error) {
	out := pdriver.Record{Kind: kind}
	var err error
	switch kind {
	case pdriver.KindRun:
		out.Run, err = decode[pdriver.RunRecord](p.Key, p.Value)
	case pdriver.KindGenerationRun:
		out.GenerationRun, err = decode[pdriver.GenerationRunRecord](p.Key, p.Value)
	case pdriver.KindInterrupt:
		out.Interrupt, err = decode[pdriver.InterruptRecord](p.Key, p.Value)
	case pdriver.KindArtifact:
		out.Artifact, err = decode[pdriver.ArtifactRecord](p.Key, p.Value)
	case pdriver.KindBlob:
		var row *blobRow
		if row, err = decode[blobRow](p.Key, p.Value); err == nil {
			out.Blob = row.meta()
		}
	case pdriver.KindMetadata:
		t, err := tuple.Unpack(p.Key[len(d.k.space(spaceMeta)):])
		ns, ok1 := elemAt[string](t, 0)
		key, ok2 := elemAt[string](t, 1)
		if err != nil || !ok1 || !ok2 || len(t) != 2 {
			return out, fmt.Errorf("%w: metadata key %x", pdriver.ErrCorrupt, p.Key)
		}
		out.Metadata = &pdriver.MetadataEntry{Namespace: ns, Key: key, Value: raw(p.Value)}
	}
	return out, err
}

// recordKey is the key of r's record.
func (d *Persistence) recordKey(r pdriver.Record) []byte {
	switch r.Kind {
	case pdriver.KindRun:
		return d.k.record(spaceRun, r.Run.RunID)
	case pdriver.KindGenerationRun:
		return d.k.record(spaceGen, r.GenerationRun.RunID)
	case pdriver.KindInterrupt:
		return d.k.record(spaceInt, r.Interrupt.InterruptID)
	case pdriver.KindMetadata:
		return d.k.meta(r.Metadata.Namespace, r.Metadata.Key)
	case pdriver.KindArtifact:
		return d.k.record(spaceArt, r.Artifact.ArtifactID)
	default:
		return d.k.blob(r.Blob.Key)
	}
}

// entries is the index entries of r's record (none for metadata and blob
// rows).
func (k persistKeys) entries(r pdriver.Record) [][]byte {
	switch r.Kind {
	case pdriver.KindRun:
		return k.runEntries(r.Run)
	case pdriver.KindGenerationRun:
		return k.genEntries(r.GenerationRun)
	case pdriver.KindInterrupt:
		return k.intEntries(r.Interrupt)
	case pdriver.KindArtifact:
		return k.artEntries(r.Artifact)
	}
	return nil
}

// encodeRecord is the value of r's record and how many copies of it its
// indexes hold.
func encodeRecord(r pdriver.Record) ([]byte, int, error) {
	switch r.Kind {
	case pdriver.KindRun:
		b, err := encode("run", r.Run)
		return b, 3, err
	case pdriver.KindGenerationRun:
		b, err := encode("generation run", r.GenerationRun)
		return b, 1, err
	case pdriver.KindInterrupt:
		b, err := encode("interrupt", r.Interrupt)
		return b, 4, err
	case pdriver.KindMetadata:
		if len(r.Metadata.Value) > kv.MaxValueSize {
			return nil, 0, fmt.Errorf("%w: the metadata value is %d bytes; the FoundationDB driver stores at most %d", pdriver.ErrInvalidEntry, len(r.Metadata.Value), kv.MaxValueSize)
		}
		return r.Metadata.Value, 0, nil
	case pdriver.KindArtifact:
		b, err := encode("artifact", r.Artifact)
		return b, 2, err
	default:
		b, err := encode("blob row", &blobRow{BlobRecord: r.Blob.BlobRecord, Object: r.Blob.Object})
		return b, 0, err
	}
}

// Load implements pdriver.Porter in one transaction.
func (d *Persistence) Load(ctx context.Context, recs []pdriver.Record) (int, error) {
	type item struct {
		r   pdriver.Record
		key []byte
		val []byte
	}
	items := make([]item, 0, len(recs))
	size := 0
	// A record's key is its kind and ID, so Distinct's repeats are the
	// repeats of a key.
	err := pdriver.Distinct(recs, func(r pdriver.Record) error {
		key := d.recordKey(r)
		val, copies, err := encodeRecord(r)
		if err != nil {
			return err
		}
		size += (1 + copies) * (len(val) + len(key) + 64)
		items = append(items, item{r, key, val})
		return nil
	})
	if err != nil {
		return 0, err
	}
	if size > maxLoadBytes {
		return 0, fmt.Errorf("%w: a load of %d records writes about %d bytes; one FoundationDB transaction takes at most %d (split the batch)", pdriver.ErrInvalidEntry, len(items), size, maxLoadBytes)
	}
	stored := 0
	err = d.plain(ctx, func(tr kv.Transaction) error {
		stored = 0
		fs := make([]kv.FutureValue, len(items))
		for i, it := range items {
			fs[i] = tr.Get(it.key)
		}
		fresh := make([]bool, len(items))
		for i, it := range items {
			b, err := fs[i].Get()
			if err != nil {
				return err
			}
			if b == nil {
				fresh[i] = true
				continue
			}
			cur, err := d.decodeRecord(it.r.Kind, kv.KeyValue{Key: it.key, Value: b})
			if err != nil {
				return err
			}
			if !pdriver.Equal(cur, it.r) {
				return fmt.Errorf("%w: %s %q", pdriver.ErrRecordConflict, it.r.Kind, it.r.ID())
			}
		}
		for i, it := range items {
			if !fresh[i] {
				continue
			}
			stored++
			tr.Set(it.key, it.val)
			setIndex(tr, d.k.entries(it.r), it.val)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return stored, nil
}
