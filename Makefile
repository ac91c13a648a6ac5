# ckptstore: `make test` is the one test command (CI runs exactly it);
# `make run` is the main job (loadgen on the embedded in-memory store).

GO       ?= go
PKGS     ?= ./...
# The race detector on a 2-core machine: keep the whole run well under CI's budget.
TESTFLAGS ?= -race -count=1 -timeout 12m

.PHONY: all run test deps vet staticcheck gotest fdbcheck benchsmoke bench fmt tstest exports

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

# benchsmoke runs every benchmark once on every store here, so a benchmark
# that no longer works fails the tests; it measures nothing.
benchsmoke:
	$(GO) test ./bench -run '^$$' -bench . -benchtime 1x

# tstest builds ckptserver and runs the TypeScript client's tests against it
# (clients/ts: npm ci, then npm test: build, type-check, node:test on memstore
# and on redis-server).
tstest:
	$(GO) build -o bin/ckptserver ./cmd/ckptserver
	cd clients/ts && npm ci --no-audit --no-fund && CKPTSERVER_BIN=$(CURDIR)/bin/ckptserver npm test

test: deps vet staticcheck fdbcheck gotest benchsmoke tstest

bench: deps
	bash bench/run.sh

fmt:
	gofmt -w $$(git ls-files '*.go')

# exports lists and counts the root package's exported names (constants,
# variables, functions, types and methods; issue 18's target is ≤ 60).
exports:
	@$(GO) doc -all . | awk -f .ci/exports.awk
