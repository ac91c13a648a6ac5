// The persistence driver: the FoundationDB driver of the persistence
// contract (package persist/driver) on the same kv.DB as the checkpoints,
// with its keys beside theirs (keys.go gives the prefixes, persist_keys.go
// the layout).
//
// Each driver call is one transaction, retried by kv.Transact. Every read
// a call needs is issued before the first wait, so a call costs one read
// round (docs/persistence.md lists them per call). Records are keyed by
// hash-bucketed id, and each list has one index whose key order is the
// list's order and whose values are copies of the records, so a list page
// is one range read of at most limit keys.
//
// Idempotence after commit_unknown_result. A call whose retry could see
// its own earlier commit and answer differently (an insert, an update, a
// batch, a blob put or delete, every lock step) writes an op marker
// (Q, "op", token) holding its result in the transaction of its write, and
// reads it in the same round as its data: a retry that finds it returns
// the recorded result and writes nothing. The marker's value is encoded as
// the checkpoints' markers are (markers.go: the wall-clock milliseconds,
// the kind opCall, the result as JSON). The token is random per call, so
// markers spread over the key space; once Transact has returned the
// marker has done its work, and the driver clears it blind in its next
// write transaction. A call that ends up writing nothing (a
// createOrResume that finds the record) writes no marker either, so a
// resume stays a read. Interrupt create (which answers nothing) and blind
// writes (metadata) need none.
//
// Clocks. Lock leases and the op tokens of CommitInterrupts are judged by
// PersistenceOptions.Now, the engine's clock (the same clock the
// checkpoints' writer leases use when storeurl opens both); markers are
// dated by the wall clock, as the checkpoints' are, because they measure
// real retry time.
//
// Lock notification. kv exposes no FoundationDB watch, so WatchLock
// combines two things: a change committed through this Persistence value
// wakes its watchers at once, and a watcher polls the lock's change
// counter every PersistenceOptions.WatchPoll to see changes committed by
// other processes. A waiter is thus woken at once by a release in its own
// process and within WatchPoll by one elsewhere, never missed.
package fdbstore

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
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
)

// DefaultWatchPoll is how often a lock watcher looks for a change made by
// another process, when PersistenceOptions.WatchPoll is 0.
const DefaultWatchPoll = time.Second

// maxPendingClears bounds the retired markers one write clears, so that a
// burst of calls does not make one transaction large.
const maxPendingClears = 64

// PersistenceOptions configure a Persistence.
type PersistenceOptions struct {
	// Prefix is prepended verbatim to every key; "" means
	// DefaultPersistPrefix. PersistNamespacePrefix(name) puts a tenant's
	// persistence beside its checkpoints.
	Prefix string
	// Now is the engine's clock: lock leases expire and op tokens are
	// forgotten by it. nil means time.Now.
	Now func() time.Time
	// WatchPoll is how often a lock watcher polls for changes committed
	// through other Persistence values (other processes); 0 means
	// DefaultWatchPoll, negative means never (one Persistence per store).
	WatchPoll time.Duration
}

// Persistence is the FoundationDB driver of the persistence contract
// (pdriver.Driver and pdriver.Porter). It is safe for concurrent use.
// Its keys are checked by the Check of the checkpoint Driver whose
// Options.PersistPrefix names them.
type Persistence struct {
	db   kv.DB
	k    persistKeys
	now  func() time.Time
	poll time.Duration

	mu       sync.Mutex
	retired  [][]byte            // markers whose call has returned, to clear
	watchers map[string][]*watch // lock key → watchers of this process
}

var _ pdriver.Driver = (*Persistence)(nil)

// NewPersistence returns a Persistence on db.
func NewPersistence(db kv.DB, opts PersistenceOptions) (*Persistence, error) {
	if db == nil {
		return nil, errors.New("fdbstore: nil kv.DB")
	}
	if opts.Prefix == "" {
		opts.Prefix = DefaultPersistPrefix
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.WatchPoll == 0 {
		opts.WatchPoll = DefaultWatchPoll
	}
	return &Persistence{
		db: db, k: persistKeys{q: []byte(opts.Prefix)}, now: opts.Now, poll: opts.WatchPoll,
		watchers: map[string][]*watch{},
	}, nil
}

// ---- transactions ----

// call is one attempt of a marked call: the marker's future, issued
// first so that it joins the attempt's one read round.
type call struct {
	tr     kv.Transaction
	marker kv.FutureValue
	prev   []byte // the recorded marker, when an earlier attempt committed
	// readOnly is set by a call that wrote nothing: it gets no marker.
	readOnly bool
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

// marked runs fn as one transaction with a marker (see the file doc): a
// retry that finds the marker answers with the result it records; an
// attempt that writes stores the marker with its result and clears the
// retired markers of earlier calls.
func marked[T any](ctx context.Context, d *Persistence, fn func(c *call) (T, error)) (T, error) {
	var out T
	mk := d.k.op(rand.Text())
	clears := d.takeRetired()
	wrote, tried := false, false
	err := d.db.Transact(ctx, func(tr kv.Transaction) error {
		c := &call{tr: tr, marker: tr.Get(mk)}
		wrote = false
		v, err := fn(c)
		if err != nil {
			return err
		}
		if c.prev != nil {
			r, err := callResult(c.prev)
			if err != nil {
				return fmt.Errorf("%w: marker %x: %v", pdriver.ErrCorrupt, mk, err)
			}
			return json.Unmarshal(r, &out)
		}
		out = v
		if c.readOnly {
			return nil
		}
		r, err := json.Marshal(v)
		if err != nil {
			return err
		}
		for _, k := range clears {
			tr.Clear(k)
		}
		tr.Set(mk, encodeMarker(time.Now().UnixMilli(), opCall, r))
		wrote, tried = true, true
		return nil
	})
	d.retire(mk, tried, clears, err == nil && wrote)
	return out, err
}

// plain runs fn as one transaction without a marker.
func (d *Persistence) plain(ctx context.Context, fn func(tr kv.Transaction) error) error {
	return d.db.Transact(ctx, fn)
}

// read runs fn as one read-only transaction.
func (d *Persistence) read(ctx context.Context, fn func(tr kv.ReadTransaction) error) error {
	return d.db.ReadTransact(ctx, fn)
}

// takeRetired hands the next write the markers it is to clear.
func (d *Persistence) takeRetired() [][]byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := min(len(d.retired), maxPendingClears)
	out := d.retired[len(d.retired)-n:]
	d.retired = d.retired[: len(d.retired)-n : len(d.retired)-n]
	return out
}

// retire files mk for clearing when an attempt wrote it, and gives the
// clears back when the call did not commit them.
func (d *Persistence) retire(mk []byte, tried bool, clears [][]byte, cleared bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if tried {
		d.retired = append(d.retired, mk)
	}
	if !cleared {
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
	case *pdriver.RunRecord:
		b = pdriver.AppendStored(make([]byte, 0, 256), r.Members, appendBase64)
	case *pdriver.GenerationRunRecord:
		b = pdriver.AppendStored(make([]byte, 0, 256), r.Members, appendBase64)
	case *pdriver.InterruptRecord:
		b = pdriver.AppendStored(make([]byte, 0, 256), r.Members, appendBase64)
	case *pdriver.ArtifactRecord:
		b = pdriver.AppendStored(make([]byte, 0, 256), r.Members, appendBase64) // it has no raw member
	default:
		b, err = json.Marshal(v)
	}
	if err != nil {
		return nil, err
	}
	if len(b) > kv.MaxValueSize {
		return nil, fmt.Errorf("%w: the %s is %d bytes of JSON; the FoundationDB driver stores at most %d", pdriver.ErrInvalidEntry, what, len(b), kv.MaxValueSize)
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
	case *pdriver.RunRecord, *pdriver.GenerationRunRecord, *pdriver.InterruptRecord:
		if b, err = unstore(b); err == nil {
			err = any(v).(json.Unmarshaler).UnmarshalJSON(b)
		}
	default:
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: key %x: %v", pdriver.ErrCorrupt, key, err)
	}
	return v, nil
}

// The stored form of the records with raw JSON values: the record's JSON
// (pdriver.AppendStored) with each raw value a base64 string, last, so that
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

func pos(p *pdriver.Position) *position {
	if p == nil {
		return nil
	}
	return &position{p.At, p.ID}
}
