package httpstore_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/memstore"
	"github.com/ckptstore/ckptstore/persist"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
	"github.com/ckptstore/ckptstore/persist/persisttest"
	"github.com/ckptstore/ckptstore/redisstore"
	"github.com/ckptstore/ckptstore/storeurl"
)

// memBackend is a handler's backend on memory: memstore for the
// checkpoints, a fresh memstore.Persistence per namespace for the persistence.
type memBackend struct{}

func (memBackend) Namespace(_ string, lease ckptstore.Options) (*storeurl.Tenant, error) {
	return &storeurl.Tenant{
		Store: memstore.New(lease), Instances: memstore.NewInstanceStore(),
		Persistence: memstore.NewPersistence(memstore.PersistenceOptions{Now: lease.Now}),
	}, nil
}

var _ httpstore.Backend = memBackend{}

// remotes is one loopback HTTP server that serves each case's
// server-side store under a namespace of its own, so that a case (or a
// model check) costs a namespace rather than a server and its
// connections.
type remotes struct {
	url       string
	hc        *http.Client // loopback TCP
	inProcess *http.Client // the handler in the calling goroutine

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
	r.inProcess = &http.Client{Transport: inProcess{h}}
	r.url = srv.URL
	return r
}

// remote serves server under a fresh namespace and returns the Go
// client's store of it. The blob and lock cases go over loopback TCP (real
// chunked uploads, streamed replies, requests that hang and are
// cancelled); the others, whose thousands of calls would cost the package
// its CI budget in syscalls, go in process through the same handler and
// client.
func (r *remotes) remote(t *testing.T, server *persist.Store) *persist.Store {
	hc := r.inProcess
	if strings.Contains(t.Name(), "/Blobs/") || strings.Contains(t.Name(), "/Locks/") {
		hc = r.hc
	}
	r.mu.Lock()
	r.n++
	name := "case-" + strconv.Itoa(r.n)
	r.stores[name] = server
	r.mu.Unlock()
	t.Cleanup(func() { r.mu.Lock(); delete(r.stores, name); r.mu.Unlock() })
	c, err := httpstore.NewClient(r.url, httpstore.ClientOptions{Namespace: name, HTTPClient: hc})
	require.NoError(t, err)
	return c.Persistence()
}

// runRemote runs the suite through HTTP: all of it, but under the race
// detector without the model group, whose thousands of calls through the
// handler take a minute there (the model runs with -race on each driver in
// its own package, and through HTTP here without -race).
func runRemote(t *testing.T, nd persisttest.NewDriver) {
	r := newRemotes(t)
	if raceEnabled {
		t.Log("race detector: the Model group is left out (a minute of calls through HTTP); it runs here without -race")
		persisttest.RunRemoteGroups(t, nd, r.remote, "Runs", "GenerationRuns", "Interrupts", "Metadata",
			"Artifacts", "Blobs", "Validation", "Concurrency", "Locks")
		return
	}
	persisttest.RunRemote(t, nd, r.remote)
}

// TestPersistConformance runs the persistence suite through the handler
// and the Go client, on memstore.Persistence.
func TestPersistConformance(t *testing.T) {
	runRemote(t, func(t *testing.T, now func() time.Time) pdriver.Driver {
		return memstore.NewPersistence(memstore.PersistenceOptions{Now: now})
	})
}

// TestPersistConformanceRedis runs the suite through the handler and the
// Go client on a real redis-server.
func TestPersistConformanceRedis(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t, nil)
	var n atomic.Int64
	runRemote(t, func(t *testing.T, now func() time.Time) pdriver.Driver {
		d, err := redisstore.NewPersistence(redisstore.PersistenceOptions{Client: c, Prefix: "p" + strconv.FormatInt(n.Add(1), 10), Now: now})
		require.NoError(t, err)
		t.Cleanup(func() { _ = d.Close() })
		return d
	})
}
