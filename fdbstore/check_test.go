package fdbstore

import (
	"context"
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/fdbstore/internal/tuple"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// checkFixture is a store with a chain, a fork with its transcript, and
// a saved transcript.
func checkFixture(t *testing.T) (*Store, *memkv.DB) {
	t.Helper()
	ctx := context.Background()
	db := memkv.New()
	s, err := New(db, Options{})
	testkit.Must(t, err)
	lease, err := s.AcquireWriter(ctx, "t")
	testkit.Must(t, err)
	head := ""
	for i, id := range []string{"a", "b", "c"} {
		cp := sizedCheckpoint("t", id, head, float64(i), 10, i+1)
		testkit.Must(t, s.Append(ctx, cp, head, lease.Writer))
		head = id
	}
	fl, err := s.AcquireWriter(ctx, "f")
	testkit.Must(t, err)
	_, err = s.ForkFromCheckpoint(ctx, ckptstore.ForkInput{SourceThreadID: "t", SourceCheckpointID: "b",
		DestinationThreadID: "f", DestinationCheckpointID: "root", CreatedAt: 7, Writer: fl.Writer})
	testkit.Must(t, err)
	testkit.Must(t, s.SaveThread(ctx, "m", []byte(`["x"]`)))
	return s, db
}

// TestCheckFindsBrokenInvariants: a consistent store has no problem, and
// each planted corruption is reported.
func TestCheckFindsBrokenInvariants(t *testing.T) {
	ctx := context.Background()
	s, _ := checkFixture(t)
	problems, err := s.Check(ctx)
	testkit.Must(t, err)
	if len(problems) != 0 {
		t.Fatalf("a consistent store: %v", problems)
	}
	for _, c := range []struct {
		name, want string
		break_     func(s *Store, tr kv.Transaction)
	}{
		{"copy dropped", "copy chunks", func(s *Store, tr kv.Transaction) { tr.Clear(s.k.copyChunk("b", 0)) }},
		{"copy changed", "differs from its data", func(s *Store, tr kv.Transaction) {
			st, _ := s.newStored(sizedCheckpoint("t", "b", "a", 1, 11, 2))
			tr.Set(s.k.copyChunk("b", 0), st.enc)
		}},
		{"count changed", "count 5", func(s *Store, tr kv.Transaction) { tr.Set(s.k.ref(testkit.FileKey(0)), kv.EncodeInt64(5)) }},
		{"count dropped", "no count", func(s *Store, tr kv.Transaction) { tr.Clear(s.k.ref(testkit.FileKey(2))) }},
		{"unlisted", "listed = false", func(s *Store, tr kv.Transaction) { tr.Clear(s.k.listed("m")) }},
		{"listed empty thread", "has no keys", func(s *Store, tr kv.Transaction) { tr.Set(s.k.listed("nobody"), nil) }},
		{"link dropped", "has no link", func(s *Store, tr kv.Transaction) { tr.Clear(s.k.link("t", "a")) }},
		{"link wrong", "link {", func(s *Store, tr kv.Transaction) {
			tr.Set(s.k.link("t", "a"), linkValue{parent: "zz"}.encode())
		}},
		{"index dropped", "has no index", func(s *Store, tr kv.Transaction) { tr.ClearRange(s.k.idRange("c")) }},
		{"data dropped", "without data", func(s *Store, tr kv.Transaction) {
			tr.ClearRange(rangeOf(s.k.checkpointPrefix("t", 2, "c")))
			tr.Clear(s.k.link("t", "c"))
		}},
		{"marker in another epoch", "marker of epoch", func(s *Store, tr kv.Transaction) {
			tr.Set(s.k.opMarker("t", 3, "tok"), append(tuple.Pack(int64(1)), byte(opAppend)))
		}},
		{"marker of no kind", "no kind", func(s *Store, tr kv.Transaction) {
			tr.Set(s.k.opMarker("t", 0, "tok"), append(tuple.Pack(int64(1)), 'z'))
		}},
		{"bad transcript", "transcript", func(s *Store, tr kv.Transaction) { tr.Set(s.k.transcriptChunk("m", 0), []byte("{}")) }},
		{"foreign key", "not a key of this package", func(s *Store, tr kv.Transaction) { tr.Set(s.k.key("zz", "x"), nil) }},
		{"old marker", "old layout", func(s *Store, tr kv.Transaction) { tr.Set(s.k.legacyOp(5, "tok"), []byte{1}) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, db := checkFixture(t)
			testkit.Must(t, db.Transact(ctx, func(tr kv.Transaction) error { c.break_(s, tr); return nil }))
			problems, err := s.Check(ctx)
			testkit.Must(t, err)
			found := false
			for _, p := range problems {
				found = found || strings.Contains(p.What, c.want)
			}
			if !found {
				t.Fatalf("Check = %v, want a problem with %q", problems, c.want)
			}
		})
	}
}
