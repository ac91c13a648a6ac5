package memstore

import (
	"context"
	"sync"
	"time"

	"github.com/ckptstore/ckptstore"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
	"github.com/ckptstore/ckptstore/persist/memdriver"
	"github.com/ckptstore/ckptstore/storeurl"
)

// init registers the mem scheme with storeurl: "mem" or "mem://" opens a
// memstore in the process, and each namespace is a memstore of its own;
// the persistence state of each key space is a memdriver of its own.
func init() {
	storeurl.Register("mem | mem://", openURL, "mem")
}

// openURL is storeurl's Opener of the mem scheme.
func openURL(_ context.Context, url string, opts storeurl.Options) (*storeurl.Opened, error) {
	if err := storeurl.NoOptions(url, "mem"); err != nil {
		return nil, err
	}
	// The stores are the data, so a name must always get the same ones.
	var mu sync.Mutex
	type namespace struct {
		store     *ckptstore.Store
		instances *ckptstore.InstanceStore
	}
	spaces := map[string]namespace{}
	// The drivers are the data too: one per key space ("" = Store's).
	var persist storeurl.DriverCache
	return &storeurl.Opened{
		Store:     New(opts.Lease),
		Instances: NewInstanceStore(),
		Kind:      "mem",
		Desc:      "mem (memstore, in process)",
		Close:     func() error { return nil },
		OpenPersistence: func(name string, now func() time.Time) (pdriver.Driver, error) {
			return persist.Get(name, func() (pdriver.Driver, error) {
				return memdriver.New(memdriver.Options{Now: now}), nil
			})
		},
		OpenStreams: openStreams(),
		OpenNamespace: func(name string, lease ckptstore.Options) (*ckptstore.Store, *ckptstore.InstanceStore, error) {
			mu.Lock()
			defer mu.Unlock()
			n, ok := spaces[name]
			if !ok {
				n = namespace{store: New(lease), instances: NewInstanceStore()}
				spaces[name] = n
			}
			return n.store, n.instances, nil
		},
	}, nil
}
