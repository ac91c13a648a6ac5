package fdbdriver_test

import (
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore/persist/fdbdriver"
	"github.com/ckptstore/ckptstore/storeurl"
	"pgregory.net/rapid"
)

// The namespace test is outside the package so that storeurl may one day
// open this driver without an import cycle.

// TestNamespacePrefix: a namespace's persistence is a sibling of its
// checkpoints under ("ckptstore.ns", name): neither prefix is a prefix of
// the other, both share the namespace's, and names do not collide.
func TestNamespacePrefix(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := rapid.StringOfN(rapid.SampledFrom([]rune{0, 'a', 0xff}), 0, 4, -1).Draw(t, "a")
		b := rapid.StringOfN(rapid.SampledFrom([]rune{0, 'a', 0xff}), 0, 4, -1).Draw(t, "b")
		pa, ca := fdbdriver.NamespacePrefix(a), storeurl.FDBNamespacePrefix(a)
		ns := strings.TrimSuffix(ca, "\x00") // ("ckptstore.ns", a)
		if !strings.HasPrefix(pa, ns) || strings.HasPrefix(pa, ca) || strings.HasPrefix(ca, pa) {
			t.Fatalf("persistence %x and checkpoints %x of %q are not siblings under %x", pa, ca, a, ns)
		}
		if pb := fdbdriver.NamespacePrefix(b); a != b && (strings.HasPrefix(pa, pb) || strings.HasPrefix(pb, pa)) {
			t.Fatalf("namespaces %q and %q: prefixes %x and %x overlap", a, b, pa, pb)
		}
		if strings.HasPrefix(pa, fdbdriver.DefaultPrefix) || strings.HasPrefix(fdbdriver.DefaultPrefix, pa) {
			t.Fatalf("namespace %q overlaps the default prefix", a)
		}
	})
}
