package fdbstore

// Thread transcripts: (P, "t", …, thread, "m", chunk) → the transcript's
// bytes, chunked like a checkpoint's value. A thread has a transcript once
// one was saved, "[]" included; a missing one reads as "[]".

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

// LoadThread implements driver.Store: one range read. Check
// order: thread id (ErrInvalidID).
func (s *Driver) LoadThread(ctx context.Context, threadID string) (json.RawMessage, error) {
	if len(threadID) > MaxIDBytes {
		return driver.EmptyTranscript(), nil
	}
	var out []byte
	err := s.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		var err error
		out, err = s.readTranscript(s.startTranscript(tr, threadID, 0), threadID)
		return err
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		return driver.EmptyTranscript(), nil
	}
	return out, nil
}

// startTranscript starts reading the thread's transcript chunks (at most
// limit of them; 0 = all).
func (s *Driver) startTranscript(tr kv.ReadTransaction, threadID string, limit int) kv.FutureRange {
	return tr.GetRange(rangeOf(s.k.transcriptPrefix(threadID)), kv.RangeOptions{Limit: limit})
}

// readTranscript waits for the chunks and joins them: nil when the thread
// has no transcript.
func (s *Driver) readTranscript(f kv.FutureRange, threadID string) ([]byte, error) {
	kvs, err := f.Get()
	if err != nil || len(kvs) == 0 {
		return nil, err
	}
	p := s.k.transcriptPrefix(threadID)
	n := 0
	for i, c := range kvs {
		t, err := suffix(c.Key, p)
		if err != nil {
			return nil, err
		}
		if k, ok := elem[int64](t, 0, 1); !ok || k != int64(i) {
			return nil, fmt.Errorf("%w: transcript of thread %q: chunk %d has key %x", ErrCorrupt, threadID, i, c.Key)
		}
		n += len(c.Value)
	}
	out := make([]byte, 0, n)
	for _, c := range kvs {
		out = append(out, c.Value...)
	}
	return out, nil
}

// SaveThread implements driver.Store: one blind transaction, no
// read, so it is idempotent under retries and needs no marker. A
// transcript too large for one transaction fails with ErrInvalidEntry.
// Check order: thread id (ErrInvalidID), messages a JSON array
// (ErrInvalidEntry).
func (s *Driver) SaveThread(ctx context.Context, threadID string, messages json.RawMessage) error {
	if err := checkIDLengths(named("thread id", threadID)); err != nil {
		return err
	}
	if n := s.transcriptCost(threadID, len(messages)); n > MaxTransactionBytes {
		return fmt.Errorf("%w: transcript of %d bytes is too large for one FoundationDB transaction (about %d bytes, more than fdbstore's limit of %d)",
			ckptstore.ErrInvalidEntry, len(messages), n, MaxTransactionBytes)
	}
	msgs := bytes.Clone(messages) // the engine may keep the slices it is given
	return s.db.Transact(ctx, func(tr kv.Transaction) error {
		s.writeTranscript(tr, threadID, msgs)
		return nil
	})
}

// writeTranscript replaces the thread's transcript with b and lists the
// thread.
func (s *Driver) writeTranscript(tr kv.Transaction, threadID string, b []byte) {
	tr.ClearRange(rangeOf(s.k.transcriptPrefix(threadID)))
	for i := range chunks(len(b)) {
		tr.Set(s.k.transcriptChunk(threadID, i), b[i*kv.MaxValueSize:min(len(b), (i+1)*kv.MaxValueSize)])
	}
	tr.Set(s.k.listed(threadID), nil)
}
