package storeurl

// The key spaces of Redis namespaces (fdbstore's are in that package:
// fdbstore.NamespacePrefix and fdbstore.PersistNamespacePrefix). The map
// is injective and prefix-free: different names give different prefixes,
// and no prefix is a byte-prefix of another, so the keys of one tenant (its
// prefix followed by anything) are never keys of another. The tests check
// both properties on hostile names, for both engines.

import "strings"

// redisDefaultPrefix is redisstore.DefaultPrefix, written out so that
// storeurl imports no backend; a test checks that the two agree.
const redisDefaultPrefix = "ckptstore"

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
