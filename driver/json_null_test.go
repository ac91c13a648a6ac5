package driver_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore/driver"
)

// TestJSONReaderNull: Null reads a null and reports it; any other value is
// left for the next read; a malformed null ends the reading.
func TestJSONReaderNull(t *testing.T) {
	r := driver.NewJSONReader([]byte(`[null, {"a":1}, nul]`))
	defer r.Close()
	var nulls []bool
	_, err := r.Array("", func(i int) error {
		isNull := r.Null()
		nulls = append(nulls, isNull)
		if !isNull {
			return r.Skip()
		}
		return nil
	})
	require.Equal(t, []bool{true, false, true}, nulls)
	require.ErrorIs(t, err, driver.ErrInvalidEntry, "the malformed null is a syntax error")
	require.Error(t, r.Err())
}
