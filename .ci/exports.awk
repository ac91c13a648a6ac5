# exports.awk counts the exported names of one package from `go doc -all`
# output (make exports): constants, variables, functions, types (aliases
# included) and methods, one per line, then the total. Fields and the
# methods of interface types are not names of their own.
/^(const|var) \($/ { blk = 1; next }
blk && /^\)/ { blk = 0; next }
blk {
	if (match($0, /^\t[A-Za-z_][A-Za-z0-9_, ]*/)) {
		s = substr($0, 2, RLENGTH - 1); sub(/[ ]+[^,]*$/, "", s)
		n = split(s, ids, /, */)
		for (i = 1; i <= n; i++) if (ids[i] ~ /^[A-Z]/) { c++; print "  " ids[i] }
	}
	next
}
/^type [A-Z][A-Za-z0-9_]* .*[{]$/ { body = 1; c++; print "  " $2; next }
body && /^}/ { body = 0; next }
body { next }
/^(const|var|type) [A-Z]/ { split($2, ids, /,/); for (i in ids) { c++; print "  " ids[i] }; next }
/^func [A-Z]/ { c++; name = $2; sub(/[\[(].*/, "", name); print "  " name; next }
/^func \([^)]*\) [A-Z]/ { c++; m = $0; sub(/^func \([^)]*\) /, "", m); sub(/[\[(].*/, "", m); r = $0; sub(/^func \(/, "", r); sub(/\).*/, "", r); sub(/.* \*?/, "", r); print "  " r "." m; next }
END { print c, "exported names" }
