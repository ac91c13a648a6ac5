package storeurl

import (
	"errors"
	"fmt"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/streams"
)

// ErrNoStreams is the error of a caller that needs a tenant's Durable
// Streams from a backend that keeps none (Tenant.Streams is nil). It
// wraps errors.ErrUnsupported.
var ErrNoStreams = fmt.Errorf("storeurl: this store keeps no streams: %w", errors.ErrUnsupported)

// Streams returns the Durable Streams driver of the tenant name: the
// Streams of Namespace(name, the default lease options), or ErrNoStreams.
// It is a shorthand for a caller that needs only the streams (a tool
// that copies them); one that also uses the tenant's other stores takes
// Tenant.Streams from its own Namespace call, because a memstore tenant
// is made by the first call for its name, with that call's lease options.
// The name rules are Namespace's.
func (o *Opened) Streams(name string) (streams.Driver, error) {
	if err := checkNamespace(name); err != nil {
		return nil, err
	}
	if o.OpenTenant == nil { // no namespaces (an http: handle), so no streams
		return nil, ErrNoStreams
	}
	t, err := o.Namespace(name, ckptstore.Options{})
	if err != nil {
		return nil, err
	}
	if t.Streams == nil {
		return nil, ErrNoStreams
	}
	return t.Streams, nil
}
