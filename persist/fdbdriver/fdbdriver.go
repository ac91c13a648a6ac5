// Package fdbdriver is the FoundationDB driver of the persistence contract
// (package persist/driver), written against fdbstore/kv: it runs on a
// cluster through fdbkv (build tag fdb) and in-process on memkv.
//
// Each driver call is one transaction, retried by kv.Transact. Every read
// a call needs is issued before the first wait, so a call costs one read
// round (docs/persistence.md lists them per call). The key layout is in
// keys.go: records by hash-bucketed id, one index per list whose key order
// is the list's order and whose values are copies of the records, so a
// list page is one range read of at most limit keys.
//
// Idempotence after commit_unknown_result. A call whose retry could see
// its own earlier commit and answer differently (an update, a batch, a
// blob put or delete, every lock step) writes a marker (Q, "op", token)
// holding its result in the transaction of its write, and reads it in the
// same round as its data: a retry that finds it returns the recorded result
// and writes nothing. The token is random per call, so markers spread over
// the key space; once Transact has returned the marker has done its work,
// and the driver clears it blind in its next write transaction. A
// createOrResume that inserts writes a marker too (created.go): its retry
// would otherwise answer with the record as a later update left it.
// Interrupt create (which answers nothing) and blind writes (metadata)
// need none.
//
// Lock notification. kv exposes no FoundationDB watch, so WatchLock
// combines two things: a change committed through this Driver value wakes
// its watchers at once, and a watcher polls the lock's change counter
// every Options.WatchPoll to see changes committed by other processes. A
// waiter is thus woken at once by a release in its own process and within
// WatchPoll by one elsewhere, never missed.
package fdbdriver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	ckptdriver "github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/persist/driver"
)

// DefaultWatchPoll is how often a lock watcher looks for a change made by
// another process, when Options.WatchPoll is 0.
const DefaultWatchPoll = time.Second

// maxPendingClears bounds the retired markers one write clears, so that a
// burst of calls does not make one transaction large.
const maxPendingClears = 64

// Options configure a Driver.
type Options struct {
	// Prefix is prepended verbatim to every key; "" means DefaultPrefix.
	// NamespacePrefix(name) puts a tenant's persistence beside its
	// checkpoints.
	Prefix string
	// Now is the store's clock: lock leases expire and op tokens are
	// forgotten by it. nil means time.Now.
	Now func() time.Time
	// WatchPoll is how often a lock watcher polls for changes committed
	// through other Driver values (other processes); 0 means
	// DefaultWatchPoll, negative means never (one Driver per store).
	WatchPoll time.Duration
}

// Driver is the FoundationDB driver. It is safe for concurrent use.
type Driver struct {
	db   kv.DB
	k    keys
	now  func() time.Time
	poll time.Duration

	mu       sync.Mutex
	retired  [][]byte            // markers whose call has returned, to clear
	watchers map[string][]*watch // lock key → watchers of this process
}

var _ driver.Driver = (*Driver)(nil)

// New returns a Driver on db.
func New(db kv.DB, opts Options) (*Driver, error) {
	if db == nil {
		return nil, errors.New("fdbdriver: nil kv.DB")
	}
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.WatchPoll == 0 {
		opts.WatchPoll = DefaultWatchPoll
	}
	return &Driver{
		db: db, k: keys{q: []byte(opts.Prefix)}, now: opts.Now, poll: opts.WatchPoll,
		watchers: map[string][]*watch{},
	}, nil
}

// ---- transactions ----

// call is one attempt of a marked write: the marker's future, issued
// first so that it joins the attempt's one read round.
type call struct {
	tr     kv.Transaction
	marker kv.FutureValue
	prev   []byte // the recorded result, when an earlier attempt committed
}

// replayed waits for the marker and reports whether an earlier attempt of
// this call committed. A write must ask before it writes anything.
func (c *call) replayed() (bool, error) {
	v, err := c.marker.Get()
	if err != nil {
		return false, err
	}
	c.prev = v
	return v != nil, nil
}

// get reads key in the marker's round. done says an earlier attempt of
// this call committed; then b is nil and the caller must write nothing.
func (c *call) get(key []byte) (b []byte, done bool, err error) {
	f := c.tr.Get(key)
	if done, err := c.replayed(); err != nil || done {
		return nil, done, err
	}
	b, err = f.Get()
	return b, false, err
}

// markerValue is what a marker holds: when it was written (store ms, for
// Check) and the call's result.
type markerValue struct {
	At     int64           `json:"at"`
	Result json.RawMessage `json:"r"`
}

// marked runs fn as one transaction with a marker (see the package doc).
func marked[T any](ctx context.Context, d *Driver, fn func(c *call) (T, error)) (T, error) {
	var out T
	mk := d.k.op(rand.Text())
	clears := d.takeRetired()
	err := d.db.Transact(ctx, func(tr kv.Transaction) error {
		c := &call{tr: tr, marker: tr.Get(mk)}
		for _, k := range clears {
			tr.Clear(k)
		}
		v, err := fn(c)
		if err != nil {
			return err
		}
		if c.prev != nil {
			var m markerValue
			if err := json.Unmarshal(c.prev, &m); err != nil {
				return fmt.Errorf("%w: marker %x: %v", driver.ErrCorrupt, mk, err)
			}
			return json.Unmarshal(m.Result, &out)
		}
		r, err := json.Marshal(v)
		if err != nil {
			return err
		}
		b, err := json.Marshal(markerValue{At: d.now().UnixMilli(), Result: r})
		if err != nil {
			return err
		}
		tr.Set(mk, b)
		out = v
		return nil
	})
	d.retire(mk, clears, err)
	return out, err
}

// plain runs fn as one transaction without a marker.
func (d *Driver) plain(ctx context.Context, fn func(tr kv.Transaction) error) error {
	return d.db.Transact(ctx, fn)
}

// read runs fn as one read-only transaction.
func (d *Driver) read(ctx context.Context, fn func(tr kv.ReadTransaction) error) error {
	return d.db.ReadTransact(ctx, fn)
}

// pages reads r in pages of at most n keys, each in a read transaction of
// its own, and hands each to fn until fn returns false.
func (d *Driver) pages(ctx context.Context, r kv.KeyRange, n int, fn func([]kv.KeyValue) bool) error {
	for {
		var page []kv.KeyValue
		err := d.read(ctx, func(tr kv.ReadTransaction) error {
			var err error
			page, err = tr.GetRange(r, kv.RangeOptions{Limit: n}).Get()
			return err
		})
		if err != nil || !fn(page) || len(page) < n {
			return err
		}
		r.Begin = append(append([]byte(nil), page[len(page)-1].Key...), 0x00)
	}
}

// takeRetired hands the next write the markers it is to clear.
func (d *Driver) takeRetired() [][]byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := min(len(d.retired), maxPendingClears)
	out := d.retired[len(d.retired)-n:]
	d.retired = d.retired[: len(d.retired)-n : len(d.retired)-n]
	return out
}

// retire files mk for clearing; clears go back when their transaction
// failed.
func (d *Driver) retire(mk []byte, clears [][]byte, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.retired = append(d.retired, mk)
	if err != nil {
		d.retired = append(d.retired, clears...)
	}
}

// ---- values ----

// encode marshals a record and refuses one FoundationDB cannot hold in a
// value: a clear error that changes nothing, rather than a transaction
// failure.
func encode(what string, v any) ([]byte, error) {
	var b []byte
	var err error
	switch r := v.(type) {
	case *driver.RunRecord:
		b = driver.AppendStored(make([]byte, 0, 256), r.Members, appendBase64)
	case *driver.GenerationRunRecord:
		b = driver.AppendStored(make([]byte, 0, 256), r.Members, appendBase64)
	case *driver.InterruptRecord:
		b = driver.AppendStored(make([]byte, 0, 256), r.Members, appendBase64)
	case *driver.ArtifactRecord:
		b = driver.AppendStored(make([]byte, 0, 256), r.Members, appendBase64) // it has no raw member
	default:
		b, err = json.Marshal(v)
	}
	if err != nil {
		return nil, err
	}
	if len(b) > kv.MaxValueSize {
		return nil, fmt.Errorf("%w: the %s is %d bytes of JSON; the FoundationDB driver stores at most %d", driver.ErrInvalidEntry, what, len(b), kv.MaxValueSize)
	}
	return b, nil
}

func decode[T any](key, b []byte) (*T, error) {
	if b == nil {
		return nil, nil
	}
	v := new(T)
	var err error
	switch any(v).(type) {
	case *driver.RunRecord, *driver.GenerationRunRecord, *driver.InterruptRecord:
		if b, err = unstore(b); err == nil {
			err = any(v).(json.Unmarshaler).UnmarshalJSON(b)
		}
	default:
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: key %x: %v", driver.ErrCorrupt, key, err)
	}
	return v, nil
}

// The stored form of the records with raw JSON values: the record's JSON
// (driver.AppendStored) with each raw value a base64 string, last, so that
// it is kept byte for byte. encoding/json wrote this form when the records
// were stored through shadowing []byte fields, and its bytes are kept: an
// index entry holds a copy of its record's value, and Check compares them.
func appendBase64(b, v []byte) []byte {
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, v)
	return append(b, '"')
}

// raw turns a stored byte string back into a value (nil stays absent).
func raw(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	return json.RawMessage(b)
}

// storedRaw names the members stored as base64.
var storedRaw = map[string]bool{"usage": true, "result": true, "artifacts": true, "payload": true, "response": true}

// unstore turns a stored form back into the record's JSON: each raw
// member's base64 string into its bytes.
func unstore(b []byte) ([]byte, error) {
	r := ckptdriver.NewJSONReader(b)
	defer r.Close()
	out := make([]byte, 0, len(b))
	out = append(out, '{')
	err := r.Object("", func(name []byte) error {
		v, _, err := r.PaddedView()
		if err != nil {
			return err
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(ckptdriver.AppendJSONString(out, string(name)), ':')
		// Standard base64 needs no JSON escape: the string's bytes are
		// the encoding.
		if v = bytes.TrimSpace(v); storedRaw[string(name)] && len(v) > 1 && v[0] == '"' {
			var err error
			if out, err = base64.StdEncoding.AppendDecode(out, v[1:len(v)-1]); err != nil {
				return err
			}
			return nil
		}
		out = append(out, v...)
		return nil
	})
	if err == nil {
		err = r.End()
	}
	return append(out, '}'), err
}

// getRange issues a range read, or none when r is empty (a page that
// starts after its end).
func getRange(tr kv.ReadTransaction, r kv.KeyRange, opts kv.RangeOptions) func() ([]kv.KeyValue, error) {
	if string(r.Begin) >= string(r.End) {
		return func() ([]kv.KeyValue, error) { return nil, nil }
	}
	f := tr.GetRange(r, opts)
	return f.Get
}

// decodeAll decodes a page of index copies.
func decodeAll[T any](kvs []kv.KeyValue) ([]*T, error) {
	out := make([]*T, 0, len(kvs))
	for _, p := range kvs {
		v, err := decode[T](p.Key, p.Value)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func pos(p *driver.Position) *position {
	if p == nil {
		return nil
	}
	return &position{p.At, p.ID}
}
