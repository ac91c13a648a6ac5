#!/usr/bin/env bash
# Runs github.com/go-gremlins/gremlins (generated mutants: boundaries,
# negated conditions, arithmetic, ++/--, negatives, and with
# --invert-logical && <-> ||) on the root package, precheck and memstore.
#
# Gremlins mutates a copy of what it is given and, for each mutant, runs
# `go test` of the mutated package only: root mutants meet the root
# package's tests, memstore mutants meet the conformance suite (through
# memstore_test.go). It runs here on a trimmed copy of the module (root
# package, memstore, conformance and the packages their tests import; only
# the root package, precheck and memstore are mutated), so that it neither
# touches the working tree nor needs the Redis/FoundationDB/S3 packages'
# test servers. Only the mutated packages (the root package,
# precheck, memstore) keep their _test.go files: the other packages' tests
# (blobs', sweep's, the conformance package's own self-test) need packages
# that are not copied, and gremlins' coverage pass runs every package's
# tests.
#
# Usage: internal/mutation/gremlins.sh [extra gremlins flags]
# GREMLINS_OUT=file.json also writes gremlins' machine-readable results.
# Installs gremlins into a temporary GOBIN (not into go.mod).
set -euo pipefail

version=v0.6.0
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d -t ckptstore-gremlins-XXXXXX)
trap 'rm -rf "$work"' EXIT

GOBIN="$work/bin" go install "github.com/go-gremlins/gremlins/cmd/gremlins@$version"

mkdir -p "$work/mod"
cd "$root"
cp go.mod go.sum "$work/mod/"
# The module's packages that the root package, memstore and conformance and
# their tests need (e.g. internal/testkit), each with its files and testdata.
go list -deps -test -f '{{if .Module}}{{if .Module.Main}}{{.Dir}}{{end}}{{end}}' . ./memstore ./conformance |
	sort -u | while read -r dir; do
		rel=${dir#"$root"}
		rel=${rel#/}
		mkdir -p "$work/mod/$rel"
		case "$rel" in
		"" | precheck | memstore)
			find "$dir" -maxdepth 1 -type f -name '*.go' -exec cp {} "$work/mod/$rel/" \;
			if [ -d "$dir/testdata" ]; then cp -r "$dir/testdata" "$work/mod/$rel/"; fi
			;;
		*) find "$dir" -maxdepth 1 -type f -name '*.go' ! -name '*_test.go' -exec cp {} "$work/mod/$rel/" \; ;;
		esac
	done

cd "$work/mod"
out=()
if [ -n "${GREMLINS_OUT:-}" ]; then out=(--output "$GREMLINS_OUT"); fi
# One worker: the machine has 2 cores shared with other jobs. The timeout
# coefficient is generous because a loaded machine slows every test run.
nice "$work/bin/gremlins" unleash \
	--workers 1 --timeout-coefficient 20 \
	--invert-logical \
	--exclude-files '^conformance/' --exclude-files '^internal/' \
	--exclude-files '^blobs/' --exclude-files '^sweep/' \
	"${out[@]}" "$@" .
