package storeurl

import (
	"fmt"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/fdbstore"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
)

// openMemkv opens fdbstore on a fresh memkv engine with the configured
// latency model and faults.
func openMemkv(opts Options) (*Opened, error) {
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
		return nil, fmt.Errorf("%w: %v", ErrBadURL, err)
	}
	o, err := openFDBStore(db, opts)
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

// openFDBStore opens fdbstore on db, at the default prefix, with namespaces
// at FDBNamespacePrefix. Kind and Desc are the caller's.
func openFDBStore(db kv.DB, opts Options) (*Opened, error) {
	st, in, err := openFDBPrefix(db, opts.Lease, "")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadURL, err)
	}
	return &Opened{
		Store:     st,
		Instances: in,
		Close:     func() error { return nil },
		KV:        db,
		namespace: func(name string, lease ckptstore.Options) (ckptstore.Store, *ckptstore.PortableInstances, error) {
			return openFDBPrefix(db, lease, FDBNamespacePrefix(name))
		},
	}, nil
}

// openFDBPrefix opens the store and the instance store of one prefix of
// db, with one Options value for both.
func openFDBPrefix(db kv.DB, lease ckptstore.Options, prefix string) (*ckptstore.Portable, *ckptstore.PortableInstances, error) {
	o := fdbstore.Options{Options: lease, Prefix: prefix}
	st, err := fdbstore.New(db, o)
	if err != nil {
		return nil, nil, err
	}
	in, err := fdbstore.NewInstances(db, o)
	if err != nil {
		return nil, nil, err
	}
	return st, in, nil
}
