package fdbstore

import (
	"bytes"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestPersistKeyBytes: the persistence keys and the namespace prefixes are
// byte for byte those persist/fdbdriver wrote before it moved here and
// built them with internal/tuple: the stored layout did not change.
func TestPersistKeyBytes(t *testing.T) {
	k := persistKeys{q: []byte(DefaultPersistPrefix)}
	n := persistKeys{q: []byte(PersistNamespacePrefix("a\x00b"))}
	page := k.page(spaceIntRunPend, "run", &position{3, "z"})
	blobs := k.blobPage("p", "pa")
	for _, c := range []struct {
		name string
		got  []byte
		want string
	}{
		{"record", k.record(spaceRun, "r\x00é"), "\x02ckptstore.persist\x00\x02run\x00\x16a\xff\x02r\x00\xffé\x00"},
		{"entry", k.entry(spaceRunThread, "t", -5, "i"), "\x02ckptstore.persist\x00\x02rt\x00\x16\xf1\f\x02t\x00\x13\xfa\x02i\x00"},
		{"reclaim", k.reclaim(1<<40, "x"), "\x02ckptstore.persist\x00\x02rr\x00\x1a\x01\x00\x00\x00\x00\x00\x02x\x00"},
		{"meta", k.meta("ns", "k"), "\x02ckptstore.persist\x00\x02md\x00\x02ns\x00\x02k\x00"},
		{"blob", k.blob("b/c"), "\x02ckptstore.persist\x00\x02bl\x00\x02b/c\x00"},
		{"lock", k.lock("l"), "\x02ckptstore.persist\x00\x02lk\x00\x02l\x00"},
		{"op", k.op("tok"), "\x02ckptstore.persist\x00\x02op\x00\x02tok\x00"},
		{"intOp", k.intOp(2833333, "tok"), "\x02ckptstore.persist\x00\x02io\x00\x17+;\xb5\x02tok\x00"},
		{"ns record", n.record(spaceArt, "a1"), "\x02ckptstore.ns\x00\x02a\x00\xffb\x00\x02persist\x00\x02ar\x00\x16\x1c$\x02a1\x00"},
		{"page begin", page.Begin, "\x02ckptstore.persist\x00\x02iv\x00\x16*\xcd\x02run\x00\x15\x03\x02z\x00\x00"},
		{"page end", page.End, "\x02ckptstore.persist\x00\x02iv\x00\x16*\xcd\x02run\x00\xff"},
		{"blobPage begin", blobs.Begin, "\x02ckptstore.persist\x00\x02bl\x00\x02pa\x00\x00"},
		{"blobPage end", blobs.End, "\x02ckptstore.persist\x00\x02bl\x00\x02q"},
		{"reclaimPage end", k.reclaimPage(99, nil).End, "\x02ckptstore.persist\x00\x02rr\x00\x15d"},
		{"intOpsBefore end", k.intOpsBefore(7).End, "\x02ckptstore.persist\x00\x02io\x00\x15\a"},
		{"persistence namespace", []byte(PersistNamespacePrefix("a\x00b")), "\x02ckptstore.ns\x00\x02a\x00\xffb\x00\x02persist\x00"},
		{"checkpoint namespace", []byte(NamespacePrefix("a\x00b")), "\x02ckptstore.ns\x00\x02a\x00\xffb\x00\x00"},
	} {
		if string(c.got) != c.want {
			t.Errorf("%s: got %q, want %q", c.name, c.got, c.want)
		}
	}
}

// TestEntryOrder: an index entry's key order is the list's order (at
// numerically, then id bytes), for ids with NUL bytes and negative times
// too, and an owner's entries never fall in another owner's range.
func TestEntryOrder(t *testing.T) {
	k := persistKeys{q: []byte(DefaultPersistPrefix)}
	safe := rapid.Int64Range(-(1<<53 - 1), 1<<53-1)
	id := rapid.StringOfN(rapid.SampledFrom([]rune{0, 'a', 'b', 0xff, 'é'}), 0, 4, -1)
	rapid.Check(t, func(t *rapid.T) {
		o1, o2 := id.Draw(t, "o1"), id.Draw(t, "o2")
		a1, a2 := safe.Draw(t, "a1"), safe.Draw(t, "a2")
		i1, i2 := id.Draw(t, "i1"), id.Draw(t, "i2")
		e1, e2 := k.entry(spaceRunThread, o1, a1, i1), k.entry(spaceRunThread, o1, a2, i2)
		want := 0
		switch {
		case a1 < a2, a1 == a2 && i1 < i2:
			want = -1
		case a1 > a2, a1 == a2 && i1 > i2:
			want = 1
		}
		if got := bytes.Compare(e1, e2); got != want {
			t.Fatalf("(%d,%q) vs (%d,%q): %d, want %d", a1, i1, a2, i2, got, want)
		}
		r := k.page(spaceRunThread, o2, nil)
		in := bytes.Compare(e1, r.Begin) >= 0 && bytes.Compare(e1, r.End) < 0
		if in != (o1 == o2) {
			t.Fatalf("entry of owner %q in the range of %q: %v", o1, o2, in)
		}
		// A blob key is in a prefix's page exactly when it has the prefix.
		b := k.blob(i1)
		br := k.blobPage(o2, "")
		inB := bytes.Compare(b, br.Begin) >= 0 && bytes.Compare(b, br.End) < 0
		if inB != strings.HasPrefix(i1, o2) {
			t.Fatalf("blob %q in the page of prefix %q: %v", i1, o2, inB)
		}
	})
}
