package memstore

import (
	"context"
	"sync"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/storeurl"
)

// init registers the mem scheme with storeurl: "mem" or "mem://" opens a
// memstore in the process. Each key space (the Store's own, and each
// namespace) is one Driver and its Persistence: one lock, one clock and
// one op-token table for the checkpoints and the persistence state.
func init() {
	storeurl.Register("mem | mem://", openURL, "mem")
}

// tenantOf is every contract's store of the key space of d, with the
// stream driver s (nil: none).
func tenantOf(d *Driver, s *Streams) storeurl.Tenant {
	t := storeurl.Tenant{Store: ckptstore.New(d), Instances: NewInstanceStore(), Persistence: d.Persistence()}
	if s != nil {
		t.Streams = s
	}
	return t
}

// openURL is storeurl's Opener of the mem scheme.
func openURL(_ context.Context, url string, opts storeurl.Options) (*storeurl.Opened, error) {
	if err := storeurl.NoOptions(url, "mem"); err != nil {
		return nil, err
	}
	// The key spaces are the data, so a name always gets the same one:
	// made, with the lease options (and so the one clock) of the first
	// call for the name, and returned to every later call, its streams
	// included.
	var mu sync.Mutex
	spaces := map[string]storeurl.Tenant{}
	return &storeurl.Opened{
		Tenant: tenantOf(NewDriver(opts.Lease), nil), // streams live in namespaces
		Kind:   "mem",
		Desc:   "mem (memstore, in process)",
		Close:  func() error { return nil },
		OpenTenant: func(name string, lease ckptstore.Options) (*storeurl.Tenant, error) {
			mu.Lock()
			defer mu.Unlock()
			t, ok := spaces[name]
			if !ok {
				t = tenantOf(NewDriver(lease), NewStreams())
				spaces[name] = t
			}
			return &t, nil // a copy: a caller's edits reach no other's
		},
	}, nil
}
