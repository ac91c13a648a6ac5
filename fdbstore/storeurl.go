package fdbstore

import (
	"context"
	"fmt"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
	"github.com/ckptstore/ckptstore/storeurl"
)

// init registers fdbstore's schemes with storeurl: memkv (the in-process
// engine) always, and fdb:<cluster file>, which opens only in a build with
// -tags fdb (HasClient); without it, fdb: URLs fail with the reason.
func init() {
	storeurl.Register("memkv | memkv://", openMemkvURL, "memkv")
	storeurl.Register("fdb:<cluster file> (a build with -tags fdb)", openFDBURL, "fdb")
}

// openMemkvURL opens fdbstore on a fresh memkv engine with the configured
// latency model and faults.
func openMemkvURL(_ context.Context, url string, opts storeurl.Options) (*storeurl.Opened, error) {
	if err := storeurl.NoOptions(url, "memkv"); err != nil {
		return nil, err
	}
	half := opts.MemkvUnknownResultRate / 2
	faults := memkv.Faults{
		NotCommittedRate:            opts.MemkvNotCommittedRate,
		UnknownResultAppliedRate:    half,
		UnknownResultNotAppliedRate: half,
		ReadLatency:                 opts.MemkvReadLatency,
		CommitLatency:               opts.MemkvCommitLatency,
	}
	db, err := memkv.NewWithOptions(memkv.Options{Faults: faults})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", storeurl.ErrBadURL, err)
	}
	o, err := openedOn(db, opts)
	if err != nil {
		return nil, err
	}
	desc := "memkv (fdbstore on the in-process FoundationDB engine"
	if opts.MemkvReadLatency > 0 || opts.MemkvCommitLatency > 0 {
		desc += fmt.Sprintf(", %v per read round, %v per commit", opts.MemkvReadLatency, opts.MemkvCommitLatency)
	}
	if opts.MemkvNotCommittedRate > 0 || opts.MemkvUnknownResultRate > 0 {
		desc += fmt.Sprintf(", faults: %v not_committed, %v commit_unknown_result", opts.MemkvNotCommittedRate, opts.MemkvUnknownResultRate)
	}
	o.Kind, o.Desc = "memkv", desc+")"
	o.ReadRounds = func() int64 { return db.Stats().ReadRounds }
	o.SetLatency = func(on bool) error {
		f := faults
		if !on {
			f.ReadLatency, f.CommitLatency = 0, 0
		}
		return db.SetFaults(f)
	}
	return o, nil
}

// openedOn opens fdbstore on db, at the default prefixes, with each
// namespace in its own subspace (keys.go): its checkpoints at
// NamespacePrefix(name) and its persistence beside them at
// PersistNamespacePrefix(name), so a tenant's whole state is one range and
// the store of each key space checks its persistence too; its streams at
// StreamsNamespacePrefix(name), one driver per name. Every store of a
// tenant judges its leases by the tenant's lease clock (its lease
// options' Now). Kind and Desc are the caller's.
func openedOn(raw kv.DB, opts storeurl.Options) (*storeurl.Opened, error) {
	db := TraceDB(raw, opts.TracerProvider)
	// One persistence driver per key space, made by the first call for
	// it: its lock waiters are woken through the driver value.
	var persist storeurl.DriverCache
	sdrivers := newStreamsCache(db)
	tenant := func(name string, lease ckptstore.Options) (*storeurl.Tenant, error) {
		st, in, err := openPrefix(db, lease, name)
		if err != nil {
			return nil, err
		}
		p, err := persist.Get(name, func() (pdriver.Driver, error) {
			_, prefix := prefixesOf(name)
			return NewPersistence(db, PersistenceOptions{Prefix: prefix, Now: lease.Now})
		})
		if err != nil {
			return nil, err
		}
		t := &storeurl.Tenant{Store: st, Instances: in, Persistence: p}
		if name != "" { // streams live in namespaces
			t.Streams = sdrivers.get(name)
		}
		return t, nil
	}
	own, err := tenant("", opts.Lease)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", storeurl.ErrBadURL, err)
	}
	return &storeurl.Opened{
		Tenant:     *own,
		Close:      func() error { return nil },
		Handle:     raw,
		OpenTenant: tenant,
	}, nil
}

// openPrefix opens the store and the instance store of namespace name
// ("" = the default key space) of db, with one Options value for both.
func openPrefix(db kv.DB, lease ckptstore.Options, name string) (*ckptstore.Store, *ckptstore.InstanceStore, error) {
	prefix, persist := prefixesOf(name)
	o := Options{Options: lease, Prefix: prefix, PersistPrefix: persist}
	st, err := New(db, o)
	if err != nil {
		return nil, nil, err
	}
	in, err := NewInstances(db, o)
	if err != nil {
		return nil, nil, err
	}
	return st, in, nil
}
