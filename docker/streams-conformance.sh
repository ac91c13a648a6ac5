#!/usr/bin/env bash
# streams-conformance.sh runs the Durable Streams protocol's own
# conformance suite (@durable-streams/server-conformance-tests, pinned
# below) against ckptserver's /streams/ routes, once per store of
# STREAMS_STORES (default: mem), and fails unless every test passes (the
# suite skips the 6 subscription tests unless asked). It prints the
# passed/failed/skipped counts of each store.
#
# The package is installed with npm into .cache/streams-conformance (git
# ignores it); a vitest config there includes node_modules, where the
# suite's test file lives (vitest skips node_modules by default and would
# find no test file).
set -euo pipefail

VERSION=0.3.6
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RIG=${STREAMS_RIG:-$ROOT/.cache/streams-conformance}
STORES=${STREAMS_STORES:-mem}

mkdir -p "$RIG" "$ROOT/bin"
cd "$ROOT"
go build -o bin/ckptserver ./cmd/ckptserver

cd "$RIG"
if [ ! -f "node_modules/@durable-streams/server-conformance-tests/package.json" ] ||
	! grep -q "\"version\": \"$VERSION\"" node_modules/@durable-streams/server-conformance-tests/package.json; then
	[ -f package.json ] || echo '{"name":"streams-conformance-rig","private":true}' >package.json
	npm install --no-audit --no-fund --silent "@durable-streams/server-conformance-tests@$VERSION"
fi
cat >vitest.config.mjs <<'CFG'
export default {
  test: {
    include: ["**/server-conformance-tests/dist/test-runner.js"],
    exclude: [],
  },
}
CFG

pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; true; }
trap cleanup EXIT

status=0
for store in $STORES; do
	out=$(mktemp)
	"$ROOT/bin/ckptserver" --store "$store" --dev --listen 127.0.0.1:0 --log-level warn >"$out" 2>&1 &
	pid=$!
	for _ in $(seq 100); do
		grep -q '^listening on ' "$out" && break
		sleep 0.1
	done
	url=$(sed -n 's/^listening on //p' "$out" | head -1)
	if [ -z "$url" ]; then
		echo "ckptserver --store $store did not start:"; cat "$out"; exit 1
	fi
	log=$(mktemp)
	set +e
	npx --no-install server-conformance-tests --run "$url/streams" >"$log" 2>&1
	rc=$?
	set -e
	counts=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^ +Tests ' | tail -1 | sed 's/^ *//')
	echo "streams conformance $VERSION on --store $store: ${counts:-no counts (see below)}"
	if [ $rc -ne 0 ] || echo "$counts" | grep -q failed; then
		sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '×|FAIL|Error' | head -40
		status=1
	fi
	kill "$pid"; wait "$pid" 2>/dev/null || true
	pid=
	rm -f "$out" "$log"
done
exit $status
