// Package ckptstore is the contract for storing the checkpoints of AI-agent
// sandboxes: chains of immutable checkpoints per thread, compare-and-swap
// appends, fenced writer leases, blob reference counts, pruning, forking and
// an instance store. It is the Go form of the SandboxCheckpointStore contract
// of @tanstack/ai-sandbox.
//
// This package holds only the contract: the types, their JSON form, the
// validation every store shares, the sentinel errors and their wire codes,
// lease options and the Lease handle. The stores live in memstore (in
// memory), fdbstore (FoundationDB) and redisstore (Redis); package
// conformance proves that a store keeps every rule.
//
// A typical harness run takes the thread's writer lease, reads the head,
// appends a checkpoint that names the head as its parent, and releases the
// lease:
//
//	lease, err := store.AcquireWriter(ctx, threadID)
//	if err != nil { ... }            // ErrWriterConflict: another run holds it
//	defer lease.Release(ctx)
//	head, err := store.Head(ctx, threadID)
//	cp.ParentCheckpointID = head
//	err = store.Append(ctx, cp, head, lease.Writer)
package ckptstore
