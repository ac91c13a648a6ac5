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
	big := json.RawMessage(`"` + strings.Repeat("x", pdriver.MaxValueBytes-2) + `"`)
	var recs []pdriver.Record
	for i := range 1200 { // 9.8 MB of values, each at the value bound
		recs = append(recs, pdriver.Record{Kind: pdriver.KindMetadata, Metadata: &pdriver.MetadataEntry{Namespace: "ns", Key: fmt.Sprint(i), Value: big}})
	}
	if _, err := d.Load(ctx, recs); !errors.Is(err, pdriver.ErrInvalidEntry) {
		t.Fatalf("a 9.8 MB load: %v, want ErrInvalidEntry", err)
	}
	for _, err := range d.Dump(ctx, pdriver.DumpPosition{}) {
		t.Fatalf("the refused load wrote something (%v)", err)
	}
	for _, half := range [][]pdriver.Record{recs[:600], recs[600:]} {
		if n, err := d.Load(ctx, half); err != nil || n != 600 {
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
	if n != 1200 {
		t.Fatalf("dumped %d of 1200 records", n)
	}
}
