package redisstore_test

import (
	"testing"

	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/redisstore"
	"github.com/ckptstore/ckptstore/streams"
	"github.com/ckptstore/ckptstore/streams/streamstest"
)

// TestStreamsDriver runs the stream driver suite on a real redis-server,
// each case in a namespace (prefix) of its own.
func TestStreamsDriver(t *testing.T) {
	c := redistest.Start(t).Client(t, nil)
	streamstest.Run(t, func(t *testing.T) streams.Driver {
		d := redisstore.NewStreams(c, "streams-suite-"+t.Name())
		t.Cleanup(func() { _ = d.Close() })
		return d
	})
}
