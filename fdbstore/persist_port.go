package fdbdriver

// Export and import (driver.Porter). Dump pages through the record key
// spaces (runs, generation runs, interrupts, metadata, artifacts, blob
// rows) in transactions of dumpPage keys, far inside FoundationDB's 5 s
// transaction age; the index copies, markers, op tokens and locks are not
// read. Load is one transaction per call: every record's key is read in
// one round, a differing record fails the call before any write, and the
// absent ones are written with their index copies. A retry after
// commit_unknown_result finds its own records equal and skips them, so
// Load needs no marker.

import (
	"context"
	"fmt"
	"iter"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/persist/driver"
)

// dumpPage is how many keys one transaction of Dump reads: at most 256
// values of at most 100 kB, 25 MB, read well inside 5 s.
const dumpPage = 256

// maxLoadBytes bounds the bytes one Load writes (records and their index
// copies), below FoundationDB's 10 MB transaction limit with room for the
// keys and the conflict ranges.
const maxLoadBytes = 8_000_000

var _ driver.Porter = (*Driver)(nil)

// dumpSpaces are the record key spaces in driver.Kinds order.
var dumpSpaces = []struct {
	space string
	kind  driver.RecordKind
}{
	{spaceRun, driver.KindRun}, {spaceGen, driver.KindGenerationRun}, {spaceInt, driver.KindInterrupt},
	{spaceMeta, driver.KindMetadata}, {spaceArt, driver.KindArtifact}, {spaceBlob, driver.KindBlob},
}

// Dump implements driver.Porter. Within a kind the records come in key
// order: by hash bucket of the id, then id (metadata and blob rows by
// their identity's bytes).
func (d *Driver) Dump(ctx context.Context) iter.Seq2[driver.Record, error] {
	return func(yield func(driver.Record, error) bool) {
		for _, sp := range dumpSpaces {
			more := true
			err := d.pages(ctx, kv.PrefixRange(d.k.space(sp.space)), dumpPage, func(page []kv.KeyValue) bool {
				for _, p := range page {
					rec, err := d.decodeRecord(sp.kind, p)
					if more = yield(rec, err) && err == nil; !more {
						return false
					}
				}
				return true
			})
			if err != nil {
				yield(driver.Record{}, err)
				return
			}
			if !more {
				return
			}
		}
	}
}

// decodeRecord reads the record of kind stored at p.
func (d *Driver) decodeRecord(kind driver.RecordKind, p kv.KeyValue) (driver.Record, error) {
	out := driver.Record{Kind: kind}
	var err error
	switch kind {
	case driver.KindRun:
		out.Run, err = decode[driver.RunRecord](p.Key, p.Value)
	case driver.KindGenerationRun:
		out.GenerationRun, err = decode[driver.GenerationRunRecord](p.Key, p.Value)
	case driver.KindInterrupt:
		out.Interrupt, err = decode[driver.InterruptRecord](p.Key, p.Value)
	case driver.KindArtifact:
		out.Artifact, err = decode[driver.ArtifactRecord](p.Key, p.Value)
	case driver.KindBlob:
		var row *blobRow
		if row, err = decode[blobRow](p.Key, p.Value); err == nil {
			out.Blob = row.meta()
		}
	case driver.KindMetadata:
		rest := p.Key[len(d.k.space(spaceMeta)):]
		ns, rest, ok1 := cutString(rest)
		key, rest, ok2 := cutString(rest)
		if !ok1 || !ok2 || len(rest) != 0 {
			return out, fmt.Errorf("%w: metadata key %x", driver.ErrCorrupt, p.Key)
		}
		out.Metadata = &driver.MetadataEntry{Namespace: ns, Key: key, Value: raw(p.Value)}
	}
	return out, err
}

// cutString decodes the tuple string element at the start of b (see
// appendString) and returns it and the rest.
func cutString(b []byte) (string, []byte, bool) {
	if len(b) == 0 || b[0] != 0x02 {
		return "", nil, false
	}
	var s []byte
	for i := 1; i < len(b); i++ {
		if b[i] != 0x00 {
			s = append(s, b[i])
			continue
		}
		if i+1 < len(b) && b[i+1] == 0xff {
			s = append(s, 0x00)
			i++
			continue
		}
		return string(s), b[i+1:], true
	}
	return "", nil, false
}

// recordKey is the key of r's record.
func (d *Driver) recordKey(r driver.Record) []byte {
	switch r.Kind {
	case driver.KindRun:
		return d.k.record(spaceRun, r.Run.RunID)
	case driver.KindGenerationRun:
		return d.k.record(spaceGen, r.GenerationRun.RunID)
	case driver.KindInterrupt:
		return d.k.record(spaceInt, r.Interrupt.InterruptID)
	case driver.KindMetadata:
		return d.k.meta(r.Metadata.Namespace, r.Metadata.Key)
	case driver.KindArtifact:
		return d.k.record(spaceArt, r.Artifact.ArtifactID)
	default:
		return d.k.blob(r.Blob.Key)
	}
}

// entries is the index entries of r's record (none for metadata and blob
// rows).
func (k keys) entries(r driver.Record) [][]byte {
	switch r.Kind {
	case driver.KindRun:
		return k.runEntries(r.Run)
	case driver.KindGenerationRun:
		return k.genEntries(r.GenerationRun)
	case driver.KindInterrupt:
		return k.intEntries(r.Interrupt)
	case driver.KindArtifact:
		return k.artEntries(r.Artifact)
	}
	return nil
}

// encodeRecord is the value of r's record and how many copies of it its
// indexes hold.
func encodeRecord(r driver.Record) ([]byte, int, error) {
	switch r.Kind {
	case driver.KindRun:
		b, err := encode("run", r.Run)
		return b, 3, err
	case driver.KindGenerationRun:
		b, err := encode("generation run", r.GenerationRun)
		return b, 1, err
	case driver.KindInterrupt:
		b, err := encode("interrupt", r.Interrupt)
		return b, 4, err
	case driver.KindMetadata:
		if len(r.Metadata.Value) > kv.MaxValueSize {
			return nil, 0, fmt.Errorf("%w: the metadata value is %d bytes; the FoundationDB driver stores at most %d", driver.ErrInvalidEntry, len(r.Metadata.Value), kv.MaxValueSize)
		}
		return r.Metadata.Value, 0, nil
	case driver.KindArtifact:
		b, err := encode("artifact", r.Artifact)
		return b, 2, err
	default:
		b, err := encode("blob row", &blobRow{BlobRecord: r.Blob.BlobRecord, Object: r.Blob.Object})
		return b, 0, err
	}
}

// Load implements driver.Porter in one transaction.
func (d *Driver) Load(ctx context.Context, recs []driver.Record) (int, error) {
	type item struct {
		r   driver.Record
		key []byte
		val []byte
	}
	items := make([]item, 0, len(recs))
	size := 0
	// A record's key is its kind and ID, so Distinct's repeats are the
	// repeats of a key.
	err := driver.Distinct(recs, func(r driver.Record) error {
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
		return 0, fmt.Errorf("%w: a load of %d records writes about %d bytes; one FoundationDB transaction takes at most %d (split the batch)", driver.ErrInvalidEntry, len(items), size, maxLoadBytes)
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
			if !driver.Equal(cur, it.r) {
				return fmt.Errorf("%w: %s %q", driver.ErrRecordConflict, it.r.Kind, it.r.ID())
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
