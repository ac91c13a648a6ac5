package memstore

import (
	"context"
	"sync"
	"time"

	"github.com/ckptstore/ckptstore"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
	"github.com/ckptstore/ckptstore/storeurl"
)

// init registers the mem scheme with storeurl: "mem" or "mem://" opens a
// memstore in the process. Each key space (the Store's own, and each
// namespace) is one Driver and its Persistence: one lock, one clock and
// one op-token table for the checkpoints and the persistence state.
func init() {
	storeurl.Register("mem | mem://", openURL, "mem")
}

// openURL is storeurl's Opener of the mem scheme.
func openURL(_ context.Context, url string, opts storeurl.Options) (*storeurl.Opened, error) {
	if err := storeurl.NoOptions(url, "mem"); err != nil {
		return nil, err
	}
	root := NewDriver(opts.Lease)
	// The key spaces are the data, so a name must always get the same one.
	type namespace struct {
		d         *Driver
		store     *ckptstore.Store
		instances *ckptstore.InstanceStore
	}
	var mu sync.Mutex
	spaces := map[string]namespace{}
	// space returns the key space of name, made with lease (its lease
	// timing and its one clock) by the first call for name.
	space := func(name string, lease ckptstore.Options) namespace {
		mu.Lock()
		defer mu.Unlock()
		n, ok := spaces[name]
		if !ok {
			d := NewDriver(lease)
			n = namespace{d: d, store: ckptstore.New(d), instances: NewInstanceStore()}
			spaces[name] = n
		}
		return n
	}
	return &storeurl.Opened{
		Store:     ckptstore.New(root),
		Instances: NewInstanceStore(),
		Kind:      "mem",
		Desc:      "mem (memstore, in process)",
		Close:     func() error { return nil },
		// A key space's persistence shares its Driver's clock: for the
		// Store's own, opts.Lease's; for a namespace, that of the first
		// call that made it (Namespace's lease clock, or now here).
		OpenPersistence: func(name string, now func() time.Time) (pdriver.Driver, error) {
			if name == "" {
				return root.Persistence(), nil
			}
			return space(name, ckptstore.Options{Now: now}).d.Persistence(), nil
		},
		OpenStreams: openStreams(),
		OpenNamespace: func(name string, lease ckptstore.Options) (*ckptstore.Store, *ckptstore.InstanceStore, error) {
			n := space(name, lease)
			return n.store, n.instances, nil
		},
	}, nil
}
