package fdbstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/ckptstore/ckptstore/fdbstore"
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
)

// TestLoadBounded: a Load larger than one FoundationDB transaction may
// write is refused with ErrInvalidEntry and writes nothing, so ckptctl
// splits it; its halves load.
func TestLoadBounded(t *testing.T) {
	ctx := context.Background()
	d := checkedPersist(t, newDriver(t, memkv.New(), fdbstore.PersistenceOptions{}))
	big := json.RawMessage(`"` + strings.Repeat("x", 90_000) + `"`)
	var recs []pdriver.Record
	for i := range 100 { // 9 MB of values
		recs = append(recs, pdriver.Record{Kind: pdriver.KindMetadata, Metadata: &pdriver.MetadataEntry{Namespace: "ns", Key: fmt.Sprint(i), Value: big}})
	}
	if _, err := d.Load(ctx, recs); !errors.Is(err, pdriver.ErrInvalidEntry) {
		t.Fatalf("a 9 MB load: %v, want ErrInvalidEntry", err)
	}
	for _, err := range d.Dump(ctx, pdriver.DumpPosition{}) {
		t.Fatalf("the refused load wrote something (%v)", err)
	}
	for _, half := range [][]pdriver.Record{recs[:50], recs[50:]} {
		if n, err := d.Load(ctx, half); err != nil || n != 50 {
			t.Fatalf("half: %d, %v", n, err)
		}
	}
	n := 0
	for _, err := range d.Dump(ctx, pdriver.DumpPosition{}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 100 {
		t.Fatalf("dumped %d of 100 records", n)
	}
}
