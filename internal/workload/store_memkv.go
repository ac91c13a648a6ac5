package workload

import (
	"context"
	"fmt"

	"github.com/ckptstore/ckptstore/fdbstore"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
)

// openMemkv opens fdbstore on a fresh memkv engine with the configured
// latency model and faults.
func openMemkv(_ context.Context, cfg StoreConfig) (*Opened, error) {
	half := cfg.MemkvUnknownResultRate / 2
	faults := memkv.Faults{
		NotCommittedRate:            cfg.MemkvNotCommittedRate,
		UnknownResultAppliedRate:    half,
		UnknownResultNotAppliedRate: half,
		ReadLatency:                 cfg.MemkvReadLatency,
		CommitLatency:               cfg.MemkvCommitLatency,
	}
	db, err := memkv.NewWithOptions(memkv.Options{Faults: faults})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSpec, err)
	}
	st, err := fdbstore.New(db, fdbstore.Options{Options: cfg.Lease})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSpec, err)
	}
	desc := "memkv (fdbstore on the in-process FoundationDB engine"
	if cfg.MemkvReadLatency > 0 || cfg.MemkvCommitLatency > 0 {
		desc += fmt.Sprintf(", %v per read round, %v per commit", cfg.MemkvReadLatency, cfg.MemkvCommitLatency)
	}
	if cfg.MemkvNotCommittedRate > 0 || cfg.MemkvUnknownResultRate > 0 {
		desc += fmt.Sprintf(", faults: %v not_committed, %v commit_unknown_result", cfg.MemkvNotCommittedRate, cfg.MemkvUnknownResultRate)
	}
	return &Opened{
		Store:      st,
		Kind:       "memkv",
		Desc:       desc + ")",
		Close:      func() error { return nil },
		ReadRounds: func() int64 { return db.Stats().ReadRounds },
		SetLatency: func(on bool) error {
			f := faults
			if !on {
				f.ReadLatency, f.CommitLatency = 0, 0
			}
			return db.SetFaults(f)
		},
	}, nil
}
