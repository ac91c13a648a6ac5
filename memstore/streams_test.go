package memstore_test

import (
	"testing"

	"github.com/ckptstore/ckptstore/memstore"
	"github.com/ckptstore/ckptstore/streams"
	"github.com/ckptstore/ckptstore/streams/streamstest"
)

func TestStreamsDriver(t *testing.T) {
	streamstest.Run(t, func(*testing.T) streams.Driver { return memstore.NewStreams() })
}

func TestStreamsPort(t *testing.T) {
	open := func(*testing.T) streams.Driver { return memstore.NewStreams() }
	streamstest.RunPort(t, open, open)
}
