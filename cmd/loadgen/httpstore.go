package main

// loadgen --store http://… drives a ckptserver through the Go client, so a
// run measures the store behind the server plus the HTTP hop, and several
// loadgen processes (or machines) can load one server.

import (
	"context"
	"crypto/x509"

	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/storeurl"
)

// isHTTP reports whether spec names a ckptserver.
func isHTTP(spec string) bool { return httpstore.IsURL(spec) }

// openHTTP returns a client of the ckptserver at url as an Opened store
// (httpstore.OpenURL, which ckptctl uses too). With a token the server's
// lease options apply; without one (a --dev server) the run's own lease
// options are sent, as the store of a local run would take them. ca, when
// not nil, holds the CAs the server's certificate must chain to
// (--ca-file).
func openHTTP(ctx context.Context, url, token, namespace string, ca *x509.CertPool, opts storeurl.Options) (*storeurl.Opened, error) {
	return httpstore.OpenURL(ctx, url, httpstore.URLOptions{Token: token, Namespace: namespace, RootCAs: ca, Lease: opts.Lease})
}
