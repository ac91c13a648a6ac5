package httpstore

// OpenURL is the one way the command-line tools (loadgen, ckptctl) reach
// a ckptserver given as a store URL, so that both send the same options
// and describe the target the same way.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"strings"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/storeurl"
)

// IsURL reports whether url names a ckptserver (http:// or https://)
// rather than a store storeurl opens.
func IsURL(url string) bool {
	return strings.HasPrefix(url, "http://") || strings.HasPrefix(url, "https://")
}

// URLOptions are what OpenURL needs beside the URL.
type URLOptions struct {
	// Token is the bearer token; "" for a --dev server.
	Token string
	// Namespace is the namespace on a --dev server ("" = its default);
	// with a token the token names the tenant.
	Namespace string
	// RootCAs, when not nil, are the CAs an https:// server's certificate
	// must chain to, instead of the system's.
	RootCAs *x509.CertPool
	// Lease is sent only without a token (a --dev server): a server with
	// tokens applies its own lease options and refuses a client's.
	Lease ckptstore.Options
}

// OpenURL returns a Client of the ckptserver at url as a storeurl.Opened
// (Kind "http"), its Handle the *Client. The server is asked for one head,
// so that an unreachable or refusing server fails here rather than at the
// first call. A URL or option it cannot accept fails with an error
// wrapping storeurl.ErrBadURL. The Opened opens no namespace and no
// persistence driver: the token, or Namespace, fixes the tenant, and the
// client's persistence is Client.Persistence, not a driver.
func OpenURL(ctx context.Context, url string, o URLOptions) (*storeurl.Opened, error) {
	co := ClientOptions{Token: o.Token, Namespace: o.Namespace}
	if o.Token == "" {
		co.Lease = ckptstore.Options{LeaseDuration: o.Lease.LeaseDuration, RenewAfter: o.Lease.RenewAfter}
	}
	if o.RootCAs != nil {
		co.TLSConfig = &tls.Config{RootCAs: o.RootCAs}
	}
	c, err := NewClient(url, co)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", storeurl.ErrBadURL, err)
	}
	if _, err := c.GetHead(ctx, "ckptstore-ping"); err != nil {
		c.c.hc.CloseIdleConnections()
		return nil, fmt.Errorf("ckptserver %s: %w", url, err)
	}
	ns := o.Namespace
	if ns == "" {
		ns = "the token's"
		if o.Token == "" {
			ns = DefaultNamespace
		}
	}
	return &storeurl.Opened{
		// The client's persistence is a *persist.Store (Handle's
		// Persistence), not a driver: the Tenant has none.
		Tenant: storeurl.Tenant{Store: c.Store, Instances: c.Instances()},
		Kind:   "http",
		Desc:   fmt.Sprintf("http %s (ckptserver, namespace %s)", url, ns),
		Handle: c,
		Close:  func() error { c.c.hc.CloseIdleConnections(); return nil },
	}, nil
}
