package storeurl_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/contract"
	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/storeurl"
	"github.com/ckptstore/ckptstore/streams"
)

var registerNoStreams sync.Once

// TestTenantStreams: every engine's namespace tenant carries its stream
// driver, the same one for every tenant of a name (it wakes the
// process's live readers) and a separate one per name; the URL's own
// tenant has none; Opened.Streams is the same driver, with Namespace's
// name rules.
func TestTenantStreams(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	for _, url := range []string{"mem", "memkv", "redis://" + srv.Addr + "/0?prefix=tenantstreams"} {
		o, err := storeurl.Open(ctx, url, storeurl.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		if o.Tenant.Streams != nil {
			t.Errorf("%s: the own tenant has a stream driver", url)
		}
		a, err := o.Namespace("a", ckptstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if a.Streams == nil {
			t.Fatalf("%s: namespace a has no stream driver", url)
		}
		again, err := o.Namespace("a", ckptstore.Options{LeaseDuration: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		short, err := o.Streams("a")
		if err != nil {
			t.Fatal(err)
		}
		if again.Streams != a.Streams || short != a.Streams {
			t.Errorf("%s: namespace a has more than one stream driver", url)
		}
		b, err := o.Namespace("b", ckptstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if b.Streams == a.Streams {
			t.Errorf("%s: namespaces a and b share a stream driver", url)
		}
		now := time.Now()
		if _, _, err := a.Streams.Create(ctx, "s", &streams.CreateRequest{Config: streams.Config{ContentType: "text/plain"}}, now); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Streams.Head(ctx, "s", false, now); !errors.Is(err, streams.ErrNotFound) {
			t.Errorf("%s: namespace b sees a's stream: %v", url, err)
		}
		if err := a.Streams.Delete(ctx, "s", now); err != nil {
			t.Fatal(err)
		}
		if _, err := o.Streams(""); !errors.Is(err, storeurl.ErrBadURL) || !errors.Is(err, contract.ErrInvalidNamespace) {
			t.Errorf("%s: Streams(\"\") = %v, want ErrBadURL", url, err)
		}
	}
	// An engine without streams: the tenant's field is nil, and the
	// shorthand says so. (Registered once per process: -count=N reruns.)
	registerNoStreams.Do(func() {
		storeurl.Register("nostreams-test", func(context.Context, string, storeurl.Options) (*storeurl.Opened, error) {
			return &storeurl.Opened{OpenTenant: func(string, ckptstore.Options) (*storeurl.Tenant, error) {
				return &storeurl.Tenant{}, nil
			}}, nil
		}, "nostreams-test")
	})
	o, err := storeurl.Open(ctx, "nostreams-test", storeurl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Streams("a"); !errors.Is(err, storeurl.ErrNoStreams) || !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Streams of an engine without streams: %v, want ErrNoStreams", err)
	}
	// Nor one that opens no namespaces at all.
	o.OpenTenant = nil
	if _, err := o.Streams("a"); !errors.Is(err, storeurl.ErrNoStreams) {
		t.Errorf("Streams of an engine without namespaces: %v, want ErrNoStreams", err)
	}
}
