#!/usr/bin/env bash
# bench/run.sh — what `make bench` runs. It runs every benchmark of ./bench
# on every store this machine has (memstore, fdbstore on memkv with and
# without the cluster latency model, redisstore on a redis-server that the
# benchmarks start themselves, and fdbstore on a real cluster when
# FDB_CLUSTER_FILE is set), saves the raw output with the machine and the
# commit in docs/bench.txt (benchstat reads it), and renders
# docs/benchmarks.md from it. Every benchmark invocation writes a fresh
# namespace and clears it, so it runs again and again on one cluster.
#
# Knobs (environment):
#   BENCH=REGEXP        which benchmarks (default: all)
#   BENCH_COUNT=N       runs of each benchmark, for benchstat's confidence
#                       ranges (default 1)
#   BENCH_TIME=D        -benchtime (default 1s)
#   BENCH_OUT=FILE      raw output (default docs/bench.txt)
#   FDB_CLUSTER_FILE=F  also benchmark a real FoundationDB cluster (builds
#                       with -tags fdb, needs foundationdb-clients)
#
# Comparing two commits: run it on each, keep both bench.txt files, and
#   go run golang.org/x/perf/cmd/benchstat@latest old.txt new.txt
set -euo pipefail
cd "$(dirname "$0")/.."

pattern=${BENCH:-.}
count=${BENCH_COUNT:-1}
benchtime=${BENCH_TIME:-1s}
out=${BENCH_OUT:-docs/bench.txt}
tags=()
if [ -n "${FDB_CLUSTER_FILE:-}" ]; then
	tags=(-tags fdb)
fi
if ! command -v redis-server >/dev/null 2>&1; then
	echo "bench/run.sh: redis-server is not installed (apt-get install redis-server, or make deps): the redis benchmarks will be skipped" >&2
fi

mkdir -p "$(dirname "$out")"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
{
	# Configuration lines (key: value) that benchstat and benchtable keep.
	commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
	if ! git diff --quiet HEAD -- 2>/dev/null; then
		commit="$commit (with uncommitted changes)"
	fi
	echo "commit: $commit"
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "go: $(go env GOVERSION) $(go env GOOS)/$(go env GOARCH)"
	echo "cpu-model: $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//' || echo unknown)"
	echo "cores: $(nproc 2>/dev/null || echo unknown)"
	echo "memory: $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo 2>/dev/null || echo unknown)"
	if command -v redis-server >/dev/null 2>&1; then
		echo "redis-server: $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')"
	fi
	echo "memkv-lat: 1ms per read round, 3ms per commit"
	if [ -n "${FDB_CLUSTER_FILE:-}" ]; then
		echo "fdb: $FDB_CLUSTER_FILE"
	else
		echo "fdb: not benchmarked (set FDB_CLUSTER_FILE; builds with -tags fdb)"
	fi
	echo "benchtime: $benchtime"
	go test "${tags[@]}" ./bench -run '^$' -bench "$pattern" -benchmem -count "$count" -benchtime "$benchtime" -timeout 3h
} | tee "$tmp"
cp "$tmp" "$out"
go run ./bench/benchtable -o "$(dirname "$out")/benchmarks.md" "$out"
echo "bench/run.sh: wrote $out and $(dirname "$out")/benchmarks.md" >&2
