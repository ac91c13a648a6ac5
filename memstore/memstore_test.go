package memstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/conformance"
	"github.com/ckptstore/ckptstore/memstore"
)

func TestConformance(t *testing.T) {
	conformance.RunStore(t, func(t *testing.T, opts ckptstore.Options) ckptstore.Store {
		return memstore.New(opts)
	})
}

func TestInstanceConformance(t *testing.T) {
	conformance.RunInstanceStore(t, func(t *testing.T) ckptstore.InstanceStore {
		return memstore.NewInstanceStore()
	})
}

func TestNewPanicsOnInvalidOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts ckptstore.Options
	}{
		{"negative lease", ckptstore.Options{LeaseDuration: -time.Second}},
		{"negative renew after", ckptstore.Options{RenewAfter: -time.Second}},
		{"renew after equals lease", ckptstore.Options{LeaseDuration: time.Second, RenewAfter: time.Second}},
		{"renew after above lease", ckptstore.Options{LeaseDuration: time.Second, RenewAfter: 2 * time.Second}},
		{"renew after above default lease", ckptstore.Options{RenewAfter: 121 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				err, ok := r.(error)
				if !ok || !errors.Is(err, ckptstore.ErrInvalidOptions) {
					t.Errorf("New(%+v) panicked with %v, want an error wrapping ErrInvalidOptions", tc.opts, r)
				}
			}()
			memstore.New(tc.opts)
		})
	}
}

func TestNewAcceptsValidOptions(t *testing.T) {
	for _, opts := range []ckptstore.Options{
		{},
		{LeaseDuration: time.Millisecond},
		{LeaseDuration: 2 * time.Millisecond, RenewAfter: time.Millisecond},
		{RenewAfter: 119 * time.Second},
	} {
		if memstore.New(opts) == nil {
			t.Errorf("New(%+v) = nil", opts)
		}
	}
}
