package memkv

// Interleavings: running another operation between a transaction's reads
// and its commit, as a concurrent client on a cluster can at any moment.
//
// On FoundationDB a transaction reads at its read version and commits
// later; any other client's commit can land in between. Tests that run one
// goroutine at a time never see that window, so a transaction that forgot
// a read conflict (a snapshot read where a serializable one was needed)
// passes them. BeforeCommit opens the window on purpose: the hook runs
// when the transaction asks to commit, after every read and write it
// made, and whatever the hook commits gets a version above the hooked
// transaction's read version. The hooked commit then goes through the
// ordinary resolver: it fails with not_committed (1020) when one of its
// read-conflict ranges meets a write of the hook's commits, and Transact
// runs it again at a newer read version, exactly as on a cluster. Nothing
// about conflict detection changes: the hook only decides when other
// commits happen.

import "sync/atomic"

// beforeCommit is the installed hook and whether a call of it is running.
type beforeCommit struct {
	fn      func(tr *Tx)
	running atomic.Bool
}

// BeforeCommit installs hook, replacing any other, and returns a func that
// removes it. Every Commit of a transaction that carries writes calls the
// hook first, after the transaction's reads and writes and before the
// commit reaches the resolver; the hook may run and commit other
// transactions on db (in its own goroutine), which then commit first. The
// hook is not re-entrant: commits made while it runs, by the hook itself
// or by other goroutines, do not call it, so a hook that runs a store
// operation does not recurse into itself. Read-only commits and
// transactions that end without Commit never call it (they cannot
// conflict). A hook that should act once must say so itself (for example,
// by removing itself).
func (db *DB) BeforeCommit(hook func(tr *Tx)) (remove func()) {
	h := &beforeCommit{fn: hook}
	db.hook.Store(h)
	return func() { db.hook.CompareAndSwap(h, nil) }
}

// runHook calls the installed hook for tr when tr is about to commit
// writes and no call of the hook is running.
func (tr *Tx) runHook() {
	h := tr.db.hook.Load()
	if h == nil {
		return
	}
	tr.mu.Lock()
	writes := tr.state == txOpen && tr.err == nil &&
		((tr.writes != nil && tr.writes.Len() > 0) || len(tr.clears) > 0)
	tr.mu.Unlock()
	if !writes || !h.running.CompareAndSwap(false, true) {
		return
	}
	defer h.running.Store(false)
	h.fn(tr)
}
