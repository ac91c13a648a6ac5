package httpstore_test

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"

	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/persist"
)

// refusedURL is the URL of a port on which nothing listens: a listener is
// opened and closed, so the port is free and connecting to it is refused.
func refusedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// TestClientErrorsKeepTheirCause: an error the client wraps keeps its
// cause, so that errors.Is sees a refused connection through every call,
// and a transport failure is not reported as a malformed reply.
func TestClientErrorsKeepTheirCause(t *testing.T) {
	c, err := httpstore.NewClient(refusedURL(t), httpstore.ClientOptions{Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	calls := map[string]func() error{
		"listBlobReferences": func() error { _, err := c.ListBlobReferences(ctx); return err },
		"threads":            func() error { _, _, err := c.Threads(ctx, "", 10); return err },
		"get":                func() error { _, err := c.Get(ctx, "cp"); return err },
		"loadThread":         func() error { _, err := c.LoadThread(ctx, "t"); return err },
		"instanceGet":        func() error { _, err := c.Instances().Get(ctx, "k"); return err },
		"runs/get":           func() error { _, err := c.Persistence().Runs.Get(ctx, "r"); return err },
		"blobs/get": func() error {
			_, err := c.Persistence().Blobs.Get(ctx, "k", nil)
			return err
		},
		"blobs/list": func() error {
			_, err := c.Persistence().Blobs.List(ctx, persist.BlobListOptions{})
			return err
		},
	}
	for name, call := range calls {
		err := call()
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("%s: %v does not wrap ECONNREFUSED", name, err)
		}
		var ne net.Error
		if !errors.As(err, &ne) {
			t.Errorf("%s: %v does not wrap a net.Error", name, err)
		}
		if errors.Is(err, httpstore.ErrBadReply) {
			t.Errorf("%s: a refused connection is reported as a malformed reply: %v", name, err)
		}
	}
}
