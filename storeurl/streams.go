package storeurl

import (
	"errors"
	"fmt"

	"github.com/ckptstore/ckptstore/streams"
)

// ErrNoStreams is Streams's error for a backend that keeps no Durable
// Streams (its Opener left OpenStreams nil). It wraps
// errors.ErrUnsupported.
var ErrNoStreams = fmt.Errorf("storeurl: this store keeps no streams: %w", errors.ErrUnsupported)

// Streams returns the Durable Streams driver of the tenant name. The
// name rules are Namespace's. It implements httpstore.StreamsBackend's
// Streams.
func (o *Opened) Streams(name string) (streams.Driver, error) {
	if err := checkNamespace(name); err != nil {
		return nil, err
	}
	if o.OpenStreams == nil {
		return nil, ErrNoStreams
	}
	return o.OpenStreams(name)
}
