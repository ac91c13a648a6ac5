package httpstore_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/memstore"
	"github.com/ckptstore/ckptstore/persist"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
	"github.com/ckptstore/ckptstore/persist/memdriver"
	"github.com/ckptstore/ckptstore/persist/persisttest"
	"github.com/ckptstore/ckptstore/persist/redisdriver"
)

// memBackend is a handler's backend on memory: memstore for the
// checkpoints, a fresh memdriver per namespace for the persistence.
type memBackend struct{}

func (memBackend) Namespace(_ string, lease ckptstore.Options) (ckptstore.Store, *ckptstore.PortableInstances, error) {
	return memstore.New(lease), memstore.NewInstanceStore(), nil
}

func (memBackend) Persistence(_ string, now func() time.Time) (pdriver.Driver, error) {
	return memdriver.New(memdriver.Options{Now: now}), nil
}

var _ httpstore.PersistenceBackend = memBackend{}

// remotes is one loopback HTTP server that serves each case's
// server-side store under a namespace of its own, so that a case (or a
// model check) costs a namespace rather than a server and its
// connections.
type remotes struct {
	url string
	hc  *http.Client

	mu     sync.Mutex
	n      int
	stores map[string]*persist.Store
}

func newRemotes(t *testing.T) *remotes {
	r := &remotes{stores: map[string]*persist.Store{}, hc: &http.Client{Transport: httpstore.NewTransport()}}
	h := httpstore.NewHandler(memBackend{}, httpstore.HandlerOptions{Dev: true})
	httpstore.ServePersistence(h, func(name string) (*persist.Store, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		s, ok := r.stores[name]
		if !ok {
			return nil, fmt.Errorf("no store for namespace %q", name)
		}
		return s, nil
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	t.Cleanup(r.hc.CloseIdleConnections)
	r.url = srv.URL
	return r
}

// remote serves server under a fresh namespace and returns the Go
// client's store of it.
func (r *remotes) remote(t *testing.T, server *persist.Store) *persist.Store {
	r.mu.Lock()
	r.n++
	name := "case-" + strconv.Itoa(r.n)
	r.stores[name] = server
	r.mu.Unlock()
	t.Cleanup(func() { r.mu.Lock(); delete(r.stores, name); r.mu.Unlock() })
	c, err := httpstore.NewClient(r.url, httpstore.ClientOptions{Namespace: name, HTTPClient: r.hc})
	require.NoError(t, err)
	return c.Persistence()
}

// TestPersistConformance runs the whole persistence suite through the
// handler and the Go client, on memdriver.
func TestPersistConformance(t *testing.T) {
	persisttest.RunRemote(t, func(t *testing.T, now func() time.Time) pdriver.Driver {
		return memdriver.New(memdriver.Options{Now: now})
	}, newRemotes(t).remote)
}

// TestPersistConformanceRedis runs the suite through the handler and the
// Go client on a real redis-server.
func TestPersistConformanceRedis(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t, nil)
	n := 0
	persisttest.RunRemote(t, func(t *testing.T, now func() time.Time) pdriver.Driver {
		n++
		d, err := redisdriver.New(redisdriver.Options{Client: c, Prefix: "p" + strconv.Itoa(n), Now: now})
		require.NoError(t, err)
		t.Cleanup(func() { _ = d.Close() })
		return d
	}, newRemotes(t).remote)
}
