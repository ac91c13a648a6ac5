package redisstore

// Named script arguments. Each script's KEYS and ARGV come from one typed
// Go value, a struct whose fields are the script's parameters in order:
// fields of type key are KEYS, every other field is an ARGV. The script's
// source is a prologue generated from the same struct, which names each
// parameter, and a body that uses only those names:
//
//	local K = {thread = KEYS[1], op = KEYS[2]}
//	local A = {token = ARGV[1], now = ARGV[2]}
//
// so the body reads K.thread and A.now, never KEYS[i] or ARGV[i], and no
// index is matched by hand. A last field of type []any is the rest of ARGV,
// variable in length: the prologue sets A.<name> to the index of its first
// element, and the body loops from there to #ARGV. TestScriptParameters
// reads every body and checks that it uses exactly the names its struct
// declares.

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// key is a script parameter that is a Redis key: it goes to KEYS, which
// Redis Cluster routes by (all of a store's keys share one hash tag).
type key string

// luaScript is one script and the struct type A of its parameters.
type luaScript[A any] struct {
	name string
	body string // the Lua after the prologue
	sc   *redis.Script
	// opField and ttlField index the parameters Op (the op key) and TTL
	// (its lifetime, ms) in A; -1 when A has none.
	opField, ttlField int
}

// scriptInfo describes a script for the parameter test.
type scriptInfo struct {
	name, prologue, body string
	source               string // what the server runs
	params               reflect.Type
}

// allScripts lists every script, for tests (loading them, checking their
// parameters).
var allScripts []scriptInfo

// newScript builds a script from its body; lib prepends luaLib.
func newScript[A any](name string, lib bool, body string) *luaScript[A] {
	t := reflect.TypeFor[A]()
	pro := prologue(t)
	src := pro + body
	if lib {
		src = luaLib + src
	}
	allScripts = append(allScripts, scriptInfo{name: name, prologue: pro, body: body, source: src, params: t})
	ls := &luaScript[A]{name: name, body: body, sc: redis.NewScript(src), opField: -1, ttlField: -1}
	if f, ok := t.FieldByName("Op"); ok && f.Type == reflect.TypeFor[key]() {
		if g, ok := t.FieldByName("TTL"); ok && g.Type.Kind() == reflect.String {
			ls.opField, ls.ttlField = f.Index[0], g.Index[0]
		}
	}
	return ls
}

// param is one field of a parameter struct.
type param struct {
	name  string // the Lua name
	index int    // the field index
	isKey bool
	rest  bool
}

var paramCache sync.Map // reflect.Type → []param

// params returns the parameters of struct type t: each exported field, its
// Lua name the `lua` tag or the field name in lower case.
func params(t reflect.Type) []param {
	if p, ok := paramCache.Load(t); ok {
		return p.([]param)
	}
	var out []param
	for i := range t.NumField() {
		f := t.Field(i)
		name := f.Tag.Get("lua")
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		p := param{name: name, index: i, isKey: f.Type == reflect.TypeFor[key]()}
		if f.Type == reflect.TypeFor[[]any]() {
			if i != t.NumField()-1 {
				panic(fmt.Sprintf("redisstore: %v: the rest of ARGV (%s) must be the last field", t, f.Name))
			}
			p.rest = true
		}
		out = append(out, p)
	}
	paramCache.Store(t, out)
	return out
}

// prologue is the Lua that names the parameters of struct type t.
func prologue(t reflect.Type) string {
	var ks, as []string
	for _, p := range params(t) {
		switch {
		case p.isKey:
			ks = append(ks, fmt.Sprintf("%s = KEYS[%d]", p.name, len(ks)+1))
		case p.rest:
			as = append(as, fmt.Sprintf("%s = %d", p.name, len(as)+1))
		default:
			as = append(as, fmt.Sprintf("%s = ARGV[%d]", p.name, len(as)+1))
		}
	}
	return "local K = {" + strings.Join(ks, ", ") + "}\nlocal A = {" + strings.Join(as, ", ") + "}\n"
}

// build returns the KEYS and ARGV of a parameter value: keys in field
// order, then every other field formatted for ARGV (integers in decimal,
// booleans as "1"/"0", strings and bytes as they are).
func build(v any) ([]string, []any) {
	rv := reflect.ValueOf(v)
	var keys []string
	var args []any
	for _, p := range params(rv.Type()) {
		f := rv.Field(p.index)
		switch {
		case p.isKey:
			keys = append(keys, f.String())
		case p.rest:
			args = append(args, f.Interface().([]any)...)
		default:
			args = append(args, argValue(f))
		}
	}
	return keys, args
}

func argValue(f reflect.Value) any {
	switch f.Kind() {
	case reflect.String:
		return f.String()
	case reflect.Int, reflect.Int64:
		return strconv.FormatInt(f.Int(), 10)
	case reflect.Bool:
		if f.Bool() {
			return "1"
		}
		return "0"
	case reflect.Slice:
		if b, ok := f.Interface().([]byte); ok {
			return b
		}
	}
	panic(fmt.Sprintf("redisstore: script parameter of type %v", f.Type()))
}

// runner sends scripts to one client, waiting for minReplicas replicas
// after each write when it is above 0.
type runner struct {
	c              redis.UniversalClient
	minReplicas    int
	waitMs         int64
	replicaTimeout time.Duration

	// before, when set (by tests), runs before each script is sent, with
	// the script's name: after the Go-side checks, before the script's.
	before func(script string)
}

// run runs a script with the parameters a. A write (write set) waits for
// the replicas, so that it honours Options.MinReplicas.
func run[A any](ctx context.Context, r runner, sc *luaScript[A], a A, write bool) ([]any, error) {
	keys, args := build(a)
	if r.before != nil {
		r.before(sc.name)
	}
	var op opTouch
	if write && r.minReplicas > 0 && sc.opField >= 0 {
		v := reflect.ValueOf(a)
		op = opTouch{key: v.Field(sc.opField).String(), ttl: v.Field(sc.ttlField).String()}
	}
	return r.eval(ctx, sc.sc, keys, args, write, op)
}

// opTouch is a write's op key and its lifetime, which eval renews between
// the script and the WAIT.
//
// Why: WAIT waits for the replication offset the connection last recorded,
// which a server may record only after a command that propagated
// (redis-server 7.0 records it after every command). A resent call (a
// retry after ErrNotReplicated, maybe through another server, on another
// connection) that finds its op key answers from it and writes nothing, so
// its WAIT could count replicas against an older offset, from before the
// first attempt's write, and report as replicated a write that no replica
// has. Renewing the op key is a write that propagates, so the WAIT covers
// everything the primary had applied by then, the first attempt's write
// included. After a script that refused (no op key was written), PEXPIRE
// finds no key and writes nothing, and the WAIT is not read.
type opTouch struct{ key, ttl string }

// eval is the one place that sends a script: EVALSHA, EVAL when the server
// answers NOSCRIPT, and, for a write with MinReplicas set, the WAIT for the
// replicas, down the same connection and in the same pipeline (WAIT counts
// the writes of its own connection).
func (r runner) eval(ctx context.Context, sc *redis.Script, keys []string, args []any, write bool, op opTouch) ([]any, error) {
	if !write || r.minReplicas == 0 {
		return sc.Run(ctx, r.c, keys, args...).Slice()
	}
	node := redis.Cmdable(r.c)
	if cc, ok := r.c.(*redis.ClusterClient); ok {
		m, err := cc.MasterForKey(ctx, keys[0])
		if err != nil {
			return nil, err
		}
		node = m
	}
	for loaded := false; ; loaded = true {
		var ev *redis.Cmd
		var wait *redis.Cmd
		_, err := node.Pipelined(ctx, func(p redis.Pipeliner) error {
			ev = p.EvalSha(ctx, sc.Hash(), keys, args...)
			if op.key != "" {
				p.Do(ctx, "PEXPIRE", op.key, op.ttl)
			}
			wait = p.Do(ctx, "WAIT", r.minReplicas, r.waitMs)
			return nil
		})
		if err != nil && redis.HasErrorPrefix(ev.Err(), "NOSCRIPT") && !loaded {
			if err := sc.Load(ctx, node).Err(); err != nil {
				return nil, err
			}
			continue
		}
		res, err := ev.Slice()
		if err != nil || !succeeded(res) {
			return res, err // a failed check wrote nothing: nothing to wait for
		}
		n, err := wait.Int64()
		if err != nil {
			return nil, fmt.Errorf("%w: WAIT: %w", ErrNotReplicated, err)
		}
		if n < int64(r.minReplicas) {
			return nil, fmt.Errorf("%w: %d of %d replicas within %v", ErrNotReplicated, n, r.minReplicas, r.replicaTimeout)
		}
		return res, nil
	}
}
