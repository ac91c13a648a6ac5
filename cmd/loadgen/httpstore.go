package main

// loadgen --store http://… drives a ckptserver through the Go client, so a
// run measures the store behind the server plus the HTTP hop, and several
// loadgen processes (or machines) can load one server.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"strings"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/storeurl"
)

// isHTTP reports whether spec names a ckptserver.
func isHTTP(spec string) bool {
	return strings.HasPrefix(spec, "http://") || strings.HasPrefix(spec, "https://")
}

// openHTTP returns a client of the ckptserver at url as an Opened store.
// With a token the server's lease options apply (a server outside --dev
// refuses a client's); without one (a --dev server) the run's own lease
// options are sent, as the store of a local run would take them. The
// server is asked for a head, so an unreachable or refusing one fails
// here rather than in every worker. ca, when not nil, holds the CAs the
// server's certificate must chain to (--ca-file).
func openHTTP(ctx context.Context, url, token, namespace string, ca *x509.CertPool, opts storeurl.Options) (*storeurl.Opened, error) {
	co := httpstore.ClientOptions{Token: token, Namespace: namespace}
	if token == "" {
		co.Lease = ckptstore.Options{LeaseDuration: opts.Lease.LeaseDuration, RenewAfter: opts.Lease.RenewAfter}
	}
	tr := httpstore.NewTransport()
	if ca != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: ca}
	}
	co.HTTPClient = &http.Client{Transport: tr}
	c, err := httpstore.NewClient(url, co)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", storeurl.ErrBadURL, err)
	}
	if _, err := c.GetHead(ctx, "loadgen-ping"); err != nil {
		return nil, fmt.Errorf("ckptserver %s: %w", url, err)
	}
	ns := namespace
	if ns == "" {
		ns = "the token's"
		if token == "" {
			ns = httpstore.DefaultNamespace
		}
	}
	return &storeurl.Opened{
		Store:     c.Store,
		Instances: c.Instances(),
		Kind:      "http",
		Desc:      fmt.Sprintf("http %s (ckptserver, namespace %s)", url, ns),
		Close:     func() error { tr.CloseIdleConnections(); return nil },
	}, nil
}
