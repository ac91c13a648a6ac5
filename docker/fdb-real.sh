#!/usr/bin/env bash
# Runs the fdb-tagged suites on a real FoundationDB cluster: `make fdbreal`,
# a step of `make test`.
#
#   - FDB_CLUSTER_FILE set: the cluster it names, through the client library
#     the machine has (a FoundationDB package's, or what CGO_CFLAGS,
#     CGO_LDFLAGS and LD_LIBRARY_PATH already point at);
#   - otherwise, when ../shared/fdb/fdb.sh sits beside the repository (CI; or
#     FDB_SH names it): a one-process memory cluster it starts, with its
#     client library, stopped when this script exits, even on failure;
#   - otherwise: one line saying why, and nothing (fdbcheck still type-checks
#     the tagged code against the stub library).
#
# The suites, each timed: fdbkv (the kv semantics and watch suites the
# memkv engine passes, fdbstore's conformance and store tests), fdbstore's
# persistence driver suite with the real-time lock cases and the live
# stream read across two connections, its Durable Streams driver suite,
# storeurl's fdb: form, the Durable Streams kill run (a ckptserver built
# with -tags fdb, killed with SIGKILL mid-append and restarted,
# docs/streams.md#faults), then the
# benchmark guard on the fdb store (every family twice in one process, every
# namespace cleared). Every test writes under a key prefix of its own and
# clears it; on a cluster this script started, it then checks that the
# database is empty.
#
# FDB_TESTFLAGS (default -count=1 -timeout 8m) are the go test flags; add
# -race to run the suites under the race detector (about 1.5× the time).
# FDB_RAPID_CHECKS (default 25) is how many histories each model-based case
# draws on the cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
flags=${FDB_TESTFLAGS:--count=1 -timeout 8m}
fdbsh=${FDB_SH:-../shared/fdb/fdb.sh}
started=

if [ -n "${FDB_CLUSTER_FILE:-}" ]; then
  if [ ! -r "$FDB_CLUSTER_FILE" ]; then
    echo "fdbreal: FDB_CLUSTER_FILE=$FDB_CLUSTER_FILE is not a readable cluster file" >&2
    exit 1
  fi
  echo "fdbreal: the fdb-tagged suites on the cluster of FDB_CLUSTER_FILE=$FDB_CLUSTER_FILE"
elif [ -f "$fdbsh" ]; then
  envs=$(bash "$fdbsh" env) # a failure here stops the script, as it would not inside eval
  eval "$envs"
  started=$(mktemp -d "${TMPDIR:-/tmp}/ckptstore-fdb.XXXXXX")
  trap 'bash "$fdbsh" stop "$started"' EXIT
  trap 'exit 130' INT TERM
  c0=$(date +%s)
  FDB_CLUSTER_FILE=$(bash "$fdbsh" start "$started")
  export FDB_CLUSTER_FILE
  echo "fdbreal: the fdb-tagged suites on a one-process cluster started by $fdbsh ($(($(date +%s) - c0)) s to start)"
else
  echo "fdbreal: skipped: FDB_CLUSTER_FILE is not set and $fdbsh is absent, so there is no FoundationDB cluster (fdbcheck type-checks the tagged code against a stub library)"
  exit 0
fi

export CGO_ENABLED=1
t0=$(date +%s)
logs=$(mktemp -d "${TMPDIR:-/tmp}/ckptstore-fdblogs.XXXXXX")
trap 'rm -rf "$logs"; [ -z "$started" ] || bash "$fdbsh" stop "$started"' EXIT

# The test binaries build first, so that the times below are the suites'
# own, not the cgo build's.
# shellcheck disable=SC2086 # flags is a list of words
go test -tags fdb $flags -run '^$' ./fdbstore/kv/fdbkv/ ./fdbstore/ ./storeurl/ ./cmd/ckptserver/ >/dev/null
go build -tags fdb -o /dev/null ./cmd/ckptserver # the kill run builds it again, from the cache
go test -tags fdb -count=1 -run '^$' ./bench/ >/dev/null
echo "fdbreal: built in $(($(date +%s) - t0)) s"

# The suites run side by side: each waits on the cluster's round trips or
# sleeps through real-time leases far more than it computes, and each
# writes only under its own prefixes and namespaces.
suites=()
suite() { # name, command...
  local name=$1
  shift
  suites+=("$name")
  (
    s0=$(date +%s) rc=0
    "$@" >"$logs/$name.out" 2>&1 || rc=$?
    echo "$rc $(($(date +%s) - s0))" >"$logs/$name.rc"
  ) &
}
# The model-based cases (rapid) draw FDB_RAPID_CHECKS histories here, not
# rapid's 100: on the cluster each history is dozens of real transactions,
# and the race-enabled run on memkv draws the full 100 of the same models.
rapid="-rapid.checks=${FDB_RAPID_CHECKS:-25}"
# shellcheck disable=SC2086
suite fdbkv go test -tags fdb $flags ./fdbstore/kv/fdbkv/ -args "$rapid"
# shellcheck disable=SC2086
suite persist go test -tags fdb $flags -run '^(TestPersistConformanceOnCluster|TestStreamsWaitOnCluster)$' ./fdbstore/ -args "$rapid"
# shellcheck disable=SC2086
suite streams go test -tags fdb $flags -run '^TestStreamsDriverOnCluster$' ./fdbstore/
# shellcheck disable=SC2086
suite storeurl go test -tags fdb $flags -run 'FDB' ./storeurl/
# -bench '/store=fdb$': the fdb store's benchmarks only (benchsmoke runs
# the other stores'), every family twice, every namespace cleared.
suite bench go test -tags fdb -count=1 ./bench -run '^$' -bench '/store=fdb$' -benchtime 1x -twice
wait
# The Durable Streams kill run keeps both cores busy for its few seconds
# (12 producers as fast as the server answers, the server restarted three
# times), so it runs after the others, whose lock cases keep real-time
# leases.
# shellcheck disable=SC2086
suite streamskill go test -tags fdb $flags -v -run '^TestStreamsKillFDB$' ./cmd/ckptserver/
wait

failed=() report=()
for name in "${suites[@]}"; do
  read -r rc secs <"$logs/$name.rc"
  echo "--- fdbreal: $name (${secs} s, exit $rc)"
  cat "$logs/$name.out"
  report+=("$name ${secs} s")
  [ "$rc" = 0 ] || failed+=("$name")
done

if [ -n "$started" ] && [ ${#failed[@]} = 0 ]; then
  # Nothing left behind: every test cleared its prefix, every benchmark its
  # namespace.
  left=$(fdbcli -C "$FDB_CLUSTER_FILE" --timeout 10 --exec 'getrange "" \xff 5') || {
    echo "fdbreal: fdbcli could not read the database: $left" >&2
    exit 1
  }
  left=$(grep ' is ' <<<"$left" || true)
  if [ -n "$left" ]; then
    printf 'fdbreal: the suites left keys in the database:\n%s\n' "$left" >&2
    failed+=("cleanup")
  fi
fi
summary=$(printf '%s, ' "${report[@]}")
summary=${summary%, }
if [ ${#failed[@]} != 0 ]; then
  echo "fdbreal: FAILED: ${failed[*]} ($summary)" >&2
  exit 1
fi
echo "fdbreal: passed in $(($(date +%s) - t0)) s ($summary)"
