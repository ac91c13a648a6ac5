package storeurl

import (
	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/memstore"
)

// openMem opens a memstore; each namespace is a memstore of its own.
func openMem(opts Options) *Opened {
	ns := &memNamespaces{m: map[string]memNamespace{}}
	return &Opened{
		Store:     memstore.New(opts.Lease),
		Instances: memstore.NewInstanceStore(),
		Kind:      "mem",
		Desc:      "mem (memstore, in process)",
		Close:     func() error { return nil },
		namespace: func(name string, lease ckptstore.Options) (ckptstore.Store, *ckptstore.PortableInstances, error) {
			ns.mu.Lock()
			defer ns.mu.Unlock()
			n, ok := ns.m[name]
			if !ok {
				n = memNamespace{store: memstore.New(lease), instances: memstore.NewInstanceStore()}
				ns.m[name] = n
			}
			return n.store, n.instances, nil
		},
	}
}
