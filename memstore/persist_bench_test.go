package memstore_test

import (
	"testing"

	"github.com/ckptstore/ckptstore/memstore"
	"github.com/ckptstore/ckptstore/persist/persisttest"
)

// BenchmarkDump is persisttest.BenchDump on 100,000 runs: whole (pages
// of 256, each one pass over the runs map under the lock), and in pieces
// resumed at the last record's position.
func BenchmarkDump(b *testing.B) {
	persisttest.BenchDump(b, memstore.NewPersistence(memstore.PersistenceOptions{}), 100_000)
}
