package redisstore

// The Durable Streams driver of redisstore (package streams).
//
// Layout, under the namespace's hash tag (one slot, so a transaction may
// touch any stream of the namespace, forks and sources alike):
//
//	{tag}:s:names     hash: stream name → id (ids are never reused)
//	{tag}:s:seq       the last id
//	{tag}:s:<id>:m    hash: the stream's state (fields below)
//	{tag}:s:<id>:c    sorted set: its own chunks, scored by start position
//	{tag}:s:<id>:p    hash: Producer-Id → "epoch seq"
//	{tag}:s:wake      channel: the id of every stream a write changed
//
// Invariants: every write is one atomic step that commits only if what it
// decided from is unchanged: create, delete and expiry an optimistic
// transaction (WATCH the keys it reads, decide with package streams'
// functions, MULTI/EXEC); an append a read script, the decision in Go,
// and a commit script that compares the state it depends on with what
// was read. So the producer state and the data commit together or not at
// all, and a resend after a lost reply meets the state the first try
// left. A chunk
// never changes once added, and its start is the stream's tail when it is
// added, so a reader that reads the state and then the chunks below its
// tail needs no transaction. A name maps to a stream whose state exists;
// a stream's keys are deleted when no name and no fork refers to it.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore/streams"
)

// Streams is redisstore's streams.Driver: the streams of one namespace.
// Live readers wait on the driver's one subscription to the namespace's
// wake channel, which every write publishes to in its transaction; a
// broken subscription wakes every waiter (a message may be lost), and a
// waiter re-reads at least every streamsRecheck in any case.
type Streams struct {
	c    redis.UniversalClient
	base string
	hub  *hub // the wake channel's subscription, shared with the lock watchers' code

	sweepMu      sync.Mutex
	sweepCursor  uint64   // where the next SweepExpired resumes its HSCAN
	sweepPending []string // names and ids the last HSCAN returned, not yet looked at
}

var _ streams.Driver = (*Streams)(nil)

// streamsRecheck bounds a wait that no message ends: the guard against a
// notification lost in a failover, not a poll.
const streamsRecheck = 5 * time.Second

// NewStreams returns the stream driver of the namespace whose prefix is
// prefix ("" = DefaultPrefix), over c. Close ends its subscription.
func NewStreams(c redis.UniversalClient, prefix string) *Streams {
	base := keyBase(prefix) + "s:"
	return &Streams{c: c, base: base, hub: newHub(c, base+"wake")}
}

// Close ends the driver's subscription; it does not close the client.
func (d *Streams) Close() error { return d.hub.close() }

func (d *Streams) names() string             { return d.base + "names" }
func (d *Streams) meta(id string) string     { return d.base + id + ":m" }
func (d *Streams) chunks(id string) string   { return d.base + id + ":c" }
func (d *Streams) prods(id string) string    { return d.base + id + ":p" }
func (d *Streams) keysOf(id string) []string { return []string{d.meta(id), d.chunks(id), d.prods(id)} }

// rstream is a stream's state as stored in its :m hash.
type rstream struct {
	id      string
	name    string
	info    streams.Info
	w       streams.Writers
	src     string // the source's id; "" when not a fork
	refs    int64
	deleted bool // soft-deleted: 410 by name
	dropped bool // expired while forked: no name, kept for the forks
}

func (r *rstream) fields() map[string]any {
	f := map[string]any{
		"name": r.name, "ct": r.info.ContentType, "tail": int64(r.info.Tail), "acc": r.info.Accessed.UnixNano(),
		"cr": r.info.Created, "refs": r.refs, "ls": r.w.LastSeq, "me": r.w.MaxEpoch,
	}
	if r.info.HasTTL {
		f["ttl"] = r.info.TTL
	}
	if !r.info.ExpiresAt.IsZero() {
		f["exp"] = r.info.ExpiresAt.UnixNano()
	}
	if r.info.Closed {
		f["closed"] = 1
	}
	if fk := r.info.Fork; fk != nil {
		f["src"], f["srcname"], f["base"] = r.src, fk.Source, int64(fk.Pos)
	}
	if c := r.w.ClosedBy; c != nil {
		f["cb"] = fmt.Sprintf("%d %d %s", c.Epoch, c.Seq, c.ID)
	}
	if r.deleted {
		f["del"] = 1
	}
	if r.dropped {
		f["drop"] = 1
	}
	return f
}

func parseStream(id string, m map[string]string) (*rstream, error) {
	if len(m) == 0 {
		return nil, nil
	}
	// A numeric field that is present but not a number is a corrupt
	// state, reported rather than read as 0; an absent one is 0.
	var bad error
	parse := func(k, v string) int64 {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil && bad == nil {
			bad = fmt.Errorf("redisstore: stream %s: field %s is %q, not an integer", id, k, v)
		}
		return n
	}
	num := func(k string) int64 {
		v, ok := m[k]
		if !ok {
			return 0
		}
		return parse(k, v)
	}
	r := &rstream{id: id, name: m["name"], src: m["src"], refs: num("refs"), deleted: m["del"] != "", dropped: m["drop"] != ""}
	r.info.ContentType = m["ct"]
	r.info.Tail = streams.Pos(num("tail"))
	r.info.Accessed = time.Unix(0, num("acc"))
	r.info.Created = num("cr")
	r.info.Closed = m["closed"] != ""
	if v, ok := m["ttl"]; ok {
		r.info.TTL = parse("ttl", v)
		r.info.HasTTL = true
	}
	if _, ok := m["exp"]; ok {
		r.info.ExpiresAt = time.Unix(0, num("exp")).UTC()
	}
	if r.src != "" {
		r.info.Fork = &streams.Fork{Source: m["srcname"], Pos: streams.Pos(num("base"))}
	}
	r.w.LastSeq, r.w.MaxEpoch = m["ls"], num("me")
	if cb := m["cb"]; cb != "" {
		var p streams.Producer
		parts := strings.SplitN(cb, " ", 3)
		if len(parts) != 3 {
			return nil, fmt.Errorf("redisstore: stream %s: bad closer %q", id, cb)
		}
		p.Epoch, p.Seq, p.ID = parse("cb", parts[0]), parse("cb", parts[1]), parts[2]
		r.w.ClosedBy = &p
	}
	if bad != nil {
		return nil, bad
	}
	return r, nil
}

// load reads the state of stream id (nil when it has none).
func (d *Streams) load(ctx context.Context, c redis.Cmdable, id string) (*rstream, error) {
	m, err := c.HGetAll(ctx, d.meta(id)).Result()
	if err != nil {
		return nil, err
	}
	return parseStream(id, m)
}

// txn runs fn in an optimistic transaction over keys, again while another
// client's write to a watched key fails it.
func (d *Streams) txn(ctx context.Context, fn func(tx *redis.Tx) error, keys ...string) error {
	for i := 0; ; i++ {
		err := d.c.Watch(ctx, fn, keys...)
		if !errors.Is(err, redis.TxFailedErr) {
			return err
		}
		if i >= 1000 {
			return fmt.Errorf("redisstore: a stream write lost 1000 races: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if i > 3 {
			time.Sleep(time.Duration(i) * 50 * time.Microsecond)
		}
	}
}

// lookup resolves name in tx (watching its state) to a live stream.
func (d *Streams) lookup(ctx context.Context, tx *redis.Tx, name string, now time.Time) (*rstream, error) {
	id, err := tx.HGet(ctx, d.names(), name).Result()
	if errors.Is(err, redis.Nil) {
		return nil, streams.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if err := tx.Watch(ctx, d.meta(id), d.prods(id)).Err(); err != nil {
		return nil, err
	}
	r, err := d.load(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, fmt.Errorf("redisstore: stream %s names id %s, which has no state", strconv.Quote(name), id)
	}
	if r.deleted {
		return nil, streams.ErrGone
	}
	if r.info.Expired(now) {
		return r, streams.ErrNotFound
	}
	return r, nil
}

// release queues the removal of r, which no name refers to any more, in
// p: its keys go when no fork reads it, and with them every source up the
// chain that was waiting for its last fork. Sources are read (and
// watched) in tx.
func (d *Streams) release(ctx context.Context, tx *redis.Tx, p redis.Pipeliner, r *rstream) error {
	p.Publish(ctx, d.base+"wake", r.id)
	if r.refs > 0 {
		p.HSet(ctx, d.meta(r.id), "drop", 1)
		return nil
	}
	p.Del(ctx, d.keysOf(r.id)...)
	for src := r.src; src != ""; {
		if err := tx.Watch(ctx, d.meta(src)).Err(); err != nil {
			return err
		}
		s, err := d.load(ctx, tx, src)
		if err != nil || s == nil {
			return err
		}
		if s.refs > 1 || !s.deleted && !s.dropped {
			p.HIncrBy(ctx, d.meta(src), "refs", -1)
			return nil
		}
		if s.deleted {
			// A soft-deleted source holds its name until now.
			if cur, err := tx.HGet(ctx, d.names(), s.name).Result(); err == nil && cur == s.id {
				p.HDel(ctx, d.names(), s.name)
			}
		}
		p.Del(ctx, d.keysOf(src)...)
		src = s.src
	}
	return nil
}

// Create implements streams.Driver.
func (d *Streams) Create(ctx context.Context, name string, req *streams.CreateRequest, now time.Time) (streams.Info, bool, error) {
	var (
		out     streams.Info
		created bool
	)
	err := d.txn(ctx, func(tx *redis.Tx) error {
		created = false
		old, err := d.lookup(ctx, tx, name, now)
		live := err == nil // else old, if set, has expired
		if err := streams.NameLookupErr(err); err != nil {
			return err
		}
		var (
			oi, si *streams.Info
			src    *rstream
		)
		if live {
			oi = &old.info
		}
		if f := req.Fork; f != nil {
			if src, err = d.lookup(ctx, tx, f.Source, now); err != nil {
				return streams.SourceLookupErr(err)
			}
			si = &src.info
		}
		cfg, fork, err := streams.DecideCreate(req, oi, si, func(a streams.Pos) (streams.Pos, error) { return d.runAt(ctx, tx, src, a) })
		if err != nil {
			return err
		}
		if live {
			out = old.info
			_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.HSet(ctx, d.meta(old.id), "acc", now.UnixNano())
				return nil
			})
			return err
		}
		n, err := tx.Incr(ctx, d.base+"seq").Result()
		if err != nil {
			return err
		}
		r := &rstream{id: strconv.FormatInt(n, 10), name: name, info: streams.Info{Config: cfg, Accessed: now, Fork: fork, Created: now.UnixNano()}}
		if fork != nil {
			r.src, r.info.Tail = src.id, fork.Pos
		}
		var chunk *streams.Chunk
		if b := req.Body; b != nil && b.Len() > 0 {
			b.Start = r.info.Tail
			chunk = b
			r.info.Tail = b.End()
		}
		r.info.Closed = req.Closed
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			if old != nil {
				if err := d.release(ctx, tx, p, old); err != nil {
					return err
				}
			}
			p.HSet(ctx, d.meta(r.id), r.fields())
			p.HSet(ctx, d.names(), name, r.id)
			if chunk != nil {
				p.ZAdd(ctx, d.chunks(r.id), redis.Z{Score: float64(chunk.Start), Member: encodeChunk(chunk)})
			}
			if src != nil {
				p.HIncrBy(ctx, d.meta(src.id), "refs", 1)
				p.HSet(ctx, d.meta(src.id), "acc", now.UnixNano())
			}
			return nil
		})
		out, created = r.info, true
		return err
	}, d.names())
	return out, created, err
}

// encodeChunk is a chunk as a sorted-set member: its start (8 bytes, which
// makes members unique), the number of JSON message ends (4 bytes; the
// all-ones value for bytes), the ends, the data.
func encodeChunk(c *streams.Chunk) string {
	n := uint32(math.MaxUint32)
	if c.Ends != nil {
		n = uint32(len(c.Ends))
	}
	b := make([]byte, 0, 12+4*len(c.Ends)+len(c.Data))
	b = binary.BigEndian.AppendUint64(b, uint64(c.Start))
	b = binary.BigEndian.AppendUint32(b, n)
	for _, e := range c.Ends {
		b = binary.BigEndian.AppendUint32(b, uint32(e))
	}
	return string(append(b, c.Data...))
}

func decodeChunk(s string) (streams.Chunk, error) {
	if len(s) < 12 {
		return streams.Chunk{}, errors.New("redisstore: a stream chunk is short")
	}
	b := []byte(s)
	c := streams.Chunk{Start: streams.Pos(binary.BigEndian.Uint64(b))}
	n := binary.BigEndian.Uint32(b[8:])
	b = b[12:]
	if n != math.MaxUint32 {
		if uint64(len(b)) < 4*uint64(n) {
			return streams.Chunk{}, errors.New("redisstore: a stream chunk is short")
		}
		c.Ends = make([]int32, n)
		for i := range c.Ends {
			c.Ends[i] = int32(binary.BigEndian.Uint32(b[4*i:]))
		}
		b = b[4*n:]
	}
	c.Data = b
	return c, nil
}

// chunkAt returns the chunk of stream id that holds pos (ok false when
// none does).
func (d *Streams) chunkAt(ctx context.Context, c redis.Cmdable, id string, pos streams.Pos) (streams.Chunk, bool, error) {
	ms, err := c.ZRevRangeByScore(ctx, d.chunks(id), &redis.ZRangeBy{Max: strconv.FormatInt(int64(pos), 10), Min: "-inf", Count: 1}).Result()
	if err != nil || len(ms) == 0 {
		return streams.Chunk{}, false, err
	}
	ch, err := decodeChunk(ms[0])
	if err != nil || ch.End() <= pos {
		return streams.Chunk{}, false, err
	}
	return ch, true, nil
}

// runAt is the number of units from anchor to the end of the chunk that
// holds it, in r's view (0 at or past the tail).
func (d *Streams) runAt(ctx context.Context, c redis.Cmdable, r *rstream, anchor streams.Pos) (streams.Pos, error) {
	to := r.info.Tail
	for {
		if anchor >= to {
			return 0, nil
		}
		if fk := r.info.Fork; fk != nil && anchor < fk.Pos {
			to = min(to, fk.Pos)
			s, err := d.load(ctx, c, r.src)
			if err != nil || s == nil {
				return 0, err
			}
			r = s
			continue
		}
		ch, ok, err := d.chunkAt(ctx, c, r.id, anchor)
		if err != nil || !ok {
			return 0, err
		}
		return min(ch.End(), to) - anchor, nil
	}
}

// appendReadArgs are appendReadScript's parameters.
type appendReadArgs struct {
	Names       key
	Base, Name  string
	HasProducer bool
	Producer    string
}

// appendReadScript is an append's one read: the id of the stream's name,
// its state (HGETALL of its :m hash) and the producer's state (false when
// the stream has none for it, or the append names no producer). The keys
// of the id are the names key's siblings under the namespace's hash tag
// (A.base), so they share its slot.
var appendReadScript = newScript[appendReadArgs]("streamAppendRead", false, `
local id = redis.call('HGET', K.names, A.name)
if not id then return {} end
local p = false
if A.hasproducer == '1' then p = redis.call('HGET', A.base .. id .. ':p', A.producer) end
return {id, redis.call('HGETALL', A.base .. id .. ':m'), p}
`)

// appendCommitArgs are appendCommitScript's parameters.
type appendCommitArgs struct {
	Meta, Chunks, Prods key
	// The state the decision read: the :m fields an append's decision
	// depends on that change after create ("" when absent), and the
	// producer's state ("" when none, or no producer).
	Tail, Closed, Del, Drop, LS, ME, CB string
	HasProducer                         bool
	Producer, ProdWas                   string
	// What to write: acc always; with write, the chunk (when haschunk),
	// the producer's new state (when hasproducer), the writers' fields.
	Acc                          string
	Write, HasChunk              bool
	Score                        string
	Chunk                        []byte
	NewTail, NewLS, NewME, NewCB string
	Close                        bool
	ProdNew, Wake, ID            string
}

// appendCommitScript is an append's one write. It refuses ({0}, writing
// nothing) when the state differs from what the decision read, as a
// WATCH would fail the EXEC, and Go reads and decides again; otherwise it
// writes the decision's effects and publishes the stream's id ({1}).
// Accessed (acc) is not compared: it only grows, and a later access
// cannot make a stream the decision found live expire.
var appendCommitScript = newScript[appendCommitArgs]("streamAppendCommit", false, `
if redis.call('EXISTS', K.meta) == 0 then return {0} end
local m = redis.call('HMGET', K.meta, 'tail', 'closed', 'del', 'drop', 'ls', 'me', 'cb')
local want = {A.tail, A.closed, A.del, A.drop, A.ls, A.me, A.cb}
for i = 1, 7 do
  if (m[i] or '') ~= want[i] then return {0} end
end
if A.hasproducer == '1' and (redis.call('HGET', K.prods, A.producer) or '') ~= A.prodwas then return {0} end
if A.write == '1' then
  if A.haschunk == '1' then redis.call('ZADD', K.chunks, A.score, A.chunk) end
  if A.hasproducer == '1' then redis.call('HSET', K.prods, A.producer, A.prodnew) end
  redis.call('HSET', K.meta, 'acc', A.acc, 'tail', A.newtail, 'ls', A.newls, 'me', A.newme)
  if A.newcb ~= '' then redis.call('HSET', K.meta, 'cb', A.newcb) end
  if A.close == '1' then redis.call('HSET', K.meta, 'closed', 1) end
  redis.call('PUBLISH', A.wake, A.id)
else
  redis.call('HSET', K.meta, 'acc', A.acc)
end
return {1}
`)

// Append implements streams.Driver. It takes two round trips: a script
// reads the state, Go decides (package streams), and a second script
// writes the decision if the state is still what was read, all of it or
// nothing, so the producer check commits with the data and a retry after
// a lost reply meets the state the first try left.
func (d *Streams) Append(ctx context.Context, name string, req *streams.AppendRequest, now time.Time) (streams.AppendResult, error) {
	for i := 0; ; i++ {
		res, ok, err := d.appendOnce(ctx, name, req, now)
		if err != nil || ok {
			return res, err
		}
		if i >= 1000 {
			return res, errors.New("redisstore: a stream append lost 1000 races")
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if i > 3 {
			time.Sleep(time.Duration(i) * 50 * time.Microsecond)
		}
	}
}

// appendOnce reads, decides and commits once; ok is false when another
// write changed the state between the read and the commit.
func (d *Streams) appendOnce(ctx context.Context, name string, req *streams.AppendRequest, now time.Time) (streams.AppendResult, bool, error) {
	var res streams.AppendResult
	ra := appendReadArgs{Names: key(d.names()), Base: d.base, Name: name}
	if p := req.Producer; p != nil {
		ra.HasProducer, ra.Producer = true, p.ID
	}
	keys, args := build(ra)
	v, err := appendReadScript.sc.Run(ctx, d.c, keys, args...).Slice()
	if err != nil {
		return res, false, err
	}
	if len(v) == 0 {
		return res, false, streams.ErrNotFound
	}
	id, _ := v[0].(string)
	flat, _ := v[1].([]any)
	m := make(map[string]string, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		k, _ := flat[i].(string)
		m[k], _ = flat[i+1].(string)
	}
	prodWas, _ := v[2].(string) // nil (Lua false) when none
	r, err := parseStream(id, m)
	switch {
	case err != nil:
		return res, false, err
	case r == nil || r.dropped:
		return res, false, streams.ErrNotFound
	case r.deleted:
		return res, false, streams.ErrGone
	case r.info.Expired(now):
		return res, false, streams.ErrNotFound
	}
	var ps *streams.ProducerState
	if prodWas != "" {
		var st streams.ProducerState
		if _, err := fmt.Sscan(prodWas, &st.Epoch, &st.LastSeq); err != nil {
			return res, false, fmt.Errorf("redisstore: stream %s: producer state %q: %w", id, prodWas, err)
		}
		ps = &st
	}
	dec, err := streams.DecideAppend(&r.info, &r.w, ps, req)
	if err != nil {
		return res, false, err
	}
	res = dec.Result
	ca := appendCommitArgs{Meta: key(d.meta(id)), Chunks: key(d.chunks(id)), Prods: key(d.prods(id)),
		Tail: m["tail"], Closed: m["closed"], Del: m["del"], Drop: m["drop"], LS: m["ls"], ME: m["me"], CB: m["cb"],
		HasProducer: ra.HasProducer, Producer: ra.Producer, ProdWas: prodWas,
		Acc: strconv.FormatInt(now.UnixNano(), 10), Write: dec.Write, Wake: d.base + "wake", ID: id}
	if dec.Write {
		tail := r.info.Tail
		if b := req.Body; b != nil {
			b.Start = r.info.Tail
			ca.HasChunk, ca.Score, ca.Chunk = true, strconv.FormatInt(int64(b.Start), 10), []byte(encodeChunk(b))
			tail = b.End()
			res.Next = b.End()
		}
		if req.Producer != nil {
			ca.ProdNew = fmt.Sprintf("%d %d", dec.State.Epoch, dec.State.LastSeq)
		}
		r.w.Apply(req, &dec)
		ca.NewTail, ca.NewLS, ca.NewME = strconv.FormatInt(int64(tail), 10), r.w.LastSeq, strconv.FormatInt(r.w.MaxEpoch, 10)
		if c := r.w.ClosedBy; c != nil {
			ca.NewCB = fmt.Sprintf("%d %d %s", c.Epoch, c.Seq, c.ID)
		}
		ca.Close = req.Close
	}
	keys, args = build(ca)
	n, err := appendCommitScript.sc.Run(ctx, d.c, keys, args...).Slice()
	if err != nil {
		return res, false, err
	}
	if len(n) != 1 || n[0] != int64(1) {
		return res, false, nil
	}
	return res, true, nil
}

// Delete implements streams.Driver.
func (d *Streams) Delete(ctx context.Context, name string, now time.Time) error {
	return d.txn(ctx, func(tx *redis.Tx) error {
		r, err := d.lookup(ctx, tx, name, now)
		if err != nil {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			if r.refs > 0 {
				p.HSet(ctx, d.meta(r.id), "del", 1)
				p.Publish(ctx, d.base+"wake", r.id)
				return nil
			}
			p.HDel(ctx, d.names(), name)
			return d.release(ctx, tx, p, r)
		})
		return err
	}, d.names())
}

// resolve finds the live stream of name without a transaction.
func (d *Streams) resolve(ctx context.Context, name string, now time.Time) (*rstream, error) {
	id, err := d.c.HGet(ctx, d.names(), name).Result()
	if errors.Is(err, redis.Nil) {
		return nil, streams.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	r, err := d.load(ctx, d.c, id)
	if err != nil {
		return nil, err
	}
	switch {
	case r == nil || r.dropped:
		return nil, streams.ErrNotFound
	case r.deleted:
		return nil, streams.ErrGone
	case r.info.Expired(now):
		d.expire(ctx, name, now)
		return nil, streams.ErrNotFound
	}
	return r, nil
}

// expire removes the expired stream of name, best effort: a reader that
// finds it expired answers 404 either way.
func (d *Streams) expire(ctx context.Context, name string, now time.Time) {
	_ = d.txn(ctx, func(tx *redis.Tx) error {
		r, err := d.lookup(ctx, tx, name, now)
		if !errors.Is(err, streams.ErrNotFound) || r == nil {
			return nil
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HDel(ctx, d.names(), name)
			return d.release(ctx, tx, p, r)
		})
		return err
	}, d.names())
}

// touchScript renews a stream's TTL only while its state exists, so a
// touch never recreates a deleted stream's hash.
var touchScript = redis.NewScript(`if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HSET', KEYS[1], 'acc', ARGV[1]) end return 1`)

func (d *Streams) touch(ctx context.Context, id string, now time.Time) error {
	return touchScript.Run(ctx, d.c, []string{d.meta(id)}, now.UnixNano()).Err()
}

// Head implements streams.Driver.
func (d *Streams) Head(ctx context.Context, name string, touch bool, now time.Time) (streams.Info, error) {
	r, err := d.resolve(ctx, name, now)
	if err != nil {
		return streams.Info{}, err
	}
	if touch {
		if err := d.touch(ctx, r.id, now); err != nil {
			return streams.Info{}, err
		}
		r.info.Accessed = now
	}
	return r.info, nil
}

// Read implements streams.Driver.
func (d *Streams) Read(ctx context.Context, name string, from streams.Pos, max int, now time.Time) (streams.ReadResult, error) {
	r, err := d.resolve(ctx, name, now)
	if err != nil {
		return streams.ReadResult{}, err
	}
	if err := d.touch(ctx, r.id, now); err != nil {
		return streams.ReadResult{}, err
	}
	r.info.Accessed = now
	if from > r.info.Tail {
		return streams.ReadResult{}, streams.Errorf(streams.ErrBadRequest, "the offset is past the stream's tail")
	}
	out := streams.ReadResult{Info: r.info, Next: from}
	budget := max
	// Walk the view: the part below a fork point is the source's.
	type seg struct {
		id       string
		from, to streams.Pos
	}
	var segs []seg
	to := r.info.Tail
	for cur := r; from < to; {
		lo := from
		if fk := cur.info.Fork; fk != nil && fk.Pos > from {
			lo = fk.Pos
		}
		if lo < to {
			segs = append(segs, seg{cur.id, lo, to})
		}
		if cur.info.Fork == nil || cur.info.Fork.Pos <= from {
			break
		}
		to = min(to, cur.info.Fork.Pos)
		if cur, err = d.load(ctx, d.c, cur.src); err != nil {
			return streams.ReadResult{}, err
		}
		if cur == nil {
			return streams.ReadResult{}, fmt.Errorf("redisstore: stream %s: a fork's source has no state", strconv.Quote(name))
		}
	}
	for i := len(segs) - 1; i >= 0 && budget > 0; i-- {
		s := segs[i]
		pos := out.Next
		if pos < s.from {
			pos = s.from
		}
		if ch, ok, err := d.chunkAt(ctx, d.c, s.id, pos); err != nil {
			return streams.ReadResult{}, err
		} else if ok && ch.Start < pos {
			out.Chunks, out.Next, budget = ch.Take(out.Chunks, pos, s.to, budget)
			pos = out.Next
		}
		for pos < s.to && budget > 0 {
			ms, err := d.c.ZRangeByScore(ctx, d.chunks(s.id), &redis.ZRangeBy{Min: strconv.FormatInt(int64(pos), 10),
				Max: "(" + strconv.FormatInt(int64(s.to), 10), Count: 64}).Result()
			if err != nil {
				return streams.ReadResult{}, err
			}
			if len(ms) == 0 {
				break
			}
			for _, m := range ms {
				ch, err := decodeChunk(m)
				if err != nil {
					return streams.ReadResult{}, err
				}
				if budget <= 0 {
					break
				}
				out.Chunks, out.Next, budget = ch.Take(out.Chunks, ch.Start, s.to, budget)
				pos = out.Next
			}
		}
		if out.Next < s.to {
			break
		}
	}
	return out, nil
}

// Wait implements streams.Driver.
func (d *Streams) Wait(ctx context.Context, name string, tail streams.Pos) error {
	id, err := d.c.HGet(ctx, d.names(), name).Result()
	if err != nil {
		return nil // gone, or the store fails: the caller's read says which
	}
	ch, err := d.hub.watch(ctx, id)
	if err != nil {
		return err
	}
	// Subscribed first, then checked: a write after the check wakes ch.
	r, err := d.load(ctx, d.c, id)
	if err != nil || r == nil || r.deleted || r.dropped || r.info.Closed || r.info.Tail != tail {
		return nil
	}
	t := time.NewTimer(streamsRecheck)
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// streamsCache keeps one stream driver (one subscription) per namespace
// of a store opened by URL.
type streamsCache struct {
	c      redis.UniversalClient
	prefix string

	mu      sync.Mutex
	drivers map[string]*Streams
	closed  bool
}

func newStreamsCache(c redis.UniversalClient, prefix string) *streamsCache {
	return &streamsCache{c: c, prefix: prefix, drivers: map[string]*Streams{}}
}

func (sc *streamsCache) get(name string) (streams.Driver, error) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.closed {
		return nil, redis.ErrClosed
	}
	d := sc.drivers[name]
	if d == nil {
		d = NewStreams(sc.c, NamespacePrefix(sc.prefix, name))
		sc.drivers[name] = d
	}
	return d, nil
}

func (sc *streamsCache) close() error {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.closed = true
	var errs []error
	for _, d := range sc.drivers {
		errs = append(errs, d.Close())
	}
	sc.drivers = nil
	return errors.Join(errs...)
}

var _ streams.Sweeper = (*Streams)(nil)

// SweepExpired implements streams.Sweeper: it takes the names an HSCAN of
// the names hash returned and the last call left, max of them, and scans
// on when none are left (a small hash comes back whole, whatever COUNT
// says).
func (d *Streams) SweepExpired(ctx context.Context, now time.Time, max int) (int, error) {
	d.sweepMu.Lock()
	defer d.sweepMu.Unlock()
	if len(d.sweepPending) == 0 {
		kv, next, err := d.c.HScan(ctx, d.names(), d.sweepCursor, "*", int64(max)).Result()
		if err != nil {
			return 0, err
		}
		d.sweepCursor, d.sweepPending = next, kv
	}
	n := 0
	for seen := 0; seen < max && len(d.sweepPending) >= 2; seen++ {
		name, id := d.sweepPending[0], d.sweepPending[1]
		d.sweepPending = d.sweepPending[2:]
		r, err := d.load(ctx, d.c, id)
		if err != nil {
			return n, err
		}
		if r != nil && !r.deleted && r.info.Expired(now) {
			d.expire(ctx, name, now)
			n++
		}
	}
	return n, nil
}
