package redisstore

// The persistence record encoding: one hash field per JSON member of the
// record's codec (persist/driver's, the one JSON engine of every record).

import (
	"context"
	"fmt"
	"strings"

	"github.com/ckptstore/ckptstore/persist/driver"
)

// Each field's value is the member's JSON. Raw JSON members (usage,
// payload, response, …) are stored and returned byte for byte, as the
// contract asks.

// membered is a record with a per-member codec.
type membered interface {
	Members(fn func(name string, value []byte, raw bool))
	SetMember(name string, value []byte) error
}

// fields returns rec's members as (name, JSON) pairs in order.
func fields(rec membered) ([]any, error) {
	var out []any
	rec.Members(func(name string, v []byte, _ bool) { out = append(out, name, string(v)) })
	return out, nil
}

// patchPairs returns the members a patch names: a set one as (name, JSON),
// a cleared one as (name, ""), which the scripts read as "delete the
// field".
func patchPairs(patch interface {
	Members(fn func(name string, value []byte))
}) ([]any, error) {
	var out []any
	patch.Members(func(name string, v []byte) { out = append(out, name, string(v)) })
	return out, nil
}

// decode reads a HGETALL reply into a record, or nil when it is empty;
// the driver's own fields ('~…') are skipped.
func decode[T any](r any) (*T, error) {
	flat, ok := r.([]any)
	if !ok || len(flat)%2 != 0 {
		return nil, fmt.Errorf("%w: record reply %T", driver.ErrCorrupt, r)
	}
	if len(flat) == 0 {
		return nil, nil
	}
	out := new(T)
	rec := any(out).(membered) // every record type is
	for i := 0; i < len(flat); i += 2 {
		name, _ := flat[i].(string)
		val, _ := flat[i+1].(string)
		if strings.HasPrefix(name, "~") {
			continue
		}
		if err := rec.SetMember(name, []byte(val)); err != nil {
			return nil, fmt.Errorf("%w: field %q: %v", driver.ErrCorrupt, name, err)
		}
	}
	return out, nil
}

// hgetall reads one record with one command.
func hgetall[T any](ctx context.Context, d *Persistence, key string) (*T, error) {
	m, err := hgetallFlat(ctx, d, key)
	if err != nil {
		return nil, err
	}
	return decode[T](m)
}

// hgetallFlat is HGETALL as the flat field, value array a script returns.
func hgetallFlat(ctx context.Context, d *Persistence, key string) ([]any, error) {
	m, err := d.c.HGetAll(ctx, key).Result()
	if err != nil {
		return nil, err
	}
	flat := make([]any, 0, 2*len(m))
	for k, v := range m {
		flat = append(flat, k, v)
	}
	return flat, nil
}
