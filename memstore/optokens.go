package memstore

import (
	"sync"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/contract"
)

// space is what the drivers of one key space share — the checkpoint
// Driver and its Persistence — so that the engine has one lock, one clock
// and one op-token table per key space: every lease, writer lease and lock
// alike, is judged by now, and a token names one write of either contract.
type space struct {
	mu  sync.Mutex
	now func() time.Time // the key space's clock, never nil
	ops opTokens         // guarded by mu
}

func newSpace(now func() time.Time) *space {
	return &space{now: now, ops: opTokens{byToken: make(map[string]*opRecord)}}
}

// opTokenTTL is how long, on the store's clock, a committed write's op
// token is remembered (contract.OpTokenTTL): a retry within it reports the
// first call's success, a later one runs as a new call.
const opTokenTTL = contract.OpTokenTTL

// opKind is the method an op token was used with. A token names one
// logical write, so a record answers only retries of the same method.
type opKind uint8

const (
	opAppend opKind = iota + 1
	opDeleteHead
	opFork
	opAcquire
	opCommit // Persistence.CommitInterrupts
)

// opRecord is what a retry must report: nothing more for Append and
// DeleteHead, the fork root for a fork, the lease for AcquireWriter.
type opRecord struct {
	kind      opKind
	expires   time.Time
	root      *rec             // opFork: the stored root, never modified (retries get clones)
	writer    ckptstore.Writer // opAcquire
	expiresAt time.Time        // opAcquire: the lease's expiry as granted
}

// opTokens is the table of recent op tokens. Records are appended to order
// as they are made, so expired ones are dropped from its front; a clock
// that moves back only delays that. The caller holds space.mu.
type opTokens struct {
	byToken map[string]*opRecord
	order   []string
}

// done returns the live record of token for kind, or nil.
func (o *opTokens) done(token string, kind opKind, now time.Time) *opRecord {
	r := o.byToken[token]
	if r == nil || r.kind != kind || !now.Before(r.expires) {
		return nil
	}
	return r
}

// record remembers token for opTokenTTL from now, and forgets the expired
// records at the front of the table.
func (o *opTokens) record(token string, r *opRecord, now time.Time) {
	for len(o.order) > 0 {
		old := o.byToken[o.order[0]]
		if old != nil && now.Before(old.expires) {
			break
		}
		delete(o.byToken, o.order[0])
		o.order = o.order[1:]
	}
	r.expires = now.Add(opTokenTTL)
	if _, ok := o.byToken[token]; !ok {
		o.order = append(o.order, token)
	}
	o.byToken[token] = r
}
