package fdbstore_test

import (
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore/fdbstore"
	"pgregory.net/rapid"
)

// TestNamespacePrefix: a namespace's checkpoints and persistence are
// siblings inside its subspace ("ckptstore.ns", name), and no prefix of
// the default store or of any namespace is a byte prefix of another, so
// tenants share no key and neither Check reads another's keys.
func TestNamespacePrefix(t *testing.T) {
	name := rapid.StringOfN(rapid.SampledFrom([]rune{0, 'a', 0xff}), 0, 4, -1)
	rapid.Check(t, func(t *rapid.T) {
		a, b := name.Draw(t, "a"), name.Draw(t, "b")
		ca, pa := fdbstore.NamespacePrefix(a), fdbstore.PersistNamespacePrefix(a)
		ns := strings.TrimSuffix(ca, "\x00") // ("ckptstore.ns", a)
		if !strings.HasPrefix(pa, ns) {
			t.Fatalf("persistence %x of %q is not inside the namespace %x", pa, a, ns)
		}
		all := []string{ca, pa, fdbstore.DefaultPrefix, fdbstore.DefaultPersistPrefix}
		if a != b {
			all = append(all, fdbstore.NamespacePrefix(b), fdbstore.PersistNamespacePrefix(b))
		}
		for i, x := range all {
			for j, y := range all {
				if i != j && strings.HasPrefix(x, y) {
					t.Fatalf("prefix %x (of %q or %q) starts with %x", x, a, b, y)
				}
			}
		}
	})
}
