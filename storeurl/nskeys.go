package storeurl

// The key spaces of namespaces on FoundationDB (redisstore.NamespacePrefix
// is Redis's). The map is injective and prefix-free:
// different names give different prefixes, and no prefix is a byte-prefix of
// another, so the keys of one tenant (its prefix followed by anything) are
// never keys of another. The tests check both properties on hostile names.

import "strings"

// fdbNamespaceRoot is the packed tuple ("ckptstore.ns"): the subspace of
// every namespace. It differs from fdbstore.DefaultPrefix ("ckptstore")
// at its tenth byte, so the default store and the tenants share no key and
// a range over one never covers the other.
const fdbNamespaceRoot = "\x02ckptstore.ns\x00"

// FDBNamespacePrefix is the fdbstore prefix of namespace name: the packed
// tuple ("ckptstore.ns", name, nil). The name is a tuple element — a string
// with its NUL bytes escaped as 00 ff and a 00 terminator — not raw bytes
// appended. Packed strings alone are not prefix-free ("a" packs to a prefix
// of "a\x00"'s packing: 02 61 00 vs 02 61 00 ff 00); the trailing nil (a 00
// byte) makes them so, because where one packing ends its string the other
// continues with ff.
func FDBNamespacePrefix(name string) string {
	// 02 starts the string element, 00 ends it, and the last 00 is the nil.
	return fdbNamespaceRoot + "\x02" + strings.ReplaceAll(name, "\x00", "\x00\xff") + "\x00\x00"
}
