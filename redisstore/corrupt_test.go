package redisstore

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// A stored checkpoint that no longer decodes fails Get and List with an
// error that is driver.ErrCorrupt (the value every store wraps), and
// Check's problem for it wraps the same value.
func TestCorruptValueIsErrCorrupt(t *testing.T) {
	ctx := context.Background()
	c := miniClient(t)
	s := newStore(t, c, Options{})
	w := acquire(t, s, "t")
	require.NoError(t, s.p().Append(ctx, testkit.Checkpoint("t", "a", "", 1, 1), "", w))
	require.NoError(t, c.HSet(ctx, string(s.keys.checkpoint("a")), "b", "junk").Err())

	_, err := s.p().Get(ctx, "a")
	assert.ErrorIs(t, err, driver.ErrCorrupt, "Get")
	assert.ErrorIs(t, err, ErrCorrupt, "Get: redisstore.ErrCorrupt is the same value")
	_, err = s.p().List(ctx, "t")
	assert.ErrorIs(t, err, driver.ErrCorrupt, "List")
	assert.Empty(t, ckptstore.Code(err), "a corrupt value is no contract error")

	problems, err := s.Check(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, problems)
	for _, p := range problems {
		assert.ErrorIs(t, p, driver.ErrCorrupt, "Check problem %s", p)
	}
}
