package fdbdriver

import (
	"bytes"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestTupleEncoding: the elements are FoundationDB's tuple encodings, byte
// for byte (the examples of the tuple layer's design document), so a
// cluster's tools read these keys as tuples.
func TestTupleEncoding(t *testing.T) {
	for _, c := range []struct {
		got  []byte
		want string
	}{
		{appendString(nil, "hello"), "\x02hello\x00"},
		{appendString(nil, "foo\x00bar"), "\x02foo\x00\xffbar\x00"},
		{appendString(nil, ""), "\x02\x00"},
		{appendInt(nil, 0), "\x14"},
		{appendInt(nil, 1), "\x15\x01"},
		{appendInt(nil, -1), "\x13\xfe"},
		{appendInt(nil, 255), "\x15\xff"},
		{appendInt(nil, 256), "\x16\x01\x00"},
		{appendInt(nil, -256), "\x12\xfe\xff"},
		{appendInt(nil, 1<<53-1), "\x1b\x1f\xff\xff\xff\xff\xff\xff"},
		{appendInt(nil, -(1<<53 - 1)), "\x0d\xe0\x00\x00\x00\x00\x00\x00"},
	} {
		if string(c.got) != c.want {
			t.Errorf("got %x, want %x", c.got, c.want)
		}
	}
}

// TestEntryOrder: an index entry's key order is the list's order (at
// numerically, then id bytes), for ids with NUL bytes and negative times
// too, and an owner's entries never fall in another owner's range.
func TestEntryOrder(t *testing.T) {
	k := keys{q: []byte(DefaultPrefix)}
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
