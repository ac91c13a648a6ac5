//go:build fdb

package tuple

import (
	"bytes"
	"math/rand"
	"testing"

	official "github.com/apple/foundationdb/bindings/go/src/fdb/tuple"
)

// TestMatchesOfficialPackage packs random tuples with this codec and with
// the official binding's tuple package: the bytes must be identical, and
// each side must decode the other's encoding to the same elements.
func TestMatchesOfficialPackage(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 20000; i++ {
		tup := randomTuple(r)
		mine := tup.Pack()
		theirs := toOfficial(tup).Pack()
		if !bytes.Equal(mine, theirs) {
			t.Fatalf("Pack(%#v):\n mine     %x\n official %x", tup, mine, theirs)
		}
		back, err := official.Unpack(mine)
		if err != nil {
			t.Fatalf("official Unpack(%x): %v", mine, err)
		}
		if !sameTuple(fromOfficial(back), tup) {
			t.Fatalf("official Unpack(Pack(%#v)) = %#v", tup, back)
		}
		ours, err := Unpack(theirs)
		if err != nil {
			t.Fatalf("Unpack(official %x): %v", theirs, err)
		}
		if !sameTuple(ours, tup) {
			t.Fatalf("Unpack(official Pack(%#v)) = %#v", tup, ours)
		}
	}
}

func toOfficial(t Tuple) official.Tuple {
	out := make(official.Tuple, len(t))
	for i, e := range t {
		out[i] = e
	}
	return out
}

func fromOfficial(t official.Tuple) Tuple {
	out := make(Tuple, len(t))
	for i, e := range t {
		out[i] = e
	}
	return out
}
