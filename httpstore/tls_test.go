package httpstore_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/storeurl"
)

// testCA is a throw-away CA and a server certificate it signed for
// 127.0.0.1.
type testCA struct {
	caPEM          []byte
	server, client tls.Certificate
}

func newTestCA(t *testing.T, name string) testCA {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ = x509.ParseCertificate(caDER)
	issue := func(serial int64, usage x509.ExtKeyUsage) tls.Certificate {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		leaf := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "127.0.0.1"},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
			KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		}
		der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	}
	return testCA{
		caPEM:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		server: issue(2, x509.ExtKeyUsageServerAuth),
		client: issue(3, x509.ExtKeyUsageClientAuth),
	}
}

// TestTLSConfig: a server whose certificate a private CA signed is
// trusted through TLSConfig.RootCAs; without that CA, or with another, the
// call fails at once with the certificate error, after one connection:
// a certificate that failed to verify is never retried.
func TestTLSConfig(t *testing.T) {
	ca := newTestCA(t, "ckptstore test CA")
	other := newTestCA(t, "another CA")
	o, err := storeurl.Open(context.Background(), "mem", storeurl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Close() })
	srv := httptest.NewUnstartedServer(httpstore.NewHandler(o, httpstore.HandlerOptions{Dev: true}))
	var conns atomic.Int64
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the point
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.server}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ctx := context.Background()

	pool, err := httpstore.CertPool(ca.caPEM)
	if err != nil {
		t.Fatal(err)
	}
	c, err := httpstore.NewClient(srv.URL, httpstore.ClientOptions{Namespace: "tls", TLSConfig: &tls.Config{RootCAs: pool}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.AcquireWriter(ctx, "t")
	if err != nil {
		t.Fatalf("with the CA: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}

	otherPool, _ := httpstore.CertPool(other.caPEM)
	for name, opts := range map[string]httpstore.ClientOptions{
		"the system roots": {Namespace: "tls", RetryBackoff: time.Millisecond},
		"another CA":       {Namespace: "tls", RetryBackoff: time.Millisecond, TLSConfig: &tls.Config{RootCAs: otherPool}},
	} {
		c, err := httpstore.NewClient(srv.URL, opts)
		if err != nil {
			t.Fatal(err)
		}
		before := conns.Load()
		_, err = c.GetHead(ctx, "t")
		if _, ok := errors.AsType[*tls.CertificateVerificationError](err); !ok {
			t.Fatalf("%s: GetHead = %v, want a *tls.CertificateVerificationError", name, err)
		}
		if n := conns.Load() - before; n != 1 {
			t.Errorf("%s: %d connections for one call, want 1: a certificate error was retried", name, n)
		}
	}

	if _, err := httpstore.NewClient(srv.URL, httpstore.ClientOptions{TLSConfig: &tls.Config{}, HTTPClient: http.DefaultClient}); !errors.Is(err, driver.ErrInvalidOptions) {
		t.Errorf("TLSConfig with HTTPClient: %v, want ErrInvalidOptions", err)
	}
	if _, err := httpstore.CertPool([]byte("not a certificate")); !errors.Is(err, driver.ErrInvalidOptions) {
		t.Errorf("CertPool of no PEM: %v, want ErrInvalidOptions", err)
	}
}

// TestTLSClientCertificate: a server that requires a client certificate
// takes one from TLSConfig.Certificates, and refuses a client without one
// with an alert that is not retried either.
func TestTLSClientCertificate(t *testing.T) {
	ca := newTestCA(t, "ckptstore test CA")
	o, err := storeurl.Open(context.Background(), "mem", storeurl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Close() })
	pool, err := httpstore.CertPool(ca.caPEM)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(httpstore.NewHandler(o, httpstore.HandlerOptions{Dev: true}))
	var conns atomic.Int64
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.server}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ctx := context.Background()

	c, err := httpstore.NewClient(srv.URL, httpstore.ClientOptions{Namespace: "mtls", TLSConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{ca.client}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetHead(ctx, "t"); err != nil {
		t.Fatalf("with a client certificate: %v", err)
	}

	c, err = httpstore.NewClient(srv.URL, httpstore.ClientOptions{Namespace: "mtls", RetryBackoff: time.Millisecond, TLSConfig: &tls.Config{RootCAs: pool}})
	if err != nil {
		t.Fatal(err)
	}
	before := conns.Load()
	_, err = c.GetHead(ctx, "t")
	if oe, ok := errors.AsType[*net.OpError](err); !ok || oe.Op != "remote error" || !strings.Contains(err.Error(), "certificate required") {
		t.Fatalf("without a client certificate: GetHead = %v, want the server's alert: tls: certificate required", err)
	}
	if n := conns.Load() - before; n != 1 {
		t.Errorf("without a client certificate: %d connections for one call, want 1: the refusal (%v) was retried", n, err)
	}
}
