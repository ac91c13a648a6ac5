package memstore

import (
	"context"
	"sync"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/storeurl"
)

// init registers the mem scheme with storeurl: "mem" or "mem://" opens a
// memstore in the process, and each namespace is a memstore of its own.
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
		store     ckptstore.Store
		instances *ckptstore.PortableInstances
	}
	spaces := map[string]namespace{}
	return &storeurl.Opened{
		Store:     New(opts.Lease),
		Instances: NewInstanceStore(),
		Kind:      "mem",
		Desc:      "mem (memstore, in process)",
		Close:     func() error { return nil },
		OpenNamespace: func(name string, lease ckptstore.Options) (ckptstore.Store, *ckptstore.PortableInstances, error) {
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
