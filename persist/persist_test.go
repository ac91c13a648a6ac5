package persist_test

import (
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/blobs"
	ckptdriver "github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/memstore"
	"github.com/ckptstore/ckptstore/persist"
	"github.com/stretchr/testify/require"
)

func TestNewRejectsOptions(t *testing.T) {
	d, b := memstore.NewPersistence(memstore.PersistenceOptions{}), blobs.NewMem(blobs.MemOptions{})
	for name, o := range map[string]persist.Options{
		"NoBucket":          {},
		"RenewAfterTooLong": {Bucket: b, LeaseDuration: time.Second, RenewAfter: time.Second},
		"NegativeLease":     {Bucket: b, LeaseDuration: -1},
		"NoSlash":           {Bucket: b, BlobPrefix: "blobs"},
		"BadKey":            {Bucket: b, BlobPrefix: "../x/"},
		"FilesPrefix":       {Bucket: b, BlobPrefix: blobs.FilesPrefix},
		"InsideArtifacts":   {Bucket: b, BlobPrefix: blobs.ArtifactsPrefix + "mine/"},
	} {
		_, err := persist.New(d, o)
		require.ErrorIs(t, err, ckptdriver.ErrInvalidOptions, name)
	}
	_, err := persist.New(nil, persist.Options{Bucket: b})
	require.ErrorIs(t, err, ckptdriver.ErrInvalidOptions)
	s, err := persist.New(d, persist.Options{Bucket: b, BlobPrefix: "tenant-a/blobs/"})
	require.NoError(t, err)
	require.NotNil(t, s.Locks)
}
