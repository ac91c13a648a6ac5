#!/usr/bin/env bash
# Type-checks, lints and runs what can run of the fdb-tagged code on a
# machine without the FoundationDB client package: cgo compiles the
# binding against fdbstub/include (a stand-in header) and links a stub
# libfdb_c built from fdbstub/stub.c. The tuple codec is compared with the
# official tuple package (pure Go); tests that need a cluster skip.
#
#   docker/check-fdb-tag.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cc -shared -fPIC -I"$here/fdbstub/include" -o "$tmp/libfdb_c.so" "$here/fdbstub/stub.c"
export CGO_ENABLED=1 CGO_CFLAGS="-I$here/fdbstub/include" CGO_LDFLAGS="-L$tmp" LD_LIBRARY_PATH="$tmp"
unset FDB_CLUSTER_FILE # the stub cannot reach a cluster
cd "$here/.."
go vet -tags fdb ./...
go tool staticcheck -tags fdb ./...
go test -tags fdb -count=1 ./fdbstore/internal/tuple/ ./fdbstore/kv/fdbkv/
