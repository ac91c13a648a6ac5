package storeurl_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/fdbstore"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/internal/redistest"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
	"github.com/ckptstore/ckptstore/redisstore"
	"github.com/ckptstore/ckptstore/storeurl"
)

// persistNames are the namespaces of the persistence isolation tests: the
// hostile names of httpstore's raw-key test (a byte-prefix of another,
// NUL, braces, a glob character, another's encoded prefix).
var persistNames = []string{
	"a", "a\x00", "a}", "a{b}", "ab", "{a}", "a*", "a=7D", "a\x00\x00",
	redisstore.NamespacePrefix("", "a"), fdbstore.NamespacePrefix("a"),
}

// everyStore writes through every store of d with the same ids in every
// namespace and content of label, so that a shared key would show as one
// namespace reading another's value.
func everyStore(t *testing.T, d pdriver.Driver, label string) {
	t.Helper()
	ctx := context.Background()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	v, _ := json.Marshal(label) // valid JSON: a driver may assume the portable layer checked it
	_, err := d.CreateOrResumeRun(ctx, &pdriver.RunRecord{RunID: "r", ThreadID: "t", Status: pdriver.RunRunning, StartedAt: 1, Usage: v})
	must("run", err)
	_, err = d.UpdateRun(ctx, "r", pdriver.RunPatch{DetachedSince: pdriver.Set[int64](5)})
	must("update run", err)
	_, err = d.CreateOrResumeGenerationRun(ctx, &pdriver.GenerationRunRecord{RunID: "g", ThreadID: "t", Activity: "image", Provider: "p", Model: label, Status: pdriver.RunRunning, StartedAt: 1})
	must("generation run", err)
	_, err = d.UpdateGenerationRun(ctx, "g", pdriver.GenerationRunPatch{Status: pdriver.Set(pdriver.RunCompleted)})
	must("update generation run", err)
	for _, id := range []string{"i1", "i2"} {
		must("interrupt", d.CreateInterrupt(ctx, &pdriver.InterruptRecord{InterruptID: id, RunID: "r", ThreadID: "t", Status: pdriver.InterruptPending, RequestedAt: 2, Payload: json.RawMessage(`{"l":` + string(v) + `}`)}))
	}
	_, err = d.ResolveInterrupt(ctx, "i1", 3, v)
	must("resolve", err)
	must("commit", d.CommitInterrupts(ctx, []pdriver.InterruptCommitEntry{{InterruptID: "i2", Status: pdriver.InterruptCancelled}}, 4, "op-token"))
	must("metadata", d.SetMetadata(ctx, "ns", "k", v))
	must("artifact", d.SaveArtifact(ctx, &pdriver.ArtifactRecord{ArtifactID: "art", RunID: "r", ThreadID: "t", Name: label, MimeType: "text/plain", Size: 1, CreatedAt: 1}))
	_, _, err = d.PutBlob(ctx, &pdriver.BlobMeta{BlobRecord: pdriver.BlobRecord{Key: "b", Size: 1, ETag: label, CreatedAt: 1, UpdatedAt: 1}, Object: "obj-" + label})
	must("blob", err)
	st, err := d.AcquireLock(ctx, pdriver.LockRequest{Key: "l", Token: "tok", Lease: time.Minute})
	must("lock", err)
	if !st.Held {
		t.Fatalf("namespace %q: the lock is held by another namespace's token", label)
	}
}

// readsOwn checks that d holds exactly what everyStore(label) wrote.
func readsOwn(t *testing.T, d pdriver.Driver, label string) {
	t.Helper()
	ctx := context.Background()
	r, err := d.GetRun(ctx, "r")
	if err != nil || r == nil || string(r.Usage) != string(mustJSON(label)) {
		t.Fatalf("namespace %q: run %+v, %v", label, r, err)
	}
	g, err := d.GetGenerationRun(ctx, "g")
	if err != nil || g == nil || g.Model != label {
		t.Fatalf("namespace %q: generation run %+v, %v", label, g, err)
	}
	m, err := d.GetMetadata(ctx, "ns", "k")
	if err != nil || string(m) != string(mustJSON(label)) {
		t.Fatalf("namespace %q: metadata %s, %v", label, m, err)
	}
	a, err := d.GetArtifact(ctx, "art")
	if err != nil || a == nil || a.Name != label {
		t.Fatalf("namespace %q: artifact %+v, %v", label, a, err)
	}
	b, err := d.GetBlob(ctx, "b")
	if err != nil || b == nil || b.Object != "obj-"+label {
		t.Fatalf("namespace %q: blob %+v, %v", label, b, err)
	}
	is, err := d.ListInterrupts(ctx, pdriver.InterruptScope{ThreadID: "t"}, nil, 10)
	if err != nil || len(is) != 2 || is[0].Status != pdriver.InterruptResolved || is[1].Status != pdriver.InterruptCancelled {
		t.Fatalf("namespace %q: interrupts %+v, %v", label, is, err)
	}
	st, err := d.AcquireLock(ctx, pdriver.LockRequest{Key: "l", Token: "tok", Lease: time.Minute})
	if err != nil || !st.Held || st.Fence != 1 {
		t.Fatalf("namespace %q: lock %+v, %v", label, st, err)
	}
}

// rawKeys reads every key of a backend.
type rawKeys func(t *testing.T) map[string]bool

// kvKeys reads every key of r in a kv engine (memkv, or a cluster).
func kvKeys(db kv.DB, r kv.KeyRange) rawKeys {
	return func(t *testing.T) map[string]bool {
		out := map[string]bool{}
		err := db.ReadTransact(context.Background(), func(tr kv.ReadTransaction) error {
			kvs, err := tr.GetRange(r, kv.RangeOptions{}).Get()
			for _, p := range kvs {
				out[string(p.Key)] = true
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
}

func redisKeys(c redis.UniversalClient) rawKeys {
	return func(t *testing.T) map[string]bool {
		keys, err := c.Keys(context.Background(), "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, k := range keys {
			out[k] = true
		}
		return out
	}
}

// persistIsolation writes through the persistence driver and the
// checkpoint store of the tenant of each namespace of names ("": the
// Opened's own) in turn and checks that every key the namespace added lies
// in its own key space (own(name, key)), that each namespace reads back
// only its own values, and that a second Namespace call for a name sees
// the same data.
func persistIsolation(t *testing.T, o *storeurl.Opened, names []string, keys rawKeys, own func(name, key string) bool) {
	t.Helper()
	ctx := context.Background()
	tenant := func(name string) *storeurl.Tenant {
		t.Helper()
		if name == "" {
			return &o.Tenant
		}
		ten, err := o.Namespace(name, ckptstore.Options{})
		if err != nil {
			t.Fatalf("namespace %q: %v", name, err)
		}
		if ten.Persistence == nil {
			t.Fatalf("namespace %q: no persistence driver", name)
		}
		return ten
	}
	for _, name := range names {
		before := keys(t)
		ten := tenant(name)
		everyStore(t, ten.Persistence, "label:"+name)
		st := ten.Store
		if err := st.SaveThread(ctx, "t", json.RawMessage(`[]`)); err != nil {
			t.Fatal(err)
		}
		l, err := st.AcquireWriter(ctx, "t")
		if err != nil {
			t.Fatalf("namespace %q: the checkpoint store: %v", name, err)
		}
		l.Release(ctx)
		added := 0
		for k := range keys(t) {
			if before[k] {
				continue
			}
			added++
			if !own(name, k) {
				t.Errorf("namespace %q wrote %q, outside its key space", name, k)
			}
		}
		if added == 0 {
			t.Fatalf("namespace %q: no key was written", name)
		}
	}
	for _, name := range names {
		readsOwn(t, tenant(name).Persistence, "label:"+name)
	}
}

func TestPersistenceMemkv(t *testing.T) {
	o, err := storeurl.Open(context.Background(), "memkv", storeurl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	all := kv.KeyRange{Begin: []byte{}, End: []byte{0xff}}
	persistIsolation(t, o, append([]string{""}, persistNames...), kvKeys(o.Handle.(kv.DB), all), func(name, key string) bool {
		if name == "" {
			return strings.HasPrefix(key, fdbstore.DefaultPersistPrefix) || strings.HasPrefix(key, "\x02ckptstore\x00")
		}
		// A tenant's whole state is its checkpoints ("ckptstore.ns",
		// name, nil) and its persistence ("ckptstore.ns", name,
		// "persist").
		return strings.HasPrefix(key, fdbstore.NamespacePrefix(name)) || strings.HasPrefix(key, fdbstore.PersistNamespacePrefix(name))
	})
}

func TestPersistenceRedis(t *testing.T) {
	srv := redistest.Start(t)
	o, err := storeurl.Open(context.Background(), "redis://"+srv.Addr+"/0?prefix=base", storeurl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	persistIsolation(t, o, append([]string{""}, persistNames...), redisKeys(o.Handle.(redis.UniversalClient)), func(name, key string) bool {
		p := "base"
		if name != "" {
			p = redisstore.NamespacePrefix("base", name)
		}
		return strings.HasPrefix(key, "{"+p+"}:")
	})
}

// TestPersistenceMem: mem keeps one tenant per key space, so the same
// name gives the same data (and the same stores), and names stay apart.
func TestPersistenceMem(t *testing.T) {
	o, err := storeurl.Open(context.Background(), "mem", storeurl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	tenants := map[string]*storeurl.Tenant{}
	for _, name := range persistNames {
		ten, err := o.Namespace(name, ckptstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		tenants[name] = ten
		everyStore(t, ten.Persistence, "label:"+name)
	}
	everyStore(t, o.Persistence, "label:")
	for _, name := range persistNames {
		again, err := o.Namespace(name, ckptstore.Options{Now: time.Now})
		if err != nil {
			t.Fatal(err)
		}
		readsOwn(t, again.Persistence, "label:"+name)
		if first := tenants[name]; again.Persistence != first.Persistence || again.Store != first.Store || again.Instances != first.Instances {
			t.Fatalf("namespace %q: a second call returned other stores", name)
		}
	}
	readsOwn(t, o.Persistence, "label:")
}

// TestNamespaceRefusesNames: Namespace applies the namespace rule before
// it opens anything, and an Opened without the engine hook refuses every
// name as unsupported.
func TestNamespaceRefusesNames(t *testing.T) {
	o, err := storeurl.Open(context.Background(), "mem", storeurl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"", "\xff", strings.Repeat("x", storeurl.MaxNamespaceBytes+1)} {
		if _, err := o.Namespace(name, ckptstore.Options{}); !errors.Is(err, storeurl.ErrBadURL) {
			t.Errorf("Namespace(%q) = %v, want ErrBadURL", name, err)
		}
	}
	if _, err := (&storeurl.Opened{}).Namespace("a", ckptstore.Options{}); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("a backend without namespaces: %v", err)
	}
}

// mustJSON is label as a JSON string.
func mustJSON(label string) []byte {
	b, _ := json.Marshal(label)
	return b
}
