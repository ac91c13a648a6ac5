package httpstore_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/fdbstore"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/internal/testkit"
	_ "github.com/ckptstore/ckptstore/memstore" // mem
	"github.com/ckptstore/ckptstore/redisstore" // redis://, and its namespace prefixes
	"github.com/ckptstore/ckptstore/storeurl"
)

// hostileNamespaces are built to collide: a byte-prefix of another, NUL,
// braces that would end or open a Redis hash tag, a glob character, the
// encoded form of another name, and names that spell another tenant's
// encoded prefix in Redis and in FoundationDB.
var hostileNamespaces = []string{
	"a", "a\x00", "a}", "a{b}", "ab", "{a}", "a*", "a=7D", "a\x00\x00",
	redisstore.NamespacePrefix("", "a"), fdbstore.NamespacePrefix("a"),
}

// keyspace reads every key and value of a backend.
type keyspace struct {
	read   func(t *testing.T) map[string]string
	prefix func(ns string) string // every key of namespace ns starts with it
}

func memkvKeyspace(db kv.DB) keyspace {
	return keyspace{
		read: func(t *testing.T) map[string]string {
			out := map[string]string{}
			err := db.ReadTransact(context.Background(), func(tr kv.ReadTransaction) error {
				kvs, err := tr.GetRange(kv.KeyRange{Begin: []byte{}, End: []byte{0xff}}, kv.RangeOptions{}).Get()
				for _, p := range kvs {
					out[string(p.Key)] = string(p.Value)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			return out
		},
		prefix: fdbstore.NamespacePrefix,
	}
}

func redisKeyspace(o *storeurl.Opened) keyspace {
	return keyspace{
		read: func(t *testing.T) map[string]string {
			ctx := context.Background()
			rc := o.Handle.(redis.UniversalClient)
			keys, err := rc.Keys(ctx, "*").Result()
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]string{}
			for _, k := range keys {
				v, err := rc.Dump(ctx, k).Result()
				if err != nil {
					continue // expired between KEYS and DUMP (an op marker)
				}
				out[k] = v
			}
			return out
		},
		prefix: func(ns string) string { return "{" + redisstore.NamespacePrefix("", ns) + "}:" },
	}
}

// tolerate drops errors.ErrUnsupported: a capability the store lacks
// writes nothing, which is isolated too.
func tolerate(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("%s: %v", what, err)
	}
}

// everyRequest runs every method of the protocol in c's namespace with the
// same ids in every namespace (a collision would be a duplicate id, a held
// lease or a foreign head), and content of namespace i.
func everyRequest(t *testing.T, c *httpstore.Client, i int) {
	ctx := context.Background()
	label := fmt.Sprintf("ns-%d", i)
	cp := func(id, parent string, at float64) *ckptstore.Checkpoint {
		return &ckptstore.Checkpoint{ID: id, ThreadID: "t", ParentCheckpointID: parent, CreatedAt: at,
			Reason: ckptstore.ReasonNamed, Label: label,
			Files:     []ckptstore.Entry{{Path: "f", Kind: ckptstore.KindFile, BlobKey: testkit.FileKey(i), Size: 1}},
			Artifacts: []ckptstore.Artifact{{ArtifactID: "a", Name: "n", MimeType: "text/plain", BlobKey: testkit.ArtifactKey(i), Size: 1, CreatedAt: at}}}
	}
	l := writeChain(t, c, cp)
	readBack(t, c, label)
	ld := forkImportAndDelete(t, c, cp)
	if _, err := c.ListBlobReferences(ctx); err != nil {
		t.Fatal(err)
	}
	instanceRequests(t, c, label)
	l.Release(ctx)
	ld.Release(ctx)
}

// writeChain takes thread t's lease and appends, deletes the head of and
// prunes a chain c1 → c2 → c3 in it, returning the lease.
func writeChain(t *testing.T, c *httpstore.Client, cp func(id, parent string, at float64) *ckptstore.Checkpoint) *ckptstore.Lease {
	ctx := context.Background()
	l, err := c.AcquireWriter(ctx, "t")
	if err != nil {
		t.Fatalf("AcquireWriter: %v", err)
	}
	if _, err := l.Renew(ctx); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	for j, id := range []string{"c1", "c2"} {
		if err := c.Append(ctx, cp(id, map[int]string{1: "c1"}[j], float64(j+1)), map[int]string{1: "c1"}[j], l.Writer); err != nil {
			t.Fatalf("Append %s: %v", id, err)
		}
	}
	if err := c.DeleteHead(ctx, "t", "c2", l.Writer); err != nil {
		t.Fatalf("DeleteHead: %v", err)
	}
	for j, id := range []string{"c2", "c3"} {
		parent := []string{"c1", "c2"}[j]
		if err := c.Append(ctx, cp(id, parent, float64(j+2)), parent, l.Writer); err != nil {
			t.Fatalf("Append %s: %v", id, err)
		}
	}
	if _, err := c.DeleteCheckpoints(ctx, "t", 2, l.Writer); err != nil {
		t.Fatalf("DeleteCheckpoints: %v", err)
	}
	return l
}

// readBack reads thread t every way there is, and saves and loads its
// transcript.
func readBack(t *testing.T, c *httpstore.Client, label string) {
	ctx := context.Background()
	if _, err := c.Get(ctx, "c3"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.List(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	_, _, err := c.ListPage(ctx, "t", ckptstore.ListOptions{Limit: 1})
	tolerate(t, "ListPage", err)
	tolerate(t, "SaveThread", c.SaveThread(ctx, "t", []byte(`["`+label+`"]`)))
	_, err = c.LoadThread(ctx, "t")
	tolerate(t, "LoadThread", err)
}

// forkImportAndDelete forks c3 into thread d, imports a checkpoint into a
// thread whose id looks like a Redis hash tag, lists the threads and
// deletes d, returning d's lease.
func forkImportAndDelete(t *testing.T, c *httpstore.Client, cp func(id, parent string, at float64) *ckptstore.Checkpoint) *ckptstore.Lease {
	ctx := context.Background()
	ld, err := c.AcquireWriter(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ForkFromCheckpoint(ctx, ckptstore.ForkInput{SourceThreadID: "t", SourceCheckpointID: "c3",
		DestinationThreadID: "d", DestinationCheckpointID: "dc", CreatedAt: 9, Writer: ld.Writer}); err != nil {
		t.Fatalf("Fork: %v", err)
	}
	li, err := c.AcquireWriter(ctx, "}:t:imp")
	if err != nil {
		t.Fatal(err)
	}
	imp := cp("ic", "", 5)
	imp.ThreadID = "}:t:imp"
	_, err = c.Import(ctx, ckptstore.ImportBatch{ThreadID: "}:t:imp", Checkpoints: []*ckptstore.Checkpoint{imp}, SetHead: true, Head: "ic", Writer: li.Writer})
	tolerate(t, "Import", err)
	_, _, err = c.Threads(ctx, "", 0)
	tolerate(t, "Threads", err)
	_, err = c.DeleteThread(ctx, "d", ld.Writer)
	tolerate(t, "DeleteThread", err)
	return ld
}

// instanceRequests upserts, reads and deletes instance records.
func instanceRequests(t *testing.T, c *httpstore.Client, label string) {
	ctx := context.Background()
	inst := c.Instances()
	for _, k := range []string{"k", "k2"} {
		if err := inst.Upsert(ctx, &ckptstore.InstanceRecord{Key: k, Provider: "p", ProviderSandboxID: label, ThreadID: "t", UpdatedAt: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := inst.Get(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if err := inst.Delete(ctx, "k2"); err != nil {
		t.Fatal(err)
	}
}

// checkOwn checks that namespace i reads back only its own data.
func checkOwn(t *testing.T, c *httpstore.Client, i int) {
	ctx := context.Background()
	label := fmt.Sprintf("ns-%d", i)
	cps, err := c.List(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, cp := range cps {
		ids = append(ids, cp.ID)
		if cp.Label != label {
			t.Errorf("namespace %d reads %s with label %q", i, cp.ID, cp.Label)
		}
	}
	if !slices.Equal(ids, []string{"c2", "c3"}) {
		t.Errorf("namespace %d lists %v", i, ids)
	}
	refs, err := c.ListBlobReferences(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range refs {
		if r.Key != testkit.FileKey(i) && r.Key != testkit.ArtifactKey(i) {
			t.Errorf("namespace %d sees blob key %s", i, r.Key)
		}
	}
	if rec, err := c.Instances().Get(ctx, "k"); err != nil || rec == nil || rec.ProviderSandboxID != label {
		t.Errorf("namespace %d instance k = %+v, %v", i, rec, err)
	}
	if th, _, err := c.Threads(ctx, "", 0); err == nil {
		for _, id := range th {
			if id != "t" && id != "}:t:imp" {
				t.Errorf("namespace %d lists thread %q", i, id)
			}
		}
	}
}

func testIsolation(t *testing.T, addr string, ks keyspace) {
	clients := make([]*httpstore.Client, len(hostileNamespaces))
	for i, ns := range hostileNamespaces {
		c, err := httpstore.NewClient(addr, httpstore.ClientOptions{Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		clients[i] = c
		before := ks.read(t)
		everyRequest(t, c, i)
		after := ks.read(t)
		p := ks.prefix(ns)
		changed := 0
		for k, v := range after {
			if bv, ok := before[k]; !ok || bv != v {
				changed++
				if !strings.HasPrefix(k, p) {
					t.Errorf("namespace %q wrote key %q, outside its prefix %q", ns, k, p)
				}
				// And inside no other tenant's: prefix-free key spaces.
				for _, other := range hostileNamespaces {
					if op := ks.prefix(other); other != ns && strings.HasPrefix(k, op) {
						t.Errorf("namespace %q wrote key %q, inside the prefix %q of namespace %q", ns, k, op, other)
					}
				}
			}
		}
		for k := range before {
			if _, ok := after[k]; !ok && !strings.HasPrefix(k, p) {
				t.Errorf("namespace %q deleted key %q, outside its prefix %q", ns, k, p)
			}
		}
		if changed == 0 {
			t.Fatalf("namespace %q wrote no key: the test inspects the wrong key space", ns)
		}
	}
	for i, c := range clients {
		checkOwn(t, c, i)
	}
}

func TestIsolationMemkv(t *testing.T) {
	addr, o := serve(t, "memkv", storeurl.Options{})
	testIsolation(t, addr, memkvKeyspace(o.Handle.(kv.DB)))
}

func TestIsolationRedis(t *testing.T) {
	srv := redistest.Start(t)
	addr, o := serve(t, "redis://"+srv.Addr, storeurl.Options{})
	testIsolation(t, addr, redisKeyspace(o))
}

// testTwoServers runs two handlers over one store and crosses every lease
// decision between them: the servers keep nothing, so what one grants the
// other enforces.
func testTwoServers(t *testing.T, a, b storeurl.Opened) {
	ctx := context.Background()
	clock := testkit.NewClock(time.UnixMilli(1_700_000_000_000)) // both clients' clock
	lease := ckptstore.Options{Now: clock.Now, LeaseDuration: 10 * time.Second}
	ns := "two-" + fmt.Sprint(time.Now().UnixNano())
	var clients [2]*httpstore.Client
	for i, o := range []*storeurl.Opened{&a, &b} {
		srv := httptest.NewServer(httpstore.NewHandler(o, httpstore.HandlerOptions{Dev: true}))
		t.Cleanup(srv.Close)
		c, err := httpstore.NewClient(srv.URL, httpstore.ClientOptions{Namespace: ns, Lease: lease})
		if err != nil {
			t.Fatal(err)
		}
		clients[i] = c
	}
	ca, cb := clients[0], clients[1]
	la, err := ca.AcquireWriter(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cb.AcquireWriter(ctx, "t"); !errors.Is(err, ckptstore.ErrWriterConflict) {
		t.Fatalf("server B granted a lease server A holds: %v", err)
	}
	// A lease from A writes through B, and A sees the write.
	cp := &ckptstore.Checkpoint{ID: "c1", ThreadID: "t", CreatedAt: 1, Reason: ckptstore.ReasonAutomatic}
	if err := cb.Append(ctx, cp, "", la.Writer); err != nil {
		t.Fatalf("server B refused server A's lease: %v", err)
	}
	if h, err := ca.GetHead(ctx, "t"); err != nil || h != "c1" {
		t.Fatalf("server A sees head %q, %v", h, err)
	}
	// A stale expected head is stale on both.
	cp2 := &ckptstore.Checkpoint{ID: "c2", ThreadID: "t", CreatedAt: 2, Reason: ckptstore.ReasonAutomatic}
	if err := ca.Append(ctx, cp2, "", la.Writer); !errors.Is(err, ckptstore.ErrConflict) {
		t.Fatalf("a stale head through A: %v", err)
	}
	// Renewed through B, the lease outlives its first expiry on A.
	clock.Advance(9 * time.Second)
	if _, err := cb.Renew(ctx, la.Writer); err != nil {
		t.Fatal(err)
	}
	clock.Advance(9 * time.Second)
	if _, err := ca.AcquireWriter(ctx, "t"); !errors.Is(err, ckptstore.ErrWriterConflict) {
		t.Fatalf("server A ignored the renewal through B: %v", err)
	}
	// Expired, it is taken over through B; A's writer is lost on A.
	clock.Advance(10 * time.Second)
	lb, err := cb.AcquireWriter(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if lb.Fence <= la.Fence {
		t.Errorf("the takeover's fence %d is not above %d", lb.Fence, la.Fence)
	}
	cp2.ParentCheckpointID = "c1"
	if err := ca.Append(ctx, cp2, "c1", la.Writer); !errors.Is(err, ckptstore.ErrWriterLost) {
		t.Fatalf("the replaced lease through A: %v", err)
	}
	if _, err := ca.Renew(ctx, la.Writer); !errors.Is(err, ckptstore.ErrWriterLost) {
		t.Fatalf("renewing the replaced lease through A: %v", err)
	}
	// A's stale release leaves B's lease in place.
	la.Release(ctx)
	if err := ca.Append(ctx, cp2, "c1", lb.Writer); err != nil {
		t.Fatalf("B's lease through A after A's stale release: %v", err)
	}
	// A write whose reply was lost on A, retried on B with the same key,
	// is recognised (the op token lives in the store).
	okctx := ckptstore.WithOpToken(ctx, "retry-"+fmt.Sprint(time.Now().UnixNano()))
	cp3 := &ckptstore.Checkpoint{ID: "c3", ThreadID: "t", ParentCheckpointID: "c2", CreatedAt: 3, Reason: ckptstore.ReasonAutomatic}
	if err := ca.Append(okctx, cp3, "c2", lb.Writer); err != nil {
		t.Fatal(err)
	}
	if err := cb.Append(okctx, cp3, "c2", lb.Writer); err != nil {
		t.Errorf("the retry on server B of a write committed through A: %v", err)
	}
	if cps, err := ca.List(ctx, "t"); err != nil || len(cps) != 3 {
		t.Errorf("after the retry: %d checkpoints, %v", len(cps), err)
	}
}

func TestTwoServersMemkv(t *testing.T) {
	o, err := storeurl.Open(context.Background(), "memkv", storeurl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	testTwoServers(t, *o, *o)
}

func TestTwoServersRedis(t *testing.T) {
	srv := redistest.Start(t)
	var opened [2]*storeurl.Opened
	for i := range opened {
		o, err := storeurl.Open(context.Background(), "redis://"+srv.Addr, storeurl.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = o.Close() })
		opened[i] = o
	}
	testTwoServers(t, *opened[0], *opened[1])
}
