package redisstore

// The persistence record encoding, as the driver stores records: the
// section of the former persistence driver's driver.go, kept as it was so
// that a change of that section (the codec's) applies here unchanged.

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/ckptstore/ckptstore/persist/driver"
)

// Record encoding: one hash field per JSON member. Raw JSON members
// (usage, payload, response, …) are stored and returned byte for byte, as
// the contract asks, so they never pass through a JSON decoder.

var rawType = reflect.TypeFor[json.RawMessage]()

// fields returns the JSON members of the struct *v that are present, as
// (name, raw JSON) pairs in field order.
func fields(v any) ([]any, error) {
	var out []any
	err := walk(reflect.ValueOf(v).Elem(), func(name string, f reflect.Value) error {
		if f.Type() == rawType {
			if f.Len() > 0 {
				out = append(out, name, string(f.Bytes()))
			}
			return nil
		}
		if (f.Kind() == reflect.Pointer || f.Kind() == reflect.Map) && f.IsNil() {
			return nil
		}
		b, err := json.Marshal(f.Interface())
		if err != nil {
			return err
		}
		out = append(out, name, string(b))
		return nil
	})
	return out, err
}

// walk calls fn with each JSON-named field of the struct value v, the
// fields of embedded structs included.
func walk(v reflect.Value, fn func(name string, f reflect.Value) error) error {
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous && sf.Type.Kind() == reflect.Struct {
			if err := walk(v.Field(i), fn); err != nil {
				return err
			}
			continue
		}
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		if err := fn(name, v.Field(i)); err != nil {
			return err
		}
	}
	return nil
}

// patchPairs returns the fields a patch (a struct of driver.Field values)
// names: a set one as (name, raw JSON), a cleared one as (name, ""), which
// the scripts read as "delete the field".
func patchPairs(patch any) ([]any, error) {
	v := reflect.ValueOf(patch)
	var out []any
	for i := range v.NumField() {
		f := v.Field(i)
		if !f.MethodByName("Named").Call(nil)[0].Bool() {
			continue
		}
		name := strings.ToLower(v.Type().Field(i).Name[:1]) + v.Type().Field(i).Name[1:]
		if f.MethodByName("IsClear").Call(nil)[0].Bool() {
			out = append(out, name, "")
			continue
		}
		val := f.MethodByName("Value").Call(nil)[0]
		if val.Type() == rawType {
			out = append(out, name, string(val.Bytes()))
			continue
		}
		b, err := json.Marshal(val.Interface())
		if err != nil {
			return nil, err
		}
		out = append(out, name, string(b))
	}
	return out, nil
}

// decode reads a HGETALL reply into a record, or nil when it is empty.
func decode[T any](r any) (*T, error) {
	flat, ok := r.([]any)
	if !ok || len(flat)%2 != 0 {
		return nil, fmt.Errorf("%w: record reply %T", driver.ErrCorrupt, r)
	}
	if len(flat) == 0 {
		return nil, nil
	}
	vals := make(map[string]string, len(flat)/2)
	for i := 0; i < len(flat); i += 2 {
		name, _ := flat[i].(string)
		val, _ := flat[i+1].(string)
		vals[name] = val
	}
	rec := new(T)
	err := walk(reflect.ValueOf(rec).Elem(), func(name string, f reflect.Value) error {
		val, ok := vals[name]
		if !ok {
			return nil
		}
		if f.Type() == rawType {
			f.SetBytes([]byte(val))
			return nil
		}
		if err := json.Unmarshal([]byte(val), f.Addr().Interface()); err != nil {
			return fmt.Errorf("%w: field %q: %v", driver.ErrCorrupt, name, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rec, nil
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
