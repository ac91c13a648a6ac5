package driver_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore/persist/driver"
)

// TestCursor: every position of every kind, its key any bytes (NUL and
// invalid UTF-8 too), reads back from its cursor; the zero position is "";
// a cursor too long, not base64, of another version, without its
// separator or of an unknown kind fails with ErrInvalidEntry.
func TestCursor(t *testing.T) {
	require.Empty(t, driver.DumpPosition{}.Cursor())
	p, err := driver.ParseCursor("")
	require.NoError(t, err)
	require.Equal(t, driver.DumpPosition{}, p)
	for _, k := range driver.Kinds {
		for _, key := range []string{"", "a", "\x00\xff\x00", "é/k", strings.Repeat("x", 3000)} {
			at := driver.DumpPosition{Kind: k, Key: key}
			c := at.Cursor()
			require.NotContains(t, c, "=", "a cursor has no padding")
			got, err := driver.ParseCursor(c)
			require.NoError(t, err)
			require.Equal(t, at, got)
			kinds, err := got.KindsAfter()
			require.NoError(t, err)
			require.Equal(t, k, kinds[0].Kind)
			require.Equal(t, key, kinds[0].Key)
			for _, later := range kinds[1:] {
				require.Empty(t, later.Key, "a later kind is read whole")
			}
		}
	}
	for _, bad := range []string{
		strings.Repeat("A", driver.MaxCursorBytes+1), "!!", "eHJ1bgBr", // "xrun\x00k": another version
		"cHJ1bg", // "prun": no separator
		driver.DumpPosition{Kind: "lock", Key: "k"}.Cursor(),
	} {
		_, err := driver.ParseCursor(bad)
		require.ErrorIs(t, err, driver.ErrInvalidEntry, "cursor %.40q", bad)
	}
	_, err = driver.DumpPosition{Key: "k"}.KindsAfter()
	require.ErrorIs(t, err, driver.ErrInvalidEntry, "a key without a kind")
}
