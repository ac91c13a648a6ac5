# ckptstore: `make test` is the one test command (CI runs exactly it);
# `make run` is the main job (loadgen on the embedded in-memory store).

GO       ?= go
PKGS     ?= ./...
# The race detector on a 2-core machine: keep the whole run well under CI's budget.
TESTFLAGS ?= -race -count=1 -timeout 12m

.PHONY: all run test deps vet staticcheck gotest fdbcheck benchsmoke bench fmt tstest loc exports

all: test

run:
	$(GO) run ./cmd/loadgen

# deps installs what the tests need when it is missing: a real redis-server
# (Debian package) for the Redis store's tests and benchmarks.
deps:
	@command -v redis-server >/dev/null 2>&1 || { \
		echo "installing redis-server (Debian package)"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq redis-server redis-tools >/dev/null; }
	@redis-server --version

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet $(PKGS)

staticcheck:
	$(GO) tool staticcheck $(PKGS)

gotest:
	$(GO) test $(TESTFLAGS) $(PKGS)

# fdbcheck vets, lints and runs the cluster-free tests of the fdb-tagged code
# (the FoundationDB adapter) against a stub client library, so it keeps
# compiling on machines without FoundationDB.
fdbcheck:
	bash docker/check-fdb-tag.sh

# fdbreal runs the fdb-tagged suites (fdbkv's kv semantics, watch,
# conformance and store tests; fdbstore's persistence driver suite with its
# real-time lock cases, its stream driver suite and the live stream read
# across two connections; storeurl's fdb: form; the Durable Streams kill
# run, a ckptserver killed mid-append; the benchmark guard on the fdb
# store) on a real FoundationDB:
# the cluster of $FDB_CLUSTER_FILE with the machine's client library, or
# else a one-process cluster that ../shared/fdb/fdb.sh starts and stops
# (FDB_SH names another copy). Without either it says so and passes.
.PHONY: fdbreal
fdbreal:
	bash docker/fdb-real.sh

# streamsconformance runs the Durable Streams protocol's conformance suite
# (@durable-streams/server-conformance-tests, pinned in the script, from
# npm) against ckptserver's /streams/ on each store of STREAMS_STORES
# (default "mem memkv redis", the last on a redis-server of its own) and
# prints its passed/failed/skipped counts; any failure fails the step.
# About a minute per store.
.PHONY: streamsconformance
streamsconformance:
	bash docker/streams-conformance.sh

# benchsmoke runs every benchmark once on every store here, so a benchmark
# that no longer works fails the tests; it measures nothing. -twice runs
# every family a second time in the same process on the same engines (each
# memkv backend and the redis-server are one engine per process, as a
# cluster is) and fails when a benchmark collides with what an earlier
# invocation wrote or leaves a namespace uncleared: the guard for running
# the benchmarks on a real FoundationDB cluster, which keeps its data.
benchsmoke:
	$(GO) test ./bench -run '^$$' -bench . -benchtime 1x -twice

# tstest builds ckptserver and runs the TypeScript client's tests against it
# (clients/ts: npm ci, then npm test: build, type-check, node:test on memstore
# and on redis-server).
tstest:
	$(GO) build -o bin/ckptserver ./cmd/ckptserver
	cd clients/ts && npm ci --no-audit --no-fund && CKPTSERVER_BIN=$(CURDIR)/bin/ckptserver npm test

test: deps vet staticcheck fdbcheck gotest benchsmoke tstest fdbreal streamsconformance

# test-regions runs fdbstore under loadgen --verify on a two-region
# FoundationDB cluster of six local processes (primary dc1, its satellite
# dc1s, remote dc2) and SIGKILLs the primary datacenter mid-run, first with
# the satellite kept (nothing acknowledged may be lost), then with the
# satellite lost too (what is lost is reported). About 5 minutes on 2
# cores, so not in `make test`. It needs ../shared/fdb/fdb.sh (or FDB_SH)
# and says why it skips without it. docs/scaling.md#multi-region has the
# figures.
.PHONY: test-regions
test-regions:
	bash cmd/loadgen/regions.sh

bench: deps
	bash bench/run.sh

fmt:
	gofmt -w $$(git ls-files '*.go')

# loc counts the lines of the Go files git tracks, per package directory:
# non-test (production) and _test.go lines, then the totals. The non-test
# total is `git ls-files '*.go' | grep -v _test.go | xargs cat | wc -l`.
loc:
	@git ls-files -z '*.go' | xargs -0 wc -l | awk '$$2 != "total" { \
		d = $$2; if (!sub(/\/[^\/]*$$/, "", d)) d = "."; t = ($$2 ~ /_test\.go$$/); \
		n[d, t] += $$1; dirs[d] = 1; sum[t] += $$1 } \
		END { for (d in dirs) printf "%-32s %8d %8d\n", d, n[d, 0], n[d, 1]; \
		printf "%-32s %8d %8d\n", "~total", sum[0], sum[1] }' | \
		LC_ALL=C sort | awk 'BEGIN { printf "%-32s %8s %8s\n", "package", "non-test", "test" } { sub(/^~/, ""); print }'

# exports lists and counts the root package's exported names (constants,
# variables, functions, types and methods; issue 18's target is ≤ 60).
exports:
	@$(GO) doc -all . | awk -f .ci/exports.awk
