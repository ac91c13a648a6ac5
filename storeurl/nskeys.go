package storeurl

// The key spaces of namespaces. Both maps are injective and prefix-free:
// different names give different prefixes, and no prefix is a byte-prefix of
// another, so the keys of one tenant (its prefix followed by anything) are
// never keys of another. The tests check both properties on hostile names.

import "strings"

// redisDefaultPrefix is redisstore.DefaultPrefix, written out so that
// storeurl imports no backend; a test checks that the two agree.
const redisDefaultPrefix = "ckptstore"

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

// RedisNamespacePrefix is the redisstore prefix of namespace name under
// the base prefix base ("" = redisstore.DefaultPrefix): base + "/ns/" + the
// name with every byte outside [A-Za-z0-9._-] written as =XX (upper-case
// hex). redisstore puts the prefix inside the hash tag {…} (escaping '{',
// '}' and '%'), so every key of the namespace starts with "{prefix}:" and
// the tag ends at the only '}'. The =XX encoding is injective and leaves no
// glob character (* ? [ ] \) in the tag, so a KEYS or SCAN pattern built
// from one tenant's prefix cannot match another's keys.
func RedisNamespacePrefix(base, name string) string {
	if base == "" {
		base = redisDefaultPrefix
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(base) + 4 + 3*len(name))
	b.WriteString(base)
	b.WriteString("/ns/")
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('=')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}
