package memkv

import (
	"context"
	"testing"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

// once installs a hook on db that runs op before the first commit with
// writes, then removes itself. It returns how many times op ran.
func once(db *DB, op func()) *int {
	n := new(int)
	var remove func()
	remove = db.BeforeCommit(func(*Tx) {
		remove()
		*n++
		op()
	})
	return n
}

// TestBeforeCommitMakesTheHookedCommitConflict: a read-modify-write whose
// key the hook changes must fail with not_committed, and Transact's retry
// must see the hook's value, as FoundationDB would order them.
func TestBeforeCommitMakesTheHookedCommitConflict(t *testing.T) {
	db := New()
	put(t, db, "n", "1")
	ran := once(db, func() { put(t, db, "n", "10") })
	attempts := 0
	err := db.Transact(context.Background(), func(tr kv.Transaction) error {
		attempts++
		v, err := tr.Get(b("n")).Get()
		if err != nil {
			return err
		}
		tr.Set(b("n"), append(v, '+'))
		return nil
	})
	must(t, err)
	if got := read(t, db, "n"); got != "10+" || attempts != 2 || *ran != 1 {
		t.Fatalf("n = %q after %d attempts, hook ran %d times; want \"10+\", 2, 1", got, attempts, *ran)
	}
	if st := db.Stats(); st.Conflicts != 1 || st.Retries != 1 {
		t.Fatalf("%d conflicts, %d retries; want 1, 1", st.Conflicts, st.Retries)
	}
}

// TestBeforeCommitSnapshotReadsDoNotConflict: the hook changes nothing
// about conflict detection. A snapshot read takes no conflict, so the
// hooked commit succeeds over the hook's write (a lost update), as on a
// cluster; that is what lets the hook catch a missing read conflict.
func TestBeforeCommitSnapshotReadsDoNotConflict(t *testing.T) {
	db := New()
	put(t, db, "n", "1")
	once(db, func() { put(t, db, "n", "10") })
	attempts := 0
	must(t, db.Transact(context.Background(), func(tr kv.Transaction) error {
		attempts++
		v, err := tr.Snapshot().Get(b("n")).Get()
		if err != nil {
			return err
		}
		tr.Set(b("n"), append(v, '+'))
		return nil
	}))
	if got := read(t, db, "n"); got != "1+" || attempts != 1 {
		t.Fatalf("n = %q after %d attempts; want the lost update \"1+\" after 1", got, attempts)
	}
}

// TestBeforeCommitScope: read-only commits and transactions that end
// without a commit never call the hook; commits made inside it do not
// recurse; a removed hook is never called.
func TestBeforeCommitScope(t *testing.T) {
	db := New()
	ctx := context.Background()
	calls := 0
	remove := db.BeforeCommit(func(*Tx) {
		calls++
		put(t, db, "inner", "x") // a commit with writes, inside the hook
	})
	must(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		_, err := tr.Get(b("k")).Get()
		return err
	}))
	must(t, db.Transact(ctx, func(tr kv.Transaction) error {
		_, err := tr.Get(b("k")).Get()
		return err // no writes
	}))
	tr := db.Begin(ctx)
	tr.Set(b("k"), b("v"))
	tr.Cancel()
	if calls != 0 {
		t.Fatalf("hook ran %d times for transactions that commit no writes", calls)
	}
	put(t, db, "k", "v")
	if calls != 1 || read(t, db, "inner") != "x" || read(t, db, "k") != "v" {
		t.Fatalf("hook ran %d times, want 1 (not again for its own commit)", calls)
	}
	remove()
	put(t, db, "k", "w")
	if calls != 1 {
		t.Fatalf("removed hook ran: %d calls", calls)
	}
}
