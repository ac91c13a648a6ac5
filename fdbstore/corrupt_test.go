package fdbstore

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

// A stored checkpoint that no longer decodes (its data and its copy
// overwritten) fails Get and List with an error that is
// driver.ErrCorrupt, the value every store wraps, and so is the
// exported fdbstore.ErrCorrupt.
func TestCorruptValueIsErrCorrupt(t *testing.T) {
	ctx := context.Background()
	f := checkFixture(t, Options{})
	require.NoError(t, f.db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Set(f.s.k.chunk("t", 1, "b", 0), []byte("junk"))
		tr.Set(f.s.k.copyChunk("b", 0), []byte("junk"))
		return nil
	}))

	_, err := f.s.p().Get(ctx, "b")
	assert.ErrorIs(t, err, driver.ErrCorrupt, "Get")
	assert.ErrorIs(t, err, ErrCorrupt, "Get: fdbstore.ErrCorrupt is the same value")
	_, err = f.s.p().List(ctx, "t")
	assert.ErrorIs(t, err, driver.ErrCorrupt, "List")
	assert.Empty(t, ckptstore.Code(err), "a corrupt value is no contract error")
	problems := mustCheck(t, f.s)
	require.NotEmpty(t, problems)
	for _, p := range problems {
		assert.ErrorIs(t, p, driver.ErrCorrupt, "Check problem %s", p)
	}
}
