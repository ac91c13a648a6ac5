// Package ckptstore is the contract for storing the checkpoints of AI-agent
// sandboxes: chains of immutable checkpoints per thread, compare-and-swap
// appends, fenced writer leases, blob reference counts, pruning, forking and
// an instance store. It is the Go form of the SandboxCheckpointStore contract
// of @tanstack/ai-sandbox.
//
// This package is what a harness uses: the types (declared in package
// driver and aliased here, the Lease handle among them), the sentinel
// errors, lease options, op tokens, KeepNewest, and Store, the portable
// store every backend's constructor returns. Store runs every check that
// needs no state once, in the contract's order, and then calls its driver
// (package driver), which runs only the state checks, inside its atomic
// step. Package driver also holds what only implementers need, such as
// driver.NewLease. The
// drivers are memstore (in memory), fdbstore (FoundationDB), redisstore
// (Redis) and httpstore's client; package conformance proves that a store
// keeps every rule.
//
// A typical harness run takes the thread's writer lease, reads the head,
// appends a checkpoint that names the head as its parent, and releases the
// lease:
//
//	lease, err := store.AcquireWriter(ctx, threadID)
//	if err != nil { ... }            // ErrWriterConflict: another run holds it
//	defer lease.Release(ctx)
//	head, err := store.GetHead(ctx, threadID)
//	cp.ParentCheckpointID = head
//	err = store.Append(ctx, cp, head, lease.Writer)
package ckptstore
